/*
 * recorder/rotate.h - bounded long runs (rotate.c): a channel's active
 * <channel>.log published as window <channel>.<N>.log.gz with its sidecar
 * .gpufl-window.<channel>.<N>.json once it holds rotate_size bytes or has
 * been open rotate_interval_ms (GPUFlight 1.3's rollover), and max_disk:
 * detail lines counted, not written, once the session's files reach it.
 */
#ifndef GP_RECORDER_ROTATE_H
#define GP_RECORDER_ROTATE_H

#include "session_state.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a window closes (fl_roll_due). */
enum { FL_ROLL_NO = 0, FL_ROLL_SIZE = 1, FL_ROLL_TIME = 2 };

/* Whether channel ch's active window must be published before add_bytes
 * more are written at now_ms (monotonic): never when it is empty; time
 * first (it was due before these bytes existed), then size (the window
 * would pass size_bytes).  Pure: the clock is the caller's. */
int fl_roll_due(const fl_roll *r, int ch, uint64_t add_bytes, uint64_t now_ms);

/* Whether a record type is detail (trace rows, samples, per-event
 * records), the lines max_disk stops: never telemetry (device and host
 * samples, system phases) nor the session's own records. */
bool fl_roll_is_detail(fl_type t);

/* Disk used by the session's files: the published windows and sidecars
 * plus every active window. */
uint64_t fl_roll_disk_bytes(const fl_roll *r);

/* The retired window <channel>.<n>.log (open for reading as fd) gzipped
 * into <channel>.<n>.log.gz beside its sidecar (window_id: a UUID v4), the
 * uncompressed file removed; when that fails it stays published
 * uncompressed.  Adds what is now on disk to published_bytes. */
void fl_roll_publish(session *s, int ch, int fd, unsigned n, const char *window_id,
                     uint64_t first_ms, uint64_t closed_ms);

#endif /* GP_RECORDER_ROTATE_H */
