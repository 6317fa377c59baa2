/*
 * recorder/trace_engine.c - the Trace engine's life in a session, through
 * the CUPTI plugin.
 *
 * Promises: the plugin is started only with a trace writer to drain into,
 * and a failed start leaves nothing behind; the writer thread is woken by
 * the kick it is given and writes out through the spill it is given, never
 * by a direct call back into the writer; the plugin's
 * handle is never closed (CUPTI keeps pointers into it), only released.
 */
#include "trace_engine.h"
#include "../abi/plugin.h"
#include "../util/clock.h"
#include "../util/error.h"
#include "capture.h"
#include "disasm_tool.h"
#include "occupancy.h"
#include "ops.h"
#include "say.h"
#include "scope.h"

#include <stdio.h>
#include <string.h>

#define TRACE_FLUSH_PERIOD_NS 1000000000ull /* CUPTI's partly filled buffers, once a second */

/* The CUDA-level identity and limits of a device, as job_start shows them. */
static fl_device_static cuda_static_of(const fl_gpu_limits *l)
{
    return (fl_device_static){.id = l->device_id,
                              .name = l->name,
                              .uuid = l->uuid[0] ? l->uuid : NULL,
                              .vendor = "NVIDIA",
                              .architecture = fl_gpu_arch_name(l->cc_major, l->cc_minor),
                              .compute_major = l->cc_major,
                              .compute_minor = l->cc_minor,
                              .l2_cache_size_bytes = l->l2_cache_bytes,
                              .shared_mem_per_block_bytes = l->smem_per_block_bytes,
                              .regs_per_block = l->max_regs_per_block,
                              .multi_processor_count = l->sm_count,
                              .warp_size = l->warp_size};
}

/* The CUDA device's uuid spelled as NVML spells the same device's (a MIG
 * instance is "MIG-..." there, where the plugin formats CUDA's same 16
 * bytes as "GPU-..."): job_start's two lists then carry one string for
 * one device, and a reader joins them by it - never by the number, which
 * differs when CUDA sees fewer devices (CUDA_VISIBLE_DEVICES). */
static void cuda_uuid_as_nvml(const session *s, fl_device_static *c)
{
    for (size_t i = 0; i < s->n_dev; i++)
        if (fl_device_uuid_same(s->statics[i].uuid, c->uuid))
            c->uuid = s->statics[i].uuid;
}

