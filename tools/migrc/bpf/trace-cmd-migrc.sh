#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# trace-cmd-migrc.sh - record tlb:tlb_flush and the migrc tracepoints with
# trace-cmd while COMMAND runs, then summarise them.
#
# usage: trace-cmd-migrc.sh [-o OUT.dat] COMMAND [ARGS...]
#
# Writes OUT.dat (default migrc-trace.dat) and OUT.txt (trace-cmd report).
# Prints tlb_flush counts by reason; if migrc is in PATH (or next to this
# script), also its flush-reason table and age histogram (migrc trace -i).

out=migrc-trace.dat
if [ "$1" = "-o" ]; then
	out=$2
	shift 2
fi
if [ $# -eq 0 ]; then
	echo "usage: $0 [-o OUT.dat] COMMAND [ARGS...]" >&2
	exit 1
fi
command -v trace-cmd >/dev/null 2>&1 || { echo "$0: trace-cmd not found" >&2; exit 3; }

events="-e tlb:tlb_flush"
tracefs=/sys/kernel/tracing
[ -d $tracefs/events ] || tracefs=/sys/kernel/debug/tracing
if [ -d $tracefs/events/migrc ]; then
	events="$events -e migrc:migrc_defer -e migrc:migrc_flush"
else
	echo "$0: no migrc tracepoints in $tracefs/events (kernel without migrc?)" >&2
fi

# shellcheck disable=SC2086
trace-cmd record -q -o "$out" $events "$@" || exit 2
txt=${out%.dat}.txt
trace-cmd report -i "$out" >"$txt" 2>/dev/null || exit 2

echo "tlb:tlb_flush by reason:"
grep ' tlb_flush: ' "$txt" | sed -n 's/.*reason:\(.*\) (\([0-9]*\))$/\2 \1/p' |
	sort | uniq -c | sort -rn | awk '{ c = $1; $1 = ""; printf "  %10d %s\n", c, $0 }'

migrc=$(command -v migrc || echo "$(dirname "$0")/../migrc")
if grep -q ' migrc_flush: ' "$txt" && [ -x "$migrc" ]; then
	echo
	"$migrc" trace -i "$txt"
fi
