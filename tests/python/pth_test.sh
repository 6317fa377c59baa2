#!/bin/sh
# Issue 32, point 18: after the install, every python3 of the first
# python3's version imports gpu_profile and gpufl, not only the first on
# PATH.  Two venvs stand for two such interpreters with their own site
# directories: A first on PATH (a pyenv python3) and B found in a searched
# directory (/usr/bin/python3); a stub python3 of another version stands
# for one that is left alone.  tests/python/pth/ installs the packages
# through cmake/python_install.cmake, the real build's rules, to the
# configured prefix:
# 1. a prefix that is no interpreter's: the packages in
#    <prefix>/lib/python3.X/site-packages, a gpu-profile.pth in A's and B's
#    site directories, none in the stub's; both import the installed
#    packages; the manifest lists both .pth files and scripts/uninstall.sh
#    removes them (A imports nothing after);
# 2. B's own prefix (as /usr/local is /usr/bin/python3's): the packages in
#    B's site directory, a .pth only in A's.
# Skips (77) without python3-venv.
# Usage: pth_test.sh PYTHON3 SOURCE_DIR CMAKE LIBRARY
set -eu
py=$1
src=$2
cmake=$(command -v "$3")
lib=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
for v in A B; do
    if ! "$py" -m venv --without-pip "$tmp/$v" >"$tmp/venv.log" 2>&1; then
        echo "pth_test: SKIP: '$py -m venv' failed (install python3-venv):" >&2
        cat "$tmp/venv.log" >&2
        exit 77
    fi
done
mkdir -p "$tmp/other/site"
printf '#!/bin/sh\necho %s/other/site\necho 3.0\n' "$tmp" >"$tmp/other/python3"
chmod +x "$tmp/other/python3"
site() { "$tmp/$1/bin/python3" -c 'import sysconfig; print(sysconfig.get_path("purelib"))'; }
siteA=$(site A)
siteB=$(site B)
ver=$("$tmp/A/bin/python3" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
make=$(command -v make || echo make)

# install CASE PREFIX: configure with A first on PATH (and the stub after
# it), B's bin/ searched too; then install to the configured prefix.
install() {
    env PATH="$tmp/A/bin:$tmp/other" "$cmake" -S "$src/tests/python/pth" -B "$tmp/b$1" \
        -DGP_SOURCE_DIR="$src" -DCMAKE_INSTALL_PREFIX="$2" -DCMAKE_MAKE_PROGRAM="$make" \
        -DGP_PYTHON3_SEARCH="PATH;$tmp/B/bin" >"$tmp/configure$1.log" 2>&1 ||
        { cat "$tmp/configure$1.log" >&2; no "case $1: configure failed"; return 0; }
    env PATH="$tmp/A/bin:$tmp/other" "$cmake" --install "$tmp/b$1" >"$tmp/install$1.log" 2>&1 ||
        { cat "$tmp/install$1.log" >&2; no "case $1: install failed"; }
}
# imports WHO WANT: WHO's python3, from elsewhere and with no help from the
# environment, imports both packages from WANT.
imports() {
    got=$(cd "$tmp" && env -u PYTHONPATH GPU_PROFILE_LIBRARY="$lib" "$tmp/$1/bin/python3" -c \
        'import os, gpu_profile, gpufl; print(os.path.dirname(os.path.dirname(gpu_profile.__file__)), os.path.dirname(os.path.dirname(gpufl.__file__)))' 2>&1) ||
        { no "$1's python3 cannot import the packages: $got"; return 0; }
    [ "$got" = "$2 $2" ] || no "$1's python3 imported them from '$got', not $2"
}

# 1. A prefix of its own.
install 1 "$tmp/prefix"
dest=$tmp/prefix/lib/python$ver/site-packages
grep -q "not for $tmp/other/python3 (Python 3.0;" "$tmp/configure1.log" ||
    no "configure did not say the other version's python3 was left alone: $(cat "$tmp/configure1.log")"
for s in "$siteA" "$siteB"; do
    [ "$(cat "$s/gpu-profile.pth" 2>/dev/null)" = "$dest" ] || no "$s/gpu-profile.pth does not name $dest"
    grep -qx "$s/gpu-profile.pth" "$tmp/b1/install_manifest.txt" || no "the manifest lacks $s/gpu-profile.pth"
done
[ ! -e "$tmp/other/site/gpu-profile.pth" ] || no "a .pth was written for another Python version"
imports A "$dest"
imports B "$dest"
sh "$src/scripts/uninstall.sh" "$tmp/b1/install_manifest.txt" >/dev/null || no "uninstall failed"
for s in "$siteA" "$siteB"; do
    [ ! -e "$s/gpu-profile.pth" ] || no "uninstall left $s/gpu-profile.pth"
done
if (cd "$tmp" && env -u PYTHONPATH "$tmp/A/bin/python3" -c 'import gpu_profile' 2>/dev/null); then
    no "A's python3 still imports gpu_profile after uninstall"
fi

# 2. B's own prefix: B's site directory holds the packages, A gets a .pth.
install 2 "$tmp/B"
imports B "$siteB"
imports A "$siteB"
[ ! -e "$siteB/gpu-profile.pth" ] || no "a .pth in the site directory that holds the packages"
[ "$(cat "$siteA/gpu-profile.pth" 2>/dev/null)" = "$siteB" ] || no "A's .pth does not name $siteB"

[ $fail = 0 ] && echo "pth_test: passed"
exit $fail
