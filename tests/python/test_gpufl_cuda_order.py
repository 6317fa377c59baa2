"""test_gpufl_cuda_order.py - gpufl.init() and CUDA's first cuInit, in
either order (issue 35; docs/gpufl.md, "In-process gpufl_init /
gpufl.init() and CUDA"), over the fake driver that models its init lock
(tests/fakes/fake_libcuda.c) and the fake CUPTI calls
(tests/fakes/fake_cupti_api.c), loaded RTLD_GLOBAL before gpufl so that
the plugin the core loads binds to them.  There is no PyTorch here:
"import torch" is modelled by what it does to the driver - the runtime's
first cuInit and a launch - and cuBLAS's own runtime by a second cuInit.

Each case runs in a child python (the driver initialises once per
process): gpufl.init(Trace) before the runtime's cuInit, and after it;
both record every launch of the session (not one before it), with no
driver call under a CUPTI callback (the fake counts violations).  Under
gpu-profile's injection, gpufl.init() after the injected session started
is refused with a message naming CUDA_INJECTION64_PATH.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

CHILD = r'''
import ctypes, json, os, sys
fake = os.environ["GP_TEST_FAKE_CUDA_DIR"]
cuda = ctypes.CDLL(os.path.join(fake, "libcuda.so.1"), mode=ctypes.RTLD_GLOBAL)
cupti = ctypes.CDLL(os.path.join(fake, "libfake_cupti_api.so"), mode=ctypes.RTLD_GLOBAL)
cuda.fake_cuda_last_violation.restype = ctypes.c_char_p
order, log = sys.argv[1], sys.argv[2]

def import_torch():  # what `import torch` and its first CUDA op do to the driver
    assert cuda.cuInit(0) == 0
    assert cupti.fake_cupti_launch(b"before_session") == 0

if order in ("after", "injected_after"):
    import_torch()
if order == "injected_after":
    plugin = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    assert plugin.gpufl_injection_wait(60000) == 1
import gpufl
ok = gpufl.init(app_name="cuda_order", log_path=log,
                profiling_engine=gpufl.ProfilingEngine.Trace)
if order == "before":
    import_torch()
for name in (b"step_a", b"step_b"):
    assert cupti.fake_cupti_launch(name) == 0
assert cuda.cuInit(0) == 0  # cuBLAS's own runtime
gpufl.shutdown()
err = gpufl.last_error()
print(json.dumps({"ok": ok, "error": err[1] if err else None,
                  "violations": cuda.fake_cuda_violations(),
                  "last_violation": cuda.fake_cuda_last_violation().decode(),
                  "inits": cuda.fake_cuda_init_calls()}))
'''


def kernel_rows(log_dir):
    n = 0
    for path in glob.glob(os.path.join(log_dir, "*", "device.log")):
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("type") == "kernel_event_batch":
                    n += len(rec["rows"])
    return n


class CudaOrder(unittest.TestCase):
    def child(self, order, log_dir, env_extra=None):
        env = dict(os.environ)
        env.pop("CUDA_INJECTION64_PATH", None)
        env.update(env_extra or {})
        p = subprocess.run([sys.executable, "-c", CHILD, order, log_dir], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def check_order(self, order, kernels, inits):
        with tempfile.TemporaryDirectory() as d:
            r = self.child(order, d)
            self.assertEqual(r["violations"], 0, r["last_violation"])
            self.assertIs(r["ok"], True, r["error"])
            self.assertEqual(kernel_rows(d), kernels)
            self.assertEqual(r["inits"], inits)

    def test_init_before_import_torch(self):
        # every launch; gpufl.init's own cuInit, the runtime's, cuBLAS's
        self.check_order("before", 3, 3)

    def test_init_after_import_torch(self):
        # not the launch before the session; the runtime's cuInit,
        # gpufl.init's (outside every callback), cuBLAS's
        self.check_order("after", 2, 3)

    def test_init_after_the_injected_session_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            injected = os.path.join(d, "injected")
            own = os.path.join(d, "own")
            r = self.child("injected_after", own, {
                "CUDA_INJECTION64_PATH": os.environ["GP_TEST_PLUGIN"],
                "GPUFL_CORE_LIBRARY": os.environ["GPU_PROFILE_LIBRARY"],
                "GPUFL_LOG_PATH": injected})
            self.assertEqual(r["violations"], 0, r["last_violation"])
            self.assertIs(r["ok"], False)
            self.assertIn("this process is traced through CUDA_INJECTION64_PATH", r["error"])
            self.assertFalse(os.path.exists(own))
            self.assertEqual(kernel_rows(injected), 3)  # the injection saw every launch


if __name__ == "__main__":
    unittest.main()
