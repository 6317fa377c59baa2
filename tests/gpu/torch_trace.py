"""torch_trace.py - a few matmuls and a relu on CUDA, for tests/gpu/run.sh:
run under `gpu-profile --engine trace`, its session must hold kernel rows,
some of them named like a GEMM (cuBLAS) or an elementwise "Kernel".

`--gpufl-init LOGDIR`: gpufl.init(profiling_engine=Trace) in-process first,
BEFORE `import torch` (the order docs/gpufl.md recommends), and
gpufl.shutdown() at the end; the gpufl package must be importable
(PYTHONPATH=python, GPU_PROFILE_LIBRARY=BUILD/libgpuprofile.so)."""
import sys

if len(sys.argv) == 3 and sys.argv[1] == "--gpufl-init":
    import gpufl

    if not gpufl.init(app_name="torch_trace", log_path=sys.argv[2],
                      profiling_engine=gpufl.ProfilingEngine.Trace):
        print("torch_trace: gpufl.init failed: %s" % gpufl.last_error(), file=sys.stderr)
        sys.exit(1)

import torch  # noqa: E402  (after gpufl.init, on purpose)


def main():
    if not torch.cuda.is_available():
        print("torch_trace: CUDA is not available", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    torch.manual_seed(0)
    a = torch.randn(1024, 1024, device=dev)
    b = torch.randn(1024, 1024, device=dev)
    c = None
    for _ in range(5):
        c = torch.relu(a @ b)
    torch.cuda.synchronize()
    print("torch_trace: 5 matmuls + relu on %s, sum %.3f"
          % (torch.cuda.get_device_name(0), c.sum().item()))
    if "gpufl" in sys.modules:
        sys.modules["gpufl"].shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
