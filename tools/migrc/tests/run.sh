#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# End-to-end tests of the migrc binary against fixtures, through the
# MIGRC_PROC / MIGRC_TRACEFS / MIGRC_NO_PERF overrides.  TAP output.
#
# usage: MIGRC=/path/to/migrc sh tests/run.sh

here=$(cd "$(dirname "$0")" && pwd)
fix=$here/fixtures
MIGRC=${MIGRC:-$here/../migrc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/migrc-e2e.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
failed=0
echo "TAP version 13"

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -s "$tmp/err" ] && sed 's/^/# stderr: /' "$tmp/err" | head -5
}

skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

# check NAME CONDITION...: runs the condition with sh -c semantics
check() {
	name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# run EXPECTED_RC CMD...: run, keep stdout/stderr, compare the exit code
run() {
	want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq "$want" ] || echo "# exit $rc, expected $want: $*"
	[ "$rc" -eq "$want" ]
}

has() { grep -q -- "$1" "$2"; }
errhas() { [ -s "$tmp/err" ] && grep -qi -- "$1" "$tmp/err"; }

mkproc() {	# mkproc DIR INTERRUPTS VMSTAT
	rm -rf "$1"
	cp -r "$fix/proc-x86-4cpu" "$1"
	cp "$fix/$2" "$1/interrupts"
	cp "$fix/$3" "$1/vmstat"
}

export MIGRC_NO_PERF=1
export MIGRC_TRACEFS="$fix/tracefs-6.12"
P=$tmp/proc
export MIGRC_PROC="$P"

# --- help and usage ---
for sub in "" stat compare trace; do
	check "help: migrc $sub --help exits 0" run 0 $MIGRC $sub --help
done
check "usage: unknown command exits 1 with a message" \
	eval 'run 1 $MIGRC frobnicate && errhas "unknown command"'
check "usage: stat without a command exits 1" eval 'run 1 $MIGRC stat && errhas "command"'
check "usage: stat -a -I bogus exits 1" eval 'run 1 $MIGRC stat -a -I bogus && errhas "seconds"'
check "usage: stat with a command and bad option exits 125" \
	run 125 $MIGRC stat -I 1 -- true

# --- stat on a fake /proc ---
mkproc "$P" interrupts-x86-4cpu vmstat-migrc
check "stat -- true on fake proc exits 0" run 0 $MIGRC stat -o "$tmp/true.json" -- true
check "stat: JSON has the schema keys" eval '
	for k in "\"tool\": \"migrc\"" "\"version\": 1" "\"kernel\": \"6.12.0-migrc\"" \
		"\"ncpus\": 4" "\"per_cpu\": \[0,0,0,0\]" "\"total\": 0" "\"exit_status\": 0" \
		"\"tlb_flush\": null" "\"dTLB-load-misses\": null" "\"absent\"" "migrc=on"; do
		has "$k" "$tmp/true.json" || { echo "# missing $k"; exit 1; }
	done'
check "stat: summary goes to stderr" eval 'errhas "TLB shootdowns" && [ ! -s "$tmp/out" ]'

mkproc "$P" interrupts-x86-4cpu vmstat-migrc
check "stat: exact deltas over the command" eval '
	run 0 $MIGRC stat --label after -o "$tmp/delta.json" -- sh -c \
		"cp $fix/interrupts-x86-4cpu-after $P/interrupts; cp $fix/vmstat-migrc-after $P/vmstat" &&
	has "\"per_cpu\": \[100,200,300,400\]" "$tmp/delta.json" &&
	has "\"total\": 1000" "$tmp/delta.json" &&
	has "\"pgmigrate_success\": 4096" "$tmp/delta.json" &&
	has "\"nr_tlb_remote_flush\": 250" "$tmp/delta.json" &&
	has "\"migrc_flushed\": 30" "$tmp/delta.json" &&
	! has "pgfault" "$tmp/delta.json"'

mkproc "$P" interrupts-x86-4cpu vmstat-plain
check "stat: absent counters are named" eval '
	run 0 $MIGRC stat -q -o "$tmp/plain.json" -- true &&
	has "nr_tlb_\*: absent" "$tmp/plain.json" && has "migrc_\*: absent" "$tmp/plain.json"'

