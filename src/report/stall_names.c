/*
 * report/stall_names.c - the names of PC-sampling stall reasons: the short
 * name of a metric_dict name (the PC Sampling API's
 * "smsp__pcsamp_warps_issue_stalled_<reason>[_not_issued]", or a shorter
 * spelling), and one table from a short name - or an activity-API
 * reason's name (fields.c) - to the display name and a one-line meaning,
 * after NVIDIA's Nsight Compute "Warp Stall Reasons" and CUPTI's
 * CUpti_ActivityPCSamplingStallReason.  A name not in the table is
 * shown as given.
 */
#include "fields.h"
#include "logs.h"
#include "stalls.h"

#include <stdio.h>
#include <string.h>

static const fl_stall_info table[] = {
    /* The PC Sampling API (Nsight Compute's names). */
    {"barrier", "Barrier", "waiting at a CTA barrier (__syncthreads) for sibling warps"},
    {"branch_resolving", "Branch Resolving",
     "waiting for a branch target to be computed and the warp's PC updated"},
    {"dispatch_stall", "Dispatch Stall",
     "selected, but the dispatcher could not issue the instruction (pipeline conflict)"},
    {"drain", "Drain", "after EXIT, waiting for the warp's memory writes to drain"},
    {"imc_miss", "IMC Miss", "waiting for an immediate constant cache (IMC) miss"},
    {"lg_throttle", "LG Throttle",
     "waiting for the L1 queue of local/global memory instructions to free up"},
    {"long_scoreboard", "Long Scoreboard",
     "waiting on an L1TEX (local, global, surface, texture) memory result"},
    {"math_pipe_throttle", "Math Pipe Throttle",
     "waiting for the math pipe the instruction needs to be free"},
    {"membar", "Membar", "waiting on a memory barrier (__threadfence)"},
    {"mio_throttle", "MIO Throttle",
     "waiting for the MIO queue (shared memory, special math, ...) to free up"},
    {"misc", "Misc", "stalled for a miscellaneous hardware reason"},
    {"no_instructions", "No Instruction",
     "waiting for an instruction to be fetched (instruction cache miss, or after a branch)"},
    {"not_selected", "Not Selected",
     "eligible, but the scheduler issued another warp's instruction"},
    {"selected", "Selected", "issued an instruction (not a stall)"},
    {"short_scoreboard", "Short Scoreboard",
     "waiting on an MIO result (shared memory, special math such as MUFU)"},
    {"sleeping", "Sleeping", "all the warp's threads are sleeping (__nanosleep) or yielded"},
    {"tex_throttle", "Tex Throttle", "waiting for the L1 queue of texture instructions to free up"},
    {"wait", "Wait", "waiting on a fixed-latency execution dependency"},
    /* The activity API (CUpti_ActivityPCSamplingStallReason). */
    {"invalid", "Invalid", "no valid stall reason"},
    {"none", "None", "not stalled: an instruction was issued"},
    {"instruction fetch", "Instruction Fetch", "the next instruction was not yet fetched"},
    {"execution dependency", "Execution Dependency", "an input of the instruction is not ready"},
    {"memory dependency", "Memory Dependency", "waiting on a memory load or store to complete"},
    {"texture", "Texture", "waiting on the texture subsystem (busy, or a result)"},
    {"sync", "Sync", "waiting at a __syncthreads barrier"},
    {"constant memory", "Constant Memory", "waiting on a constant cache miss"},
    {"pipe busy", "Pipe Busy", "the compute pipe the instruction needs is busy"},
    {"memory throttle", "Memory Throttle", "too many memory requests pending"},
    {"not selected", "Not Selected", "eligible, but another warp was selected"},
    {"other", "Other", "stalled for another reason"},
};

const fl_stall_info *fl_stall_info_of(const char *short_name)
{
    if (!short_name)
        return NULL;
    if (!strcmp(short_name, "no_instruction"))
        short_name = "no_instructions";
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].short_name, short_name))
            return &table[i];
    return NULL;
}

static const char *skip_prefix(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(s, prefix, n) ? s : s + n;
}

const char *fl_stall_short(const char *name, char *buf, size_t len, bool *not_issued)
{
    static const char suffix[] = "_not_issued";
    const char *s = skip_prefix(name, "smsp__pcsamp_warps_issue_stalled_");
    if (s == name)
        s = skip_prefix(name, "smsp__pcsamp_");
    if (s == name)
        s = skip_prefix(name, "warps_issue_stalled_");
    size_t n = strlen(s), ns = sizeof suffix - 1;
    *not_issued = n > ns && !strcmp(s + n - ns, suffix);
    if (*not_issued)
        n -= ns;
    snprintf(buf, len, "%.*s", (int)n, s);
    return buf;
}

const char *fl_stall_label(const char *metric_name, uint64_t reason, char *buf, size_t len,
                           bool *not_issued)
{
    *not_issued = false;
    if (!metric_name || !*metric_name) {
        const char *n = fl_stall_reason_name(reason);
        const fl_stall_info *in = fl_stall_info_of(n);
        if (in)
            snprintf(buf, len, "%s", in->display);
        else
            snprintf(buf, len, "stall reason %llu", (unsigned long long)reason);
        return buf;
    }
    char shortn[128];
    fl_stall_short(metric_name, shortn, sizeof shortn, not_issued);
    const fl_stall_info *in = fl_stall_info_of(shortn);
    snprintf(buf, len, "%s", in ? in->display : metric_name);
    return buf;
}
