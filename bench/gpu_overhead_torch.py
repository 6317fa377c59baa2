"""gpu_overhead_torch.py - a PyTorch training step for bench/gpu_overhead.sh.

    python3 gpu_overhead_torch.py STEPS [--torch-profiler]

A 4-layer MLP (batch 256, width 2048) trained with SGD on random data on
the first CUDA device: 5 warm-up steps, then STEPS timed ones, synchronised
at the end.  Prints "gpu_overhead: units=STEPS unit=steps seconds=S" (the
timed steps alone).  With --torch-profiler the timed steps run inside
torch.profiler.profile (CPU and CUDA activities), the in-framework profiler
the script compares with.  Exit 77 when PyTorch or CUDA is missing.
"""
import sys
import time


def main():
    if len(sys.argv) < 2:
        print("usage: gpu_overhead_torch.py STEPS [--torch-profiler]", file=sys.stderr)
        return 2
    steps = int(sys.argv[1])
    try:
        import torch
    except ImportError:
        return 77
    if not torch.cuda.is_available():
        return 77
    dev = torch.device("cuda")
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 2048, device=dev)
    y = torch.randn(256, 2048, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    if "--torch-profiler" in sys.argv[2:]:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts):
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
    else:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    s = time.perf_counter() - t0
    print("gpu_overhead: units=%d unit=steps seconds=%.6f" % (steps, s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
