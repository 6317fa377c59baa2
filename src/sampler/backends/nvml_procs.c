/*
 * sampler/backends/nvml_procs.c - per-process attribution in the NVML
 * backend: the GPU memory and SM / memory utilisation of the processes the
 * sampler names, summed per device, beside every process NVML lists.
 *
 * Promises: runs on the device's runner thread inside a read job and never
 * fails the read: an answer other than success (not supported, no
 * permission, more than NVML_PROC_MAX processes, a lost GPU: the other
 * metrics report that) leaves GP_M_PROC_MEM / GP_M_PROC_UTIL clear.  When
 * NVML lists a process this process cannot see in /proc (a container with
 * its own PID namespace: NVML's PIDs are the host's), nothing can be
 * attributed and both bits stay clear.  Utilisation sums, per process, the
 * newest sample newer than the last one seen; while the driver has no
 * newer sample (its period is 1/6 s to 1 s) the previous sums are repeated.
 * The list of every process (gp_nvml_list_procs, serve --processes) makes
 * its own two calls, keeps NVML's (host) PIDs whether visible here or not,
 * and gives each process the SM share of its newest sample: 0 when the
 * driver's newer samples left it out (idle), none when the driver refuses
 * utilisation sampling.
 */
#include "nvml_abi.h"
#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

/* NVML's usedGpuMemory when it cannot tell (NVML_VALUE_NOT_AVAILABLE). */
#define PROC_MEM_UNKNOWN 0xffffffffffffffffull

static bool ours(const nvml_dev *d, unsigned pid)
{
    for (size_t i = 0; i < d->n_pids; i++)
        if ((unsigned)d->pids[i] == pid)
            return true;
    return false;
}

/* Whether this process can see pid (kill 0 signals nothing: EPERM means
 * it exists, owned by someone else). */
