# SPDX-License-Identifier: GPL-2.0
#
# Sourced by harness/demo and harness/bench: the one place that says how
# a "migrc compare --format csv" table is read, so that the demo's lines
# and the bench report count the same things.
#
# Read a "migrc compare --format csv" table, column COL (3 is the first
# run): received CSV COL, the TLB shootdowns all CPUs received
# (/proc/interrupts); mig_sends CSV COL, the IPIs that migration sent
# (demotion, promotion, DAMON and other migration in the source
# breakdown), apart from the NUMA scanner, munmap() and the rest, which
# migrc does not defer; own_sends CSV COL, the IPIs of migrc's own
# flushes (rows "migrc:REASON": a page allocated, a write, the time
# bound...), which pay for deferred shootdowns later and so count
# against migration's reduction in the lines "... with migrc's own
# flushes" (they may also pay for reclaim's deferrals, so this errs
# against migrc); row CSV COL NAME, one counter (empty if absent).
received() {
	awk -F, -v col="$2" '$1 ~ /^TLB shootdowns/ && $2 == "total" { print $col }' "$1"
}
mig_sends() {
	awk -F, -v col="$2" '$1 ~ /^shootdown sources/ && ($2 == "demotion" ||
		$2 == "promotion" || $2 == "damon" || $2 == "migration_other") { s += $col }
		END { print s + 0 }' "$1"
}
own_sends() {
	awk -F, -v col="$2" '$1 ~ /^shootdown sources/ && $2 ~ /^migrc:/ { s += $col }
		END { print s + 0 }' "$1"
}
# own_line LABEL OFF ON OWN: LABEL's reduction with OWN, migrc's own
# flush IPIs with migrc=on, added to ON.
own_line() {
	awk -v l="$1" -v off="$2" -v on="$3" -v own="$4" 'BEGIN {
		if (off > 0) printf "%s with migrc'"'"'s own flushes: %.1f%% (%d + %d sends)\n",
			l, (off - on - own) * 100 / off, on, own
		else printf "%s with migrc'"'"'s own flushes: n/a (no migration IPIs with migrc=off)\n", l
	}'
}
row() {
	awk -F, -v col="$2" -v k="$3" '$2 == k { print $col; exit }' "$1"
}
