"""The original package's own test suites run against ours (issue 33,
CTest test_python_profgpu_original): the seed's gpu-profile (profgpu
90ddb12, importing gpu_profile), profgpu 0.2.0 (b09fa68, 94 tests,
importing profgpu) and profgpu 0.3.0 (aba5ba9, 138 tests: the multi-run
API), each from a checkout named in $GP_PROFGPU_DIR
(colon-separated; docs/python.md, "The original's tests").  Their code stays
out of our tree: the checkout is read where it is, and the import is renamed
at run time by a `profgpu` package made in a temporary folder that re-exports
gpu_profile.

Every test that uses only the public API must pass.  The tests that patch
the original's private internals (_Aggregator, _percentile, its backend
classes...) are deselected, each listed in PRIVATE with the test of ours
(tests/python/test_gpu_profile_original.py) that checks the same public
behaviour with the same inputs through the fake NVML; this script checks
those tests exist.  The shim's stand-ins for the private names only let the
original's module import; using one fails.

Exit 77 (CTest: skipped), saying why, without a checkout or without pytest;
1 when GP_PROFGPU_DIR names a folder that is not a checkout.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(HERE, "test_gpu_profile_original.py")

# The original's private names its tests import (profgpu/monitor.py).
PRIVATE_NAMES = ("METRIC_KEYS", "BaseGpuBackend", "NullGpuBackend", "NvidiaSmiBackend",
                 "NvidiaNvmlBackend", "_Aggregator", "_percentile", "_sparkline",
                 "_compute_run_stats")

# 0.2.0's tests that patch a private internal -> our test of the same
# public behaviour, with the same inputs (class::test, or class: all of it).
PRIVATE = {
    "TestPercentile": "test_percentile_cases",
    "TestSparkline": "test_sparkline_cases",
    "TestNullGpuBackend": "test_none_backend_cases",
    "TestAggregator::test_no_samples_returns_nan": "test_no_samples_is_none",
    "TestAggregator::test_single_sample": "test_single_sample",
    "TestAggregator::test_warmup_filters_early_samples": "test_warmup_leaves_out_early_samples",
    "TestAggregator::test_max_tracking": "test_max_tracking",
    "TestAggregator::test_mean_calculation": "test_mean_calculation",
    "TestAggregator::test_mem_total_takes_last_value": "test_mem_total_takes_last_value",
    "TestAggregator::test_reservoir_bounded": "test_statistics_exact_and_bounded",
    "TestAggregator::test_trace_compression": "test_sparkline_cases",
    "TestAggregator::test_sparkline_output": "test_sparkline_cases",
    "TestAggregator::test_quantiles_approximate": "test_percentile_cases",
    "TestAggregator::test_missing_metrics_handled": "test_missing_metrics_are_none",
    "TestAggregator::test_warmup_s_clamped_to_zero": "test_negative_warmup_refused",
    "TestAggregator::test_reservoir_size_floor": "test_statistics_exact_and_bounded",
    "TestAggregator::test_trace_len_floor": "test_statistics_exact_and_bounded",
    "TestGpuMonitor::test_strict_auto_raises_when_no_gpu": "test_backend_selection",
    "TestGpuMonitorWithConstantBackend": "test_constant_device",
    "TestGpuMonitorWithRampBackend": "test_ramp_device",
    "TestGpuMonitorWithFailingBackend": "test_failing_device",
    "TestGpuMonitorStoreSamplesDownsampling": "test_max_samples_bound",
    "TestBackendSelection": "test_backend_selection",
    "TestNvidiaSmiBackendMocked": "test_smi_backend_cases",
    "TestEdgeCases::test_busy_time_estimate": "test_constant_device",
    # profgpu 0.3 (aba5ba9): its new statistics and RunStats.
    "TestAggregator::test_util_gpu_min": "test_extra_statistics_cases",
    "TestAggregator::test_util_gpu_min_nan_when_empty": "test_extra_statistics_cases",
    "TestAggregator::test_util_gpu_std_constant": "test_extra_statistics_cases",
    "TestAggregator::test_util_gpu_std_variable": "test_extra_statistics_cases",
    "TestAggregator::test_util_gpu_std_nan_single_sample": "test_extra_statistics_cases",
    "TestAggregator::test_idle_pct": "test_extra_statistics_cases",
    "TestAggregator::test_active_pct": "test_extra_statistics_cases",
    "TestAggregator::test_idle_active_nan_when_empty": "test_extra_statistics_cases",
    "TestAggregator::test_mem_used_mean_mb": "test_extra_statistics_cases",
    "TestAggregator::test_mem_used_mean_nan_when_empty": "test_extra_statistics_cases",
    "TestAggregator::test_sm_clock_mean_mhz": "test_extra_statistics_cases",
    "TestAggregator::test_sm_clock_max_mhz": "test_extra_statistics_cases",
    "TestAggregator::test_temp_mean_c": "test_extra_statistics_cases",
    "TestAggregator::test_quantiles_return_all_four_keys": "test_extra_statistics_cases",
    "TestAggregator::test_quantiles_empty_returns_nan": "test_extra_statistics_cases",
    "TestRunStats": "test_run_stats_cases",
}


def say(msg):
    print("profgpu_original: " + msg, flush=True)


def checkouts():
    """[(folder, package name its tests import)] of $GP_PROFGPU_DIR; None
    when one it names is not a checkout (said why)."""
    out = []
    for d in filter(None, os.environ.get("GP_PROFGPU_DIR", "").split(":")):
        tests = os.path.join(d, "tests")
        if not os.path.isdir(tests):
            say("GP_PROFGPU_DIR names %s, which has no tests/ folder: not a profgpu "
                "checkout (git -C profgpu worktree add DIR 90ddb12)" % d)
            return None
        for name in ("profgpu", "gpu_profile"):
            if os.path.isdir(os.path.join(d, "src", name)):
                out.append((d, name))
                break
        else:
            say("GP_PROFGPU_DIR names %s, which has neither src/profgpu nor "
                "src/gpu_profile: not a profgpu checkout" % d)
            return None
    return out


SHIM_INIT = '''"""Test shim (tests/python/profgpu_original.py): the original's import
name over our gpu_profile."""
from gpu_profile import *  # noqa: F401,F403
from gpu_profile import __all__, __version__  # noqa: F401
'''

SHIM_MONITOR = '''"""Test shim: the original's module; its private names are stand-ins."""
from gpu_profile import *  # noqa: F401,F403


