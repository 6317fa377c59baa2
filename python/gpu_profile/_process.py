"""Per-process attribution in the Python API (docs/python.md): the `pids` /
`pid_tree` keywords checked and put into gp_options, and the C library's
proc_* figures as the dicts GpuSummary.process and GpuSample.process, with
None for every figure NVML did not answer (never 0 for an unknown).
"""

import ctypes

# Per-process attribution (after GPM's bits): memory and process counts,
# utilisation.
GP_M_PROC_MEM = 1 << 26
GP_M_PROC_UTIL = 1 << 27
GP_PROC_PIDS_MAX = 256


def summary_process(s):
    """gp_summary's proc_* as GpuSummary.process (the JSON's keys)."""
    if not s.proc_requested:
        return None
    pm, pu = s.valid & GP_M_PROC_MEM, s.valid & GP_M_PROC_UTIL
    return {
        "count_max": s.proc_count_max if pm else None,
        "mem_used_mean_bytes": s.proc_mem_used_mean_bytes if pm else None,
        "mem_used_max_bytes": s.proc_mem_used_max_bytes if pm else None,
        "all_mem_used_max_bytes": s.proc_all_mem_used_max_bytes if pm else None,
        "sm_mean_pct": s.proc_sm_mean_pct if pu else None,
        "sm_max_pct": s.proc_sm_max_pct if pu else None,
        "mem_mean_pct": s.proc_mem_mean_pct if pu else None,
        "mem_max_pct": s.proc_mem_max_pct if pu else None,
        "all_sm_mean_pct": s.proc_all_sm_mean_pct if pu else None,
    }


def sample_process(m):
    """gp_device_sample's proc_* as GpuSample.process."""
    pm, pu = m.valid & GP_M_PROC_MEM, m.valid & GP_M_PROC_UTIL
    if not (pm or pu):
        return None
    return {
        "count": m.proc_count if pm else None,
        "all_count": m.proc_all_count if pm else None,
        "mem_used_bytes": m.proc_mem_used_bytes if pm else None,
        "all_mem_used_bytes": m.proc_all_mem_used_bytes if pm else None,
        "sm_pct": m.proc_sm_pct if pu else None,
        "mem_pct": m.proc_mem_pct if pu else None,
        "all_sm_pct": m.proc_all_sm_pct if pu else None,
        "all_mem_pct": m.proc_all_mem_pct if pu else None,
    }


def pids_arg(pids, pid_tree, o):
    """pids: None, a PID, or a list / tuple of PIDs (as os.getpid() gives);
    pid_tree: also their descendants, found in /proc at every round."""
    if pids is None:
        if pid_tree:
            raise ValueError("pid_tree=True needs pids: name the processes whose "
                             "descendants to count (e.g. pids=os.getpid())")
        return
    if isinstance(pids, int) and not isinstance(pids, bool):
        pids = [pids]
    if not isinstance(pids, (list, tuple)):
        raise TypeError("pids must be None, a PID (int) or a list of PIDs, not %r" % (pids,))
    for p in pids:
        if isinstance(p, bool) or not isinstance(p, int):
            raise TypeError("pids must hold ints (process ids as os.getpid() gives), "
                            "not %r" % (p,))
        if p <= 0 or p > 0x7fffffff:  # a C int, as pid_t
            raise ValueError("pids: %d is not a process id: PIDs are 1 to 2147483647" % p)
    if not pids:
        raise ValueError("pids is empty: pass None for no per-process attribution")
    if len(pids) > GP_PROC_PIDS_MAX:
        raise ValueError("pids: %d processes is too many: at most %d; name their parents "
                         "with pid_tree=True instead" % (len(pids), GP_PROC_PIDS_MAX))
    arr = (ctypes.c_int * len(pids))(*pids)
    o.pids = arr  # the struct keeps arr alive (ctypes _objects)
    o.n_pids = len(pids)
    o.pid_tree = 1 if pid_tree else 0
