"""The multi-run API (profgpu 0.3's, on our package; docs/python.md,
"Repeated runs"): RunStats, MultiRunResult and the loop that runs a function
warmup_runs times unmeasured, then repeats times measured.

The figures across runs are the C library's (gp_run_stats_compute), so they
are those of `gpu-profile --repeats`: the sample standard deviation (n - 1),
a run that did not measure a metric left out of it, and None - never 0 -
where nothing is known (no run measured it; std with fewer than 2 runs).
"""

import ctypes
import dataclasses
import math
import numbers
from typing import Any, Callable, Optional, Sequence, Tuple

from ._cdefs import GP_OK, _GpError, _GpRunStats, _gp_run_stats_compute


def _known(x):
    return None if not math.isfinite(x) else x


def check_counts(repeats, warmup_runs):
    """ValueError / TypeError naming the argument, at decoration time."""
    for name, value, least in (("repeats", repeats, 1), ("warmup_runs", warmup_runs, 0)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("%s must be an int >= %d, not %r" % (name, least, value))
        if value < least:
            raise ValueError("%s must be >= %d, not %d" % (name, least, value))


@dataclasses.dataclass(frozen=True)
class RunStats:
    """One metric across runs: mean, std (sample, n - 1), min, max of the
    runs that measured it (None when unknown, never 0); values: each run's
    figure as given (None where the run did not measure it); n: how many
    counted, n_unknown: how many were left out."""

    mean: Optional[float] = None
    std: Optional[float] = None
    min: Optional[float] = None
    max: Optional[float] = None
    values: Tuple[Any, ...] = ()
    n: int = 0
    n_unknown: int = 0

    @classmethod
    def of(cls, values: Sequence[Any]) -> "RunStats":
        """The statistics of values (numbers; None or NaN: not measured)."""
        values = tuple(values)
        arr = (ctypes.c_double * max(1, len(values)))()
        for i, v in enumerate(values):
            arr[i] = float("nan") if v is None else float(v)
        out = _GpRunStats()
        err = _GpError()
        st = _gp_run_stats_compute(arr, len(values), ctypes.byref(out), ctypes.byref(err))
        if st != GP_OK:  # only a NULL pointer fails, which ctypes never passes
            raise RuntimeError(err.message.decode("utf-8", "replace"))
        return cls(mean=_known(out.mean), std=_known(out.std), min=_known(out.min),
                   max=_known(out.max), values=values, n=out.n, n_unknown=out.n_unknown)

    def format(self, unit: str = "", digits: int = 1, ascii: bool = False) -> str:
        """As profgpu 0.3 writes it: "87.3% ± 1.2%  (range 85.6%-89.1%)";
        n/a for an unknown, "+/-" with ascii=True."""

        def f(x):
            return "n/a" if x is None else f"{x:.{digits}f}{unit}"

        pm = "+/-" if ascii else "±"
        return f"{f(self.mean)} {pm} {f(self.std)}  (range {f(self.min)}-{f(self.max)})"


# The original's pre-computed statistics: attribute -> GpuSummary field.
_MAIN = (("duration", "duration_s"), ("util_gpu", "util_gpu_mean"),
         ("power", "power_mean_w"), ("energy", "energy_j"),
         ("peak_memory", "mem_used_max_mb"), ("peak_temp", "temp_max_c"))


@dataclasses.dataclass(frozen=True)
class MultiRunResult:
    """A workload run several times (gpu_profile(repeats=N) with
    return_profile=True, profile_repeats): value is the last run's return
    value, runs each measured run's GpuSummary of the first device (warmup
    runs are not measured), and the statistics across runs: duration
    (duration_s), util_gpu (util_gpu_mean), power (power_mean_w), energy
    (energy_j), peak_memory (mem_used_max_mb, MiB), peak_temp (temp_max_c);
    stats_for(field) for any other.  Ours: warmup_runs, and gpus, each
    run's summaries of every sampled device (runs[i] is gpus[i][0])."""

    value: Any
    runs: Tuple[Any, ...]
    duration: RunStats
    util_gpu: RunStats
    power: RunStats
    energy: RunStats
    peak_memory: RunStats
    peak_temp: RunStats
    warmup_runs: int = 0
    gpus: Tuple[Tuple[Any, ...], ...] = ()

    @classmethod
    def from_runs(cls, runs: Sequence[Any], value: Any, warmup_runs: int = 0,
                  gpus: Sequence[Sequence[Any]] = ()) -> "MultiRunResult":
        """From each measured run's GpuSummary (as the original's)."""
        runs = tuple(runs)
        stats = {name: RunStats.of([getattr(r, field) for r in runs]) for name, field in _MAIN}
        return cls(value=value, runs=runs, warmup_runs=warmup_runs,
                   gpus=tuple(tuple(g) for g in gpus) or tuple((r,) for r in runs), **stats)

    def stats_for(self, field: str) -> RunStats:
        """RunStats of any numeric GpuSummary field (ours or the original's
        name); ValueError for a field that is not one."""
        from . import GpuSummary  # the package imports this module first

        names = {f.name for f in dataclasses.fields(GpuSummary)}
        if field not in names:
            raise ValueError("stats_for(%r): GpuSummary has no such field (numeric ones "
                             "include duration_s, util_gpu_mean, power_mean_w, energy_j)"
                             % (field,))
        values = [getattr(r, field) for r in self.runs]
        for v in values:
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
                raise ValueError("stats_for(%r): the field is not a number (%r): use a "
                                 "numeric field such as util_gpu_mean" % (field, v))
        return RunStats.of(values)

    def format(self, ascii: bool = False) -> str:
        """The original's report ("=== Multi-Run GPU Profile (N runs) ===",
        mean ± std (range) per metric, then each run's util.gpu mean);
        "(no runs)" without runs."""
        if not self.runs:
            return "(no runs)"
        first = self.runs[0]
        deg = " C" if ascii else " °C"
        pm = "+/-" if ascii else "±"
        warm = ""
        if self.warmup_runs:
            warm = ", after %d warmup run%s (not measured)" % (
                self.warmup_runs, "s" * (self.warmup_runs != 1))
        lines = [f"=== Multi-Run GPU Profile ({len(self.runs)} runs) ===",
                 f"[GPU {first.device}] {first.name}",
                 f"  runs:      {len(self.runs)} measured{warm}; mean {pm} std (range)",
                 f"  duration:  {self.duration.format('s', 3, ascii)}",
                 f"  util.gpu:  {self.util_gpu.format('%', 1, ascii)}",
                 f"  power:     {self.power.format(' W', 1, ascii)}",
                 f"  energy:    {self.energy.format(' J', 1, ascii)}",
                 f"  peak mem:  {self.peak_memory.format(' MB', 0, ascii)}",
                 f"  peak temp: {self.peak_temp.format(deg, 0, ascii)}",
                 "",
                 "--- Per-Run util.gpu mean ---"]
        for i, r in enumerate(self.runs, 1):
            u = r.util_gpu_mean
            u_text = "n/a" if u is None or (isinstance(u, float) and math.isnan(u)) \
                else f"{u:.1f}%"
            lines.append(f"  run {i}: {u_text}  ({r.duration_s:.3f}s)")
        return "\n".join(lines)

    def __str__(self):
        return self.format()


def run_repeats(measure: Callable[[], Tuple[Any, Tuple[Any, ...]]], fn: Callable[..., Any],
                args, kwargs, repeats: int, warmup_runs: int) -> MultiRunResult:
    """fn(*args, **kwargs) warmup_runs times with nothing sampled (as
    `gpu-profile --warmup-runs`), then measure() repeats times: each a
    region of its own, returning (value, every device's summaries).  An
    exception from fn propagates, ending the series."""
    for _ in range(warmup_runs):
        fn(*args, **kwargs)
    value, per_run = None, []
    for _ in range(repeats):
        value, summaries = measure()
        per_run.append(summaries)
    return MultiRunResult.from_runs([s[0] for s in per_run], value, warmup_runs=warmup_runs,
                                    gpus=per_run)
