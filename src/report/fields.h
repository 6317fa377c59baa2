/*
 * report/fields.h - the values of a session's records and batch cells read
 * the one way the report and the exports agree on (report/fields.c): a
 * cell or member that is absent, null or of the wrong kind reads as "not
 * recorded" (false), never as 0.
 *
 * Not exported; nothing here prints.
 */
#ifndef FL_REPORT_FIELDS_H
#define FL_REPORT_FIELDS_H

#include "../reader/read.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Batch cells (as reader/read.h describes them). */
/* Cell (row, col) as an integer; false for null, a negative col, a
 * negative or non-integral value. */
bool fl_rcell_u64_slow(const fl_batch *b, size_t row, int col, uint64_t *out);
/* Inline: called for every cell of every kernel row. */
static inline bool fl_rcell_u64(const fl_batch *b, size_t row, int col, uint64_t *out)
{
    if (col >= 0 && (size_t)col < b->ncols && row < b->nrows) {
        const fl_cell *c = &b->cells[row * b->ncols + (size_t)col];
        if (c->kind == FL_CELL_INT && c->i >= 0) {
            *out = (uint64_t)c->i;
            return true;
        }
    }
    return fl_rcell_u64_slow(b, row, col, out);
}
/* Cell as a double; false for null or a negative col. */
bool fl_rcell_real(const fl_batch *b, size_t row, int col, double *out);

/* Record members as fl_jval (reader/read.h): the one rule of the
 * fl_jget_* below, and of the kernel_detail members the reader gives. */
/* A non-negative number below 2^64 (a real is truncated). */
bool fl_jval_u64(const fl_jval *v, uint64_t *out);
/* A finite number. */
bool fl_jval_real(const fl_jval *v, double *out);
/* A string; NULL otherwise. */
static inline const char *fl_jval_str(const fl_jval *v)
{
    return v->kind == FL_J_STRING ? v->s : NULL;
}

/* Record members. */
/* A non-negative number below 2^64 (a real is truncated). */
bool fl_jget_u64(const json_t *obj, const char *key, uint64_t *out);
/* An integer. */
bool fl_jget_i64(const json_t *obj, const char *key, int64_t *out);
/* A finite number. */
bool fl_jget_real(const json_t *obj, const char *key, double *out);
/* A string; NULL otherwise. */
const char *fl_jget_str(const json_t *obj, const char *key);
/* An id: a non-negative number, or a string of decimal digits (GPUFlight
 * writes memset_event's device_id and stream_id as strings). */
bool fl_jget_id(const json_t *obj, const char *key, uint64_t *out);
/* A record's time span: start_ns and end_ns (GPUFlight's timed events;
 * start_ns > 0, end_ns before it: duration_ns, else 0), else ts_ns and
 * duration_ns (ours; 0 without).  false when it has no time (0 is none:
 * GPUFlight writes 0 for a time CUPTI did not give). */
bool fl_jget_span(const json_t *obj, uint64_t *start, uint64_t *dur);

/* Grid and block dimensions as kernel_detail writes them, "(x,y,z)". */
/* false if s is not that. */
bool fl_dim3_parse(const char *s, uint32_t v[3]);
/* v in that form into buf (48 bytes hold any); returns buf. */
const char *fl_dim3_format(char *buf, size_t len, const uint32_t v[3]);
/* The same at d, unterminated (34 bytes at most); returns the end. */
char *fl_put_dim3(char *d, const uint32_t v[3]);

/* The range profiler's metrics, in kernel_perf_metric_event's order (its
 * first FL_PERF_SCOPE_COUNT are perf_metric_event's too). */
enum {
    FL_PERF_SM_THROUGHPUT,
    FL_PERF_L1_HIT,
    FL_PERF_L2_HIT,
    FL_PERF_DRAM_READ,
    FL_PERF_DRAM_WRITE,
    FL_PERF_TENSOR,
    FL_PERF_SCOPE_COUNT, /* perf_metric_event has the ones above */
    FL_PERF_OCCUPANCY = FL_PERF_SCOPE_COUNT,
    FL_PERF_SHARED_LOAD_CONFLICTS,
    FL_PERF_SHARED_STORE_CONFLICTS,
    FL_PERF_SHARED_CONFLICTS,
    FL_PERF_SHARED_WAVEFRONTS,
    FL_PERF_CONFLICT_OVERHEAD,
    FL_PERF_CONFLICT_NWAY,
    FL_PERF_COUNT
};
/* The records' (and the JSON report's) key of each metric (fields.c). */
extern const char *const fl_perf_keys[FL_PERF_COUNT];

/* The name of an activity-API PC sample's stall_reason (CUPTI's
 * CUpti_ActivityPCSamplingStallReason: 2 "instruction fetch", ... 12
 * "sleeping"), NULL beyond the list.  PC Sampling API rows name theirs in
 * metric_dict instead. */
const char *fl_stall_reason_name(uint64_t reason);

/* The name of a CUPTI memcpy kind ("HtoD", ...), NULL for one without. */
const char *fl_copy_kind_name(uint64_t kind);

#endif /* FL_REPORT_FIELDS_H */