mkproc "$P" interrupts-arm64-4cpu vmstat-plain
check "stat: no TLB line gives null and a reason" eval '
	run 0 $MIGRC stat -q -o "$tmp/arm.json" -- true &&
	has "\"tlb_shootdowns\": null" "$tmp/arm.json" && has "no \\\\\"TLB:\\\\\" line" "$tmp/arm.json"'

mkproc "$P" interrupts-x86-4cpu vmstat-migrc
check "stat: exit status of the command is passed through" run 7 $MIGRC stat -q -- sh -c 'exit 7'
check "stat: killed by a signal gives 128+N" run 137 $MIGRC stat -q -- sh -c 'kill -9 $$'
check "stat: command not found gives 127" eval 'run 127 $MIGRC stat -q -- /nonexistent/cmd &&
	errhas "cannot execute"'

mkproc "$P" interrupts-x86-4cpu vmstat-migrc
check "stat: CPU hotplug during the run gives 125" eval '
	run 125 $MIGRC stat -q -- cp $fix/interrupts-x86-4cpu-hotplug $P/interrupts &&
	errhas "hotplug"'
mkproc "$P" interrupts-x86-4cpu vmstat-migrc
check "stat: vmstat counter vanishing during the run gives 125" eval '
	run 125 $MIGRC stat -q -- cp $fix/vmstat-migrc-after-missing $P/vmstat &&
	errhas "disappeared"'
for bad in interrupts-truncated interrupts-tlb-short interrupts-tlb-garbage \
	   interrupts-no-header interrupts-empty; do
	mkproc "$P" $bad vmstat-migrc
	check "stat: malformed $bad gives 125 and a message" eval '
		run 125 $MIGRC stat -q -- true && errhas "interrupts"'
done
for bad in vmstat-truncated vmstat-garbage vmstat-noval vmstat-empty; do
	mkproc "$P" interrupts-x86-4cpu $bad
	check "stat: malformed $bad gives 125 and a message" eval '
		run 125 $MIGRC stat -q -- true && errhas "vmstat"'
done
check "stat: missing /proc root gives 125" eval '
	MIGRC_PROC=$tmp/nonexistent run 125 $MIGRC stat -q -- true && errhas "cannot open"'

# --- window mode ---
mkproc "$P" interrupts-x86-4cpu vmstat-migrc
check "stat -a -I 0.1 -n 2: two intervals, JSON with intervals" eval '
	run 0 $MIGRC stat -a -I 0.1 -n 2 -o "$tmp/win.json" &&
	[ "$(grep -c "^ *0\.[0-9]" "$tmp/out")" -eq 2 ] &&
	has "\"intervals\"" "$tmp/win.json" && has "\"command\": \[\]" "$tmp/win.json"'
mkproc "$P" interrupts-truncated vmstat-migrc
check "stat -a: malformed proc gives 2" eval '
	run 2 $MIGRC stat -a -I 0.1 -n 1 && errhas "truncated"'

# --- compare ---
B=$fix/run-before.json
A=$fix/run-after.json
check "compare: table" eval 'run 0 $MIGRC compare "$B" "$A" && has "BEFORE" "$tmp/out" &&
	has "91.36%" "$tmp/out" && has "CPU15" "$tmp/out"'
check "compare: csv" eval 'run 0 $MIGRC compare -f csv "$B" "$A" &&
	has "^TLB shootdowns (/proc/interrupts),total,21430968,1851680,91.36$" "$tmp/out"'
check "compare: json" eval 'run 0 $MIGRC compare --format json "$B" "$A" &&
	head -c 1 "$tmp/out" | grep -q "{" && has "\"reduction_pct\"" "$tmp/out"'
check "compare: svg" eval 'run 0 $MIGRC compare --svg "$tmp/c.svg" "$B" "$A" &&
	head -c 4 "$tmp/c.svg" | grep -q "<svg" && [ "$(tail -n 1 "$tmp/c.svg")" = "</svg>" ] &&
	[ "$(grep -c "<rect" "$tmp/c.svg")" -gt 32 ]'
