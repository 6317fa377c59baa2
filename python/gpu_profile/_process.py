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


def _proc_fields(obj, mem_keys, util_keys):
    """The proc_<key> fields of a gp_summary or gp_device_sample under
    their JSON keys: None for one its validity bit does not vouch for."""
    pm, pu = obj.valid & GP_M_PROC_MEM, obj.valid & GP_M_PROC_UTIL
    out = {k: getattr(obj, "proc_" + k) if pm else None for k in mem_keys}
    out.update({k: getattr(obj, "proc_" + k) if pu else None for k in util_keys})
    return out


def summary_process(s):
    """gp_summary's proc_* as GpuSummary.process (the JSON's keys)."""
    if not s.proc_requested:
        return None
    return _proc_fields(
        s,
        ("count_max", "mem_used_mean_bytes", "mem_used_max_bytes", "all_mem_used_max_bytes"),
        ("sm_mean_pct", "sm_max_pct", "mem_mean_pct", "mem_max_pct", "all_sm_mean_pct"),
    )


def sample_process(m):
    """gp_device_sample's proc_* as GpuSample.process."""
    if not (m.valid & (GP_M_PROC_MEM | GP_M_PROC_UTIL)):
        return None
    return _proc_fields(
        m,
        ("count", "all_count", "mem_used_bytes", "all_mem_used_bytes"),
        ("sm_pct", "mem_pct", "all_sm_pct", "all_mem_pct"),
    )


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
