#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The harness workloads refuse bad arguments, TAP output.  Runs on the
# host: every case below must exit 2, with a message, before the workload
# creates a file or moves a page; --help/-h must exit 0 and print usage.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
sel=${WORKLOAD_BIN:-$top/build/selftests}	# WORKLOAD_BIN: test other builds
n=0 fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }

# refused DESC PROGRAM ARGS...: status 2, an argument error on stderr
# (not some later setup failure, which also exits 2), no results on
# stdout, and nothing left in the scratch directory the workload was
# pointed at.
refused() {
	desc=$1
	prog=$2
	shift 2
	rm -rf "$tmp/dir" && mkdir "$tmp/dir"
	"$sel/$prog" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" -eq 2 ] && [ ! -s "$tmp/out" ] &&
	   grep -qE '^usage:|invalid|same node|unexpected argument' "$tmp/err" &&
	   [ -z "$(ls -A "$tmp/dir")" ]; then
		ok "$desc"
	else
		nok "$desc (status $rc)"
		sed 's/^/# /' "$tmp/err" | head -5
	fi
}

# helps DESC PROGRAM ARGS...: status 0 and a usage line on stdout.
helps() {
	desc=$1
	prog=$2
	shift 2
	"$sel/$prog" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" -eq 0 ] && grep -q '^usage:' "$tmp/out"; then
		ok "$desc"
	else
		nok "$desc (status $rc)"
	fi
}

for w in ro-stream soak reclaim-stream alloc-lat bg-writer anon-ro waitfor; do
	if [ ! -x "$sel/$w" ]; then
		echo "Bail out! $sel/$w not built (make selftests)"
		exit 1
	fi
done

echo "TAP version 13"
echo "1..119"
d=$tmp/dir
refused "ro-stream: trailing garbage in a size" ro-stream -d "$d" -s 12x
refused "ro-stream: size 0" ro-stream -d "$d" -s 0
refused "ro-stream: negative move count" ro-stream -d "$d" -n -1
refused "ro-stream: readers not a number" ro-stream -d "$d" -r abc
refused "ro-stream: empty interval" ro-stream -d "$d" -i ""
refused "ro-stream: node out of range" ro-stream -d "$d" -b 4096
refused "ro-stream: both nodes the same" ro-stream -d "$d" -a 1 -b 1
refused "ro-stream: stray argument" ro-stream -d "$d" extra
refused "ro-stream: unknown option" ro-stream -d "$d" -q
refused "ro-stream: -H without -D (a still window)" ro-stream -d "$d" -k -H 40
refused "ro-stream: -D without -H" ro-stream -d "$d" -k -D 120
refused "ro-stream: -H 100 (no window)" ro-stream -d "$d" -k -H 100 -D 120
refused "ro-stream: a window with -w" ro-stream -d "$d" -w -H 40 -D 120
helps "ro-stream -h prints usage, status 0" ro-stream -h
helps "ro-stream --help prints usage, status 0" ro-stream --help
refused "soak: seed not a number" soak -d "$d" -D "$d" -S abc
refused "soak: 0 seconds" soak -d "$d" -D "$d" -t 0
refused "soak: too many readers" soak -d "$d" -D "$d" -r 99999
helps "soak --help prints usage, status 0" soak --help
refused "reclaim-stream: 0 passes" reclaim-stream -p 0
refused "reclaim-stream: size with a unit suffix" reclaim-stream -s 5M
refused "reclaim-stream: readers not a number" reclaim-stream -r x
refused "alloc-lat: page count with garbage" alloc-lat 12x
refused "alloc-lat: two arguments" alloc-lat 1 2
helps "alloc-lat --help prints usage, status 0" alloc-lat --help
refused "bg-writer: period below 10 us" bg-writer -f "$d/f" -p 5
refused "bg-writer: seconds with garbage" bg-writer -f "$d/f" -t 3x
refused "bg-writer: stray argument" bg-writer -f "$d/f" extra
refused "bg-writer: unknown mode" bg-writer -f "$d/f" -m write2
helps "bg-writer --help prints usage, status 0" bg-writer --help
# anon-ro: a small, short run in case a check ever lets a value through.
refused "anon-ro: size 0" anon-ro -t 1 -s 0
refused "anon-ro: trailing garbage in the seconds" anon-ro -s 1 -t 5s
refused "anon-ro: negative seconds" anon-ro -s 1 -t -1
refused "anon-ro: -p seals the buffer that -w writes" anon-ro -s 1 -t 1 -p -w 10
refused "anon-ro: -c 0" anon-ro -s 1 -t 1 -c 0
refused "anon-ro: -c above 100" anon-ro -s 1 -t 1 -c 101
refused "anon-ro: -c with garbage" anon-ro -s 1 -t 1 -c 90%
refused "anon-ro: -L without -c" anon-ro -s 1 -t 1 -L
refused "anon-ro: -H 0" anon-ro -s 1 -t 1 -H 0
refused "anon-ro: -H above 100" anon-ro -s 1 -t 1 -H 101
refused "anon-ro: -d 0" anon-ro -s 1 -t 1 -H 50 -d 0
refused "anon-ro: -d without a window (-H 100)" anon-ro -s 1 -t 1 -d 10
helps "anon-ro --help prints usage, status 0" anon-ro --help
# anon-ro -L reads /proc/kpageflags, the node's vmstat and /proc/zoneinfo:
# what it cannot read prints as "?", and the run goes on (root: -c reads
# frame numbers; unshare -m to hide the files behind /dev/null).
lru_line() {
	desc=$1
	want=$2
	shift 2
	"$@" "$sel/anon-ro" -s 4 -t 1 -i 1 -c 90 -L > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" -eq 0 ] && grep -qE "$want" "$tmp/out"; then
		ok "$desc"
	else
		nok "$desc (status $rc)"
		sed 's/^/# /' "$tmp/out" "$tmp/err" | head -5
	fi
}
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2> /dev/null; then
	ok "anon-ro -L: every field # SKIP needs root and unshare -m"
	ok "anon-ro -L: unreadable files print ?, status 0 # SKIP needs root and unshare -m"
