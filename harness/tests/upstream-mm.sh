#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The referee's own logic (harness/upstream-mm), with no VM: a fake vm-run
# prints canned run_vmtests.sh results, and upstream-mm must pass when
# migrc=on fails only what vanilla fails, and fail when migrc=on breaks a
# test that passes on vanilla, in a category migrc=off runs (migration)
# or does not (cow).  Needs the base tree (make base).  TAP output.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -d "$top/build/base/tools/testing/selftests/mm" ] ||
	{ echo "Bail out! no base tree: make base"; exit 1; }
fk=$(mktemp -d)
trap 'rm -rf "$fk"' EXIT
mkdir -p "$fk/harness" "$fk/build" "$fk/bin"
cp "$top/harness/upstream-mm" "$fk/harness/"
ln -s "$top/build/base" "$fk/build/base"
# The tests are not built: make does nothing here.
printf '#!/bin/sh\nexit 0\n' > "$fk/bin/make"
# Fake vm-run: mremap_test fails everywhere (as it does in the guest);
# $FAKE_BREAK fails with migrc=on only.
cat > "$fk/harness/vm-run" <<'FAKE'
#!/bin/sh
case "$*" in *vanilla*) k=vanilla ;; *migrc=off*) k=off ;; *) k=on ;; esac
case "$*" in
*"-t 'migration'"*) list=migration ;;
*rerun.list*) list=$(cat "$(dirname "$0")/../build/upstream-mm/rerun.list") ;;
*) list="cow mremap_test" ;;
esac
n=0
for t in $list; do
	n=$((n + 1))
	if [ "$t" = mremap_test ] || { [ $k = on ] && [ "$t" = "$FAKE_BREAK" ]; }; then
		echo "not ok $n $t # exit=1"
	else
		echo "ok $n $t"
	fi
done
exit 1
FAKE
chmod +x "$fk/bin/make" "$fk/harness/vm-run"

n=0
# referee BREAK WANT DESCRIPTION: run upstream-mm, expect status WANT.
referee() {
	PATH=$fk/bin:$PATH FAKE_BREAK=$1 sh "$fk/harness/upstream-mm" \
		--kernel debug --categories "migration cow mremap" > "$fk/out" 2>&1
	rc=$?
	n=$((n + 1))
	grep -E '^not ok' "$fk/out" | sed 's/^/# /'
	if [ $rc -eq "$2" ]; then echo "ok $n - $3 (status $rc)"
	else echo "not ok $n - $3 (status $rc, wanted $2)"; fi
}
echo "TAP version 13"
echo "1..3"
referee none 0 "a failure vanilla shares is not migrc's"
referee migration 1 "migrc=on failing migration, which migrc=off runs too, fails the referee"
referee cow 1 "migrc=on failing cow, which migrc=off does not run, fails the referee"
