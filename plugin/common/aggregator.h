/*
 * aggregator.h - the sample aggregator (aggregator.c), shared by the PC
 * sampling and SASS metrics engines and the activity decoder: CUPTI's PC
 * records (the PC Sampling API's CUpti_PCSamplingData, the activity API's
 * PC_SAMPLING / FUNCTION / SOURCE_LOCATOR records) and SASS metric values
 * summed per (device, kernel, function, PC offset, reason or metric) in a
 * fixed table, with the dictionaries its rows index, handed to the sink as
 * fl_sample_row.
 *
 * Memory is bounded whatever the run's length: the table (rows handed over
 * when full); the dictionaries grow with the distinct functions, reasons,
 * metrics and source files, not with the samples.
 */
#ifndef GP_PLUGIN_COMMON_AGGREGATOR_H
#define GP_PLUGIN_COMMON_AGGREGATOR_H

#include "../../src/abi/trace_abi.h"

#include <cupti.h>
#include <cupti_pcsampling.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_agg fl_agg;

typedef struct fl_agg_config {
    bool source;     /* map PC offsets to file:line (common/cubins.c) */
    size_t max_rows; /* distinct rows held before they go to the sink; 0: 65536 */
    bool scopes;     /* look up the launch's scopes (fl_launch_scope_get) */
    bool disasm;     /* keep the functions met for the disassembly (fl_agg_take_functions) */
} fl_agg_config;

/* NULL when out of memory. */
fl_agg *fl_agg_create(const fl_agg_config *cfg);
void fl_agg_destroy(fl_agg *p); /* NULL-safe */

/* The names of device device_id's stall reasons (cuptiPCSamplingGetStallReasons):
 * each index's metric_dict entry.  An index without a name is written as
 * "stall_reason_<index>". */
void fl_agg_stall_names(fl_agg *p, uint32_t device_id, const uint32_t *index,
                        const char *const *names, size_t n);

/* The PC Sampling API: the records of one GetData (d->totalNumPcs of
 * d->pPcData), of device device_id, read at wall time t_ns.  sink NULL
 * (a context going away, no writer at hand): when the table is full the
 * rest is counted lost instead of handed over.  Also adds CUPTI's counts
 * (total, dropped, non-user samples, hardware buffer full). */
void fl_agg_feed(fl_agg *p, const fl_trace_sink *sink, const CUpti_PCSamplingData *d,
                 uint32_t device_id, uint64_t t_ns);

/* The activity API's records (decode.c hands them over in buffer order). */
void fl_agg_on_function(fl_agg *p, const CUpti_ActivityFunction *r);
void fl_agg_on_source(fl_agg *p, const CUpti_ActivitySourceLocator *r);
void fl_agg_on_info(fl_agg *p, const CUpti_ActivityPCSamplingRecordInfo *r);
void fl_agg_on_sample(fl_agg *p, const fl_trace_sink *sink, const CUpti_ActivityPCSampling3 *r,
                      uint64_t t_ns);

/* Every row held (after the dictionary entries they use) to sink, in
 * arrays of at most FL_TRACE_BATCH; the table is empty afterwards. */
void fl_agg_flush(fl_agg *p, const fl_trace_sink *sink);

/* Adds the aggregator's counts (pc_samples, pc_rows, pc_collections,
 * CUPTI's totals, lost and no-line samples, cubins) into out. */
void fl_agg_stats(const fl_agg *p, fl_trace_stats *out);

/* What sassmetrics_decode.c shares of the aggregator (one table, one set
 * of dictionaries and one source-line cache per fl_agg):
 *  fl_agg_function_id  function_dict id of "mangled@file" (not cached)
 *  fl_agg_source_line  source_file_dict id and *line of pc in fn (cached;
 *                      0 when unknown or source is off)
 *  fl_agg_metric_id    metric_dict id of a name
 *  fl_agg_row_hash     the hash fl_agg_add wants of a row's PC
 *  fl_agg_add          value added to the row of key k (k's samples
 *                      ignored; keyed by every field but t_ns, samples,
 *                      the source and the scope), made when new; the
 *                      table handed to sink when full (sink NULL: the
 *                      value counted lost). */
uint32_t fl_agg_function_id(fl_agg *p, const char *name, uint64_t crc);
uint32_t fl_agg_source_line(fl_agg *p, uint64_t crc, uint32_t fn_id, const char *name, uint64_t pc,
                            uint32_t *line);
uint32_t fl_agg_metric_id(fl_agg *p, const char *name);
uint64_t fl_agg_row_hash(const fl_sample_row *k);
void fl_agg_add(fl_agg *p, const fl_trace_sink *s, const fl_sample_row *k, uint64_t h,
                uint64_t value);

/* A function sampled for the first time (fl_agg_take_functions). */
typedef struct fl_agg_fn {
    uint64_t crc;         /* its cubin's */
    uint32_t function_id; /* its function_dict entry */
    bool done;            /* disasm.c: handled */
    char *name;           /* mangled */
} fl_agg_fn;

/* The functions the aggregator met since the last call (*out: an array the
 * caller frees with fl_agg_free_functions); 0 when none. */
size_t fl_agg_take_functions(fl_agg *p, fl_agg_fn **out);
void fl_agg_free_functions(fl_agg_fn *fns, size_t n);

#endif /* GP_PLUGIN_COMMON_AGGREGATOR_H */
