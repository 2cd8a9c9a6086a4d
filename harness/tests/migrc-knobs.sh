#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# migrc's boot parameter and sysfs knobs: bad input gets a clear error and
# changes nothing.  TAP output; boots the patched kernel four times.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
vm=$top/harness/vm-run
n=0 fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }

echo "TAP version 13"
echo "1..13"

K=/sys/kernel/mm/migrc
"$vm" --append "migrc=bogus" -- sh -c "
	dmesg | grep 'migrc:'
	echo enabled=\$(cat $K/enabled)
	grep '^migrc_' /proc/vmstat | awk '{ s += \$2 } END { print \"sum=\" s }'" \
	> "$tmp/bogus" 2>&1
sed 's/^/# /' "$tmp/bogus"
check "migrc=bogus is reported in the kernel log" \
	grep -q "ignoring invalid migrc=bogus" "$tmp/bogus"
check "migrc=bogus keeps migrc off" grep -q "^enabled=off" "$tmp/bogus"
check "migrc off: every migrc counter is 0" grep -q "^sum=0" "$tmp/bogus"

"$vm" -- sh -c "echo enabled=\$(cat $K/enabled)" > "$tmp/default" 2>&1
check "migrc is off by default" grep -q "^enabled=off" "$tmp/default"

"$vm" --append "migrc=on" -- sh -c "
	echo enabled=\$(cat $K/enabled)
	for v in 0 -5 abc 10001 ' ' 12x 99999999999999999999; do
		if printf '%s' \"\$v\" > $K/max_age_ms 2>/dev/null; then
			echo accepted-age=\$v; fi
	done
	echo age=\$(cat $K/max_age_ms)
	for v in 0 abc -1 999999999999; do
		if printf '%s' \"\$v\" > $K/max_pending_pages 2>/dev/null; then
			echo accepted-pending=\$v; fi
	done
	echo pending=\$(cat $K/max_pending_pages)
	echo 20 > $K/max_age_ms && echo age2=\$(cat $K/max_age_ms)
	echo 1 > $K/enabled 2>/dev/null && echo enabled-writable
	echo 1 > $K/flush && echo flushed" > "$tmp/on" 2>&1
sed 's/^/# /' "$tmp/on"
check "migrc=on turns it on" grep -q "^enabled=on" "$tmp/on"
check "bad max_age_ms writes are refused" sh -c "! grep -q accepted-age '$tmp/on'"
check "refused writes leave max_age_ms unchanged (50)" grep -q "^age=50\$" "$tmp/on"
check "bad max_pending_pages writes are refused, value unchanged" \
	sh -c "! grep -q accepted-pending '$tmp/on' && grep -q '^pending=8192\$' '$tmp/on'"
check "a good max_age_ms write takes effect" grep -q "^age2=20\$" "$tmp/on"
check "enabled is read-only; flush works" \
	sh -c "! grep -q enabled-writable '$tmp/on' && grep -q '^flushed\$' '$tmp/on'"

# debugfs migrate_copy/ceiling (CONFIG_MIGRATE_COPY_CEILING): every bad
# write is refused with EINVAL and keeps the last result.
C=/sys/kernel/debug/migrate_copy/ceiling
"$vm" -- sh -c "
	[ -e $C ] || echo no-ceiling
	try() { if printf '%s\n' \"\$1\" > $C 2>/dev/null; then
		echo accepted=\"\$1\"; fi; }
	for v in '' abc '0 0 0 0' '1 0 0' '1 99 0 0' '1 0 -1 0' '1 0 0 4096' \
		'1 0 0 0 0' '1 0 0 0 9999' '999999999 0 0 0' '262145 0 0 0'; do
		try \"\$v\"; done
	echo before=\$(cat $C)
	echo '64 0 0 0' > $C && cat $C > /tmp/good && echo good=\$(cat /tmp/good)
	for v in '' '1 0 0 4096' '0 0 0 0'; do try \"\$v\"; done
	cat $C | cmp -s - /tmp/good && echo kept" > "$tmp/ceiling" 2>&1
sed 's/^/# /' "$tmp/ceiling"
check "ceiling: bad writes are refused" sh -c \
	"! grep -q -e accepted -e no-ceiling '$tmp/ceiling' && grep -q '^before=\$' '$tmp/ceiling'"
check "ceiling: a good write times serial and parallel copies" grep -Eq \
	"^good=nr_folios=64 order=0 bytes=262144 .*serial_ns=[1-9][0-9]* .*parallel_ns=[1-9]" \
	"$tmp/ceiling"
check "ceiling: refused writes keep the last result" grep -q "^kept\$" "$tmp/ceiling"
[ "$fails" -eq 0 ]