class _Private:
    def __init__(self, *a, **k):
        raise NotImplementedError("a private internal of the original package: "
                                  "re-expressed in tests/python/test_gpu_profile_original.py")


METRIC_KEYS = ("util_gpu", "util_mem", "mem_used_mb", "mem_total_mb", "power_w", "temp_c",
               "sm_clock_mhz", "mem_clock_mhz")
BaseGpuBackend = NullGpuBackend = NvidiaSmiBackend = NvidiaNvmlBackend = _Private
_Aggregator = _Private


def _percentile(*a, **k):
    _Private()


_sparkline = _compute_run_stats = _percentile
'''


def make_shim(root, name):
    if name == "gpu_profile":
        return  # the seed's own import name: ours, as it is
    pkg = os.path.join(root, name)
    os.makedirs(pkg)
    files = {"__init__.py": SHIM_INIT, "monitor.py": SHIM_MONITOR,
             "cli.py": "from gpu_profile.cli import *  # noqa: F401,F403\n"
                       "from gpu_profile.cli import main  # noqa: F401\n"}
    for fname, text in files.items():
        with open(os.path.join(pkg, fname), "w") as f:
            f.write(text)


def pytest_python():
    """A python3 with pytest: ours first, then Debian's (python3-pytest)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run(
                [exe, "-m", "pytest", "--version"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return exe
    return None


def check_ours_exist():
    with open(OURS) as f:
        text = f.read()
    missing = sorted({t for t in PRIVATE.values()
                      if not re.search(r"def %s\(" % re.escape(t), text)})
    if missing:
        say("PRIVATE names tests %s not in %s" % (", ".join(missing), OURS))
        return False
    return True


def run_one(exe, folder, name, python_dir):
    tmp = tempfile.mkdtemp(prefix="gp-profgpu-")
    try:
        make_shim(tmp, name)
        ini = os.path.join(tmp, "pytest.ini")
        with open(ini, "w") as f:
            f.write("[pytest]\n")  # not the checkout's own configuration
        args = [exe, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", "-c", ini,
                "--rootdir", folder, os.path.join(folder, "tests")]
        listed = []
        if name == "profgpu":
            for node in PRIVATE:
                listed.append(node)
                args += ["--deselect", "tests/test_basic.py::" + node]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([tmp, python_dir])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        say("%s (import %s): %d private-internal groups deselected, each re-expressed in %s"
            % (folder, name, len(listed), os.path.basename(OURS)))
        for node in listed:
            say("  deselected %s -> %s" % (node, PRIVATE[node]))
        return subprocess.run(args, env=env, cwd=tmp).returncode
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if not check_ours_exist():
        return 1
    found = checkouts()
    if found is None:
        return 1
    if not found:
        say("SKIP: no profgpu checkout: set GP_PROFGPU_DIR (CMake -DGP_PROFGPU_DIR=) to "
            "checkouts of github.com/omids-cerebras/profgpu at 90ddb12, b09fa68 and aba5ba9, "
            "colon-separated")
        return 77
    exe = pytest_python()
    if not exe:
        say("SKIP: pytest is not installed (Debian: apt-get install python3-pytest)")
        return 77
    python_dir = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
    rc = 0
    for folder, name in found:
        r = run_one(exe, folder, name, python_dir)
        say("%s: pytest exit %d" % (folder, r))
        rc = rc or r
    return rc


if __name__ == "__main__":
    sys.exit(main())