else
	lru_line "anon-ro -L: every field" \
		' moved=[0-9.]+% unmoved=[0-9]+ in_window=[0-9]+ active=[0-9]+ referenced=[0-9]+ off_lru=[0-9]+ node_active_anon=[0-9]+ node_inactive_anon=[0-9]+ unreclaimable=[01]$'
	lru_line "anon-ro -L: unreadable files print ?, status 0" \
		' unmoved=[0-9]+ in_window=[0-9]+ active=\? referenced=\? off_lru=\? node_active_anon=[0-9]+ node_inactive_anon=[0-9]+ unreclaimable=\?$' \
		unshare -m sh -c 'mount --bind /dev/null /proc/kpageflags &&
			mount --bind /dev/null /proc/zoneinfo && exec "$@"' sh
fi
refused "waitfor: no -t" waitfor -m 10
refused "waitfor: -t 0" waitfor -t 0
refused "waitfor: -m 0 (met at once)" waitfor -m 0 -t 1
refused "waitfor: -f without -e" waitfor -f "$d/log" -t 1
refused "waitfor: -e not a regular expression" waitfor -f "$d/log" -e '(' -t 1
refused "waitfor: stray argument" waitfor -t 1 extra
WAITFOR_PID=12x refused "waitfor: WAITFOR_PID not a number" waitfor -t 1
helps "waitfor --help prints usage, status 0" waitfor --help

