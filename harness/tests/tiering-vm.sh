#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# harness/guest/tiering in the VM (what harness/workload --tiering and
# --damon run), one boot of the tiered topology, TAP output:
# numa sets NUMA balancing's tiering mode and the scaled hot threshold;
# damon starts one kdamond per node with the scaled intervals, refuses to
# start a second time, and really moves pages both ways: a file read hot
# on node 1 is promoted (migrate_hot sz_applied), a file left cold on
# node 0 is demoted (migrate_cold sz_applied); a kernel without the DAMON
# sysfs interface (hidden here under a tmpfs) is refused with status 1.
# harness/guest/numa-scan-scale (harness/demo's part 1) sets the three
# scan periods to N x the defaults, and 1 puts the defaults back.
# --tcg-scale 1 keeps DAMON's intervals at their defaults so this takes
# seconds, not minutes.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
sel=$top/build/selftests
n=0 fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
# has DESC PATTERN: a line of the guest's output matches PATTERN.
has() {
	if grep -Eq "$2" "$tmp/out"; then ok "$1"; else nok "$1"; fi
}
# applied ACTION: the sz_applied that the run reported for ACTION.
applied() {
	sed -n "s/^tiering: damon: node [0-9] $1:.* sz_applied=\([0-9]*\).*/\1/p" "$tmp/out"
}

[ -x "$sel/ro-stream" ] || { echo "Bail out! $sel/ro-stream not built (make selftests)"; exit 1; }
echo "TAP version 13"
echo "1..11"
t=$top/harness/guest/tiering
a=/sys/kernel/mm/damon/admin/kdamonds
"$top/harness/vm-run" --topo tiered --cpus 2 --mem 1G,1G --timeout 300 -- sh -c "
	$t numa -- sh -c 'echo numa: hot=\$(cat /sys/kernel/debug/sched/numa_balancing/hot_threshold_ms) \
		mode=\$(cat /proc/sys/kernel/numa_balancing)'
	echo numa_rc=\$?
	$top/harness/guest/numa-scan-scale 3
	d=/sys/kernel/debug/sched/numa_balancing
	echo scan3: \$(cat \$d/scan_delay_ms) \$(cat \$d/scan_period_min_ms) \$(cat \$d/scan_period_max_ms)
	$top/harness/guest/numa-scan-scale 1 > /dev/null
	echo scan1: \$(cat \$d/scan_delay_ms) \$(cat \$d/scan_period_min_ms) \$(cat \$d/scan_period_max_ms)
	echo 0 > /proc/sys/kernel/numa_balancing
	$t --tcg-scale 1 damon -- sh -c '
		echo damon: states=\$(cat $a/0/state),\$(cat $a/1/state) \
			sample=\$(cat $a/1/contexts/0/monitoring_attrs/intervals/sample_us) \
			aggr=\$(cat $a/1/contexts/0/monitoring_attrs/intervals/aggr_us)
		$t damon -- true; echo again_rc=\$?
		dd if=/dev/zero of=/dev/shm/cold bs=1M count=64 2>/dev/null
		numactl --membind=1 $sel/ro-stream -k -s 64 -t 15 -d /dev/shm
	'
	echo damon_rc=\$?
	mount -t tmpfs none /sys/kernel/mm/damon
	$t damon -- true
	echo missing_rc=\$?
" > "$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out" | grep -E '^# (numa|damon|tiering|again|missing|ro-stream|scan)'
[ "$rc" -eq 0 ] || echo "# vm-run exited $rc"

has "numa: hot_threshold_ms 1000 x 10, numa_balancing 2" '^numa: hot=10000 mode=2$'
has "numa: the command's status is kept" '^numa_rc=0$'
if grep -q '^numa-scan-scale: scan_delay_ms=3000 scan_period_min_ms=3000 scan_period_max_ms=180000 (defaults x 3)$' "$tmp/out" &&
   grep -q '^scan3: 3000 3000 180000$' "$tmp/out"; then
	ok "numa-scan-scale 3: scan periods 3000/3000/180000 ms, said and in debugfs"
else
	nok "numa-scan-scale 3: scan periods 3000/3000/180000 ms, said and in debugfs"
fi
has "numa-scan-scale 1: the defaults back (1000/1000/60000 ms)" '^scan1: 1000 1000 60000$'
has "damon: two kdamonds on, intervals at tcg-scale 1" '^damon: states=on,on sample=5000 aggr=100000$'
has "damon: a second start is refused" '^tiering: DAMON is already running'
hot=$(applied migrate_hot) cold=$(applied migrate_cold)
if [ "${hot:-0}" -gt 0 ]; then ok "damon: a hot file on node 1 promoted (migrate_hot sz_applied=$hot)"
else nok "damon: a hot file on node 1 promoted (migrate_hot sz_applied=${hot:-none})"; fi
if [ "${cold:-0}" -gt 0 ]; then ok "damon: a cold file on node 0 demoted (migrate_cold sz_applied=$cold)"
else nok "damon: a cold file on node 0 demoted (migrate_cold sz_applied=${cold:-none})"; fi
has "damon: pgmigrate_success moved" '^tiering: vmstat deltas:.* pgmigrate_success=[1-9]'
has "damon: the workload's status is kept" '^damon_rc=0$'
if grep -q '^missing_rc=1$' "$tmp/out" &&
   grep -q '^tiering: this kernel has no DAMON sysfs interface' "$tmp/out"; then
	ok "damon: no DAMON sysfs interface: said, status 1"
else
	nok "damon: no DAMON sysfs interface: said, status 1"
fi
[ "$fails" -eq 0 ]
