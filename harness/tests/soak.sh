#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Soak test: boot the tiered VM and run harness/workloads/soak (readers on
# every CPU checking every word while move_pages(), pwrite(), mprotect(),
# munmap()/mmap() reuse and fork() race with them) in a memory cgroup
# smaller than its working set, with demotion and NUMA-balancing promotion
# on and the multithreaded migration copy, so that migration, demotion,
# promotion and reclaim all run together.  Then check that nothing read
# wrong, that pages really moved and were demoted or reclaimed, that migrc
# has nothing pending once flushed, that no memory leaked, and that the
# kernel reported nothing.  TAP output.
#
# Usage: harness/tests/soak.sh [--kernel patched|debug|kasan|vanilla] [--seconds N]
#
#   --kernel K    the kernel to boot (default patched; patched, debug and
#                 kasan boot with migrc=on; vanilla has no migrc and no
#                 batched copy, and those steps and tests are skipped)
#   --seconds N   how long soak runs (default: $SOAK_SECONDS, else 60)
#
# Needs the built kernels (make kernel) and harness/build-selftests (run
# here if build/selftests/soak is missing or older than its source).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
usage() { sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//'; }

kernel=patched seconds=${SOAK_SECONDS:-60}
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) [ $# -ge 2 ] || { usage >&2; exit 2; }; kernel=$2; shift 2 ;;
	--seconds) [ $# -ge 2 ] || { usage >&2; exit 2; }; seconds=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
case $kernel in patched|debug|kasan|vanilla) ;; *) usage >&2; exit 2 ;; esac
case $seconds in ''|*[!0-9]*|0) usage >&2; exit 2 ;; esac

soak=$top/build/selftests/soak
if [ ! -x "$soak" ] ||
   [ -n "$(find "$top/harness/workloads/soak.c" -newer "$soak")" ]; then
	"$top/harness/build-selftests" >&2 || exit 2
fi

n=0 fails=0
tmp=$(mktemp -d)
# The guest script lives in the repository (build/, shared over 9p); the
# reclaim file does not: see scratch-ext4 below.
work=$(mktemp -d "$top/build/soak.XXXXXX")
trap 'rm -rf "$tmp" "$work"' EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() { d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
# val KEY: the value of "KEY: value" in the guest's output (empty if none).
val() { sed -n "s/^$1: //p" "$tmp/log" | tail -1; }
num() { v=$(val "$1"); case $v in ''|*[!0-9-]*) echo -1 ;; *) echo "$v" ;; esac; }

# Sizes.  soak's anon, file (tmpfs), prot (tmpfs) and fork regions and its
# reuse mapping, 16 + 16 + 8 + 4 + 4 MB, plus the fork children's
# copy-on-write copies (4 MB), are anonymous or shmem memory: without swap
# the memory cgroup can only demote them, never reclaim them.  The 64 MB
# reclaim file (ext4) comes on top.  memory.max = 80 MB leaves the file about
# 24 MB, so the readers' own refaults keep reclaiming it (and demoting to
# node 1 first), without an OOM kill.  The VM has 1 GB per node.
size_mb=16 reclaim_mb=64 limit_mb=80

cat > "$work/guest.sh" <<EOF
K=/sys/kernel/mm/migrc
M=/sys/kernel/mm/migrate
CG=/sys/fs/cgroup
vm() { awk -v k="\$1" '\$1 == k { v = \$2 } END { print v + 0 }' /proc/vmstat; }
snap() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
	cp /proc/vmstat /tmp/vmstat.\$1
	echo "\$1_memfree: \$(awk '/^MemFree:/ { print \$2 }' /proc/meminfo)"
	echo "\$1_pcp: \$(awk '\$1 == "count:" { s += \$2 } END { print s * 4 }' /proc/zoneinfo)"
	echo "\$1_memtotal: \$(awk '/^MemTotal:/ { print \$2 }' /proc/meminfo)"
	if [ -d \$K ]; then
		echo "\$1_pending_pages: \$(cat \$K/pending_pages)"
		echo "\$1_migrc_deferred_pages: \$(vm migrc_deferred_pages)"
		echo "\$1_migrc_flushed_pages: \$(vm migrc_flushed_pages)"
	fi
}

# The reclaim file lives on ext4, a filesystem in migrc's safe set (the
# repository's 9p mount is not: its pages would never be deferred).
"$top/harness/guest/scratch-ext4" -s $((reclaim_mb + 64)) /mnt/migrc-ext4 > /dev/null ||
	echo "setup_error: scratch-ext4"
snap before
if [ -d \$K ]; then
	echo "migrc_enabled: \$(cat \$K/enabled)"
fi
if [ -f \$M/copy_backend ]; then
	echo mt > \$M/copy_backend && echo 0 > \$M/copy_threads ||
		echo "setup_error: copy_backend"
	echo "copy_backend: \$(cat \$M/copy_backend)"
fi
echo 1 > /sys/kernel/mm/numa/demotion_enabled || echo "setup_error: demotion"
echo 2 > /proc/sys/kernel/numa_balancing || echo "setup_error: numa_balancing"

[ -f \$CG/cgroup.controllers ] || mount -t cgroup2 cgroup2 \$CG
grep -qw memory \$CG/cgroup.subtree_control ||
	echo +memory > \$CG/cgroup.subtree_control || echo "setup_error: +memory"