check "compare: --label overrides column names" eval '
	run 0 $MIGRC compare -l vanilla,migrc "$B" "$A" && has "vanilla" "$tmp/out"'
check "compare: three runs from stat" eval '
	run 0 $MIGRC compare "$tmp/true.json" "$tmp/delta.json" "$tmp/plain.json" &&
	has "red.RUN2" "$tmp/out"'
check "compare: different CPU counts warn and exit 4" eval '
	run 4 $MIGRC compare "$B" "$fix/run-64cpu.json" && errhas "MISMATCH" &&
	has "WARNING" "$tmp/out"'
check "compare: --allow-mismatch exits 0" \
	run 0 $MIGRC compare --allow-mismatch "$B" "$fix/run-64cpu.json"
check "compare: runs without TLB data compare" eval '
	run 0 $MIGRC compare "$fix/run-nulls.json" "$A" && errhas "no TLB shootdown data"'
for bad in run-invalid run-truncated run-empty run-not-migrc run-version2 run-bad-total \
	   run-bad-ncpus run-bad-type; do
	check "compare: $bad.json gives 2 and a message" eval '
		run 2 $MIGRC compare "$B" "$fix/$bad.json" && errhas "$bad.json"'
done
check "compare: unreadable file gives 2" eval '
	run 2 $MIGRC compare "$B" "$tmp/missing.json" && errhas "cannot open"'
check "compare: one file is a usage error" run 1 $MIGRC compare "$B"
check "compare: unknown format is a usage error" run 1 $MIGRC compare -f xml "$B" "$A"

# --- stat --sources: it degrades to "null" plus a reason, never fails ---
check "help: stat --help describes --sources" eval '
	run 0 $MIGRC stat --help && has "-S, --sources" "$tmp/out" &&
	has "remote ipi send" "$tmp/out"'
check "usage: stat --sources=x with a command exits 125" eval '
	MIGRC_TRACEFS=$tmp/nonexistent run 125 $MIGRC stat --sources=x -- true &&
	errhas "sources"'
check "usage: stat --sources=x in window mode exits 1" eval '
	MIGRC_TRACEFS=$tmp/nonexistent run 1 $MIGRC stat -a -I 1 -n 1 --sources=x'
mkproc "$P" interrupts-x86-4cpu vmstat-migrc
check "stat --sources: no tracefs gives null sources and a reason" eval '
	MIGRC_TRACEFS=$tmp/nonexistent run 0 $MIGRC stat --sources -o "$tmp/s1.json" -- true &&
	errhas "shootdowns cannot be attributed: tracefs not found" &&
	errhas "shootdown sources: not available" &&
	has "\"sources\": null" "$tmp/s1.json" && has "sources: tracefs not found" "$tmp/s1.json"'
cp -r "$fix/tracefs-6.12" "$tmp/notlb"
rm -rf "$tmp/notlb/events/tlb"
check "stat --sources: no tlb:tlb_flush gives null sources and names it" eval '
	MIGRC_TRACEFS=$tmp/notlb run 0 $MIGRC stat -q --sources -o "$tmp/s2.json" -- true &&
	errhas "tlb:tlb_flush: tracepoint not available" && has "\"sources\": null" "$tmp/s2.json"'
cp -r "$fix/tracefs-6.12" "$tmp/tfs-src"
check "stat --sources: instance that cannot be set up is removed, command still measured" eval '
	MIGRC_TRACEFS=$tmp/tfs-src run 3 $MIGRC stat -q --sources -o "$tmp/s3.json" -- sh -c "exit 3" &&
	errhas "cannot enable tlb:tlb_flush" && has "\"exit_status\": 3" "$tmp/s3.json" &&
	[ -z "$(ls "$tmp/tfs-src/instances")" ]'
check "stat -a --sources: window mode degrades the same way" eval '
	MIGRC_TRACEFS=$tmp/nonexistent run 0 $MIGRC stat -a -I 0.1 -n 1 --sources -o "$tmp/s4.json" &&
	has "\"sources\": null" "$tmp/s4.json" && has "\"intervals\"" "$tmp/s4.json"'
