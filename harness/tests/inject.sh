#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Test the tests: on the debug kernel, make migrc skip a flush on purpose
# (the fault_attr files under debugfs migrc/) and check that the stale-TLB selftests fail
# and that CONFIG_MIGRC_DEBUG reports it.  A test suite that still passed
# here would prove nothing.  TAP output.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
n=0 fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }

echo "TAP version 13"
echo "1..19"
# arm FAULT: the guest commands that make a fault_attr under debugfs
# migrc/ fail every time, quietly (none: nothing).
arm() {
	[ "$1" = none ] && return
	printf '%s\n' "d=/sys/kernel/debug/migrc/$1" \
		'echo 0 > $d/verbose && echo 1 > $d/interval &&' \
		'echo -1 > $d/times && echo 100 > $d/probability ||' \
		"{ echo 'cannot arm $1'; exit 1; }"
}

# inject FAULT WHAT NAME [TEST]: run one fixture (or, WHAT starting with -,
# the harness options, e.g. -r FIXTURE.VARIANT.TEST) of a selftest (default
# migrc_tlb) with the fault (a fault_attr under debugfs migrc/, or none)
# failing every time, quietly.
inject() {
	# A fixture name, or the harness's own selection options (-r ...).
	case $2 in -*) sel=$2 ;; *) sel="-f $2" ;; esac
	"$top/harness/vm-run" --kernel "${INJECT_KERNEL:-debug}" --topo numa2 \
		--cpus 2 --append migrc=on --timeout 600 -- sh -c "
		echo 10000 > /sys/kernel/mm/migrc/max_age_ms
		[ ${4:-migrc_tlb} != migrc_fschange ] ||
			$top/harness/guest/scratch-ext4 /mnt/migrc-ext4 > /dev/null
		[ ${4:-migrc_tlb} != migrc_anon_reclaim ] ||
			$top/harness/guest/scratch-swap > /dev/null
		if [ '$2' = eof ]; then
			d1k=\$($top/harness/guest/scratch-ext4 -b 1024 /mnt/migrc-ext4-1k) ||
				{ echo 'no 1 kB-block ext4 for eof'; exit 1; }
			export MIGRC_EOF_DIR=\$d1k
		fi
		$(arm "$1")
		$top/build/selftests/${4:-migrc_tlb} $sel" > "$tmp/$3" 2>&1
	rc=$?
	grep -E '^(not )?ok|stale [1-9]|writes lost|migrc_debug' "$tmp/$3" | head -8 | sed 's/^/# /'
}

# A tagged page handed out without its flush.  The selftests hardly ever
# reuse a tagged frame: the allocator frees them to the tail and, while
# their flush is pending, splits a larger untagged block first (patch
# migrc/0037).  KUnit's migrc_alloc_larger_test leaves a tagged block and
# an untagged one as the only free blocks of an emptied node and
# allocates both: rerun after boot (debugfs kunit/) with the flush
# skipped, it must fail at the tagged one, and the debug check must
# report the page.
"$top/harness/vm-run" --kernel "${INJECT_KERNEL:-debug}" --topo tiered \
	--cpus 4 --append migrc=on --timeout 600 -- sh -c "
	$(arm skip_alloc_flush)
	echo run > /sys/kernel/debug/kunit/migrc_batch/run
	cat /sys/kernel/debug/kunit/migrc_batch/results" > "$tmp/alloc" 2>&1
rc=$?
grep -E 'not ok|migrc_debug' "$tmp/alloc" | head -8 | sed 's/^/# /'
check "skipped allocation flush: KUnit's allocation of the tagged block fails" \
	sh -c "grep -Eq 'not ok [0-9]+ migrc_alloc_larger_test' '$tmp/alloc' &&
		grep -q 'a tagged block was handed out before its flush' '$tmp/alloc'"
check "skipped allocation flush: the debug kernel reports it (status $rc)" \
	sh -c "[ $rc -eq 125 ] && grep -q 'migrc_debug: page' '$tmp/alloc'"

# Sources freed untagged to the per-CPU lists: reused at once.
inject free_untagged reuse untagged
check "sources freed untagged: the reuse selftest sees stale data" \
	grep -q "^not ok" "$tmp/untagged"

