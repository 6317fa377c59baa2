"""test_pystack.py - Python frames in the CPU stacks of launches and
synchronizations (plugin/pystack.c, docs/gpufl.md "Python frames").

Each case runs tests/python/pystack_child.py in a child python, whose call
chains are known (the "# @name" markers give their lines), and asserts the
captured frames exactly: the Python frames "qualname (path:line)"
outermost first where the interpreter's C frames were, the C frames of
ctypes and libffi between them and the innermost C frame, which is the
helper's (tests/python/pystack_helper.c) or the fake CUDA launch's.

  direct      the capture alone (plugin/stacks.c through the helper): a
              chain through a method and a recursion, the same call site
              twice (one stack id), a call without the GIL (native frames
              only), a Python -> C -> Python callback (frames interleaved),
              a module of an installed package, paths relative to the
              directory the program started in; again under every other
              CPython found (GP_TEST_PYSTACK_PYTHONS): 3.8+ the same
              frames, older ones none and the reason
  fake        gpufl.init(Trace, enable_stack_trace) with the fake CUPTI
              plugin (tests/fakes/fake_cupti_plugin.c): launch 11's
              kernel_detail.stack_trace, synchronization 15's stack_dict
              text, capture_capabilities, and `gpu-profile report` showing
              the innermost Python frame of each
  gpufl_init  the real plugin over the fake driver and CUPTI calls
              (tests/fakes/fake_libcuda.c, fake_cupti_api.c), in-process
  injected    the same, the plugin injected by CUDA_INJECTION64_PATH

Exits 77 (skipped) when the plugin is built without libunwind and libdw.
"""
import glob
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "pystack_child.py")
QUAL = sys.version_info >= (3, 11)  # co_qualname
# The interpreter's own C functions: never left in a stack with Python frames.
INTERP = ("_PyEval_", "_PyObject_MakeTpCall", "PyObject_Vectorcall", "_PyFunction_Vectorcall",
          "PyEval_EvalCode", "Py_RunMain", "Py_BytesMain", "run_mod", "_PyRun_")


def markers():
    lines = {}
    with open(CHILD) as f:
        for i, text in enumerate(f, 1):
            m = re.search(r"# @(\w+)$", text.rstrip())
            if m:
                lines[m.group(1)] = i
    return lines


AT = markers()


def frame(func, marker, path=CHILD, qual=QUAL):
    """A Python frame as the capture spells it: before 3.11 the code's
    co_name, from 3.11 its co_qualname."""
    return "%s (%s:%d)" % (func if qual else func.rsplit(".", 1)[-1], path, AT[marker])


def chain_a(caller, marker, path=CHILD, qual=QUAL):
    """The frames of chain_a(fn) called from caller at marker, fn excluded."""
    return [frame(caller, marker, path, qual), frame("chain_a", "chain_a", path, qual),
            frame("Model.forward", "forward", path, qual), frame("deep", "deep_rec", path, qual),
            frame("deep", "deep_rec", path, qual), frame("deep", "deep_leaf", path, qual)]


def other_pythons():
    """The interpreters GP_TEST_PYSTACK_PYTHONS names (colon-separated:
    CMake lists pyenv's and /usr/bin's), but this one."""
    own = os.path.realpath(sys.executable)
    found = []
    for p in os.environ.get("GP_TEST_PYSTACK_PYTHONS", "").split(":"):
        if p and os.access(p, os.X_OK) and os.path.realpath(p) != own and p not in found:
            found.append(p)
    return found


# The child's start directory: an empty one of its own, so that no source
# path is under it (paths under the start directory are shown relative,
# and a checkout may itself live under the temporary directory).
_START_DIR = tempfile.TemporaryDirectory(prefix="pystack-cwd-")


