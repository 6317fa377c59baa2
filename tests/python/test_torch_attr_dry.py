"""test_torch_attr_dry.py - tests/gpu/run.sh's PyTorch attribution step
(4c) dry-run without a GPU, in two parts:

  checker   tests/gpu/check_torch_attr.py, the step's checker, on a session
            written here as the real step's would be (torch_trace.py's 5
            matmuls: a cuBLAS gemm each, under aten::mm, launched from its
            "# @mm" line through gpufl.torch's dispatch mode and
            torch/_ops.py): it passes, and fails told 4 calls or when the
            stacks name another line;
  pipeline  the real torch_trace.py under GP_TORCH_OPS=1 (gpufl.torch
            attached) over a fake `torch` package written here (its ops
            dispatched through the TorchDispatchMode stack, each launching
            through the fake CUPTI plugin: aten::mm a "gemm" kernel) in an
            in-process Trace session with CPU stacks: `report --by op`
            has aten::mm with its 5 gemm launches, and the randn launches
            (before the matmuls) are attributed to their lines.

Skipped (77) without the fake plugin and the command."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.path.join(HERE, "..", "gpu")
SKIP = 77

FAKE_TORCH = {
    "torch/__init__.py": '''
import ctypes
import os

from . import cuda, utils  # noqa: F401
from .utils._python_dispatch import OpOverload, dispatch

# PyDLL: the launch made holding the GIL, as a launch whose Python frames
# the plugin can read (docs/gpufl.md, "Python frames in CPU stacks").
_launch = ctypes.PyDLL(os.environ["GPUFL_CUPTI_PLUGIN"]).fake_cupti_launch
_launch.argtypes = [ctypes.c_uint32]
_corr = [0]


def _kernel(residue):
    """A launch whose fake kernel is picked by corr % 3: 0 vecAdd, 1 gemm,
    2 reduceSum."""
    _corr[0] += 1
    while _corr[0] % 3 != residue:
        _corr[0] += 1
    _launch(_corr[0])


class Tensor:
    def sum(self):
        return self

    def item(self):
        return 1.0


def _op(schema, residue):
    op = OpOverload(schema, lambda *a: (_kernel(residue), Tensor())[1])
    return lambda *args, **kwargs: dispatch(op, *args)


def device(name):
    return name


def manual_seed(seed):
    return None


randn = _op("aten::randn", 2)
mm = _op("aten::mm", 1)
relu = _op("aten::relu", 0)
''',
    "torch/cuda.py": '''
def is_available():
    return True


def synchronize():
    return None


def get_device_name(i):
    return "Fake GPU"
''',
    "torch/utils/__init__.py": "",
    "torch/utils/_python_dispatch.py": '''
_modes = []


class TorchDispatchMode:
    def __enter__(self):
        _modes.append(self)
        return self

    def __exit__(self, *exc):
        _modes.remove(self)


def dispatch(func, *args):
    if not _modes:
        return func(*args)
    mode = _modes.pop()
    try:
        return mode.__torch_dispatch__(func, (), args, {})
    finally:
        _modes.append(mode)


class OpOverload:
    def __init__(self, schema, body):
        self.schema, self.body = schema, body
        self.__name__ = schema.split("::")[-1] + ".default"

    def name(self):
        return self.schema

    def __call__(self, *args, **kwargs):
        return self.body(*args)
''',
}


def write_session(root, line, stack_line=None):
    """torch_trace.py's session as a GPU gives it: per iteration an
    aten::mm gemm (line `line`) and an aten::relu elementwise kernel (the
    next line), each with its kernel_detail stack."""
    sid = "7077c4a7-0000-4000-8000-000000000001"
    d = os.path.join(root, sid)
    os.makedirs(d)
    at = stack_line or line

    def stack(n, op):
        return ("<module> (tests/gpu/torch_trace.py:70)|main (tests/gpu/torch_trace.py:%d)|"
                "_build_mode_class.<locals>.GpuflDispatchMode.__torch_dispatch__ "
                "(python/gpufl/torch/__init__.py:72)|OpOverload.__call__ (torch/_ops.py:594)|"
                "at::native::%s|cudaLaunchKernel" % (n, op))

    recs = [{"version": 1, "type": "job_start", "pid": 77, "app": "torch_trace",
             "session_id": sid, "ts_ns": 1760000000000000000, "hostname": "h",
             "session_kind": "trace", "profiling_engine": "nvidia.trace"},
            {"version": 1, "type": "dictionary_update", "session_id": sid,
             "kernel_dict": {"1": "ampere_sgemm_128x64_nn",
                             "2": "vectorized_elementwise_kernel<relu>"},
             "op_dict": {"11": "aten::mm", "12": "aten::relu"}}]
    rows = []
    for i in range(5):
        for k, (n, op, ext) in enumerate(((at, "mm", 11), (line + 1, "relu", 12))):
            corr = 2 * i + k + 1
            recs.append({"version": 1, "type": "kernel_detail", "session_id": sid,
                         "corr_id": corr, "stack_trace": stack(n, op)})
            rows.append([corr * 10000, k + 1, 7, 5000 - 3000 * k, corr, 1, 4, ext])
    recs.append({"version": 1, "type": "kernel_event_batch", "session_id": sid, "batch_id": 1,
                 "base_time_ns": 1760000000001000000,
                 "columns": ["dt_ns", "kernel_id", "stream_id", "duration_ns", "corr_id",
                             "has_details", "external_kind", "external_id"], "rows": rows})
    recs.append({"version": 1, "type": "shutdown", "session_id": sid, "pid": 77,
                 "app": "torch_trace", "ts_ns": 1760000000009000000})
    with open(os.path.join(d, "device.log"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))
    return root


def mm_line(script):
    with open(script) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith("# @mm"):
                return i
    return -1


def check_checker(cli, tmp, script, fails):
    checker = os.path.join(GPU, "check_torch_attr.py")
    line = mm_line(script)
    good = write_session(os.path.join(tmp, "good"), line)
    cases = [(good, [], 0, "check_torch_attr: ok"),
             (good, ["4"], 1, "has 5 gemm launches, 4 wanted"),
             (write_session(os.path.join(tmp, "moved"), line, line + 7), [], 1,
              "by line (want ...torch_trace.py:%d)): 0 groups match, 1 wanted" % line)]
    for logs, extra, rc, want in cases:
        r = subprocess.run([sys.executable, checker, cli, logs, script] + extra,
                           capture_output=True, text=True, timeout=600)
        print(r.stdout + r.stderr)
        if r.returncode != rc or want not in r.stdout:
            fails.append("checker on %s %s: exit %d, %d wanted, %r wanted in its output" % (
                os.path.basename(logs), extra, r.returncode, rc, want))


def report(cli, logs, by):
    r = subprocess.run([cli, "report", "--format", "json", "--by", by, logs],
                       capture_output=True, text=True, timeout=600)
    return json.loads(r.stdout) if r.returncode == 0 else {"hotspots": {"groups": []}}


def check_pipeline(cli, plugin, tmp, script, fails):
    for rel, text in FAKE_TORCH.items():
        path = os.path.join(tmp, "fake", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    logs = os.path.join(tmp, "logs")
    env = dict(os.environ, GPUFL_CUPTI_PLUGIN=plugin, FAKE_CUPTI_SCENARIO="launches",
               GP_TORCH_OPS="1",
               PYTHONPATH=os.path.join(tmp, "fake") + os.pathsep + os.environ.get("PYTHONPATH",
                                                                                  ""))
    r = subprocess.run([sys.executable, script, "--gpufl-init", logs], env=env,
                       capture_output=True, text=True, timeout=300)
    print(r.stdout + r.stderr)
    if r.returncode != 0:
        fails.append("torch_trace.py exit %d" % r.returncode)
        return
    ops = {g["name"]: g for g in report(cli, logs, "op")["hotspots"]["groups"]}
    mm = ops.get("aten::mm")
    got = [(k["name"], k["launches"]) for k in mm["kernels"]] if mm else None
    if got != [("gemm(float const*, float const*, float*)", 5)]:
        fails.append("pipeline: aten::mm's kernels %r" % (got,))
    lines = {g["name"]: g["launches"] for g in report(cli, logs, "line")["hotspots"]["groups"]}
    # randn's two launches (the fake's first two ops), each on its line
    first = mm_line(script) - 4
    for n in (first, first + 1):
        got = [v for k, v in lines.items() if k.startswith("main (") and
               k.endswith("torch_trace.py:%d)" % n)]
        if got != [1]:
            fails.append("pipeline: line %d has %r launches, [1] wanted (groups %r)" % (
                n, got, lines))


def main():
    plugin, cli = os.environ.get("GP_TEST_FAKE_PLUGIN"), os.environ.get("GP_TEST_CLI")
    if not plugin or not cli:
        print("SKIP: needs the fake CUPTI plugin and the command (GP_TEST_FAKE_PLUGIN, GP_TEST_CLI)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="gp-torch-attr-")
    script = os.path.abspath(os.path.join(GPU, "torch_trace.py"))
    fails = []
    try:
        check_checker(cli, tmp, script, fails)
        check_pipeline(cli, plugin, tmp, script, fails)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in fails:
        print("FAIL: " + f)
    print("ok" if not fails else "%d failed" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
