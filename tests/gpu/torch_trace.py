"""torch_trace.py - a few matmuls and a relu on CUDA, for tests/gpu/run.sh:
run under `gpu-profile --engine trace`, its session must hold kernel rows,
some of them named like a GEMM (cuBLAS) or an elementwise "Kernel"."""
import sys

import torch


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
