/*
 * recorder/capabilities.h - the session's capture_capabilities
 * (capabilities.c): what each feature was asked for and what the session
 * actually collects, so a reader learns from the log itself why a kind of
 * row is missing.  Written at init, and again at shutdown when a feature
 * lost data or the Trace engine has its counts.
 */
#ifndef GP_RECORDER_CAPABILITIES_H
#define GP_RECORDER_CAPABILITIES_H

#include "session_state.h"

#include <stdbool.h>
#include <stdint.h>

/* Every feature's first word, from the options and what init achieved:
 * tracing (the Trace engine runs), why (why it does not, when asked),
 * device_note (why there are no device metrics, or ""). */
void fl_caps_build(session *s, bool tracing, const char *why, const char *device_note);

/* The features that lost rows or names in the recorder itself (scope
 * rings, scope names beyond the limits, metric queues) become partial.
 * True when any did. */
bool fl_caps_mark_lost_rows(session *s, uint64_t scope_dropped, uint64_t names_over,
                            uint64_t metric_dropped);

/* device_metrics partial for each device whose sampling failed
 * (failures: s->n_dev entries): device_lost when the device fell off the
 * bus, device_failed for any other failure.  True when any did. */
bool fl_caps_mark_failed_devices(session *s, const fl_device_failure *failures);

/* The Trace engine's final counts on kernel_events, and partial for the
 * features whose records CUPTI dropped. */
void fl_caps_trace_final(session *s, const fl_trace_stats *st, const fl_trace_counts *n);

/* Channel ch's file was removed while recording: the collected features
 * whose records it holds become partial (log_dir_removed). */
void fl_caps_mark_removed(session *s, int ch);

/* The features whose records the session's files lost (s->loss: a failed
 * write, a removed file) become partial with the counts (write_failed,
 * log_dir_removed).  True when the files lost anything or were removed. */
bool fl_caps_mark_losses(session *s);

/* Appends capture_capabilities at ts to b. */
void fl_caps_put(session *s, fl_buf *b, uint64_t ts);

/* Appends capture_capabilities at ts to every channel buffer. */
void fl_caps_write(session *s, uint64_t ts);

#endif /* GP_RECORDER_CAPABILITIES_H */
