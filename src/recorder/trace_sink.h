/*
 * recorder/trace_sink.h - the core's Trace-engine writer (recorder/trace_sink.c): the sink
 * the CUPTI plugin fills on the writer thread, writing the wire format's
 * trace records into a session's channel buffers.  Not exported.
 */
#ifndef FL_TRACE_WRITER_H
#define FL_TRACE_WRITER_H

#include "../wire/records.h"
#include "../abi/trace_abi.h"

#define FL_TRACE_MAX_DEVICES 64

typedef struct fl_trace_writer fl_trace_writer;

/* What was written, for the closing capture_capabilities. */
typedef struct fl_trace_counts {
    uint64_t kernels, kernel_ns, details, memcpys, memsets, syncs, allocs, graphs;
    uint64_t graph_nodes;        /* graph_node_definition records */
    uint64_t markers;            /* NVTX marker rows received (a range: two) */
    uint64_t ranges;             /* nvtx_marker_event written at a range's end */
    uint64_t ranges_open_at_end; /* written at shutdown, open_at_shutdown */
    uint64_t markers_unmatched;  /* ends whose begin was not seen: not written */
    uint64_t markers_lost;       /* begins not kept (out of memory, too many open) */
    uint64_t stacks;             /* CPU stacks announced (kernel_detail.stack_trace) */
    uint64_t sample_rows;        /* profile_sample_batch rows (PC sampling) */
    uint64_t samples;            /* their metric_value summed */
    uint64_t disassembled;       /* cubin_disassembly records (functions) written */
    uint64_t pm_rows;            /* pm_sample_batch rows (PM sampling) */
    uint64_t pm_configs;         /* pm_sampling_config records */
    uint64_t sass_rows;          /* profile_sample_batch rows of sample_kind 1 (SASS metrics) */
    uint64_t sass_configs;       /* sass_config records */
    uint64_t perf_ranges;        /* perf_metric_event + kernel_perf_metric_event written */
} fl_trace_counts;

/* device / scope / system: the session's channel buffers (borrowed; only
 * the writer thread appends to them while the writer exists).  ident's
 * strings must outlive the writer.  NULL when out of memory. */
fl_trace_writer *fl_trace_writer_create(const fl_ident *ident, uint32_t gen, fl_buf *device,
                                        fl_buf *scope, fl_buf *system);
void fl_trace_writer_destroy(fl_trace_writer *w); /* NULL-safe */

/* The sink to hand to the plugin's drain(). */
void fl_trace_writer_sink(fl_trace_writer *w, fl_trace_sink *out);

/* Once a channel buffer holds FL_TRACE_SPILL_BYTES after a sink call (or
 * 64 kernel_details), spill(user, buffer) is called (writer thread) to
 * write it out and empty it: a drain of many CUPTI buffers then never holds
 * all their text at once (one kernel_detail per launch is ~500 bytes), and
 * the text is written while it is still in the cache.  NULL: never. */
#define FL_TRACE_SPILL_BYTES (256u << 10)
void fl_trace_writer_set_spill(fl_trace_writer *w, void (*spill)(void *user, fl_buf *b),
                               void *user);

/* compact: a kernel_detail per launch configuration (has_details 1 on
 * that launch only), not one per launch (the default). */
void fl_trace_writer_set_compact(fl_trace_writer *w, bool compact);

/* The sass channel's buffer (borrowed, as the others), from when its file
 * is open; until then cubin_disassembly records are not written. */
void fl_trace_writer_set_sass(fl_trace_writer *w, fl_buf *sass);

/* A device's limits known before any kernel (the driver's list at init). */
void fl_trace_writer_add_limits(fl_trace_writer *w, const fl_gpu_limits *lim);

/* Writes each NVTX range still open as an nvtx_marker_event ending at
 * end_ns with open_at_shutdown (in start order), and forgets them: the
 * session's last word on its ranges, after the last drain. */
void fl_trace_writer_close_ranges(fl_trace_writer *w, uint64_t end_ns);

void fl_trace_writer_counts(const fl_trace_writer *w, fl_trace_counts *out);

#endif /* FL_TRACE_WRITER_H */