# waitfor_says DESC STATUS LINE ARGS...: waitfor exits STATUS and prints a
# line that begins with LINE (an empty LINE: nothing on stdout, and a read
# error on stderr).
waitfor_says() {
	desc=$1 want=$2 line=$3
	shift 3
	"$sel/waitfor" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ -n "$line" ]; then
		grep -q "^$line" "$tmp/out"
	else
		[ ! -s "$tmp/out" ] && grep -q "cannot read" "$tmp/err"
	fi
	said=$?
	if [ "$rc" -eq "$want" ] && [ "$said" -eq 0 ]; then
		ok "$desc"
	else
		nok "$desc (status $rc)"
		sed 's/^/# /' "$tmp/out" "$tmp/err" | head -5
	fi
}
# A line that comes half a second late, after lines that do not match
# and a partial one that matches only once it is whole.
printf 'anon-ro cycle: 1\nanon-ro cycled' > "$tmp/log"
(sleep 0.5; echo ': 2' >> "$tmp/log") &
waitfor_says "waitfor: a line that matches, status 0" 0 "waitfor: line after" \
	-f "$tmp/log" -e '^anon-ro cycled:' -t 5
wait
printf 'anon-ro cycle: 1\n' > "$tmp/log"
waitfor_says "waitfor: no line within -t, status 1" 1 "waitfor: timeout after [12] s" \
	-f "$tmp/log" -e '^anon-ro cycled:' -t 1
printf 'nr_free_pages 9\npgmigrate_success 100\n' > "$tmp/vmstat"
(sleep 0.5; printf 'nr_free_pages 9\npgmigrate_success 1100\n' > "$tmp/vmstat.new" &&
	mv "$tmp/vmstat.new" "$tmp/vmstat") &
WAITFOR_VMSTAT=$tmp/vmstat waitfor_says "waitfor: -m counts from its start, status 0" 0 \
	"waitfor: pages after [01] s, 1000 pages migrated" -m 1000 -t 5
wait
WAITFOR_VMSTAT=$tmp/vmstat waitfor_says "waitfor: -m not reached, status 1" 1 \
	"waitfor: timeout after [12] s, 0 pages migrated" -m 1 -t 1
sleep 0.3 &
WAITFOR_PID=$! waitfor_says "waitfor: WAITFOR_PID ended, status 1" 1 "waitfor: exited" -t 5
# A zombie has ended too: its parent (here exec'd into sleep) never reaps
# it, and kill -0 would call it alive until the timeout.
rm -f "$tmp/pid"
sh -c 'sleep 0.2 & echo $! > "$1.new" && mv "$1.new" "$1"; exec sleep 3' sh "$tmp/pid" &
until [ -s "$tmp/pid" ]; do sleep 0.05; done
WAITFOR_PID=$(cat "$tmp/pid") waitfor_says "waitfor: a zombie counts as ended" 1 \
	"waitfor: exited after [01] s" -t 2
wait
sleep 0.3 &
waitfor_says "waitfor: -k PID ended, status 1" 1 "waitfor: exited after [01] s" -k $! -t 5
refused "waitfor: -k not a number" waitfor -k 1x -t 1
refused "waitfor: -t 0x10 (decimal only)" waitfor -t 0x10
waitfor_says "waitfor: an unreadable FILE, status 3" 3 "" -f "$tmp/vmstat/no" -e x -t 1
waitfor_says "waitfor: the real /proc/vmstat parses" 1 "waitfor: timeout after [12] s" \
	-m 1099511627776 -t 1
printf 'pgmigrate_success\n' > "$tmp/vmstat"
WAITFOR_VMSTAT=$tmp/vmstat waitfor_says "waitfor: a malformed vmstat, status 3" 3 "" -m 1 -t 1

# harness/bench-copy checks its arguments before it boots anything.
bench_refused() {
	desc=$1
	shift
	"$top/harness/bench-copy" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" -eq 2 ] && grep -q '^bench-copy: .*interleave' "$tmp/err"; then
		ok "$desc"
	else
		nok "$desc (status $rc)"
		sed 's/^/# /' "$tmp/err" | head -5
	fi
}
bench_refused "bench-copy: --interleave below 2 rounds" --interleave 1
bench_refused "bench-copy: --interleave not a number" --interleave 2x
bench_refused "bench-copy: --interleave with --busy" --interleave 5 --busy