mkdir -p \$CG/soak
echo ${limit_mb}M > \$CG/soak/memory.max || echo "setup_error: memory.max"
echo 0 > \$CG/soak/memory.swap.max 2>/dev/null

sh -c "echo \\\$\\\$ > \$CG/soak/cgroup.procs &&
	exec $soak -t $seconds -s $size_mb -m $reclaim_mb -d /tmp -D /mnt/migrc-ext4" \
	> /tmp/soak.out 2> /tmp/soak.err
echo "soak_rc: \$?"
cat /tmp/soak.out
sed 's/^/soak stderr: /' /tmp/soak.err
echo "memcg_oom_kill: \$(awk '\$1 == "oom_kill" { print \$2 }' \$CG/soak/memory.events)"
grep -E '^(pgsteal|pgdemote|pgpromote|workingset_refault_file) ' \
	\$CG/soak/memory.stat | sed 's/^/memcg /'
rmdir \$CG/soak 2>/dev/null

[ -d \$K ] && echo 1 > \$K/flush
snap after
echo "vmstat deltas:"
awk 'NR == FNR { b[\$1] = \$2; next }
     \$1 ~ /^(pgdemote|pgsteal|pgpromote|pgmigrate|numa_|migrc_)/ &&
     \$2 != b[\$1] { printf "delta_%s: %d\n", \$1, \$2 - b[\$1] }' \
	/tmp/vmstat.before /tmp/vmstat.after
EOF

echo "TAP version 13"
echo "1..8"
append=migrc=on
[ "$kernel" = vanilla ] && append=
"$top/harness/vm-run" --kernel "$kernel" --topo tiered --cpus 2 \
	--append "$append" --timeout $((3 * seconds + 300)) \
	-- sh "$work/guest.sh" > "$tmp/log" 2>&1
vmrc=$?
sed 's/^/# /' "$tmp/log"

rc=$(num soak_rc)
check "soak exits 0: nothing read wrong ($(val verdict), status $rc)" \
	[ "$rc" -eq 0 ]

moved=$(num moved_pages)
check "pages moved between the tiers ($moved)" [ "$moved" -gt 0 ]

# pgsteal_kswapd, _direct etc. count global reclaim only; pgsteal_anon and
# pgsteal_file count memory cgroup reclaim too.
sum() { sed -n "s/^delta_$1: //p" "$tmp/log" | awk '{ s += $1 } END { print s + 0 }'; }
demoted=$(sum 'pgdemote_[a-z]*')
stolen=$(sum 'pgsteal_\(anon\|file\)')
check "pages demoted or reclaimed (pgdemote +$demoted, pgsteal +$stolen)" \
	[ $((demoted + stolen)) -gt 0 ]

# Free memory after the run, once flushed and with the caches dropped,
# against free memory before it.  Free is MemFree plus the pages on the
# per-CPU free lists (pcp "count:" in /proc/zoneinfo), which MemFree leaves
# out: they alone moved MemFree by up to 30 MB between runs of the same
# workload on vanilla, while MemFree + pcp stayed within 0.6 MB.  The
# tolerance is 1% of MemTotal (about 20 MB here): it covers per-CPU vmstat
# drift (under 1 MB here) and slab caches that grew and were not shrunk,
# while a leak of the pages soak used (about 120 MB at its peak, and many
# times that moved, written and reused) would exceed it.  The KASAN kernel
# keeps freed slab objects in its quarantine, up to 1/32 of memory: 4%
# there.
before=$(( $(num before_memfree) + $(num before_pcp) ))
after=$(( $(num after_memfree) + $(num after_pcp) ))
total=$(num before_memtotal)
tol=$((total / 100))
[ "$kernel" = kasan ] && tol=$((total * 4 / 100))
good=0
[ "$(num before_memfree)" -gt 0 ] && [ "$(num after_memfree)" -gt 0 ] &&
	[ "$after" -ge $((before - tol)) ] && good=1
check "no leaked memory: free + pcp ${before} kB before, ${after} kB after, $((after - before)) kB (tolerance ${tol} kB)" \
	[ $good -eq 1 ]

if [ "$kernel" = vanilla ]; then
	skip "migrc: nothing pending after the flush" "vanilla has no migrc"
	skip "migrc: migrc_deferred_pages - migrc_flushed_pages = 0" \
		"vanilla has no migrc"
	skip "migrc deferred flushes during the run" "vanilla has no migrc"
else
	pend=$(num after_pending_pages)
	check "migrc: nothing pending after the flush (pending_pages $pend)" \
		[ "$pend" -eq 0 ]
	# The admin guide: deferred - flushed is the pending count.
	d=$(num after_migrc_deferred_pages) f=$(num after_migrc_flushed_pages)
	good=0
	[ "$d" -ge 0 ] && [ "$f" -ge 0 ] && [ $((d - f)) -eq 0 ] && good=1
	check "migrc: migrc_deferred_pages - migrc_flushed_pages = $((d - f)) after the flush" \
		[ $good -eq 1 ]
	dd=$(num delta_migrc_deferred_pages)
	check "migrc deferred flushes during the run (migrc_deferred_pages +$dd)" \
		[ "$dd" -gt 0 ]
fi

check "the VM run ends without a kernel report or timeout (vm-run status $vmrc)" \
	[ "$vmrc" -eq 0 ]
[ "$fails" -eq 0 ]
