"""torch_trace.py - a few matmuls and a relu on CUDA, for tests/gpu/run.sh:
run under `gpu-profile --engine trace`, its session must hold kernel rows,
some of them named like a GEMM (cuBLAS) or an elementwise "Kernel".

`--gpufl-init LOGDIR`: gpufl.init(profiling_engine=Trace) in-process first,
BEFORE `import torch` (the order docs/gpufl.md recommends), and
gpufl.shutdown() at the end; the gpufl package must be importable
(PYTHONPATH=python, GPU_PROFILE_LIBRARY=BUILD/libgpuprofile.so).

GP_TORCH_OPS=1: gpufl.torch.attach() after `import torch`, so each kernel
carries its aten op (under `gpu-profile --engine trace`, the gpufl package
reaches the injected session through the same libgpuprofile); the "# @mm"
line is the one check_torch_attr.py wants the matmuls attributed to."""
import os
import sys

if len(sys.argv) == 3 and sys.argv[1] == "--gpufl-init":
    import gpufl

    if not gpufl.init(app_name="torch_trace", log_path=sys.argv[2],
                      profiling_engine=gpufl.ProfilingEngine.Trace, enable_stack_trace=True):
        print("torch_trace: gpufl.init failed: %s" % gpufl.last_error(), file=sys.stderr)
        sys.exit(1)

import torch  # noqa: E402  (after gpufl.init, on purpose)

if os.environ.get("GP_TORCH_OPS") == "1":
    import gpufl.torch  # noqa: E402

    gpufl.torch.attach()

MM_CALLS = 5


def main():
    if not torch.cuda.is_available():
        print("torch_trace: CUDA is not available", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    torch.manual_seed(0)
    a = torch.randn(1024, 1024, device=dev)
    b = torch.randn(1024, 1024, device=dev)
    c = None
    for _ in range(MM_CALLS):
        m = torch.mm(a, b)  # @mm
        c = torch.relu(m)
    torch.cuda.synchronize()
    print("torch_trace: %d matmuls + relu on %s, sum %.3f"
          % (MM_CALLS, torch.cuda.get_device_name(0), c.sum().item()))
    if "gpufl" in sys.modules:
        sys.modules["gpufl"].shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