# The write barrier skipped: the write selftest and the debug check.
inject skip_write_flush file_write write
check "skipped write flush: the file_write selftest sees stale data" \
	grep -q "^not ok" "$tmp/write"
check "skipped write flush: the debug kernel reports it (status $rc)" \
	sh -c "[ $rc -eq 125 ] && grep -q 'migrc_debug: pfn' '$tmp/write'"

# The fault-injection tests check the same barrier after failed and
# concurrent migrations: the write after the move must be seen.
inject skip_write_flush faults faults migrc_faults
check "skipped write flush: migrc_faults sees stale data" \
	grep -q "^not ok" "$tmp/faults"

# The file-change test, after reclaim deferred the page's flush: a
# buffered pwrite() whose barrier is skipped is read stale.  (Its O_DIRECT
# case is not used here: the direct I/O's window is long enough that a
# kthread on the reader's CPU often makes it flush its TLB on the way back
# (switch_mm_irqs_off() catching up with the mm's tlb_gen), so the
# injection is only sometimes seen; see Documentation/mm/migrc.rst.)
inject skip_write_flush "-r reclaim.pwrite.no_stale_read" fsw migrc_fschange
check "skipped write flush: migrc_fschange (pwrite after reclaim) sees stale data" \
	sh -c "grep -q '^not ok' '$tmp/fsw' && grep -q 'stale=[1-9]' '$tmp/fsw'"

# A copy-on-write fault after reclaim: its new anonymous page is named
# by no key, so only reclaim's unkeyed generation makes the fault's
# barrier flush; skipped, the old data stays visible at the address.
inject skip_write_flush "-r reclaim.cow.no_stale_read" cow migrc_fschange
check "skipped write flush: migrc_fschange (cow fault after reclaim) sees stale data" \
	sh -c "grep -q '^not ok' '$tmp/cow' && grep -q 'stale=[1-9]' '$tmp/cow'"

# fork() write-protects the parent's PTEs and flushes only at its end:
# with the in-flight write-protect ignored, a migration defers the flush
# of such a read-only entry, and the writes another thread makes through
# its stale writable entry after the copy are lost.  A run loses writes
# only if some move of P lands in a fork's window, which the test lines
# up but cannot force.  Runs go one way or the other: on 2026-12-07 the
# fresh-clone CI run had one of 10 s that lost none, and of three runs
# here two lost writes (P moved during a fork in 155 of 166 and 138 of
# 139 raced moves) and one did not (1 of 193).  So up to eight runs,
# until one loses writes (at 1 in 3, a 0.02% chance of a false failure);
# the debug kernel's report is checked in that same run.
fork_lost() {
	grep -q '^not ok' "$tmp/fork" && grep -q 'writes lost' "$tmp/fork"
}
for try in 1 2 3 4 5 6 7 8; do
	inject skip_wp_check fork fork migrc_fork
	fork_lost && break
done
check "write-protect in flight ignored: migrc_fork loses writes (run $try of at most 8)" \
	fork_lost
check "write-protect in flight ignored: the debug kernel reports the writes to the source (status $rc)" \
	sh -c "[ $rc -eq 125 ] && grep -q 'migrc_debug: pfn .* written through a stale TLB entry' '$tmp/fork'"

# The time bound: a CPU whose tick records its flush without doing it is
# left out of the timeout's flush, and its readers miss a write that
# finds the deferral done.
inject skip_tick_flush expired expired
check "skipped tick flush: the expired selftest sees stale data" \
	grep -q "^not ok" "$tmp/expired"

# Large folios (patch migrc/0014): a write() into a shmem file whose 16
# and 64 kB folios a move deferred, with its barrier skipped, is read
# stale, and the debug kernel reports it; so the large-folio selftests
# do exercise deferred large folios.
inject skip_write_flush "-r large.shmem_mthp.pwrite_seen" large
check "skipped write flush: large.shmem_mthp (mTHP) sees stale data" \
	sh -c "grep -q '^not ok' '$tmp/large' && grep -Eq ' [1-9][0-9]* stale; migrc_deferred_pages [+][1-9]' '$tmp/large'"
check "skipped write flush on mTHP: the debug kernel reports it (status $rc)" \
	sh -c "[ $rc -eq 125 ] && grep -q 'migrc_debug: pfn' '$tmp/large'"

