"""GPUFlight's own Python test suite run against our gpufl package (issue 36,
CTest test_python_gpufl_client_original): the `tests/python` of a checkout
of gpu-flight/gpufl-client (release 1.3.0rc1) named by $GP_GPUFL_CLIENT_DIR
(CMake -DGP_GPUFL_CLIENT_DIR=; docs/gpufl.md, "GPUFlight's own tests").
Their code and fixtures stay out of our tree: the checkout is read where it
is.  Its tests put the checkout's python/ first on sys.path; a pytest
plugin made in a temporary folder imports our gpufl before they run, so
every `import gpufl` is ours (the plugin checks it, and fails otherwise).

Every test passes except those in EXPECTED_FAILURES, each with its reason
(docs/gpufl.md lists the same) and a piece of the failure's message, so
a listed test that fails for another reason fails this script, and so does
a listed test that passes (remove it from the list and the docs).

Exit 77 (CTest: skipped), saying why and how to enable it, without a
checkout, pytest or pandas; 1 when GP_GPUFL_CLIENT_DIR names a folder that
is not a checkout, or when the results are not the expected ones.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
OUR_PYTHON = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
SUITE = os.path.join("tests", "python")

# test id (file::class::test) -> (why it fails, text its failure message holds)
_STALE_LAYOUT = ("GPUFlight's test counts device_metric rows in <tmp>/<app>.system.log, the "
                 "pre-1.2 flat layout; GPUFlight 1.3 (and we) write "
                 "<log_path>/<session_id>/system.log, so it finds none on GPUFlight 1.3 "
                 "too (it needs a GPU there, so GPUFlight's CI skips it); our session has "
                 "the rows")
EXPECTED_FAILURES = {
    "test_continuous_system_sampling.py::test_continuous_true_always_samples":
        (_STALE_LAYOUT, "got 0"),
    "test_continuous_system_sampling.py::test_continuous_false_with_scope_samples_during_scope":
        (_STALE_LAYOUT, "got 0"),
}

PLUGIN = '''"""Test plugin (tests/python/gpufl_client_original.py): our gpufl first."""
import os
import gpufl
import gpufl.analyzer

_ours = os.path.realpath(%r)
for _m in (gpufl, gpufl.analyzer):
    if not os.path.realpath(_m.__file__).startswith(_ours + os.sep):
        raise ImportError("%%s is %%s, not ours (%%s)" %% (_m.__name__, _m.__file__, _ours))
'''


def say(msg):
    print("gpufl_client_original: " + msg, flush=True)


def checkout():
    """The checkout's folder; None without one (skip), False for a folder
    that is not one."""
    d = os.environ.get("GP_GPUFL_CLIENT_DIR", "")
    if not d:
        return None
    if not os.path.isfile(os.path.join(d, SUITE, "test_analyzer.py")):
        say("GP_GPUFL_CLIENT_DIR names %s, which has no %s/test_analyzer.py: not a checkout of "
            "gpu-flight/gpufl-client (git -C gpufl-client archive v1.3.0rc1 | tar -x -C DIR)"
            % (d, SUITE))
        return False
    return d


def pytest_python():
    """A python3 with pytest and pandas (the analyzer's tables): ours
    first, then Debian's (python3-pytest, python3-pandas)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import pytest, pandas"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return exe
    return None


def results(xml_path):
    """{test id: (outcome, message)} from pytest's JUnit XML."""
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        cls = case.get("classname", "").split(".")
        # classname: "test_x" or "test_x.TestClass" (the folder is the rootdir)
        node = cls[0] + ".py" + "".join("::" + c for c in cls[1:]) + "::" + case.get("name")
        outcome, msg = "passed", ""
        for kind in ("failure", "error", "skipped"):
            el = case.find(kind)
            if el is not None:
                outcome = kind
                msg = (el.get("message") or "") + "\n" + (el.text or "")
                break
        out[node] = (outcome, msg)
    return out


def check(got):
    bad = []
    for node, (outcome, msg) in sorted(got.items()):
        want = EXPECTED_FAILURES.get(node)
        if want is None:
            if outcome != "passed":
                bad.append("%s: %s, expected to pass:\n%s" % (node, outcome, msg[-2000:]))
        elif outcome != "failure":
            bad.append("%s: %s, listed as failing (%s): remove it from EXPECTED_FAILURES "
                       "and from docs/gpufl.md" % (node, outcome, want[0]))
        elif want[1] not in msg:
            bad.append("%s failed, but not as listed (its message lacks %r):\n%s"
                       % (node, want[1], msg[-2000:]))
    for node in sorted(set(EXPECTED_FAILURES) - set(got)):
        bad.append("%s: listed in EXPECTED_FAILURES, not in the suite" % node)
    return bad


def main():
    d = checkout()
    if d is False:
        return 1
    if d is None:
        say("SKIP: no gpufl-client checkout: set GP_GPUFL_CLIENT_DIR (CMake "
            "-DGP_GPUFL_CLIENT_DIR=DIR) to a checkout of gpu-flight/gpufl-client at "
            "v1.3.0rc1 (docs/gpufl.md, \"GPUFlight's own tests\")")
        return 77
    exe = pytest_python()
    if not exe:
        say("SKIP: no python3 here has both pytest and pandas (Debian: apt-get install "
            "python3-pytest python3-pandas)")
        return 77
    tmp = tempfile.mkdtemp(prefix="gp-gpufl-client-")
    try:
        with open(os.path.join(tmp, "gp_ours_first.py"), "w") as f:
            f.write(PLUGIN % OUR_PYTHON)
        ini = os.path.join(tmp, "pytest.ini")
        with open(ini, "w") as f:
            f.write("[pytest]\n")  # not the checkout's own configuration
        xml = os.path.join(tmp, "results.xml")
        work = os.path.join(tmp, "cwd")  # their init("test_app") writes ./test_app/
        os.mkdir(work)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([tmp, OUR_PYTHON])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        # The machine's doubles: a fake NVML device to sample (tests/scenarios).
        env.setdefault("FAKE_NVML_SCENARIO", os.path.join(os.path.dirname(HERE), "scenarios",
                                                          "nvml_monitor.txt"))
        for k in [k for k in env if k.startswith("GPUFL_")]:
            del env[k]
        args = [exe, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", "-p",
                "gp_ours_first", "-c", ini, "--rootdir", os.path.join(d, SUITE),
                "--basetemp", os.path.join(tmp, "pytest"), "--junitxml", xml,
                os.path.join(d, SUITE)]
        say("%s against our gpufl (%s); expected to fail: %d, each listed in docs/gpufl.md"
            % (os.path.join(d, SUITE), OUR_PYTHON, len(EXPECTED_FAILURES)))
        for node, (why, _) in sorted(EXPECTED_FAILURES.items()):
            say("  expected failure %s: %s" % (node, why))
        rc = subprocess.run(args, env=env, cwd=work).returncode
        if not os.path.exists(xml):
            say("pytest exit %d and no results: the suite did not run" % rc)
            return 1
        got = results(xml)
        bad = check(got)
        passed = sum(1 for o, _ in got.values() if o == "passed")
        say("%d of %d passed (%.1f %%)" % (passed, len(got), 100.0 * passed / max(1, len(got))))
        if passed < 0.95 * len(got):
            bad.append("fewer than 95 %% of the suite passed (%d of %d)" % (passed, len(got)))
        for b in bad:
            say("UNEXPECTED: " + b)
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