# harness/workload and harness/guest/tiering (which harness/workload runs
# in the guest) check their arguments before they boot or change anything:
# status 2 and the message PATTERN on stderr.  harness/workload is given a
# --mem that vm-run refuses, so that a check that lets a case through
# fails at once instead of booting VMs.
script_refused() {
	desc=$1 script=$2 pattern=$3
	shift 3
	"$top/$script" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "$pattern" "$tmp/err"; then
		ok "$desc"
	else
		nok "$desc (status $rc)"
		sed 's/^/# /' "$tmp/err" | head -5
	fi
}
w=harness/workload
script_refused "workload: --tiering with --damon" $w "choose one" --mem no --tiering --damon true
script_refused "workload: --tcg-scale 0" $w "invalid --tcg-scale" --mem no --damon --tcg-scale 0 true
script_refused "workload: --tcg-scale with garbage" $w "invalid --tcg-scale" --mem no --tiering --tcg-scale 10x true
script_refused "workload: --tcg-scale above 1000" $w "invalid --tcg-scale" --mem no --damon --tcg-scale 1001 true
script_refused "workload: --tcg-scale without --tiering or --damon" $w "give one" --mem no --tcg-scale 20 true
script_refused "workload: --tcg-scale without a value" $w "needs a value" --mem no --damon --tcg-scale
script_refused "workload: an unknown option" $w "unknown option '--frob'" --mem no --frob true
script_refused "workload: --cpus without a value" $w "--cpus needs a value" --cpus
script_refused "workload: --mem not SIZE,SIZE (checked before any boot)" $w "wants SIZE,SIZE" \
	--dry-run --mem 1G true
# More than the host has, preallocated: refused before anything boots
# (--dry-run, so that a missing check prints instead of booting).
script_refused "workload: --mem beyond the host's memory, preallocated" $w \
	"host has [0-9]* MB available" --dry-run --mem 1G,100000G true
# --dry-run prints the three boots: preallocated unless --no-prealloc
# (a small --mem, so that the host's free memory does not decide).
dry() {
	desc=$1 want=$2
	shift 2
	"$top/$w" --dry-run --mem 64M,64M "$@" true > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" -eq 0 ] && [ "$(grep -c '^harness/vm-run ' "$tmp/out")" -eq 3 ] &&
	   [ "$(grep -c "'--prealloc'" "$tmp/out")" -eq "$want" ]; then
		ok "$desc"
	else
		nok "$desc (status $rc)"
		sed 's/^/# /' "$tmp/out" "$tmp/err" | head -5
	fi
}
dry "workload: every boot preallocated by default" 3
dry "workload: --no-prealloc boots lazily" 0 --no-prealloc
t=harness/guest/tiering
script_refused "tiering: --tcg-scale 0" $t "invalid --tcg-scale" --tcg-scale 0 damon -- true
script_refused "tiering: unknown mode" $t "invalid mode" lru -- true
script_refused "tiering: no command" $t "no command" numa --
a=harness/guest/anon-steady
script_refused "anon-steady: no BIN and OUT" $a "need BIN and OUT"
script_refused "anon-steady: -c not a number" $a "not a number" -c 9x "$sel" "$tmp/x"
script_refused "anon-steady: -w empty" $a "not a number" -w "" "$sel" "$tmp/x"
script_refused "anon-steady: -d without -H" $a "give -H below 100" -d 300 "$sel" "$tmp/x"
script_refused "anon-steady: -H without -d" $a "-H needs -d" -H 40 "$sel" "$tmp/x"
script_refused "anon-steady: -H not a number" $a "not a number" -H 4O -d 300 "$sel" "$tmp/x"
script_refused "anon-steady: -m not a number" $a "not a number" -m 5e4 "$tmp/nobin" "$tmp/x"
script_refused "anon-steady: -t 0" $a "window would be empty" -t 0 "$tmp/nobin" "$tmp/x"
script_refused "anon-steady: -w 0" $a "window would be empty" -w 0 "$tmp/nobin" "$tmp/x"
# steady-window checks its arguments before it starts CMD; CMD is false,
# so that a missing check ends with status 1, not 2.
sw=harness/guest/steady-window
script_refused "steady-window: -m not a number" $sw "not a number" -m 5e4 "$sel" "$tmp/x" -- false
script_refused "steady-window: -t 0" $sw "-t 0" -t 0 "$sel" "$tmp/x" -- false
script_refused "steady-window: -p empty" $sw "empty -p" -p "" "$sel" "$tmp/x" -- false
script_refused "steady-window: -w 0" $sw "-w 0" -w 0 "$sel" "$tmp/x" -- false
script_refused "steady-window: no -- before CMD" $sw "need BIN OUT -- CMD" "$sel" "$tmp/x" false
ns=harness/guest/numa-scan-scale
script_refused "numa-scan-scale: factor 0" $ns "invalid factor '0'" 0
script_refused "numa-scan-scale: factor above 100" $ns "invalid factor '101'" 101
script_refused "numa-scan-scale: factor with garbage" $ns "invalid factor '3x'" 3x
script_refused "numa-scan-scale: no factor" $ns "need exactly one argument"
script_refused "numa-scan-scale: two factors" $ns "need exactly one argument" 3 4
# A good factor outside the VM: status 1, said, and nothing written.
VMRUN= "$top/$ns" 3 > "$tmp/out" 2> "$tmp/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "only inside the test VM" "$tmp/err" && [ ! -s "$tmp/out" ]; then
	ok "numa-scan-scale: outside the VM: status 1, said"
