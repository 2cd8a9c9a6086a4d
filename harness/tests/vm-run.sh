#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Self-tests of harness/vm-run, TAP output.  Each boots vm-run's default
# kernel ($MIGRC_KERNEL: the debug kernel under make check, else the
# patched one; about 5 s under TCG) and checks one promise of vm-run:
# topology, tiers, exit status, that kernel reports and timeouts fail the
# run, that the guest has the writable places programs expect, that
# --prealloc makes QEMU touch all guest RAM before the boot (and is
# refused beyond the host's free memory), and that --check boots nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/harness/vm-run
n=0 fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else nok "$desc"; fi; }

echo "TAP version 13"
echo "1..15"

# 1-3: tiered: node 0 has the CPUs, node 1 none; two distinct tiers;
# the kernel picked node 1 as node 0's demotion target.
"$vm" --topo tiered -- sh -c '
	echo cpus0=$(cat /sys/devices/system/node/node0/cpulist)
	echo cpus1=$(cat /sys/devices/system/node/node1/cpulist)
	for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
		echo tier $(basename $t) $(cat $t/nodelist)
	done
	dmesg | grep "Demotion targets"' > "$tmp/tiered" 2>&1
cat "$tmp/tiered" | sed 's/^/# /'
check "tiered: node 0 has CPUs, node 1 is CPU-less" \
	sh -c "grep -q '^cpus0=0' '$tmp/tiered' && grep -q '^cpus1=\$' '$tmp/tiered'"
check "tiered: nodes 0 and 1 are in different memory tiers" \
	sh -c "grep -q '^tier memory_tier[0-9]* 0\$' '$tmp/tiered' &&
	       grep -q '^tier memory_tier[0-9]* 1\$' '$tmp/tiered' &&
	       [ \$(grep -c '^tier ' '$tmp/tiered') -eq 2 ]"
check "tiered: Demotion targets for Node 0: preferred: 1" \
	grep -q "Demotion targets for Node 0: preferred: 1" "$tmp/tiered"

# 4: numa2: both nodes have CPUs and memory.
"$vm" --topo numa2 --cpus 2 -- sh -c '
	for n in 0 1; do
		echo node$n cpus=$(cat /sys/devices/system/node/node$n/cpulist) \
			$(grep MemTotal /sys/devices/system/node/node$n/meminfo |
			  awk "{print \"memkb=\" \$4}")
	done' > "$tmp/numa2" 2>&1
cat "$tmp/numa2" | sed 's/^/# /'
check "numa2: both nodes have CPUs and memory" \
	sh -c "grep -Eq '^node0 cpus=0 memkb=[1-9]' '$tmp/numa2' &&
	       grep -Eq '^node1 cpus=1 memkb=[1-9]' '$tmp/numa2'"

# 5: the guest command's exit status comes back.
"$vm" -- sh -c 'exit 7' > "$tmp/rc" 2>&1
rc=$?
check "guest exit status 7 comes back (got $rc)" [ "$rc" -eq 7 ]

# 6: the command's output is streamed (with arguments quoted as given).
"$vm" -- echo "it's  two  spaces" > "$tmp/echo" 2>&1
check "command output and quoting survive" grep -q "it's  two  spaces" "$tmp/echo"

# 7: a WARN in the guest fails the run even though the command succeeds.
"$vm" -- sh -c 'echo WARNING > /sys/kernel/debug/provoke-crash/DIRECT; exit 0' \
	> "$tmp/warn" 2>&1
rc=$?
check "a kernel WARN fails the run (status $rc)" [ "$rc" -eq 125 ]

# 8: a timeout fails the run.
"$vm" --timeout 25 -- sleep 600 > "$tmp/timeout" 2>&1
rc=$?
check "a timeout fails the run (status $rc)" [ "$rc" -eq 124 ]

# 9: bad arguments are refused before anything boots.
"$vm" --topo bogus -- true > "$tmp/bad" 2>&1
rc=$?
check "bad --topo is a usage error with a message (status $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q 'tiered or numa2' '$tmp/bad'"

