#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Test the tests: on the debug kernel, make migrc skip a flush on purpose
# (debugfs migrc/inject_skip) and check that the stale-TLB selftests fail
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
echo "1..4"
for what in "1 reuse alloc" "2 file_write write"; do
	set -- $what
	bits=$1 test=$2 name=$3
	MIGRC_TEST_SECONDS=3 "$top/harness/vm-run" --kernel debug --topo numa2 \
		--cpus 2 --append migrc=on --timeout 600 -- sh -c "
		echo $bits > /sys/kernel/debug/migrc/inject_skip
		$top/build/selftests/migrc_tlb -f $test" > "$tmp/$name" 2>&1
	rc=$?
	grep -E '^(not )?ok|stale' "$tmp/$name" | head -8 | sed 's/^/# /'
	check "skipped $name flush: a $test selftest fails" \
		grep -q "^not ok" "$tmp/$name"
	check "skipped $name flush: the debug kernel reports it (vm-run status $rc)" \
		sh -c "[ $rc -eq 125 ] && grep -q migrc_debug '$tmp/$name'"
done
[ "$fails" -eq 0 ]
