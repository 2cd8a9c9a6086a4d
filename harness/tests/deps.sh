#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Self-tests of harness/deps, TAP output.  dpkg-query and apt-get are
# replaced by fakes (DEPS_DPKG_QUERY, DEPS_APT_GET), the user id by
# DEPS_UID and the apt-get log by DEPS_LOG, so that nothing is installed
# and any machine can run them.
#
# Usage: harness/tests/deps.sh
#
# Exit status: 0 when every test passed, 1 otherwise.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
deps=$top/harness/deps
case ${1:-} in
-h|--help) sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
'') ;;
*) echo "deps.sh: unknown argument '$1'" >&2; exit 2 ;;
esac

n=0 fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else nok "$desc"; fi; }
show() { head -"${2:-40}" "$1" | sed 's/^/# /'; }

# The fake dpkg-query answers like the real one: "ii  PKG" for an
# installed package, "un  PKG" for a known one that is not, and an error
# (status 1, after the others) for one it has never heard of.
cat > "$tmp/dpkg-query" <<'EOF'
#!/bin/sh
[ "$1" = -W ] && [ "$2" = -f ] || { echo "fake dpkg-query: bad call: $*" >&2; exit 2; }
shift 3
rc=0
for p; do
	if grep -qx "$p" "$FAKE_DIR/installed"; then
		echo "ii  $p"
	elif grep -qx "$p" "$FAKE_DIR/known"; then
		echo "un  $p"
	else
		echo "dpkg-query: no packages found matching $p" >&2
		rc=1
	fi
done
exit $rc
EOF
# The fake apt-get logs its calls; "install" marks the packages installed,
# unless FAKE_APT_FAIL is set.
cat > "$tmp/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >> "$FAKE_DIR/apt-calls"
[ -z "${FAKE_APT_FAIL:-}" ] || { echo "E: fake failure"; exit 100; }
if [ "$1" = install ]; then
	for p; do
		case $p in -*|install) ;; *) echo "$p" >> "$FAKE_DIR/installed" ;; esac
	done
fi
exit 0
EOF
chmod +x "$tmp/dpkg-query" "$tmp/apt-get"
export FAKE_DIR="$tmp" DEPS_DPKG_QUERY="$tmp/dpkg-query" \
	DEPS_APT_GET="$tmp/apt-get" DEPS_LOG="$tmp/apt.log"

# run NAME ARGS...: harness/deps with the fakes; output in $tmp/NAME
# (the first lines shown), status in $rc.
run() {
	name=$1
	shift
	"$deps" "$@" > "$tmp/$name" 2>&1
	rc=$?
	show "$tmp/$name" 6
}
# world INSTALLED-EXCEPT...: every listed package installed but these,
# which dpkg-query knows as not installed.
world() {
	printf '%s\n' "$@" > "$tmp/known"
	"$deps" list | grep -vxF -f "$tmp/known" > "$tmp/installed"
	: > "$tmp/apt-calls"
}

echo "TAP version 13"
echo "1..16"

