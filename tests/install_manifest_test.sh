#!/bin/sh
# The test suite leaves BUILD_DIR/install_manifest.txt alone (the record of
# the user's own install, which scripts/uninstall.sh reads), and
# scripts/uninstall.sh removes every installed file and only those:
# - no test script runs `cmake --install` itself: each goes through
#   tests/install_tmp.sh;
# - an install through it into a temporary prefix leaves the build's
#   manifests byte for byte as they were, and writes its own manifest,
#   every path in the prefix, _install.py included;
# - scripts/uninstall.sh with that manifest leaves the prefix as it was
#   before (a file of someone else's in include/ and the shared folders
#   stay; our folders, bytecode included, go).
# Usage: install_manifest_test.sh CMAKE BUILD_DIR SOURCE_DIR
set -eu
cmake=$1
build=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# Every test that installs this build goes through install_tmp.sh
# (python/pth_test.sh installs a temporary project of its own).
direct=$(grep -rn -E '^[^#]*(cmake|\$\{?cmake\}?"?) +--install' "$src/tests" \
    --include='*.sh' --include='*.py' --include='*.txt' --include='*.cmake' |
    grep -v -e '/tests/install_tmp.sh:' -e '/tests/python/pth_test.sh:' || true)
[ -z "$direct" ] || no "tests that install by themselves, not through tests/install_tmp.sh: $direct"

# The build's manifests before and after an install into a temporary prefix.
snapshot() {
    for m in "$build"/install_manifest*.txt; do
        [ -e "$m" ] && cksum "$m"
    done
    return 0
}
before=$(snapshot)
prefix=$tmp/prefix
mkdir -p "$prefix/include" "$prefix/share/man/man1"
echo "someone else's" >"$prefix/include/other.h"
sh "$src/tests/install_tmp.sh" "$cmake" "$build" "$prefix" >/dev/null
[ "$(snapshot)" = "$before" ] || no "the install changed $build/install_manifest*.txt"
manifest=$prefix/install_manifest.txt
[ -s "$manifest" ] || no "no manifest at $manifest"
outside=$(grep -v "^$prefix/" "$manifest" || true)
[ -z "$outside" ] || no "the manifest names paths outside $prefix: $outside"
grep -q '/gpu_profile/_install.py$' "$manifest" || no "the manifest lacks gpu_profile/_install.py"
grep -q '/bin/gpu-profile$' "$manifest" || no "the manifest lacks bin/gpu-profile"

# Bytecode, as an import by root would leave it.
site=$(dirname "$(dirname "$(grep '/gpu_profile/__init__.py$' "$manifest")")")
if command -v python3 >/dev/null 2>&1; then
    python3 -m compileall -q "$site/gpu_profile" "$site/gpufl" >/dev/null ||
        no "compileall failed"
    [ -d "$site/gpu_profile/__pycache__" ] || no "no bytecode written under $site"
fi

out=$(sh "$src/scripts/uninstall.sh" "$manifest") || no "scripts/uninstall.sh failed"
n=$(grep -c . "$manifest")
[ "$out" = "scripts/uninstall.sh: removed $n files listed in $manifest" ] ||
    no "uninstall said: $out"
left=$(cd "$prefix" && find . ! -type d | sort | tr '\n' ' ')
[ "$left" = "./include/other.h ./install_manifest.txt " ] || no "left after uninstall: $left"
ours=$(cd "$prefix" && find . -type d \( -name 'gpu*' -o -name __pycache__ \) | tr '\n' ' ')
[ -z "$ours" ] || no "our folders left after uninstall: $ours"
[ -d "$prefix/include" ] && [ -d "$prefix/share/man/man1" ] || no "a shared folder was removed"

# A missing manifest is an error that says where it comes from.
if err=$(sh "$src/scripts/uninstall.sh" "$tmp/nowhere" 2>&1); then
    no "uninstall without a manifest succeeded"
fi
case $err in
*"no $tmp/nowhere/install_manifest.txt"* | *"no $tmp/nowhere:"*) ;;
*) no "uninstall without a manifest said: $err" ;;
esac
[ $fail = 0 ] && echo "install_manifest_test: passed"
exit $fail
