/*
 * report/run_lines.h - a session's kernel time by launching source line
 * (run_lines.c), read beside the run summary's own figures (run.c).
 * Nothing here prints.
 */
#ifndef FL_REPORT_RUN_LINES_H
#define FL_REPORT_RUN_LINES_H

#include "../reader/read.h"
#include "../wire/vocab.h"

#include <jansson.h>
#include <stdint.h>

typedef struct fl_run_lines fl_run_lines;

fl_run_lines *fl_run_lines_new(void);    /* NULL: out of memory */
void fl_run_lines_free(fl_run_lines *l); /* NULL-safe */
/* Every record, batch and kernel_detail of the session, in file order. */
void fl_run_lines_record(fl_run_lines *l, int channel, fl_type t, const char *type, json_t *rec);
void fl_run_lines_batch(fl_run_lines *l, const fl_batch *b);
void fl_run_lines_detail(fl_run_lines *l, const fl_detail *d);
/* After the last: fn for each distinct stack with its line's label (equal
 * labels come once per stack: the caller merges them), its launches and
 * GPU ns.  -1 when fn failed or memory ran out (the figures may be short). */
typedef int (*fl_run_line_fn)(void *user, const char *label, uint64_t launches, uint64_t ns);
int fl_run_lines_each(fl_run_lines *l, fl_run_line_fn fn, void *user);

#endif
