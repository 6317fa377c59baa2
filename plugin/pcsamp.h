/*
 * pcsamp.h - PC sampling in the CUPTI plugin: what its three files promise
 * each other and the plugin's table.
 *
 *   pcsamp_decode.c  the aggregator: CUPTI's PC records (the PC Sampling
 *                    API's CUpti_PCSamplingData, the activity API's
 *                    PC_SAMPLING / FUNCTION / SOURCE_LOCATOR records) summed
 *                    per (device, kernel, function, PC offset, stall reason)
 *                    in a fixed table, with the dictionaries its rows index,
 *                    handed to the sink as fl_sample_row
 *   pcsamp_source.c  the cubins' copies (module-load callback), keyed by the
 *                    CRC CUPTI puts in its PC records, bounded in bytes; PC
 *                    offsets to file:line (cuptiGetSassToSourceCorrelation)
 *   pcsamp.c         the PC Sampling API's life per CUDA context: enable,
 *                    configure, start, stop, read (GetData) on the writer
 *                    thread; every CUPTI call behind a table (fl_pcs_api) so
 *                    tests inject CUPTI's answers
 *
 * Memory is bounded whatever the run's length: the aggregation table (rows
 * handed over when full), one GetData buffer per context, the cubin copies
 * (FL_PCS_CUBIN_BYTES_MAX); the dictionaries grow with the distinct
 * functions, stall reasons and source files, not with the samples.
 */
#ifndef GP_PLUGIN_PCSAMP_H
#define GP_PLUGIN_PCSAMP_H

#include "../src/abi/trace_abi.h"

#include <cupti.h>
#include <cupti_pcsampling.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------- the aggregator */

typedef struct fl_pcs fl_pcs;

typedef struct fl_pcs_config {
    bool source;     /* map PC offsets to file:line (pcsamp_source.c) */
    size_t max_rows; /* distinct rows held before they go to the sink; 0: 65536 */
    bool scopes;     /* look up the launch's scopes (fl_launch_scope_get) */
    bool disasm;     /* keep the functions met for the disassembly (fl_pcs_take_functions) */
} fl_pcs_config;

/* NULL when out of memory. */
fl_pcs *fl_pcs_create(const fl_pcs_config *cfg);
void fl_pcs_destroy(fl_pcs *p); /* NULL-safe */

/* The names of device device_id's stall reasons (cuptiPCSamplingGetStallReasons):
 * each index's metric_dict entry.  An index without a name is written as
 * "stall_reason_<index>". */
void fl_pcs_stall_names(fl_pcs *p, uint32_t device_id, const uint32_t *index,
                        const char *const *names, size_t n);

/* The PC Sampling API: the records of one GetData (d->totalNumPcs of
 * d->pPcData), of device device_id, read at wall time t_ns.  sink NULL
 * (a context going away, no writer at hand): when the table is full the
 * rest is counted lost instead of handed over.  Also adds CUPTI's counts
 * (total, dropped, non-user samples, hardware buffer full). */
void fl_pcs_feed(fl_pcs *p, const fl_trace_sink *sink, const CUpti_PCSamplingData *d,
                 uint32_t device_id, uint64_t t_ns);

/* The activity API's records (decode.c hands them over in buffer order). */
void fl_pcs_on_function(fl_pcs *p, const CUpti_ActivityFunction *r);
void fl_pcs_on_source(fl_pcs *p, const CUpti_ActivitySourceLocator *r);
void fl_pcs_on_info(fl_pcs *p, const CUpti_ActivityPCSamplingRecordInfo *r);
void fl_pcs_on_sample(fl_pcs *p, const fl_trace_sink *sink, const CUpti_ActivityPCSampling3 *r,
                      uint64_t t_ns);

/* Every row held (after the dictionary entries they use) to sink, in
 * arrays of at most FL_TRACE_BATCH; the table is empty afterwards. */
void fl_pcs_flush(fl_pcs *p, const fl_trace_sink *sink);

/* Adds the aggregator's counts (pc_samples, pc_rows, pc_collections,
 * CUPTI's totals, lost and no-line samples, cubins) into out. */
void fl_pcs_stats(const fl_pcs *p, fl_trace_stats *out);

/* What sassmetrics_decode.c shares of the aggregator (one table, one set
 * of dictionaries and one source-line cache per fl_pcs):
 *  fl_pcs_function_id  function_dict id of "mangled@file" (not cached)
 *  fl_pcs_source_line  source_file_dict id and *line of pc in fn (cached;
 *                      0 when unknown or source is off)
 *  fl_pcs_metric_id    metric_dict id of a name
 *  fl_pcs_row_hash     the hash fl_pcs_add wants of a row's PC
 *  fl_pcs_add          value added to the row of key k (k's samples
 *                      ignored; keyed by every field but t_ns, samples,
 *                      the source and the scope), made when new; the
 *                      table handed to sink when full (sink NULL: the
 *                      value counted lost). */
