/*
 * recorder/caps_int.h - what capabilities.c (the session's entries) and
 * caps_engines.c (the profiling engines' entries) share: the entry list's
 * edits, and the engines' part of building and finishing it.
 */
#ifndef GP_RECORDER_CAPS_INT_H
#define GP_RECORDER_CAPS_INT_H

#include "session_state.h"

#include <stdbool.h>
#include <stdint.h>

/* A new entry (dropped when the list is full). */
void fl_caps_add(session *s, const char *feature, bool requested, fl_cap_status status,
                 const char *reason_code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* An entry's status and message set anew (its first word replaced). */
void fl_caps_set(session *s, const char *feature, fl_cap_status status, const char *reason,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The final word on a feature that lost data: partial, with the reason;
 * one already partial keeps its first reason and gets this message after
 * its own. */
void fl_caps_mark_partial(session *s, const char *feature, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool fl_caps_is_collected(const session *s, const char *feature);

/* The engines (caps_engines.c): their entries at init (above_why: why an
 * engine asked for does not run), the engine the session runs, why it
 * runs less than asked (debug log), and their last word at the end. */
void fl_caps_engines_add(session *s, bool tracing, const char *above_why);
gpufl_engine fl_caps_engines_selected(session *s, bool tracing);
void fl_caps_engines_say(session *s, bool tracing, const char *why, gpufl_engine sel,
                         const char *above_why);
void fl_caps_engines_final(session *s, const fl_trace_stats *st, const fl_trace_counts *n);

#endif /* GP_RECORDER_CAPS_INT_H */
