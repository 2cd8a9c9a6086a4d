/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ending a harness workload early, shared by the workloads that a script
 * stops once the kernel has done enough (harness/guest/anon-steady,
 * harness/guest/steady-window): SIGINT and SIGTERM set a flag that the
 * main thread polls, and only the main thread takes them, so that a
 * worker thread is never interrupted halfway through a pass it counts.
 */
#ifndef MIGRC_HARNESS_STOP_H
#define MIGRC_HARNESS_STOP_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

static atomic_bool interrupted;

static void on_stop_signal(int sig)
{
	atomic_store(&interrupted, true);
}

/*
 * Take SIGINT and SIGTERM into @interrupted, and block them in the calling
 * thread until stop_signals_unblock(): the threads it creates meanwhile
 * inherit the block and never see them.
 */
static inline void stop_signals_block(sigset_t *old)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	sigset_t block;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, old);
}

static inline void stop_signals_unblock(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

#endif /* MIGRC_HARNESS_STOP_H */