gp_status fl_trace_engine_start(session *s, void (*kick)(void), void (*spill)(void *, fl_buf *),
                                gp_error *err)
{
    const fl_trace_plugin *p = fl_trace_plugin_load(err);
    if (!p)
        return err->status;
    s->tw = fl_trace_writer_create(&s->ident, s->gen, &s->out[FL_CH_DEVICE], &s->out[FL_CH_SCOPE],
                                   &s->out[FL_CH_SYSTEM]);
    if (!s->tw)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the trace writer");
    const fl_config *c = &s->cfg;
    bool pc = fl_trace_engine_wants_pc(c->profiling_engine);
    s->disasm_path[0] = s->disasm_why[0] = '\0';
    bool bad_env = false;
    gp_error dis;
    if (pc && fl_disasm_tool_find(s->disasm_path, sizeof s->disasm_path, &dis, &bad_env) != GP_OK) {
        s->disasm_path[0] = '\0';
        snprintf(s->disasm_why, sizeof s->disasm_why, "%s", dis.message);
        if (bad_env)
            fl_say(&s->cfg, "%s", s->disasm_why);
    }
    fl_trace_options o = {.synchronization = c->enable_synchronization,
                          .memory = c->enable_memory_tracking,
                          .graphs = c->enable_cuda_graphs_tracking,
                          .external_correlation = c->enable_external_correlation,
                          .nvtx = true,
                          .buffer_bytes = (size_t)c->cupti_buffer_kib * 1024u,
                          .max_buffers = (uint32_t)c->cupti_max_buffers,
                          .kick = kick,
                          .scope_path = fl_scope_current_path,
                          .stack_trace = c->enable_stack_trace,
                          .pc_sampling = pc,
                          .source_collection = c->enable_source_collection,
                          .pc_collection_mode = FL_PC_MODE_KERNEL,
                          .pc_period_log2 = (uint32_t)c->pc_sampling_period,
                          .disassembler = s->disasm_path[0] ? s->disasm_path : NULL,
                          .pm_sampling = c->profiling_engine == GPUFL_ENGINE_PM_SAMPLING,
                          .pm_metrics = c->pm_sampling_metrics,
                          .pm_interval_us = (uint32_t)c->pm_sampling_interval_us,
                          .pm_max_samples = (uint32_t)c->pm_sampling_max_samples,
                          .sass_metrics = fl_trace_engine_wants_sass(c->profiling_engine),
                          .range_profiler = c->profiling_engine == GPUFL_ENGINE_RANGE_PROFILER,
                          .perf_per_kernel = c->range_per_kernel,
                          .perf_metrics = c->metrics,
                          .sass_all_kernels = c->sass_all_kernels};
    fl_capture_spec cap;
    char cap_why[512];
    if (fl_capture_parse(c->capture_range, c->capture_range_end, 0, 0, &cap, cap_why,
                         sizeof cap_why) == 0 &&
        cap.trigger != FL_CAPTURE_ALWAYS) {
        o.capture_profiler_api = cap.trigger == FL_CAPTURE_PROFILER_API;
        o.capture_nvtx = cap.trigger == FL_CAPTURE_NVTX;
        o.capture_edge = fl_capture_edge;
    }
    gp_status st = p->start(&o, err);
    if (st != GP_OK) {
        fl_trace_writer_destroy(s->tw);
        s->tw = NULL;
        return st;
    }
    s->plugin = p;
    /* The one scope-boundary hook: off (NULL) unless an engine wants it. */
    bool scope_hooks = o.range_profiler || (o.sass_metrics && !o.sass_all_kernels);
    if (scope_hooks && p->range_begin && p->range_end)
        fl_scope_set_range_hooks(p->range_begin, p->range_end);
    /* Framework ops (gpufl_push_external_op) ride on external correlation. */
    if (o.external_correlation && p->push_external && p->pop_external)
        fl_ops_set_hooks(p->push_external, p->pop_external);
    fl_trace_writer_set_compact(s->tw, c->compact_kernel_details);
    fl_trace_writer_set_spill(s->tw, spill, s);
    fl_trace_writer_sink(s->tw, &s->sink);
    s->n_cuda = p->devices(s->cuda_limits, MAX_CUDA_DEVICES);
    for (size_t i = 0; i < s->n_cuda; i++) {
        fl_trace_writer_add_limits(s->tw, &s->cuda_limits[i]);
        s->cuda_static[i] = cuda_static_of(&s->cuda_limits[i]);
        cuda_uuid_as_nvml(s, &s->cuda_static[i]);
    }
    return GP_OK;
}

bool fl_trace_engine_wants_pc(gpufl_engine e)
{
    return e == GPUFL_ENGINE_PC_SAMPLING || e == GPUFL_ENGINE_DEEP;
}

bool fl_trace_engine_wants_sass(gpufl_engine e)
{
    return e == GPUFL_ENGINE_SASS_METRICS || e == GPUFL_ENGINE_DEEP;
}

void fl_trace_engine_drain(session *s, const fl_scope_event *rows, size_t n)
{
    if (!s->plugin)
        return;
    /* An outermost scope that ended is a PC-sampling collection point:
     * the plugin reads CUPTI's buffers in this drain, off the application's
     * threads. */
    bool window_end = false;
    for (size_t i = 0; i < n && !window_end; i++)
        window_end = rows[i].row.event_type == FL_SCOPE_END && rows[i].row.depth == 0;
    if (window_end && s->plugin->collect)
        s->plugin->collect();
    uint64_t now = gp_now_mono_ns();
    if (now - s->last_trace_flush_ns >= TRACE_FLUSH_PERIOD_NS) {
        s->last_trace_flush_ns = now;
        s->plugin->flush();
    }
    /* Kernel dictionaries and the trace records go straight into the
     * channel buffers. */
    s->plugin->drain(&s->sink);
}

void fl_trace_engine_stats(const session *s, fl_trace_stats *st)
{
    memset(st, 0, sizeof *st);
    if (s->plugin)
        s->plugin->stats(st);
}

void fl_trace_engine_stop(session *s)
{
    fl_scope_set_range_hooks(NULL, NULL);
    fl_ops_set_hooks(NULL, NULL);
    if (s->plugin)
        s->plugin->stop();
}

