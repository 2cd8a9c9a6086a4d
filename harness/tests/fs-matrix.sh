#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The filesystem matrix (make check's fs-matrix group): for each
# filesystem (ext4, XFS, btrfs, FUSE, 9p with cache=loose, tmpfs), each
# change of file data (tools/testing/selftests/mm/migrc_fschange.c:
# buffered and O_DIRECT pwrite(), a writable shared mapping in another
# process, truncate, hole punch, sub-block hole punch, zero range,
# reflink or copy_file_range(), remapping, a copy-on-write store, an
# unrelated writer) and both ways migrc defers (migration, reclaim):
# reader threads on the other CPU must never see old data once the change
# returned, and the counters must show the page deferred exactly where
# the filesystem is in migrc's safe set.  One more case runs on ext4
# through dm-delay (ext4-slow): reclaim while an O_DIRECT write is held
# in the device (dio_inflight).  Boots:
#
#   off      the test kernel, migrc=off: everything
#   on       the test kernel, migrc=on: everything
#   vanilla  unpatched 6.12: the reclaim cases and migration with
#            O_DIRECT on ext4, FUSE, 9p and tmpfs (the test's own
#            validity: 0 stale reads there; it has no dm-delay)
#   inject   the debug kernel, migrc=on, every write barrier skipped
#            (skip_write_flush): each case where migrc defers and only
#            its barrier stands between the readers and the old data
#            must now FAIL, so the matrix cannot pass by testing nothing
#
# Usage: harness/tests/fs-matrix.sh [--kernel K] [--seconds S] [BOOT...]
#   --kernel K   the test kernel (default $MIGRC_KERNEL, else debug)
#   --seconds S  per case (default 0.3; every group of the file is
#                changed at least once whatever S)
#   BOOT         off on vanilla inject (default: all four)
# TAP on stdout.  Exit status 0 when everything passed, 1 otherwise,
# 2 on bad arguments.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
kernel=${MIGRC_KERNEL:-debug} seconds=0.3 boots=""
usage() { sed -n '4,33p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) [ $# -ge 2 ] || { usage >&2; exit 2; }; kernel=$2; shift 2 ;;
	--seconds) [ $# -ge 2 ] || { usage >&2; exit 2; }; seconds=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	off|on|vanilla|inject) boots="$boots $1"; shift ;;
	*) echo "fs-matrix: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
case $seconds in ''|*[!0-9.]*) echo "fs-matrix: --seconds wants a number" >&2; exit 2 ;; esac
boots=${boots:-off on vanilla inject}
all="ext4 xfs btrfs fuse 9p tmpfs"
safe="ext4 xfs tmpfs ext4-slow"
# dio_inflight needs the device that holds writes: ext4-slow only.
slow="ext4-slow -- -r reclaim.dio_inflight.no_stale_read"
# The vanilla kernel has no XFS or btrfs (harness/config/fs-matrix.config).
plain="ext4 fuse 9p tmpfs"
g=$top/harness/guest/fs-matrix
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0

# Per filesystem, the cases whose only protection is a migrc barrier:
# with the barrier skipped they must fail.  The others are protected by
# an unmap of the page, which flushes the readers' TLBs whatever migrc
# does: with migration, O_DIRECT, truncation, punching and XFS's cloning
# zap the destination's PTEs; with reclaim, the zap finds the mm's
# batched flush (mm->tlb_flush_batched).  XFS's sub-block punch and
# clone go through xfs_flush_unmap_range(), which unmaps.  Measured with
# the barrier skipped: the table in migrc_fschange.c.
inject_cases() {
	case $1 in
	ext4) echo "reclaim.dio reclaim.pwrite reclaim.mmap_write reclaim.subpunch
		reclaim.clone reclaim.cow migrate.pwrite migrate.mmap_write
		migrate.subpunch migrate.clone" ;;
	xfs) echo "reclaim.dio reclaim.pwrite reclaim.mmap_write reclaim.cow
		migrate.pwrite migrate.mmap_write" ;;
	tmpfs) echo "migrate.dio migrate.pwrite migrate.mmap_write
		migrate.subpunch migrate.clone" ;;
	ext4-slow) echo "reclaim.dio_inflight" ;;
	esac
}

