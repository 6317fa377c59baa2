/*
 * reader/state.c - the reader's state (read_int.h) beyond the scanner: its
 * warnings, each one with the file and line it is about, and its memory.
 * Every part of the reader reports through here, so no part calls
 * another sideways to say what went wrong.
 */
#include "read_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void fl_rd_free(rd *r)
{
    free(r->cells);
    free(r->str.p);
    free(r->key.p);
    fl_rd_detail_free(r);
    free(r->col_off);
    free(r->cols);
    free(r->set);
    for (size_t i = 0; i < r->n_unknown; i++)
        free(r->unknown[i]);
    free(r->unknown);
}

static void vwarn(rd *r, const char *fmt, va_list ap)
{
    if (!r->cb || !r->cb->warning)
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    r->cb->warning(r->cb->user, r->file, r->line, msg);
}

void fl_rd_warn(rd *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarn(r, fmt, ap);
    va_end(ap);
}

void fl_rd_bad_line_text(rd *r, const char *msg)
{
    r->res->bad_lines++;
    if (r->cb && r->cb->warning)
        r->cb->warning(r->cb->user, r->file, r->line, msg);
}

void fl_rd_bad_line(rd *r, const char *fmt, ...)
{
    r->res->bad_lines++;
    va_list ap;
    va_start(ap, fmt);
    vwarn(r, fmt, ap);
    va_end(ap);
}
