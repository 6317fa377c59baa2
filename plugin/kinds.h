/*
 * kinds.h - the CUPTI activity kinds a session (or injection's early
 * attach) has enabled, kept so that each is enabled once and all are
 * disabled together.
 *
 * Promises: called under cupti_plugin.c's life lock only; a refused
 * optional kind is noted in the notes given (its feature bit and CUPTI's
 * words), never fatal; only the kernels' kind can refuse a start.
 */
#ifndef GP_PLUGIN_KINDS_H
#define GP_PLUGIN_KINDS_H

#include "../src/abi/trace_abi.h"

#include <cupti.h>
#include <stddef.h>

/* "<what> failed: <CUPTI's name> (<code>)" into out. */
void fl_kinds_message(CUptiResult r, char *out, size_t len, const char *what);

/* Forget what was enabled (it was disabled, or CUPTI was reset). */
void fl_kinds_forget(void);
/* Enable kind unless it is; CUPTI's answer. */
CUptiResult fl_kinds_enable(CUpti_ActivityKind kind);
/* Enable an optional kind; a refusal sets feat and, first, the message in notes. */
void fl_kinds_optional(CUpti_ActivityKind kind, uint32_t feat, const char *what,
                       fl_trace_stats *notes);
/* The kinds the options ask for, on top of those enabled already (keep:
 * the early attach's) or afresh.  CUPTI_SUCCESS, or the kernels' kind's
 * refusal with *what the call that failed. */
CUptiResult fl_kinds_start(const fl_trace_options *o, bool keep, fl_trace_stats *notes,
                           const char **what);
/* Every kind enabled, disabled, newest first. */
void fl_kinds_disable_all(void);

#endif