# 10-11: what a user's workload expects: /dev/shm (POSIX shared memory),
# /dev/pts, writable /tmp, /var/tmp and /run, the /dev/fd links; and init
# said nothing about a failed setup.
"$vm" -- sh -c '
	ls -ld /dev/shm
	grep -q "^devpts /dev/pts " /proc/mounts && echo "pts mounted"
	for d in /dev/shm /tmp /var/tmp /run /run/lock; do
		f=$d/.vmrun-test.$$
		touch "$f" && rm "$f" && echo "writable $d"
	done
	[ -e /dev/fd/0 ] && echo "fd links"
	python3 -c "from multiprocessing import shared_memory as s
m = s.SharedMemory(create=True, size=4096); m.buf[0] = 1; m.close(); m.unlink()
print(\"shm ok\")"' > "$tmp/shm" 2>&1
rc=$?
sed 's/^/# /' "$tmp/shm"
check "POSIX shared memory works in the guest (status $rc)" \
	sh -c "[ $rc -eq 0 ] && grep -qx 'shm ok' '$tmp/shm' &&
	       grep -q '^drwxrwxrwt .* /dev/shm\$' '$tmp/shm'"
check "guest /dev/pts, /dev/fd and writable /dev/shm /tmp /var/tmp /run; no init complaint" \
	sh -c "for w in 'pts mounted' 'fd links' 'writable /dev/shm' 'writable /tmp' \
		'writable /var/tmp' 'writable /run' 'writable /run/lock'; do
			grep -qx \"\$w\" '$tmp/shm' || exit 1
		done
		! grep -q 'vmrun-init:' '$tmp/shm'"

# 12-13: --prealloc has QEMU touch all guest RAM before the boot: the
# QEMU process is resident over both nodes while the guest idles, and
# without it only over what the boot touched.  The QEMU process is found
# by a marker on its kernel command line.
qemu_rss_max() {
	marker=$1; shift
	"$vm" --mem 512M,512M --append "vmrun.test=$marker" "$@" -- sleep 6 \
		> "$tmp/$marker" 2>&1 &
	vpid=$! max=0
	while kill -0 "$vpid" 2>/dev/null; do
		for p in $(pgrep -f "vmrun.test=$marker" 2>/dev/null); do
			r=$(awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$p/status" 2>/dev/null)
			[ "${r:-0}" -gt "$max" ] && max=$r
		done
		sleep 0.5
	done
	wait "$vpid"
	echo "$max $?"
}
set -- $(qemu_rss_max "prealloc$$" --prealloc)
with=$1 with_rc=$2
set -- $(qemu_rss_max "lazy$$")
without=$1 without_rc=$2
echo "# QEMU resident: $with MB with --prealloc, $without MB without (1024 MB of guest RAM)"
check "--prealloc: the boot succeeds, QEMU resident over all guest RAM ($with MB of 1024, status $with_rc)" \
	sh -c "[ '$with_rc' -eq 0 ] && [ '$with' -ge 1024 ]"
check "without --prealloc: guest RAM is touched lazily ($without MB of 1024, status $without_rc)" \
	sh -c "[ '$without_rc' -eq 0 ] && [ '$without' -gt 0 ] && [ '$without' -lt 1024 ]"

# 14: preallocating more than the host has is a usage error, before QEMU
# starts (without the check QEMU fails, or the host's OOM killer acts).
"$vm" --prealloc --mem 1G,100000G -- true > "$tmp/toomuch" 2>&1
rc=$?
sed 's/^/# /' "$tmp/toomuch" | head -3
check "--prealloc beyond the host's MemAvailable is refused (status $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q 'host has [0-9]* MB available' '$tmp/toomuch'"

# 15: --check boots nothing: the command (false) never runs, no run
# directory is made, and good arguments give status 0.
before=$(ls -d "$top"/build/vm/run.* 2>/dev/null | wc -l)
"$vm" --check --prealloc --mem 64M,64M -- false > "$tmp/check" 2>&1
rc=$?
after=$(ls -d "$top"/build/vm/run.* 2>/dev/null | wc -l)
check "--check validates and boots nothing (status $rc, run directories $before -> $after)" \
	sh -c "[ $rc -eq 0 ] && [ $before -eq $after ] && [ ! -s '$tmp/check' ]"

[ "$fails" -eq 0 ]
