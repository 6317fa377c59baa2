"""`python -m gpu_profile [OPTIONS] -- CMD`: the original package's
command-line entry (profgpu 0.2.0's `main(argv)`, its flags and exit
codes) over GpuMonitor, for its users' scripts.  The `gpu-profile` command
(cli/, docs/cli.md) is the full one; this stays the original's small shape:
the summary on stdout (text, or with --json the summary's fields), the
exit status the command's own, 2 without a command.
"""

import argparse
import json
import subprocess
import sys

from . import GpuMonitor


def _torch_sync():
    try:
        import torch  # noqa: F401 - only for torch.cuda.synchronize
    except Exception as e:  # ImportError, or a broken install
        raise SystemExit("--torch-sync: torch cannot be imported here (%s): install PyTorch "
                         "or leave --torch-sync out" % (e,))
    return torch.cuda.synchronize


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m gpu_profile",
        description="Sample the GPU while a command runs; print the summary when it ends.")
    p.add_argument("--device", type=int, default=0, help="GPU index (default 0)")
    p.add_argument("--interval", type=float, default=0.2, help="sampling interval, seconds")
    p.add_argument("--backend", choices=["auto", "nvml", "smi", "none"], default="auto")
    p.add_argument("--strict", action="store_true",
                   help="fail when no backend can sample (default: run unsampled)")
    p.add_argument("--warmup", type=float, default=0.0,
                   help="leave the first seconds out of the statistics")
    p.add_argument("--torch-sync", action="store_true",
                   help="torch.cuda.synchronize() before and after the command")
    p.add_argument("--json", action="store_true", help="the summary's fields as JSON")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    return p


def main(argv=None):
    """Runs the command under a GpuMonitor; returns its exit status (2 when
    no command was given)."""
    parser = _parser()
    args = parser.parse_args(argv)
    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        parser.print_usage(sys.stderr)
        sys.stderr.write("no command to run: python -m gpu_profile [OPTIONS] -- CMD [ARGS...]\n")
        return 2
    sync_fn = _torch_sync() if args.torch_sync else None
    with GpuMonitor(device=args.device, interval_s=args.interval, backend=args.backend,
                    strict=args.strict, sync_fn=sync_fn, warmup_s=args.warmup) as mon:
        rc = subprocess.run(cmd).returncode
    if args.json:
        print(json.dumps(mon.summary.__dict__, sort_keys=True))
    else:
        print(mon.summary.format(), end="")
    return rc
