/*
 * recorder/trace_engine.h - the session's Trace engine, driven through the
 * CUPTI plugin (trace_engine.c): every call into the plugin's table is
 * here, so the order CUPTI needs (start, drain on the writer thread, stop
 * before the last cycle, release at the end) reads in one place.
 */
#ifndef GP_RECORDER_TRACE_ENGINE_H
#define GP_RECORDER_TRACE_ENGINE_H

#include "session_state.h"

#include <stdbool.h>
#include <stddef.h>

/* Starts the Trace engine for an engine above Monitor; kick wakes the
 * writer when CUPTI hands a buffer over; spill writes a large channel
 * buffer out during a drain (the writer's fl_writer_spill).  GP_OK, or
 * the plugin's status with err filled (its loader's, or CUPTI's message
 * through the table's start) when the session must run Monitor: the
 * message becomes capture_capabilities' note, not init's error. */
gp_status fl_trace_engine_start(session *s, void (*kick)(void), void (*spill)(void *, fl_buf *),
                                gp_error *err);

/* Writer thread: CUPTI's partly filled buffers out once a second, every
 * finished one decoded into the channel buffers (nothing without the
 * engine).  rows: the scope rows drained this cycle; an outermost scope's
 * end among them is a PC-sampling collection point. */
void fl_trace_engine_drain(session *s, const fl_scope_event *rows, size_t n);

/* Whether engine e samples PCs (PcSampling, and Deep which includes it). */
bool fl_trace_engine_wants_pc(gpufl_engine e);
bool fl_trace_engine_wants_sass(gpufl_engine e); /* SassMetrics */

/* What the plugin reports so far; all zero without the engine. */
void fl_trace_engine_stats(const session *s, fl_trace_stats *st);

/* Every CUPTI buffer out (a forced flush), for the writer's last cycle. */
void fl_trace_engine_stop(session *s);

/* The engine's last word, after the writer's last cycle: the NVTX ranges
 * still open written as ending at end_ns (open_at_shutdown), the plugin's
 * stats and the counts written, then the plugin's memory released. */
void fl_trace_engine_close(session *s, uint64_t end_ns, fl_trace_stats *st, fl_trace_counts *n);

/* A session being freed: an engine still running (init failed after it
 * started) is stopped and released; the trace writer is freed. */
void fl_trace_engine_free(session *s);

#endif /* GP_RECORDER_TRACE_ENGINE_H */
