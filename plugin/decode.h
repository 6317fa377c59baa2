/*
 * decode.h - CUPTI activity buffers -> the neutral rows of abi/trace_abi.h.
 *
 * The decoder is plain code over a buffer: no CUPTI call but
 * cuptiActivityGetNextRecord (which walks a buffer on the host and needs no
 * GPU), no allocation per record, no lock.  One decoder belongs to one
 * thread at a time (the core's writer thread, or a test).  Its memory is
 * fixed at creation: the staged rows, the correlation tables and the
 * kernel-name tables (which grow with the number of distinct kernels, not
 * with the number of records).
 */
#ifndef GP_PLUGIN_DECODE_H
#define GP_PLUGIN_DECODE_H

#include "../src/abi/trace_abi.h"
#include "common/demangle.h"
#include "common/launch.h"

#include <stdint.h>

typedef struct fl_decoder fl_decoder;
typedef struct fl_agg fl_agg; /* common/aggregator.h */

/* Limits of a device for kernel_detail's occupancy; returns false when
 * unknown (the detail's occupancy is then null). */
typedef bool (*fl_limits_fn)(uint32_t device_id, fl_gpu_limits *out, void *user);

typedef struct fl_decoder_config {
    int64_t clock_offset_ns; /* wall ns = CUPTI ns + offset */
    fl_limits_fn limits;     /* NULL: no device limits */
    void *limits_user;
    bool demangle;        /* kernel names as nsys shows them (default on) */
    bool scopes;          /* launches are recorded (fl_launch_scope_put): attribute kernels */
    bool memop_durations; /* allocation API calls are timed (fl_memop_duration_put) */
    /* The activity API's PC sampling: PC_SAMPLING, FUNCTION, SOURCE_LOCATOR
     * and PC_SAMPLING_RECORD_INFO records go to this aggregator
     * (common/aggregator.c), its rows out at each flush; NULL: skipped. */
    fl_agg *pcs;
    /* Graph tracking: the stack that created the graph node a kernel
     * record names (graphNodeId), which replaces the graph launch's own
     * (plugin/graphs.c); 0: none known.  NULL: the launch's stack stays. */
    uint32_t (*graph_node_stack)(uint64_t node_id);
} fl_decoder_config;

/* NULL when out of memory. */
fl_decoder *fl_decoder_create(const fl_decoder_config *cfg);
void fl_decoder_destroy(fl_decoder *d); /* NULL-safe */

/* Decodes the valid_bytes of buf.  Rows are staged and handed to sink in
 * arrays of FL_TRACE_BATCH; call fl_decoder_flush() to hand over the rest.
 * Records of kinds not decoded are skipped and counted; a record CUPTI
 * cannot parse ends the buffer (counted in bad_buffers). */
void fl_decoder_feed(fl_decoder *d, const fl_trace_sink *sink, uint8_t *buf, size_t valid_bytes);
void fl_decoder_flush(fl_decoder *d, const fl_trace_sink *sink);

/* Adds the decoder's counts (records per kind, other_records, bad_buffers,
 * overhead) into out. */
void fl_decoder_stats(const fl_decoder *d, fl_trace_stats *out);

/* At the exit of an allocation or free API call (cudaMalloc, cuMemFree,
 * ...): how long it took, keyed by its correlation id, which CUPTI's
 * MEMORY2 record of the operation carries; the decoder puts it in the
 * row's duration_ns.  Same kind of table as the launches': 16384 slots. */
void fl_memop_duration_put(uint32_t corr_id, uint64_t duration_ns);

/* At the entry of a graph launch (cudaGraphLaunch, cuGraphLaunch): the
 * executable graph's handle, keyed by the call's correlation id; the
 * decoder puts it in the GRAPH_TRACE record's row (exec_key, written as
 * graph_exec_key).  Same kind of table as the allocations'. */
void fl_graph_exec_put(uint32_t corr_id, uint64_t exec_key);

#endif /* GP_PLUGIN_DECODE_H */