# 1-2: the one list.
"$deps" list > "$tmp/list"
check "list names the packages the project needs, each once" \
	sh -c "for p in build-essential qemu-system-x86 busybox-static \
		linux-source-6.12 libtracefs-dev libtraceevent-dev pkg-config \
		xfsprogs btrfs-progs dmsetup libfuse3-dev fuse3; do
			grep -qx \"\$p\" '$tmp/list' || exit 1
		done
		[ -z \"\$(sort '$tmp/list' | uniq -d)\" ]"
check ".ci/run installs with harness/deps and has no list of its own" \
	sh -c "grep -q 'harness/deps install' '$top/.ci/run' &&
	       ! grep -q 'apt-get' '$top/.ci/run'"

# 3-4: nothing missing: nothing to do, and apt-get is not run at all.
world '#none#'
DEPS_UID=0 run all-check check
check "nothing missing: check exits 0 and says so (status $rc)" \
	sh -c "[ $rc -eq 0 ] && grep -q '^deps: all [0-9]* packages installed' '$tmp/all-check'"
DEPS_UID=0 run all-install -q install
check "nothing missing: install -q is silent, exits 0, runs no apt-get (status $rc)" \
	sh -c "[ $rc -eq 0 ] && [ ! -s '$tmp/all-install' ] && [ ! -s '$tmp/apt-calls' ]"

# 5-6: two missing, check: both named, the line to run, status 1.
world xfsprogs fuse3
DEPS_UID=0 run miss-check check
check "check reports the 2 missing packages and exits 1 (status $rc)" \
	sh -c "[ $rc -eq 1 ] && grep -q '2 missing packages: xfsprogs fuse3\$' '$tmp/miss-check'"
check "check prints the apt-get line for exactly those, and installs nothing" \
	sh -c "grep -qx '  apt-get update && apt-get install -y --no-install-recommends xfsprogs fuse3' \
		'$tmp/miss-check' && [ ! -s '$tmp/apt-calls' ]"

# 7: not root: the line, status 1, no apt-get.
DEPS_UID=1000 run miss-user install
check "install as non-root prints the apt-get line and exits 1 (status $rc)" \
	sh -c "[ $rc -eq 1 ] && grep -q 'not root' '$tmp/miss-user' &&
	       grep -q '^  apt-get .*install .* xfsprogs fuse3\$' '$tmp/miss-user' &&
	       [ ! -s '$tmp/apt-calls' ]"

# 8-9: root: apt-get update, then install of exactly the missing ones.
DEPS_UID=0 run miss-root install
check "install as root says what it installs and exits 0 (status $rc)" \
	sh -c "[ $rc -eq 0 ] &&
	       grep -q '^deps: installing 2 missing packages: xfsprogs fuse3\$' '$tmp/miss-root' &&
	       grep -q '^deps: installed 2 packages' '$tmp/miss-root'"
show "$tmp/apt-calls"
check "install as root runs apt-get update, then installs only the missing ones" \
	sh -c "[ \"\$(cat '$tmp/apt-calls')\" = 'apt-get update -qq
apt-get install -y -qq --no-install-recommends xfsprogs fuse3' ]"

# 10: a package dpkg-query has never heard of is missing too.
world libtracefs-dev
grep -vx linux-source-6.12 "$tmp/installed" > "$tmp/i" && mv "$tmp/i" "$tmp/installed"
DEPS_UID=0 run unknown check
check "a package unknown to dpkg-query counts as missing (status $rc)" \
	sh -c "[ $rc -eq 1 ] && grep -q '2 missing packages: linux-source-6.12 libtracefs-dev\$' '$tmp/unknown'"

# 11: apt-get fails: status 3 and a message.
world fuse3
FAKE_APT_FAIL=1 DEPS_UID=0 run apt-fail install
check "a failing apt-get gives status 3 and a message (status $rc)" \
	sh -c "[ $rc -eq 3 ] && grep -q 'apt-get update failed' '$tmp/apt-fail'"

# 12-14: usage errors: status 2 and the usage text; --help is no error.
run noarg
check "no command: usage, status 2 (status $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q '^Usage: harness/deps' '$tmp/noarg'"
run badarg check --bogus
check "an unknown argument: message, usage, status 2 (status $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q \"unknown argument '--bogus'\" '$tmp/badarg' &&
	       grep -q '^Usage: harness/deps' '$tmp/badarg'"
run help --help
check "--help: usage, status 0 (status $rc)" \
	sh -c "[ $rc -eq 0 ] && grep -q '^Usage: harness/deps' '$tmp/help'"

# 15: no dpkg-query (not Debian): check cannot tell, install goes on.
DEPS_DPKG_QUERY=$tmp/no-such-dpkg-query run nodpkg-check check
r1=$rc
DEPS_DPKG_QUERY=$tmp/no-such-dpkg-query run nodpkg-install install
check "no dpkg-query: check exits 1, install warns and exits 0 ($r1, $rc)" \
	sh -c "[ $r1 -eq 1 ] && [ $rc -eq 0 ] &&
	       grep -q 'not a Debian system' '$tmp/nodpkg-install'"

# 16: every make target that needs packages checks them first.
targets="kernel vanilla debug-kernel selftests tools check demo bench bench-copy upstream-mm soak workload series series-check"
bad=""
for t in $targets; do
	make -n -C "$top" "$t" CMD=true 2>/dev/null | grep -q 'harness/deps .*install' ||
		bad="$bad $t"
done
check "make targets check the packages first (without:${bad:- none})" [ -z "$bad" ]

[ "$fails" -eq 0 ]
