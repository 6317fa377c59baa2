#!/bin/sh
# Installs what building and testing gpu-profile needs on Debian 12: a C
# compiler, CMake, make, pkg-config, the sanitizer runtimes (shipped with
# gcc), clang-format (the tests check the formatting), libjansson-dev
# (the flight recorder's config-file parser), zlib1g-dev (gzipped session logs), libunwind-dev and libdw-dev (the CUPTI plugin's CPU stacks).  No CUDA or NVML is needed to build or test.  Skips apt-get when
# everything is already there.
set -eu
need=""
# python3: the gpu_profile Python package's tests (docs/python.md).
for tool in cc c++ cmake make pkg-config nm clang-format python3; do
    command -v "$tool" >/dev/null 2>&1 || need=1
done
# jansson: the flight recorder's JSON config parser (docs/gpufl.md).
[ -f /usr/include/jansson.h ] || need=1
# zlib: reading the gzipped session windows <channel>.<N>.log.gz back (src/reader/read.c).
[ -f /usr/include/zlib.h ] || need=1
# libunwind + libdw (elfutils): the CUPTI plugin's CPU stacks at launch
# (enable_stack_trace, docs/gpufl.md); without them the plugin builds without stacks.
[ -f /usr/include/libunwind.h ] || need=1
[ -f /usr/include/elfutils/libdwfl.h ] || need=1
# libmicrohttpd: the HTTP server of `gpu-profile serve` (its header to build;
# serve dlopens libmicrohttpd12, which -dev pulls in); prometheus (promtool
# and the server): its tests check the exposition and scrape it for real.
[ -f /usr/include/microhttpd.h ] || need=1
command -v promtool >/dev/null 2>&1 || need=1
# python3-venv, python3-setuptools, python3-wheel-whl: the offline pip install
# of the Python packages (docs/python.md, "With pip"; test_python_pip_install).
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import ensurepip, venv" 2>/dev/null || need=1
[ -d /usr/lib/python3/dist-packages/setuptools ] || need=1
ls /usr/share/python-wheels/wheel-*.whl >/dev/null 2>&1 || need=1
# python3-pytest: the original profgpu package's own test suites run against
# ours (test_python_profgpu_original, docs/python.md "Tests").
/usr/bin/python3 -c "import pytest" 2>/dev/null || need=1
# python3-numpy, python3-pandas: gpufl.analyzer's DataFrames, built from the C
# library's columns with numpy (test_python_gpufl_frames, the GPUFlight suite
# test_python_gpufl_client_original; docs/gpufl.md "DataFrames").
/usr/bin/python3 -c "import numpy, pandas" 2>/dev/null || need=1
# libcurl4: HTTP for gpufl_upload_logs / `gpu-profile upload`, loaded with
# dlopen("libcurl.so.4") at the first upload (never linked; no headers
# needed), and its tests (docs/gpufl.md, "Upload").
[ -n "$(ls /usr/lib/*/libcurl.so.4 /usr/lib/libcurl.so.4 2>/dev/null)" ] || need=1
# chromium: the HTML report opened in a real browser, headless
# (test_report_html_browser / _large skip, saying so, without it;
# docs/report.md, "The HTML report"), and (with nodejs, npm) the headless
# browser checks of what we write for viewers (test_chrome_viewers: the
# Chrome trace in speedscope, an npm dev dependency of the tests only,
# tests/js/package.json).
command -v chromium >/dev/null 2>&1 || need=1
command -v npm >/dev/null 2>&1 || need=1
# libsqlite3-0: `export --format sqlite`, loaded with dlopen("libsqlite3.so.0")
# by that export only (never linked; no headers needed), and its test
# (test_export_sqlite, docs/report.md "SQLite export").
[ -n "$(ls /usr/lib/*/libsqlite3.so.0 /usr/lib/libsqlite3.so.0 2>/dev/null)" ] || need=1
# librocm-smi-dev: ROCm SMI's header, from which the tests build their fake
# librocm_smi64 (tests/fakes/fake_rocm_smi.c; without it the amd backend's
# tests skip), and Debian's real librocm_smi64.so.1, which the amd backend
# loads with dlopen at run time (never linked) and its tests run on a
# machine without an AMD GPU (docs/concepts.md, "AMD GPUs").
[ -f /usr/include/rocm_smi/rocm_smi.h ] || need=1
if [ -z "$need" ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# Debian's nodejs and npm only where no npm is there: NodeSource's nodejs
# (which brings its own npm) conflicts with Debian's npm package.
node_pkgs="nodejs npm"
command -v npm >/dev/null 2>&1 && node_pkgs=""
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends build-essential cmake pkg-config binutils clang-format \
    libjansson-dev zlib1g-dev libunwind-dev libdw-dev python3 libmicrohttpd-dev prometheus \
    python3-venv python3-setuptools python3-wheel-whl python3-pytest python3-numpy \
    python3-pandas libcurl4 \
    chromium libsqlite3-0 librocm-smi-dev $node_pkgs
