/*
 * report/units.h - how the text report writes what a person reads
 * (report/units.c): durations in s / ms / us, sizes in binary units, UTC
 * times to the microsecond, counted nouns, and strings from the session
 * kept to one line of bounded width whatever bytes they hold.
 *
 * Not exported; nothing here prints.
 */
#ifndef FL_REPORT_UNITS_H
#define FL_REPORT_UNITS_H

#include "../util/buf.h"

#include <stddef.h>
#include <stdint.h>

/* s on one line, control characters as '?', cut to max bytes with "..."
 * (never inside a UTF-8 sequence). */
void fl_put_line(fl_buf *b, const char *s, size_t max);
/* The same at d, which has room for max bytes (at least 3); returns the
 * end (no NUL written). */
char *fl_line_into(char *d, const char *s, size_t max);
/* A stack of '|'-separated frames as "f (a.c:3) <- g (a.c:9) <- ...
 * (2 more)": innermost first, 4 frames, each on one line of 120 bytes;
 * then, when a frame left out is a Python one ("step (train.py:12)"), the
 * innermost of them between the counts of the frames left out:
 * "... (3 more) <- step (train.py:12) <- ... (5 more)". */
void fl_put_stack(fl_buf *b, const char *stack);
/* "1.234 s", "1.234 ms" or "1.234 us". */
void fl_dur_text(fl_buf *b, uint64_t ns);
/* "512 B", "1.50 KiB" ... "EiB" into buf (32 bytes hold any). */
void fl_bytes_str(char *buf, size_t len, double bytes);
void fl_bytes_text(fl_buf *b, double bytes);
/* "2024-01-02 03:04:05.678901 UTC" (ns since the epoch). */
void fl_time_text(fl_buf *b, uint64_t ns);
/* one when n is 1, else many. */
const char *fl_plural(uint64_t n, const char *one, const char *many);

#endif /* FL_REPORT_UNITS_H */
