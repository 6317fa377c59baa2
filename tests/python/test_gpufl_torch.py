"""gpufl.torch without PyTorch: a fake `torch` package written on sys.path
(its TorchDispatchMode stack and an op dispatcher, as PyTorch's own), and
the push/pop calls and names it makes around each op; then, over the fake
CUPTI plugin, kernels launched inside ops carry them into the session and
`gpu-profile report` shows the ops section and hotspots --by op."""

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import gpufl  # noqa: E402

FAKE_TORCH = {
    "torch/__init__.py": "from . import utils\n",
    "torch/utils/__init__.py": "",
    "torch/utils/_python_dispatch.py": '''
_modes = []


class TorchDispatchMode:
    def __enter__(self):
        _modes.append(self)
        return self

    def __exit__(self, *exc):
        _modes.remove(self)


def dispatch(func, *args, **kwargs):
    """What PyTorch does with an aten op: the innermost mode gets it (and
    runs below it while it calls func)."""
    if not _modes:
        return func(*args, **kwargs)
    mode = _modes.pop()
    try:
        return mode.__torch_dispatch__(func, (), args, kwargs)
    finally:
        _modes.append(mode)


class OpOverload:
    def __init__(self, schema, body):
        self.schema, self.body = schema, body
        self.__name__ = schema.split("::")[-1] + ".default"

    def name(self):
        return self.schema

    def __call__(self, *args, **kwargs):
        return self.body(*args, **kwargs)
''',
}