# A shmem folio of PMD size (patch migrc/0032): another process maps it
# by a writable PMD with no barrier, so it is never deferred; deferred
# anyway, that process's writes are hidden from the readers' stale PTE
# entries.  Shows that pmd_file does exercise the rule.
inject defer_pmd_file pmd_file pmdfile
check "PMD-size shmem folio deferred: pmd_file sees stale data" \
	sh -c "grep -q '^not ok' '$tmp/pmdfile' && grep -Eq ' [1-9][0-9]* stale; migrc_deferred_pages [+][1-9]' '$tmp/pmdfile'"

# The file grows over the partial EOF page a move deferred (patch
# migrc/0020's barrier in pagecache_isize_extended()): writeback zeroed
# the bytes past EOF in the destination, and with the barrier skipped
# the readers go on reading what the source held there.  The fault
# attribute skips every barrier; what ties the failure to this one is the
# debug kernel's report of the write at pagecache_isize_extended() (the
# test's only other barriers, of its truncation and its writes, come
# before the move).
inject skip_write_flush eof eof
check "skipped write flush: eof (file extended over a deferred page) sees stale data, reported at pagecache_isize_extended (status $rc)" \
	sh -c "[ $rc -eq 125 ] && grep -q '^not ok' '$tmp/eof' && grep -Eq ' [1-9][0-9]* stale; migrc_deferred_pages [+][1-9]' '$tmp/eof' && grep -q 'written at pagecache_isize_extended' '$tmp/eof'"

# migrc_anon_reclaim's variants with swap.  Not every round can show a
# skipped flush: a round whose new page is a page reclaim just freed
# (tagged) flushes at the allocation (migrc_flush_alloc), a reader that
# faults on a swap entry passes do_swap_page()'s barrier, and a reader's
# CPU that switches to a kernel thread and back catches up with the mm's
# TLB generation.  Measured with its 16 pages (patch migrc/0031): 6 of 6
# runs of 2 s read stale data; still, up to eight runs, until one does.
stale_in() {
	grep -q '^not ok' "$tmp/$1" && grep -q 'were stale (old data' "$tmp/$1"
}
anon_inject() {
	for try in 1 2 3 4 5 6 7 8; do
		inject "$1" \
			"-r anon_reclaim.$2.write_after_reclaim" "$2" \
			migrc_anon_reclaim
		stale_in "$2" && return 0
	done
	return 1
}

# Reclaim discards a lazily freed page and leaves its PTE none (patch
# migrc/0022); deferred anyway, the write that faults a new page in
# there is hidden from the readers' stale entries.  Reruns as for the
# variants with swap: 2 of 4 runs of 2 s here on 2026-12-05 saw no
# stale data, and on 2026-12-06 4 of 16 (2 of 8 with swap, 2 of 8
# without; then 11 of 11 saw it).  A run either reads stale data in
# most rounds or in none, though reclaim freed pages in most rounds of
# both; the cause is not traced.  Up to eight runs leave a 0.002%
# (at 1 in 4) to 0.4% (1 in 2) chance of a false failure.
anon_inject defer_lazyfree lazyfree
check "lazily freed page deferred: migrc_anon_reclaim (lazyfree) sees stale data (run $try of at most 8)" \
	stale_in lazyfree

# A clean page in the swap cache that reclaim freed: the write that
# swaps it back in passes do_swap_page() or wp_page_reuse(), whose
# barrier must finish the deferral; skipped, the readers miss the write.
anon_inject skip_write_flush swapcache
check "skipped write flush: migrc_anon_reclaim (swapcache) sees stale data (run $try of at most 8)" \
	stale_in swapcache

# The same page's swap entry moved away by UFFDIO_MOVE (patch
# migrc/0025): UFFDIO_COPY fills the emptied address with no barrier
# that knows the old data, so move_swap_pte() must flush first.
anon_inject skip_move_flush move
check "skipped move flush: migrc_anon_reclaim (move) sees stale data (run $try of at most 8)" \
	stale_in move

# And nothing injected: the same runs pass on the debug kernel.
inject none reuse none
check "nothing injected: reuse passes on the debug kernel (status $rc)" \
	[ "$rc" -eq 0 ]
[ "$fails" -eq 0 ]
