#!/bin/sh
# The pip install of docs/python.md ("With pip"), end to end and offline, as
# on a clean Debian 12 machine: cmake --install into a temporary prefix, a
# fresh venv, pip install of a copy of python/ with GPU_PROFILE_PREFIX naming
# that prefix, then, from another directory and with no PYTHONPATH or
# GPU_PROFILE_LIBRARY, import gpu_profile and gpufl, check they loaded the
# installed library, that every version agrees with CMake's, and profile a
# call and record a scope against the fake NVML with exact values.
# No network: PIP_NO_INDEX=1, no pip config, proxies pointing nowhere.
# Skips (77) only without python3-venv or Debian's wheels (python3-wheel-whl,
# python3-setuptools-whl; scripts/install-deps.sh installs them).
# Usage: pip_install_test.sh BUILD_DIR SOURCE_DIR PYTHON3 VERSION
set -eu
build=$1
src=$2
py=$3
version=$4
wheels=/usr/share/python-wheels
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$py" -m venv "$tmp/v" >"$tmp/venv.log" 2>&1; then
    echo "pip_install_test: SKIP: '$py -m venv' failed (install python3-venv):" >&2
    cat "$tmp/venv.log" >&2
    exit 77
fi
if ! ls "$wheels"/wheel-*.whl >/dev/null 2>&1; then
    echo "pip_install_test: SKIP: no $wheels/wheel-*.whl (install python3-wheel-whl)" >&2
    exit 77
fi
export PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9
export HTTP_PROXY=$http_proxy HTTPS_PROXY=$https_proxy
sh "$src/tests/install_tmp.sh" cmake "$build" "$tmp/prefix" >/dev/null
lib=$(ls "$tmp"/prefix/lib*/libgpuprofile.so.0 | head -n 1)
# A clean clone's python/: no bytecode, no build/ or egg-info of a local run.
mkdir "$tmp/clone"
cp -r "$src/python" "$tmp/clone/python"
find "$tmp/clone/python" \( -name __pycache__ -o -name build -o -name '*.egg-info' \) \
    -prune -exec rm -rf {} +
(cd "$tmp/clone" &&
    "$tmp/v/bin/pip" install -q --find-links "$wheels" wheel &&
    GPU_PROFILE_PREFIX="$tmp/prefix" "$tmp/v/bin/pip" install -q --no-build-isolation ./python) \
    >"$tmp/pip.log" 2>&1 || {
    echo "pip_install_test: the pip install failed:" >&2
    cat "$tmp/pip.log" >&2
    exit 1
}
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
env -u GPU_PROFILE_LIBRARY -u PYTHONPATH -u GPU_PROFILE_PREFIX \
    FAKE_NVML_SCENARIO="$src/tests/scenarios/nvml_monitor.txt" \
    WANT_LIB="$lib" WANT_VERSION="$version" VENV="$tmp/v" \
    "$tmp/v/bin/python" - <<'PY'
import importlib.metadata, os, sys
import gpu_profile, gpufl

def check(what, got, want):
    if got != want:
        sys.exit("pip_install_test: %s: got %r, want %r" % (what, got, want))

for m in (gpu_profile, gpufl):
    check(m.__name__ + " is the venv's", m.__file__.startswith(os.environ["VENV"] + "/"), True)
    check(m.__name__ + ".library_path", m.library_path, os.environ["WANT_LIB"])
    check(m.__name__ + ".__version__", m.__version__, os.environ["WANT_VERSION"])
    check(m.__name__ + ".c_library_version", m.c_library_version, os.environ["WANT_VERSION"])
check("pip's version", importlib.metadata.version("gpu-profile"), os.environ["WANT_VERSION"])

@gpu_profile.gpu_profile(interval_s=0.02, backend="nvml", report=False, return_profile=True)
def work():
    import time
    time.sleep(0.1)
    return "done"

r = work()
check("value", r.value, "done")
check("backend", r.gpu.backend, "nvml")
check("name", r.gpu.name, "NVIDIA H100 80GB HBM3")
check("util_gpu_max", r.gpu.util_gpu_max, 50)
check("util_gpu_mean", r.gpu.util_gpu_mean, 50.0)
check("power_max_w", r.gpu.power_max_w, 100.0)

check("gpufl.init", gpufl.init(app_name="pip_test", log_path="logs"), True)
with gpufl.Scope("step"):
    pass
gpufl.shutdown()
sessions = os.listdir("logs")
check("sessions", len(sessions), 1)
check("files", sorted(f for f in os.listdir(os.path.join("logs", sessions[0]))
                      if f.endswith(".log")), ["device.log", "scope.log", "system.log"])
print("pip_install_test: gpu_profile %s and gpufl from %s" % (gpu_profile.__version__,
                                                             gpu_profile.library_path))
PY
echo "pip_install_test: 1 passed, 0 failed"