class FakeTorch:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gpufl-faketorch-")
        for rel, text in FAKE_TORCH.items():
            path = os.path.join(self.dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        sys.path.insert(0, self.dir)
        import torch.utils._python_dispatch as d  # noqa: F401
        self.d = d

    def close(self):
        sys.path.remove(self.dir)
        for m in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
            del sys.modules[m]
        shutil.rmtree(self.dir, ignore_errors=True)


def fresh_gpufl_torch():
    sys.modules.pop("gpufl.torch", None)
    import gpufl.torch as gt
    return gt


class DispatchTest(unittest.TestCase):
    def setUp(self):
        self.torch = FakeTorch()
        self.gt = fresh_gpufl_torch()
        self.calls = []
        self.p1 = mock.patch.object(gpufl, "push_external_op",
                                    side_effect=lambda n: self.calls.append(("push", n)) or True)
        self.p2 = mock.patch.object(gpufl, "pop_external_op",
                                    side_effect=lambda: self.calls.append(("pop",)))
        self.p1.start()
        self.p2.start()

    def tearDown(self):
        while self.gt._count:
            self.gt.detach()
        self.p1.stop()
        self.p2.stop()
        self.torch.close()

    def test_ops_pushed_and_popped(self):
        d = self.torch.d
        add = d.OpOverload("aten::add", lambda a, b: a + b)
        mm = d.OpOverload("aten::mm", lambda a, b: d.dispatch(add, a * b, 1))
        self.assertEqual(d.dispatch(mm, 2, 3), 7)  # not attached: nothing
        self.assertEqual(self.calls, [])
        self.gt.attach()
        self.assertEqual(d.dispatch(mm, 2, 3), 7)
        self.assertEqual(d.dispatch(add, 2, 3), 5)
        # What mm runs below the mode is not the mode's (PyTorch's rule).
        self.assertEqual(self.calls, [("push", "aten::mm"), ("pop",), ("push", "aten::add"),
                                      ("pop",)])
        self.gt.detach()
        self.calls.clear()
        d.dispatch(mm, 2, 3)
        self.assertEqual(self.calls, [])

    def test_exception_still_pops(self):
        d = self.torch.d

        def boom():
            raise ValueError("op failed")
        op = d.OpOverload("aten::boom", boom)
        self.gt.attach()
        with self.assertRaisesRegex(ValueError, "op failed"):
            d.dispatch(op)
        self.assertEqual(self.calls, [("push", "aten::boom"), ("pop",)])

    def test_nested_attach_and_profile(self):
        d = self.torch.d
        op = d.OpOverload("aten::relu", lambda x: max(x, 0))
        self.gt.attach()
        self.gt.attach()
        self.gt.detach()
        d.dispatch(op, -1)
        self.assertEqual(self.calls, [("push", "aten::relu"), ("pop",)])
        self.gt.detach()
        self.gt.detach()  # one too many: nothing
        self.assertEqual(d._modes, [])
        self.calls.clear()
        with mock.patch.object(gpufl, "Scope") as scope:
            with self.gt.profile("step"):
                d.dispatch(op, 3)
            scope.assert_called_once_with("step")
        self.assertEqual(self.calls, [("push", "aten::relu"), ("pop",)])
        self.assertEqual(d._modes, [])

    def test_watch_scopes_modules(self):
        events = []

        class Scope:
            def __init__(self, name):
                self.name = name

            def __enter__(self):
                events.append(("begin", self.name))

            def __exit__(self, *exc):
                events.append(("end", self.name))

        class Handle:
            def __init__(self, hooks, h):
                self.hooks, self.h = hooks, h

            def remove(self):
                self.hooks.remove(self.h)

        class Module:  # nn.Module's hook protocol, as PyTorch calls it
            def __init__(self, children=()):
                self.children = list(children)
                self.pre, self.post = [], []

            def named_modules(self, prefix=""):
                yield prefix, self
                for i, c in enumerate(self.children):
                    yield from c.named_modules(prefix + ("." if prefix else "") + str(i))

            def register_forward_pre_hook(self, h):
                self.pre.append(h)
                return Handle(self.pre, h)

            def register_forward_hook(self, h):
                self.post.append(h)
                return Handle(self.post, h)

            def __call__(self, x):
                for h in self.pre:
                    h(self, (x,))
                out = x
                for c in self.children:
                    out = c(out)
                for h in self.post:
                    h(self, (x,), out)
                return out

        class Net(Module):
            pass

        net = Net([Module(), Module([Module()])])
        with mock.patch.object(gpufl, "Scope", Scope):
            self.gt.watch(net)
            net(1)
            self.gt.unwatch(net)
            net(1)
        self.assertEqual(events, [("begin", "Net"), ("begin", "Net.0"), ("end", "Net.0"),
                                  ("begin", "Net.1"), ("begin", "Net.1.0"), ("end", "Net.1.0"),
                                  ("end", "Net.1"), ("end", "Net")])

    def test_op_name(self):
        class NoName:
            __name__ = "mm.default"
        self.assertEqual(self.gt.op_name(self.torch.d.OpOverload("aten::mm", None)), "aten::mm")
        self.assertEqual(self.gt.op_name(NoName()), "mm.default")


class NoTorchTest(unittest.TestCase):
    def test_attach_without_torch(self):
        gt = fresh_gpufl_torch()
        with mock.patch.dict(sys.modules, {"torch": None, "torch.utils": None,
                                           "torch.utils._python_dispatch": None}):
            with self.assertRaisesRegex(RuntimeError, "needs the torch package"):
                gt.attach()
        self.assertEqual(gt._count, 0)


class OpIdTest(unittest.TestCase):
    def test_ids(self):
        self.assertEqual(gpufl.op_id("aten::mm"), 10969521849668870701)
        self.assertEqual(gpufl.op_id("aten::relu"), 5638660427450741845)
        self.assertFalse(gpufl.push_external_op("aten::mm"))  # no session
        gpufl.pop_external_op()


@unittest.skipUnless(os.environ.get("GP_TEST_FAKE_PLUGIN") and os.environ.get("GP_TEST_CLI"),
                     "needs the fake CUPTI plugin and the command")
class SessionTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpufl-torch-")
        self.torch = FakeTorch()
        self.gt = fresh_gpufl_torch()
        self.env = dict(os.environ)
        os.environ["GPUFL_CUPTI_PLUGIN"] = os.environ["GP_TEST_FAKE_PLUGIN"]
        os.environ["FAKE_CUPTI_SCENARIO"] = "launches"

    def tearDown(self):
        gpufl.shutdown()
        os.environ.clear()
        os.environ.update(self.env)
        self.torch.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_kernels_carry_ops(self):
        plugin = ctypes.CDLL(os.environ["GP_TEST_FAKE_PLUGIN"])
        launch = plugin.fake_cupti_launch
        launch.argtypes = [ctypes.c_uint32]
        d = self.torch.d
        corr = iter(range(1, 100))
        relu = d.OpOverload("aten::relu", lambda: launch(next(corr)))
        mm = d.OpOverload("aten::mm", lambda: launch(next(corr)))
        self.assertTrue(gpufl.init(app_name="torch_ops", log_path=self.tmp,
                                   backend=gpufl.BackendKind.None_,
                                   profiling_engine=gpufl.ProfilingEngine.Trace),
                        gpufl.last_error())
        with self.gt.profile():
            for _ in range(2):
                d.dispatch(mm)    # corr 1, 3: aten::mm
                d.dispatch(relu)  # corr 2, 4: aten::relu
        launch(next(corr))    # corr 5: no op
        gpufl.shutdown()
        out = subprocess.run([os.environ["GP_TEST_CLI"], "report", "--format", "json",
                              "--by", "op", self.tmp], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        rep = json.loads(out.stdout)
        ops = {o["name"]: o for o in rep["ops"]["ops"]}
        self.assertEqual(sorted(ops), ["aten::mm", "aten::relu"])
        self.assertEqual(ops["aten::mm"]["launches"], 2)
        self.assertEqual(ops["aten::relu"]["launches"], 2)
        self.assertEqual(ops["aten::mm"]["id"], str(gpufl.op_id("aten::mm")))
        self.assertTrue(ops["aten::mm"]["named"])
        self.assertEqual(rep["ops"]["launches"], 4)
        self.assertEqual(rep["hotspots"]["by"], "op")
        self.assertEqual(rep["hotspots"]["grouped_launches"], 4)
        # The fake's kernels: corr % 3 picks the name (vecAdd, gemm, reduceSum).
        mm_kernels = sorted(k["name"] for k in ops["aten::mm"]["kernels"])
        self.assertEqual(len(mm_kernels), 2)


if __name__ == "__main__":
    unittest.main()