check "stat without --sources writes no sources key" eval '
	run 0 $MIGRC stat -q -o "$tmp/s5.json" -- true && ! has "\"sources\"" "$tmp/s5.json"'
check "compare: sources side by side, total and reduction" eval '
	run 0 $MIGRC compare -f csv "$fix/run-sources-off.json" "$fix/run-sources-on.json" &&
	has "^shootdown sources (IPI sends),demotion,300,20,93.33$" "$tmp/out" &&
	has "^shootdown sources (IPI sends),migrc:alloc,,9,$" "$tmp/out" &&
	has "^shootdown sources (IPI sends),total,390,123,68.46$" "$tmp/out"'
check "compare: table shows the sources section" eval '
	run 0 $MIGRC compare "$fix/run-sources-off.json" "$fix/run-sources-on.json" &&
	has "^shootdown sources (IPI sends)$" "$tmp/out" && has "migrc:timeout" "$tmp/out"'
check "compare: runs without sources show no sources section" eval '
	run 0 $MIGRC compare "$B" "$A" && ! has "shootdown sources" "$tmp/out"'
check "compare: run-bad-sources.json gives 2 and a message" eval '
	run 2 $MIGRC compare "$B" "$fix/run-bad-sources.json" && errhas "add up"'

# --- trace ---
check "trace -i: reasons and histogram" eval '
	run 0 $MIGRC trace -i "$fix/trace-migrc.txt" -j "$tmp/trace.json" &&
	has "migrc_flush: 6 events, 656 pages" "$tmp/out" && has "page cache write" "$tmp/out" &&
	has "\[512us, 1.02ms)" "$tmp/out" && has "\"flush_events\": 6" "$tmp/trace.json"'
check "trace -i: no mm_migrate_batch event, no batch section" eval '
	! has "migration batches" "$tmp/out" && has "\"batches\": null" "$tmp/trace.json"'
check "trace --help: describes mm_migrate_batch" eval '
	run 0 $MIGRC trace --help && has "migrate:mm_migrate_batch" "$tmp/out"'
check "trace -i: migration batches, exact numbers" eval '
	run 0 $MIGRC trace -i "$fix/trace-batch.txt" -j "$tmp/batch.json" &&
	has "^migration batches (mm_migrate_batch): 6 (523 folios, 520 moved, 4.0 MiB)$" "$tmp/out" &&
	has "^  (4 mm_migrate_batch events with a missing or malformed field ignored)$" "$tmp/out" &&
	has "^  unmap           1.100   32.7%             35.0$" "$tmp/out" &&
	has "^  flush           0.070    2.1%              7.5$" "$tmp/out" &&
	has "^  copy            1.725   51.3%             11.0   (batched copy ran in 3 of 6 batches)$" "$tmp/out" &&
	has "^  move            0.468   13.9%             37.5$" "$tmp/out" &&
	has "^  first folio usable: median 70.0 us, max 2400.0 us (5 batches moved folios)$" "$tmp/out"'
check "trace -i: batch sizes, non-empty log2 buckets only" eval '
	has "^  1 *2 |@*|$" "$tmp/out" && has "^  2-3 *2 |" "$tmp/out" &&
	has "^  4-7 *1 |" "$tmp/out" && has "^  512-1023 *1 |" "$tmp/out" &&
	[ "$(grep -c "^  [0-9][-0-9]* *[0-9]* |" "$tmp/out")" -eq 4 ]'
check "trace -i: batches per reason" eval '
	has "^  demotion  *2  *5  *0.140  *0.030  *0.502  *0.140$" "$tmp/out" &&
	has "^  numa_misplaced  *2  *5  *0.055  *0.009  *0.021  *0.021$" "$tmp/out" &&
	has "^  syscall_or_cpuset  *1  *512  *0.900  *0.030  *1.200  *0.300$" "$tmp/out" &&
	has "^  compaction  *1  *1  *0.005  *0.001  *0.002  *0.007$" "$tmp/out"'