else
	nok "numa-scan-scale: outside the VM: status 1, said (status $rc)"
fi
tw=harness/guest/tier-watch
script_refused "tier-watch: -i 0" $tw "invalid -i" -i 0 -- true
script_refused "tier-watch: no CMD" $tw "no CMD" -i 5 --
# harness/demo checks its arguments before it removes build/demo.
script_refused "demo: --parts with a part that does not exist" harness/demo "invalid --parts" --parts 1,6
script_refused "demo: --parts empty" harness/demo "invalid --parts" --parts ""
script_refused "demo: --awarm not a number" harness/demo "not a number" --awarm 20m
script_refused "demo: --ahot above 100" harness/demo "invalid --ahot" --ahot 101 --parts 0
script_refused "demo: --kpages not a number" harness/demo "not a number" --kpages 1e5 --parts 0
script_refused "demo: --khot 0" harness/demo "invalid --khot" --khot 0 --parts 0
script_refused "demo: --scan-scale 0" harness/demo "invalid --scan-scale" --scan-scale 0 --parts 0
# harness/bench-write checks its arguments before it removes its results.
b=harness/bench-write
script_refused "bench-write: unknown --kind" $b "invalid kind" --kind write2
script_refused "bench-write: --rounds 0" $b "invalid rounds" --kind bg --rounds 0
script_refused "bench-write: --rounds 00" $b "invalid rounds" --rounds 00
script_refused "bench-write: --moves without a value" $b "needs a value" --kind bg --moves
# Outside the VM it refuses to touch the host's settings: status 1.
env -u VMRUN "$top/$t" numa -- true > "$tmp/out" 2> "$tmp/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "only inside the test VM" "$tmp/err"; then
	ok "tiering: refuses to run outside the test VM"
else
	nok "tiering: refuses to run outside the test VM (status $rc)"
fi
if "$top/$w" --help > "$tmp/out" 2>&1 && grep -q '^  --damon ' "$tmp/out" &&
   grep -q '^  --tcg-scale N ' "$tmp/out" && grep -q '^  --no-prealloc ' "$tmp/out"; then
	ok "workload --help names --damon, --tcg-scale and --no-prealloc, status 0"
else
	nok "workload --help names --damon, --tcg-scale and --no-prealloc, status 0"
fi
# The guest's ext4 scratch filesystem: a block size mkfs.ext4 would not
# take is refused before anything is made.
"$top/harness/guest/scratch-ext4" -b 512 "$tmp/ext4" > "$tmp/out" 2> "$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q "block size must be" "$tmp/err" &&
   [ ! -e "$tmp/ext4" ]; then
	ok "scratch-ext4 -b 512: refused, status 2, nothing made"
else
	nok "scratch-ext4 -b 512: refused, status 2, nothing made (status $rc)"
fi

[ "$fails" -eq 0 ]
