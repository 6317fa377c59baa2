/*
 * json.c - the object syntax of the command's JSON documents.  Values go
 * through the library's writers (fl_buf_str, fl_buf_double: the summaries'
 * escaping and number format, docs/json-schema.md), so the run object and
 * its embedded summaries treat text and numbers the same way.  An
 * allocation failure is remembered (the buffer's oom), never fatal: the
 * caller checks it once at the end.
 */
#include "cli.h"

void cli_json_key(fl_buf *b, const char *key)
{
    fl_buf_str(b, key);
    fl_buf_puts(b, ":");
}

void cli_json_member_str(fl_buf *b, const char *key, const char *s)
{
    fl_buf_puts(b, ",");
    cli_json_key(b, key);
    fl_buf_str(b, s);
}

void cli_json_sep(fl_buf *b, int *first)
{
    if (!*first)
        fl_buf_puts(b, ",");
    *first = 0;
}

int cli_summary_json(fl_buf *b, const gp_summary *s, int comma)
{
    size_t len = gp_summary_to_json(s, 0, NULL, 0);
    char *one = malloc(len + 1);
    if (!one) {
        b->oom = 1;
        return -1;
    }
    gp_summary_to_json(s, 0, one, len + 1);
    if (comma)
        fl_buf_puts(b, ",");
    fl_buf_put(b, one, len);
    free(one);
    return 0;
}