check "trace -i: batches in the JSON" eval '
	missing=0
	for k in "\"batches\": 6," "\"folios\": 523," "\"moved\": 520," "\"bytes\": 4222976," \
		"\"totals_ns\": {\"unmap\": 1100000,\"flush\": 70000,\"copy\": 1724700,\"move\": 468000}" \
		"\"medians_ns\": {\"unmap\": 35000,\"flush\": 7500,\"copy\": 11000,\"move\": 37500}" \
		"\"median_batches\": 6," "\"batched_copy\": 3," "\"skipped\": 4" \
		"\"first_usable_ns\": {\"batches\": 5,\"median\": 70000,\"max\": 2400000}" \
		"{\"lo\": 2,\"hi\": 4,\"batches\": 2}" "{\"lo\": 512,\"hi\": 1024,\"batches\": 1}" \
		"\"numa_misplaced\": {\"batches\": 2,\"folios\": 5,\"moved\": 2,\"bytes\": 8192,"; do
		has "$k" "$tmp/batch.json" || { echo "# missing $k"; missing=1; }
	done
	[ $missing -eq 0 ]'
check "trace -i: one reason, no per-reason table" eval '
	grep "reason=demotion" "$fix/trace-batch.txt" >"$tmp/one.txt" &&
	run 0 $MIGRC trace -i "$tmp/one.txt" && has "^migration batches (mm_migrate_batch): 2 " "$tmp/out" &&
	! has "^  reason  *batches" "$tmp/out"'
check "trace: missing migrc tracepoints give 3" eval '
	MIGRC_TRACEFS=$fix/tracefs-nomigrc run 3 $MIGRC trace -- true && errhas "absent"'
check "trace: missing tracefs gives 3" eval '
	MIGRC_TRACEFS=$tmp/nonexistent run 3 $MIGRC trace -- true && errhas "tracefs"'
cp -r "$fix/tracefs-6.12" "$tmp/tfs"
check "trace: instance that cannot be set up gives 2 and is removed" eval '
	MIGRC_TRACEFS=$tmp/tfs run 2 $MIGRC trace -- true && errhas "cannot" &&
	[ -z "$(ls "$tmp/tfs/instances")" ]'
check "trace: mm_migrate_batch is loaded silently, and its absence is silent" eval '
	! errhas "mm_migrate_batch" && rm -rf "$tmp/tfs" && cp -r "$fix/tracefs-6.12" "$tmp/tfs" &&
	rm -r "$tmp/tfs/events/migrate" && MIGRC_TRACEFS=$tmp/tfs run 2 $MIGRC trace -- true &&
	errhas "cannot enable migrc:migrc_flush" && ! errhas "mm_migrate_batch"'
rm -rf "$tmp/tfs"
cp -r "$fix/tracefs-6.12" "$tmp/tfs"
sed -i "/first_usable_ns;/d" "$tmp/tfs/events/migrate/mm_migrate_batch/format"
check "trace: mm_migrate_batch without a field is left out with a warning" eval '
	MIGRC_TRACEFS=$tmp/tfs run 2 $MIGRC trace -- true &&
	errhas "warning: migrate:mm_migrate_batch lacks a field" &&
	errhas "cannot enable migrc:migrc_flush"'
check "trace: unreadable input gives 2" run 2 $MIGRC trace -i "$tmp/missing.txt"
check "trace: usage error gives 1" run 1 $MIGRC trace

# --- real system, unprivileged (perf_event_paranoid refusal) ---
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
   setpriv --reuid=65534 --regid=65534 --clear-groups "$MIGRC" --help >/dev/null 2>&1; then
	check "stat as an unprivileged user reports what needs root" eval '
		env -u MIGRC_PROC -u MIGRC_NO_PERF -u MIGRC_TRACEFS \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$MIGRC" stat -o - -q -- true >"$tmp/user.json" 2>"$tmp/err";
		has "\"tool\": \"migrc\"" "$tmp/user.json" &&
		grep -Eq "paranoid|Permission denied|not supported" "$tmp/user.json"'
else
	skip "stat as an unprivileged user reports what needs root" "not root or no setpriv"
fi

echo "1..$n"
[ "$failed" -eq 0 ] || echo "# $failed of $n tests failed"
[ "$failed" -eq 0 ]