def run_child(args, env_extra=None, cwd=None, python=None):
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    env.update(env_extra or {})
    p = subprocess.run([python or sys.executable, CHILD] + args, env=env, capture_output=True, text=True,
                       timeout=240, cwd=cwd or _START_DIR.name)
    if p.returncode == 77:
        raise unittest.SkipTest("built without libunwind and libdw: " + p.stderr.strip())
    if p.returncode != 0:
        raise AssertionError("child %s failed (%d):\n%s" % (args, p.returncode, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def sync_stacks(log_dir):
    """stack_id -> text of the session's stack_dict, and the stack_id of
    each synchronization_event_batch row by corr_id."""
    scope = glob.glob(os.path.join(log_dir, "*", "scope.log"))
    assert len(scope) == 1, scope
    texts, by_corr = {}, {}
    with open(scope[0]) as f:
        for line in f:
            rec = json.loads(line)
            texts.update({int(k): v for k, v in rec.get("stack_dict", {}).items()})
            if rec.get("type") == "synchronization_event_batch":
                cols = rec["columns"]
                for row in rec["rows"]:
                    by_corr[row[cols.index("corr_id")]] = row[cols.index("stack_id")]
    return texts, by_corr


def kernel_stacks(log_dir):
    """corr_id -> kernel_detail.stack_trace, and the closing stack_trace
    capability, of the one session under log_dir."""
    dev = glob.glob(os.path.join(log_dir, "*", "device.log"))
    assert len(dev) == 1, dev
    stacks, cap = {}, None
    with open(dev[0]) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "kernel_detail":
                stacks[rec["corr_id"]] = rec["stack_trace"]
            if rec.get("type") == "capture_capabilities":
                cap = [c for c in rec["capabilities"] if c["feature"] == "stack_trace"][0]
    return stacks, cap


class PyStack(unittest.TestCase):
    def check(self, text, python, inner):
        """text: the Python frames python (outermost first), then C frames
        none of which is the interpreter's or Python's, then inner (a frame,
        or its prefix when it ends with ':'; None: the C frames end it)."""
        frames = text.split("|")
        self.assertEqual(frames[:len(python)], python, text)
        glue, last = frames[len(python):-1], frames[-1]
        if inner is None:
            glue.append(last)
            self.assertTrue(glue, text)
        elif inner.endswith(":"):
            self.assertTrue(last.startswith(inner), text)
        else:
            self.assertEqual(last, inner, text)
        for f in glue:
            self.assertNotIn(".py:", f, text)
            self.assertFalse(f.startswith(INTERP), text)
        return glue

    def test_direct(self):
        r = run_child(["direct"], {})
        self.assertEqual(r["version"], platform.python_version())
        self.check_direct(r)

    def test_direct_other_versions(self):
        """Every CPython 3.8+ the machine has gives the same frames; an
        older one none, saying why once."""
        pythons = other_pythons()
        if not pythons:
            self.skipTest("no other python3 (GP_TEST_PYSTACK_PYTHONS)")
        for py in pythons:
            with self.subTest(python=py):
                v = subprocess.run([py, "-c", "import sys; print(sys.version_info[:2] >= (3, 0))"],
                                   capture_output=True, text=True, timeout=60)
                if v.stdout.strip() != "True":
                    continue  # Python 2: not a CPython 3 for the child
                r = run_child(["direct"], {}, python=py)
                if tuple(int(x) for x in r["version"].split(".")[:2]) >= (3, 8):
                    self.check_direct(r)
                    continue
                self.assertEqual(r["note"],
                                 "CPython %s is not supported (3.8 or later): its stacks show "
                                 "the interpreter's C frames" % r["version"])
                self.assertEqual(r["python_captures"], 0)
                for t in r["texts"]:
                    self.assertNotIn(".py:", t)

    def check_direct(self, r):
        ids, texts = r["ids"], r["texts"]
        qual = tuple(int(x) for x in r["version"].split(".")[:2]) >= (3, 11)

        def frame(func, marker, path=CHILD):
            return globals()["frame"](func, marker, path, qual)

        def chain_a(caller, marker):
            return globals()["chain_a"](caller, marker, CHILD, qual)

        capture = "helper_capture (pystack_helper.c:%d)" % r["lines"][0]
        top = [frame("<module>", "module"), frame("main", "main_direct")]
        # The same call site twice: one stack, one id.
        self.assertEqual(ids[0], ids[1])
        self.assertEqual(len(set(ids)), 5, ids)
        self.check(texts[0], top + chain_a("direct", "direct_loop"), capture)
        self.check(texts[2], top + [frame("direct", "direct_b"), frame("chain_b", "chain_b")],
                   capture)
        # Without the GIL (ctypes.CDLL releases it): the native frames only.
        nogil = texts[3]
        self.assertNotIn(".py:", nogil)
        self.assertIn("_PyEval_EvalFrameDefault", nogil)
        self.assertTrue(nogil.endswith("|" + capture), nogil)
        # Python -> C (helper_call) -> Python (callback) -> C: each Python
        # frame where the interpreter's frames that ran it were.
        frames = texts[4].split("|")
        call = "helper_call (pystack_helper.c:%d)" % r["lines"][1]
        self.assertIn(call, frames, texts[4])
        outer = frames[:frames.index(call) + 1]
        self.check("|".join(outer), top + [frame("direct", "direct_cb"),
                                           frame("chain_b", "chain_b"),
                                           frame("direct.<locals>.<lambda>", "direct_cb")], call)
        inner = frames[frames.index(call) + 1:]
        cb = frame("direct.<locals>.callback", "callback")
        self.assertIn(cb, inner, texts[4])
        for f in inner[:inner.index(cb)]:
            self.assertNotIn(".py:", f)
            self.assertFalse(f.startswith(INTERP), texts[4])
        self.check("|".join(inner[inner.index(cb):]), [cb], capture)
        # An installed package's module: from the package's folder.
        self.check(texts[5], top + [frame("direct", "direct_pkg"), "in_pkg (pkg/mod.py:2)"],
                   capture)
        self.assertEqual(r["note"], "CPython " + r["version"])
        self.assertEqual(r["python_captures"], 5)  # all but the one without the GIL
        self.assertIs(r["gc_enabled"], True)

    def test_direct_paths_relative_to_the_start_directory(self):
        r = run_child(["direct"], {}, cwd=HERE)
        self.assertTrue(r["texts"][0].startswith(
            "<module> (pystack_child.py:%d)|main (pystack_child.py:%d)|" %
            (AT["module"], AT["main_direct"])), r["texts"][0])

    def test_fake_plugin(self):
        if not os.environ.get("GP_TEST_FAKE_PLUGIN"):
            self.skipTest("no fake CUPTI plugin (built without CUPTI)")
        # Started in the child's own directory: paths relative to it.
        rel = "pystack_child.py"
        with tempfile.TemporaryDirectory() as d:
            run_child(["fake", d], {"GPUFL_CUPTI_PLUGIN": os.environ["GP_TEST_FAKE_PLUGIN"],
                                    "FAKE_CUPTI_SCENARIO": "ok"}, cwd=HERE)
            stacks, cap = kernel_stacks(d)
            texts, by_corr = sync_stacks(d)
            report = None
            if os.environ.get("GP_TEST_CLI"):
                session = glob.glob(os.path.join(d, "*"))[0]
                p = subprocess.run([os.environ["GP_TEST_CLI"], "report", session],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                report = p.stdout
        # Synchronization 15 waited in chain_b: its stack_dict text.
        top = [frame("<module>", "module", rel), frame("main", "main_fake", rel)]
        self.check(texts[by_corr[15]], top + [
            frame("fake_plugin", "fake_sync", rel), frame("chain_b", "chain_b", rel),
            frame("fake_plugin.<locals>.<lambda>", "fake_sync", rel)], None)
        python = top + chain_a("fake_plugin", "fake_launch", rel) + \
            [frame("fake_plugin.<locals>.<lambda>", "fake_launch", rel)]
        # The fake plugin's own frame is the tool's: the innermost is ctypes'.
        self.check(stacks[11], python, None)
        self.assertEqual(stacks[12], "")  # no launch callback saw it
        self.assertEqual(cap["status"], "collected")
        self.assertEqual(cap["message"],
                         "2 launches and synchronizations with a CPU stack (libunwind), 2 "
                         "distinct stacks symbolised (libdw), at most 4096; 2 of them with "
                         "Python frames (CPython %s)" % platform.python_version())
        if report is not None:
            # Past the 4 innermost (C) frames, the innermost Python one.
            self.assertRegex(report, r"launched from .* <- %s <- \.\.\. \(%d more\)\n" % (
                re.escape(python[-1]), len(python) - 1))
            self.assertRegex(report, r"waited at .* <- %s <- \.\.\. \(4 more\)\n" % (
                re.escape(frame("fake_plugin.<locals>.<lambda>", "fake_sync", rel))))

    def launches(self, log_dir, main_marker, caller):
        stacks, cap = kernel_stacks(log_dir)
        top = [frame("<module>", "module"), frame("main", main_marker),
               frame(caller, caller + "_launches")]
        inner = "launch_callback (fake_cupti_api.c:"
        self.check(stacks[1], top + chain_a("launches", "launch_a") +
                   [frame("launches.<locals>.<lambda>", "launch_a")], inner)
        self.check(stacks[2], top + [frame("launches", "launch_b"), frame("chain_b", "chain_b"),
                                     frame("launches.<locals>.<lambda>", "launch_b")], inner)
        self.assertTrue(cap["message"].endswith(
            "; 2 of them with Python frames (CPython %s)" % platform.python_version()),
            cap["message"])

    def test_gpufl_init_real_plugin(self):
        if not os.environ.get("GP_TEST_PLUGIN"):
            self.skipTest("no CUPTI plugin")
        with tempfile.TemporaryDirectory() as d:
            run_child(["session", d], {"GPUFL_CUPTI_PLUGIN": os.environ["GP_TEST_PLUGIN"]})
            self.launches(d, "main_session", "session")

    def test_injected_real_plugin(self):
        if not os.environ.get("GP_TEST_PLUGIN"):
            self.skipTest("no CUPTI plugin")
        with tempfile.TemporaryDirectory() as d:
            run_child(["injected"], {"CUDA_INJECTION64_PATH": os.environ["GP_TEST_PLUGIN"],
                                     "GPUFL_CORE_LIBRARY": os.environ["GPU_PROFILE_LIBRARY"],
                                     "GPUFL_LOG_PATH": d, "GPUFL_ENABLE_STACK_TRACE": "1"})
            self.launches(d, "main_injected", "injected")


if __name__ == "__main__":
    unittest.main()
