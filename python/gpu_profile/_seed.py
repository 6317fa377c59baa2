"""The original package's public names and text (the seed's gpu-profile,
published as profgpu 0.2.0; docs/python.md, "The original's names"):
GpuSummary / GpuSample keep their names beside ours, each pair filled from
whichever the caller gave, and format() begins with the original's lines.
Only the names and the text live here; the numbers are the C library's.
"""

import math

MIB = 1024 * 1024

#: backend="none" asked for: the original's note and device name.
NONE_NOTE = "Backend disabled (backend='none')."
NONE_NAME = "N/A"


def _to_mib(b):
    return None if b is None else b / MIB


def _to_bytes(mb):
    if mb is None or (isinstance(mb, float) and not math.isfinite(mb)):
        return None
    return int(round(mb * MIB))


def _same(v):
    return v


# (ours, the original's, ours from the original's, the original's from ours)
SUMMARY_PAIRS = (
    ("sample_count", "n_samples", _same, _same),
    ("note", "notes", _same, _same),
    ("mem_used_max_bytes", "mem_used_max_mb", _to_bytes, _to_mib),
    ("mem_total_bytes", "mem_total_mb", _to_bytes, _to_mib),
    # profgpu 0.3's names (the successor's statistics).
    ("util_gpu_idle_pct", "idle_pct", _same, _same),
    ("util_gpu_active_pct", "active_pct", _same, _same),
    ("mem_used_mean_bytes", "mem_used_mean_mb", _to_bytes, _to_mib),
    ("clock_sm_mean_mhz", "sm_clock_mean_mhz", _same, _same),
    ("clock_sm_max_mhz", "sm_clock_max_mhz", _same, _same),
)
SAMPLE_PAIRS = (
    ("mem_used_bytes", "mem_used_mb", _to_bytes, _to_mib),
    ("mem_total_bytes", "mem_total_mb", _to_bytes, _to_mib),
    ("clock_sm_mhz", "sm_clock_mhz", _same, _same),
    ("clock_mem_mhz", "mem_clock_mhz", _same, _same),
)


def fill_pairs(obj, pairs, defaults):
    """Sets the unset name of each pair from the other (frozen dataclass:
    object.__setattr__); a name neither gave takes defaults[ours]."""
    for ours, theirs, from_theirs, from_ours in pairs:
        a, b = getattr(obj, ours), getattr(obj, theirs)
        if a is None and b is not None:
            a = from_theirs(b)
        elif b is None and a is not None:
            b = from_ours(a)
        elif a is None:
            a = defaults.get(ours)
            b = None if a is None else from_ours(a)
        object.__setattr__(obj, ours, a)
        object.__setattr__(obj, theirs, b)


def _num(x, unit="", digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}{unit}"


def seed_lines(s, ascii=False):
    """The original's format() (profgpu 0.2.0, the seed's text): None and
    NaN read n/a; the memory line only with a total, the trace only when
    something was sampled, the notes only when there are some."""
    deg = " C" if ascii else " °C"
    head = f"[GPU {s.device}] {s.name}"
    extra = "  ".join(x for x in (s.uuid, "[%s]" % s.backend if s.backend else "") if x)
    lines = [head + ("  " + extra if extra else "")]
    warm = ""
    if s.samples_warmup or s.warmup_s:
        warm = f" (+{s.samples_warmup} in the first {_num(s.warmup_s, 's', 3)}: warmup, ignored)"
    lines.append(f"  duration: {_num(s.duration_s, 's', 3)} | samples: {s.n_samples} "
                 f"@ {_num(s.interval_s, 's', 3)}{warm}")
    lines.append("  util.gpu: "
                 f"mean {_num(s.util_gpu_mean, '%')} | p50 {_num(s.util_gpu_p50, '%')} | "
                 f"p95 {_num(s.util_gpu_p95, '%')} | max {_num(s.util_gpu_max, '%')}")
    lines.append(f"  util.mem: mean {_num(s.util_mem_mean, '%')}")
    total = s.mem_total_mb
    if total is not None and not (isinstance(total, float) and math.isnan(total)):
        lines.append(f"  memory: max used {_num(s.mem_used_max_mb, ' MB', 0)} "
                     f"/ total {_num(total, ' MB', 0)}")
    lines.append(f"  power: mean {_num(s.power_mean_w, ' W')} | max {_num(s.power_max_w, ' W')}")
    lines.append(f"  temp: max {_num(s.temp_max_c, deg, 0)}")
    lines.append(f"  busy time (est): {_num(s.busy_time_est_s, 's', 3)}")
    if s.sparkline:
        lines.append(f"  util trace: {s.sparkline}")
    if s.notes:
        lines.append(f"  notes: {s.notes}")
    return lines


def _known(x):
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def more_lines(s, ascii=False, by_hand=False):
    """profgpu 0.3's statistics, in the original's style, those known only
    (a summary without them, as 0.2.0's, reads as before); by_hand: a
    summary without the C rendering, so energy and clocks are said here."""
    deg = " C" if ascii else " °C"
    lines = []
    spread = (("min", s.util_gpu_min), ("p5", s.util_gpu_p5), ("p99", s.util_gpu_p99),
              ("std", s.util_gpu_std))
    if any(_known(v) for _, v in spread):
        lines.append("  util.gpu spread: " + " | ".join(f"{k} {_num(v, '%')}" for k, v in spread))
    if _known(s.idle_pct) or _known(s.active_pct):
        lines.append(f"  util.gpu idle (<5%) {_num(s.idle_pct, '%')} | active "
                     f"({'>=' if ascii else '≥'}50%) {_num(s.active_pct, '%')}")
    if _known(s.mem_used_mean_mb):
        lines.append(f"  memory: mean used {_num(s.mem_used_mean_mb, ' MB', 0)}")
    if _known(s.temp_mean_c):
        lines.append(f"  temp: mean {_num(s.temp_mean_c, deg, 0)}")
    if by_hand and _known(s.energy_j):
        lines.append(f"  energy: {_num(s.energy_j, ' J')}")
    if by_hand and _known(s.clock_sm_mean_mhz):
        clock = f"  clocks: SM mean {_num(s.clock_sm_mean_mhz, ' MHz', 0)}"
        if _known(s.clock_sm_max_mhz):
            clock += f" (max {_num(s.clock_sm_max_mhz, ' MHz', 0)})"
        lines.append(clock)
    return lines


# The C rendering's labels (src/sampler/render.c) the original's lines
# already say; its other lines (interval achieved, energy, clocks,
# throttle reasons, GPM, processes, a lost device) follow them.
_SAID = {"duration", "samples", "util.gpu", "util.mem", "memory used", "power",
         "temperature", "busy time est.", "util.gpu trace", "note"}
_LABEL_COLS = 20


def c_extra_lines(text):
    """The C rendering's lines the original's do not say (its header and
    the _SAID labels dropped, each with its continuation lines)."""
    out, keep = [], False
    for line in text.splitlines():
        if line.startswith(" " * _LABEL_COLS):
            if keep:
                out.append(line)
        elif line.startswith("  ") and not line[2:3].isspace():
            keep = line[2:_LABEL_COLS].strip() not in _SAID
            if keep:
                out.append(line)
        else:
            keep = False  # a header line
    return out