void fl_trace_engine_close(session *s, uint64_t end_ns, fl_trace_stats *st, fl_trace_counts *n)
{
    fl_trace_writer_close_ranges(s->tw, end_ns);
    s->plugin->stats(st);
    fl_trace_writer_counts(s->tw, n);
    s->plugin->release();
    s->plugin = NULL;
    FL_DEBUG(s, "trace: %llu kernels, %llu records dropped, %llu buffers refused, pool %llu bytes",
             (unsigned long long)n->kernels, (unsigned long long)st->cupti_dropped,
             (unsigned long long)st->buffers_refused, (unsigned long long)st->pool_bytes);
    if (st->engines[FL_ENGINE_PC].status != FL_PC_OFF)
        FL_DEBUG(s,
                 "pc sampling: %llu samples in %llu rows, %llu collections, CUPTI total %llu, "
                 "dropped by hardware %llu, non-user %llu, lost %llu, without a source line "
                 "%llu; %u cubins kept (%u without line info, %u over the bound)%s%s",
                 (unsigned long long)n->samples, (unsigned long long)n->sample_rows,
                 (unsigned long long)st->engines[FL_ENGINE_PC].counters.pc.collections,
                 (unsigned long long)st->engines[FL_ENGINE_PC].counters.pc.total_samples,
                 (unsigned long long)st->engines[FL_ENGINE_PC].counters.pc.dropped_samples,
                 (unsigned long long)st->engines[FL_ENGINE_PC].counters.pc.non_user_samples,
                 (unsigned long long)st->engines[FL_ENGINE_PC].counters.pc.lost_samples,
                 (unsigned long long)st->engines[FL_ENGINE_PC].counters.pc.no_line_samples,
                 st->cubins, st->cubins_no_lines, st->cubins_over,
                 st->engines[FL_ENGINE_PC].message[0] ? ": " : "",
                 st->engines[FL_ENGINE_PC].message);
    if (st->engines[FL_ENGINE_PM].status != FL_PC_OFF)
        FL_DEBUG(s,
                 "pm sampling: %llu samples in %llu rows, %llu decodes, %llu overflows, %llu "
                 "values left out, %u devices%s%s",
                 (unsigned long long)st->engines[FL_ENGINE_PM].counters.pm.samples,
                 (unsigned long long)n->pm_rows,
                 (unsigned long long)st->engines[FL_ENGINE_PM].counters.pm.decodes,
                 (unsigned long long)st->engines[FL_ENGINE_PM].counters.pm.overflows,
                 (unsigned long long)st->engines[FL_ENGINE_PM].counters.pm.bad_values,
                 st->engines[FL_ENGINE_PM].counters.pm.devices,
                 st->engines[FL_ENGINE_PM].message[0] ? ": " : "",
                 st->engines[FL_ENGINE_PM].message);
    if (st->engines[FL_ENGINE_SASS].status != FL_PC_OFF)
        FL_DEBUG(s,
                 "sass metrics: %u metrics (%u skipped) on %u contexts, %llu records in %llu "
                 "rows from %llu reads, dropped %llu, lost %llu, without a source line %llu%s%s",
                 st->engines[FL_ENGINE_SASS].counters.sass.metrics,
                 st->engines[FL_ENGINE_SASS].counters.sass.metrics_skipped,
                 st->engines[FL_ENGINE_SASS].counters.sass.contexts,
                 (unsigned long long)st->engines[FL_ENGINE_SASS].counters.sass.records,
                 (unsigned long long)n->sass_rows,
                 (unsigned long long)st->engines[FL_ENGINE_SASS].counters.sass.collections,
                 (unsigned long long)st->engines[FL_ENGINE_SASS].counters.sass.dropped_records,
                 (unsigned long long)st->engines[FL_ENGINE_SASS].counters.sass.lost_values,
                 (unsigned long long)st->engines[FL_ENGINE_SASS].counters.sass.no_line_values,
                 st->engines[FL_ENGINE_SASS].message[0] ? ": " : "",
                 st->engines[FL_ENGINE_SASS].message);
}

void fl_trace_engine_free(session *s)
{
    fl_scope_set_range_hooks(NULL, NULL);
    fl_ops_set_hooks(NULL, NULL);
    if (s->plugin) {
        /* A session that failed after the engine started. */
        s->plugin->stop();
        s->plugin->release();
    }
    fl_trace_writer_destroy(s->tw);
}