# case_lines TYPE CASE LOG: CASE's lines on TYPE, from its RUN line to
# its result.
case_lines() {
	awk -v t="# fs-matrix: $1 " -v c="$2.no_stale_read" '
		index($0, t) == 1 { fs = 1; next }
		/^# fs-matrix: / { fs = 0 }
		fs && $0 ~ "RUN +" c "( |$)" { on = 1 }
		on { print }
		on && $0 ~ "^(not )?ok [0-9]+ " { on = 0 }' "$3"
}

# passed TYPE CASE LOG: CASE on TYPE passed (not failed, not skipped).
passed() {
	case_lines "$@" | grep -E "^(not )?ok [0-9]+ " | tail -1 |
		grep -Eqv "^not ok|# SKIP"
}

# verdict TYPE CASE LOG: a TAP line for CASE on TYPE with the barrier
# skipped, which must have failed by reading stale data.
verdict() {
	out=$(case_lines "$@")
	res=$(printf '%s\n' "$out" | grep -E "^(not )?ok [0-9]+ " | tail -1)
	case $res in
	*"# SKIP"*) echo "ok $n - inject: $1 $2 # SKIP ${res#*# SKIP}" ;;
	"not ok"*)
		if printf '%s\n' "$out" | grep -q STALE; then
			echo "ok $n - inject: $1 $2 reads stale data with its barrier skipped"
		else
			echo "not ok $n - inject: $1 $2 failed, but read nothing stale"
			printf '%s\n' "$out" | tail -5 | sed 's/^/# /'
			rc=1
		fi ;;
	ok*) echo "not ok $n - inject: $1 $2 passed with its barrier skipped: it tests nothing"
	     rc=1 ;;
	*) echo "not ok $n - inject: $1 $2 did not run"; rc=1 ;;
	esac
}

vm() {
	name=$1 k=$2 append=$3
	shift 3
	echo "# fs-matrix boot '$name': kernel $k, $append"
	"$top/harness/vm-run" --kernel "$k" \
		--topo numa2 --cpus 2 --append "$append" --timeout 1500 -- "$@"
}

# $all and $plain are lists of words: split on purpose.
# shellcheck disable=SC2086
for b in $boots; do
	case $b in
	off|on)
		vm "$b" "$kernel" "migrc=$b" sh -c "r=0
			$g -s $seconds $all -- -V dio_inflight || r=1
			$g -s $seconds $slow || r=1
			exit \$r" || rc=1 ;;
	vanilla)
		# -f and -r select the union: every reclaim case, one
		# migration; the first match wins, so -V first.
		vm vanilla vanilla "" "$g" -s "$seconds" $plain -- \
			-V dio_inflight -f reclaim \
			-r migrate.dio.no_stale_read || rc=1 ;;
	inject)
		# One boot, each case run alone: failing is what we want.
		cmd="" i="-i skip_write_flush"
		for t in $safe; do
			args=""
			for c in $(inject_cases "$t"); do
				args="$args -r $c.no_stale_read"
			done
			cmd="$cmd $g -s $seconds $i $t -- $args;"
			i=""
		done
		vm inject debug migrc=on sh -c "$cmd" > "$tmp/inject" 2>&1
		grep -E '^# fs-matrix|^not ok 1 ' "$tmp/inject" | sed 's/^/# /'
		n=0
		for t in $safe; do
			for c in $(inject_cases "$t"); do
				n=$((n + 1))
				# dio_inflight's window can close before the
				# readers look (the fresh-clone CI run of
				# 2026-12-07 had one pass): up to three more
				# boots of that case alone, until one fails.
				log=$tmp/inject try=1
				while [ "$c" = reclaim.dio_inflight ] && [ $try -lt 4 ] &&
				      passed "$t" "$c" "$log"; do
					try=$((try + 1)) log=$tmp/retry
					vm "inject-$try" debug migrc=on "$g" -s "$seconds" \
						-i skip_write_flush "$t" -- -r "$c.no_stale_read" \
						> "$log" 2>&1
				done
				verdict "$t" "$c" "$log"
			done
		done ;;
	esac
done
exit $rc