uint32_t fl_pcs_function_id(fl_pcs *p, const char *name, uint64_t crc);
uint32_t fl_pcs_source_line(fl_pcs *p, uint64_t crc, uint32_t fn_id, const char *name, uint64_t pc,
                            uint32_t *line);
uint32_t fl_pcs_metric_id(fl_pcs *p, const char *name);
uint64_t fl_pcs_row_hash(const fl_sample_row *k);
/* FNV-1a of a text: the dictionaries' hash, shared by the decoders. */
uint64_t fl_pcs_text_hash(const char *s);
void fl_pcs_add(fl_pcs *p, const fl_trace_sink *s, const fl_sample_row *k, uint64_t h,
                uint64_t value);

/* ----------------------------------------------------------- the cubins */

#define FL_PCS_CUBIN_BYTES_MAX (64u << 20) /* copies kept, in all */

/* Module-load callback (any thread): a copy of the cubin, while the bound
 * allows (else counted).  Cheap: no CUPTI call (its CRC is computed later,
 * on the writer thread: CUPTI holds locks in this callback). */
void fl_cubin_keep(const void *cubin, size_t bytes);

/* Writer thread: the source line of pc_offset in function fn of the cubin
 * whose CRC is crc.  Returns true with file ("dir/file") and *line (> 0)
 * when the cubin has line information for it; false otherwise. */
bool fl_cubin_line(uint64_t crc, const char *fn, uint64_t pc_offset, char *file, size_t cap,
                   uint32_t *line);

/* Whether an ELF image (a cubin) has line information (a .debug_line or
 * .nv_debug_line_sass section: nvcc -lineinfo or -G). */
bool fl_cubin_has_lines(const void *elf, size_t bytes);

/* Cubins kept, of which without line information, not kept (over the
 * bound), and bytes kept, into out's pc_cubins* fields. */
void fl_cubin_stats(fl_trace_stats *out);

/* Forgets every cubin (release). */
void fl_cubin_reset(void);

/* Writer thread: the copy of the cubin whose CRC is crc (*bytes its size),
 * NULL when none is kept; valid until fl_cubin_reset. */
const void *fl_cubin_bytes(uint64_t crc, size_t *bytes);

/* The ELF symbol-table index of function name in a cubin (what nvdisasm's
 * -fun takes); false when the cubin has no such function symbol. */
bool fl_cubin_symbol(const void *elf, size_t bytes, const char *name, uint32_t *index);

/* ------------------------------------------------------ the disassembly */

/* A function sampled for the first time (fl_pcs_take_functions). */
typedef struct fl_pcs_fn {
    uint64_t crc;         /* its cubin's */
    uint32_t function_id; /* its function_dict entry */
    bool done;            /* disasm.c: handled */
    char *name;           /* mangled */
} fl_pcs_fn;

/* The functions the aggregator met since the last call (*out: an array the
 * caller frees with fl_pcs_free_functions); 0 when none. */
size_t fl_pcs_take_functions(fl_pcs *p, fl_pcs_fn **out);
void fl_pcs_free_functions(fl_pcs_fn *fns, size_t n);

/* The session's disassembler (an absolute path; NULL or "": none) and one
 * run's time limit in ms (0: 30 s); the counts start again. */
void fl_disasm_start(const char *tool, uint32_t run_ms);

/* Writer thread, no lock held: each function of fns, grouped by cubin
 * (one run of the disassembler a cubin), handed to sink->disassembly. */
void fl_disasm_functions(const fl_trace_sink *sink, fl_pcs_fn *fns, size_t n);

/* Adds the disasm_* counts into out, and the first failure's message if
 * out has none. */
void fl_disasm_stats(fl_trace_stats *out);

/* nvdisasm -c output (text[len] == '\0', changed in place): fn once per
 * function with its instructions; returns the functions, -1 when out of
 * memory. */
typedef void (*fl_disasm_fn)(void *user, const char *name, const fl_sass_entry *e, size_t n);
int fl_disasm_parse(char *text, size_t len, fl_disasm_fn fn, void *user);

/* One run: tool -c -fun <symbols> <the cubin in a temporary file>; its
 * output (malloc, *len bytes, NUL-terminated) or NULL, the failure counted
 * with its reason (fl_disasm_stats). */
char *fl_disasm_run(const char *tool, const void *cubin, size_t bytes, const uint32_t *symbols,
                    size_t n_symbols, size_t *len);

/* ------------------------------------------------- the PC Sampling API */