static bool visible(unsigned pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

/* The running processes into d->proc_infos (*n of them); false when NVML
 * lacks the call, refuses or lists more than NVML_PROC_MAX. */
static bool fetch_procs(gp_runner *r, nvml_dev *d, unsigned *n)
{
    const nvml_api *a = &d->key.lib->api;
    if (!a->get_procs)
        return false;
    *n = NVML_PROC_MAX;
    gp_runner_doing(r, "nvmlDeviceGetComputeRunningProcesses_v3");
    return a->get_procs(d->dev, n, d->proc_infos) == NVML_SUCCESS && *n <= NVML_PROC_MAX;
}

/* Memory and process counts; false when NVML lists a PID we cannot see. */
static bool read_memory(gp_runner *r, nvml_dev *d, gp_device_sample *out)
{
    unsigned n;
    if (!fetch_procs(r, d, &n))
        return true;
    bool mem_known = true;
    for (unsigned i = 0; i < n; i++) {
        const nvmlProcessInfo_t *p = &d->proc_infos[i];
        bool mine = ours(d, p->pid);
        if (!mine && !visible(p->pid))
            return false;
        bool known = p->usedGpuMemory != PROC_MEM_UNKNOWN;
        out->proc_all_count++;
        out->proc_all_mem_used_bytes += known ? p->usedGpuMemory : 0;
        if (mine) {
            out->proc_count++;
            out->proc_mem_used_bytes += known ? p->usedGpuMemory : 0;
        }
        mem_known = mem_known && known;
    }
    if (mem_known)
        out->valid |= GP_M_PROC_MEM;
    return true;
}

/* Whether sample k is newer than since and the newest of its process
 * among the n returned. */
static bool fresh_sample(const nvmlProcessUtilizationSample_t *s, unsigned n, unsigned k,
                         unsigned long long since)
{
    if (s[k].timeStamp <= since)
        return false;
    for (unsigned j = 0; j < n; j++)
        if (j != k && s[j].pid == s[k].pid &&
            (s[j].timeStamp > s[k].timeStamp || (s[j].timeStamp == s[k].timeStamp && j > k)))
            return false;
    return true;
}

/* The utilisation samples newer than *since, each process's newest only,
 * moved to the front of d->proc_samples (*n of them), and *since moved to
 * the newest of them; false when NVML lacks the call or refuses.
 * NOT_FOUND is an answer: nothing newer (no process ran since, or the
 * driver's period is not over; before any sample, no process has used the
 * device). */
static bool fetch_util(gp_runner *r, nvml_dev *d, unsigned long long *since, unsigned *n)
{
    const nvml_api *a = &d->key.lib->api;
    if (!a->get_proc_util)
        return false;
    *n = NVML_PROC_MAX;
    gp_runner_doing(r, "nvmlDeviceGetProcessUtilization");
    nvmlReturn_t rc = a->get_proc_util(d->dev, d->proc_samples, n, *since);
    if (rc == NVML_ERROR_NOT_FOUND)
        *n = 0;
    else if (rc != NVML_SUCCESS || *n > NVML_PROC_MAX)
        return false;
    bool keep[NVML_PROC_MAX];
    for (unsigned k = 0; k < *n; k++)
        keep[k] = fresh_sample(d->proc_samples, *n, k, *since);
    unsigned fresh = 0;
    unsigned long long newest = *since;
    for (unsigned k = 0; k < *n; k++) {
        if (!keep[k])
            continue;
        if (d->proc_samples[k].timeStamp > newest)
            newest = d->proc_samples[k].timeStamp;
        d->proc_samples[fresh++] = d->proc_samples[k];
    }
    *n = fresh;
    *since = newest;
    return true;
}

static void read_utilization(gp_runner *r, nvml_dev *d, gp_device_sample *out)
{
    unsigned n;
    if (!fetch_util(r, d, &d->proc_last_ts, &n)) {
        d->proc_have_util = false;
        return;
    }
    uint32_t sum[4] = {0, 0, 0, 0};
    for (unsigned k = 0; k < n; k++) {
        const nvmlProcessUtilizationSample_t *s = &d->proc_samples[k];
        if (ours(d, s->pid)) {
            sum[0] += s->smUtil;
            sum[1] += s->memUtil;
        }
        sum[2] += s->smUtil;
        sum[3] += s->memUtil;
    }
    if (n > 0 || !d->proc_have_util)
        memcpy(d->proc_util, sum, sizeof sum);
    d->proc_have_util = true;
    out->proc_sm_pct = d->proc_util[0];
    out->proc_mem_pct = d->proc_util[1];
    out->proc_all_sm_pct = d->proc_util[2];
    out->proc_all_mem_pct = d->proc_util[3];
    out->valid |= GP_M_PROC_UTIL;
}

void gp_nvml_read_procs(gp_runner *r, nvml_dev *d, gp_device_sample *out)
{
    if (d->n_pids == 0)
        return;
    if (!read_memory(r, d, out)) {
        out->valid &= ~GP_M_PROC_MEM;
        out->proc_count = out->proc_all_count = 0;
        out->proc_mem_used_bytes = out->proc_all_mem_used_bytes = 0;
        return;
    }
    read_utilization(r, d, out);
}

/* The SM shares of the newest utilisation samples: kept per process
 * while the driver has nothing newer; false when it refuses. */
static bool list_sm(gp_runner *r, nvml_dev *d)
{
    unsigned n;
    if (!fetch_util(r, d, &d->plist_last_ts, &n)) {
        d->plist_have_util = false;
        d->n_plist_sm = 0;
        return false;
    }
    if (n > 0) /* a newer round of samples replaces the last */
        d->n_plist_sm = n;
    for (unsigned k = 0; k < n; k++)
        d->plist_sm[k] = (struct nvml_proc_sm){d->proc_samples[k].pid, d->proc_samples[k].smUtil};
    d->plist_have_util = true;
    return true;
}

void gp_nvml_list_procs(gp_runner *r, nvml_dev *d)
{
    d->plist_ok = false;
    d->n_plist = 0;
    unsigned n;
    if (!d->list_procs || !fetch_procs(r, d, &n))
        return;
    bool sm_known = list_sm(r, d);
    for (unsigned i = 0; i < n; i++) {
        const nvmlProcessInfo_t *p = &d->proc_infos[i];
        gp_process_use *u = &d->plist[i];
        *u = (gp_process_use){.pid = (int32_t)p->pid,
                              .mem_known = p->usedGpuMemory != PROC_MEM_UNKNOWN,
                              .sm_known = sm_known};
        u->mem_used_bytes = u->mem_known ? p->usedGpuMemory : 0;
        for (unsigned k = 0; sm_known && k < d->n_plist_sm; k++)
            if (d->plist_sm[k].pid == p->pid)
                u->sm_pct = d->plist_sm[k].sm_pct;
    }
    d->n_plist = n;
    d->plist_ok = true;
}
