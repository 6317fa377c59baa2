#!/bin/sh
# install_tmp.sh CMAKE BUILD_DIR PREFIX [COMPONENT] - what `cmake --install
# BUILD_DIR --prefix PREFIX [--component COMPONENT]` does, for the tests,
# except that the install manifest goes to PREFIX/install_manifest*.txt:
# BUILD_DIR/install_manifest.txt stays the record of the user's own install
# (what scripts/uninstall.sh removes), never overwritten with a test's
# temporary paths, and tests running in parallel share no file.  Every test
# that installs goes through here (tests/install_manifest_test.sh checks).
set -eu
cmake=$1
build=$(cd "$2" && pwd)
prefix=$3
component=${4:-}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The generated script names the manifest by the build directory's path
# (as CMake spelled it: the path given, or with symlinks resolved); the
# copy names the prefix instead (subdirectories' scripts are included by
# absolute path and write no manifest).
redirect() {
    awk -v from="file(WRITE \"$1/\${CMAKE_INSTALL_MANIFEST}\"" \
        -v to="file(WRITE \"$prefix/\${CMAKE_INSTALL_MANIFEST}\"" '
        { i = index($0, from)
          if (i) { $0 = substr($0, 1, i - 1) to substr($0, i + length(from)); n++ }
          print }
        END { exit n == 1 ? 0 : 3 }' "$build/cmake_install.cmake" >"$tmp/cmake_install.cmake"
}
if ! redirect "$build" && ! redirect "$(cd "$build" && pwd -P)"; then
    echo "install_tmp.sh: $build/cmake_install.cmake does not write its manifest as" \
        "this CMake's did (file(WRITE \"$build/\${CMAKE_INSTALL_MANIFEST}\")): update" \
        "tests/install_tmp.sh" >&2
    exit 1
fi
if [ -n "$component" ]; then
    "$cmake" -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_COMPONENT="$component" \
        -P "$tmp/cmake_install.cmake"
else
    "$cmake" -DCMAKE_INSTALL_PREFIX="$prefix" -P "$tmp/cmake_install.cmake"
fi