/* Every CUPTI call pcsamp.c makes; tests replace them (fl_pcs_set_api). */
typedef struct fl_pcs_api {
    CUptiResult (*enable)(CUpti_PCSamplingEnableParams *);
    CUptiResult (*disable)(CUpti_PCSamplingDisableParams *);
    CUptiResult (*configure)(CUpti_PCSamplingConfigurationInfoParams *);
    CUptiResult (*num_stall_reasons)(CUpti_PCSamplingGetNumStallReasonsParams *);
    CUptiResult (*stall_reasons)(CUpti_PCSamplingGetStallReasonsParams *);
    CUptiResult (*start)(CUpti_PCSamplingStartParams *);
    CUptiResult (*stop)(CUpti_PCSamplingStopParams *);
    CUptiResult (*get_data)(CUpti_PCSamplingGetDataParams *);
    CUptiResult (*device_id)(CUcontext, uint32_t *);
    CUptiResult (*activity_enable)(CUpti_ActivityKind);
    CUptiResult (*activity_configure)(CUcontext, CUpti_ActivityPCSamplingConfig *);
} fl_pcs_api;

/* NULL: CUPTI's own functions again. */
void fl_pcs_set_api(const fl_pcs_api *api);

/* The FL_PC_* status of a CUPTI error, and its message with the fix
 * ("<what> failed: <CUPTI's text> (<code>): <why and what to do>"). */
uint32_t fl_pcs_status_of(CUptiResult r);
const char *fl_pcs_fix(uint32_t status); /* the why and what to do of a status */
void fl_pcs_explain(CUptiResult r, const char *what, char *out, size_t len);

/* The Profiler API's late start (SASS metrics, the range profiler, Deep):
 * late is "a CUDA context was current when the session started" (CUDA
 * work came before gpufl_init).  fl_profiler_status: the FL_PC_* status
 * of a refusal, FL_RP_LATE_INIT for one without a specific cause when
 * late; fl_late_init_advice: the seed's advice to append to its message
 * ("" when not late). */
uint32_t fl_profiler_status(CUptiResult r, bool late);
const char *fl_late_init_advice(bool late);

/* Deep: the session's aggregator, shared with the SASS engine so both
 * kinds of rows index one set of dictionaries (NULL: PC sampling off, out
 * of memory, or the activity method, whose decoder reads the aggregator
 * without the lock); valid until fl_pcs_engine_release.  Every use of it
 * outside pcsamp.c holds fl_pcs_engine_lock (the lock pcsamp.c holds for
 * its own uses). */
fl_pcs *fl_pcs_engine_shared(void);
void fl_pcs_engine_lock(void);
void fl_pcs_engine_unlock(void);

/* Starts PC sampling for a session (options o): chooses the method (the
 * activity API where CUPTI still has it, else the PC Sampling API) and,
 * for a context already current on the calling thread (ctx, NULL: none),
 * enables it now.  Returns the FL_PC_* status; the reason is kept for
 * fl_pcs_engine_stats.  Contexts created later come through
 * fl_pcs_context_created. */
uint32_t fl_pcs_engine_start(const fl_trace_options *o, void *ctx);

/* Resource callbacks (the application's threads, through the plugin's one
 * resource dispatcher): a context created (its sampling enabled,
 * configured and armed), a context about to be destroyed (stopped, read
 * without a sink, disabled).  fl_pcs_keeps_cubins: whether a loaded
 * module's cubin is to be kept (source lines) for this engine. */
bool fl_pcs_keeps_cubins(void);
void fl_pcs_context_created(void *ctx);
void fl_pcs_context_destroying(void *ctx);

/* A refusal found by the plugin (its CUPTI subscription): the session's
 * reason, if it has none yet. */
void fl_pcs_engine_fail(CUptiResult r, const char *what);

/* Any thread: the next drain is a collection point. */
void fl_pcs_request_collect(void);

/* Whether sampling is armed on some context (CUPTI's activity flush must
 * wait: it returns no kernel record while PC sampling is armed). */
bool fl_pcs_armed(void);

/* Writer thread: at a collection point (or after stop), every context is
 * stopped, read until CUPTI has nothing left, and armed again (not after
 * stop: then disabled); then every row held goes to sink.  activity_flush
 * runs while sampling is stopped (the plugin's cuptiActivityFlushAll). */
void fl_pcs_engine_drain(const fl_trace_sink *sink, void (*activity_flush)(void));

/* The activity method's aggregator, for decode.c (NULL: the PC Sampling
 * API runs, or nothing). */
fl_pcs *fl_pcs_engine_activity_sink(void);

/* Sampling stopped on every context (the session ends): the next drain
 * reads what is left and disables. */
void fl_pcs_engine_stop(void);

/* Status, method, reasons and counts into out's pc_* fields. */
void fl_pcs_engine_stats(fl_trace_stats *out);

/* Everything freed (contexts still enabled are disabled unread). */
void fl_pcs_engine_release(void);

#endif /* GP_PLUGIN_PCSAMP_H */
