/*
 * disasm.h - the sass channel (disasm.c): nvdisasm run on the writer
 * thread over the cubins the store keeps, its output parsed into
 * cubin_disassembly records for the functions an aggregator met.
 */
#ifndef GP_PLUGIN_COMMON_DISASM_H
#define GP_PLUGIN_COMMON_DISASM_H

#include "aggregator.h"

/* The session's disassembler (an absolute path; NULL or "": none) and one
 * run's time limit in ms (0: 30 s); the counts start again. */
void fl_disasm_start(const char *tool, uint32_t run_ms);

/* Writer thread, no lock held: each function of fns, grouped by cubin
 * (one run of the disassembler a cubin), handed to sink->disassembly. */
void fl_disasm_functions(const fl_trace_sink *sink, fl_agg_fn *fns, size_t n);

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

#endif /* GP_PLUGIN_COMMON_DISASM_H */
