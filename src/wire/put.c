/*
 * wire/put.c - the shared pieces of the record writers (put.h): every
 * record's type name and version come from the vocabulary here.
 */
#include "put.h"

#include <string.h>

void fl_put_bool(fl_buf *b, bool v)
{
    if (v)
        FL_BUF_LIT(b, "true");
    else
        FL_BUF_LIT(b, "false");
}

void fl_put_str_or_empty(fl_buf *b, const char *s)
{
    fl_buf_str(b, s ? s : "");
}

void fl_put_key(fl_buf *b, const char *key)
{
    size_t n = strlen(key);
    char *d = fl_buf_reserve(b, n + 4);
    if (!d)
        return;
    *d++ = ',';
    *d++ = '"';
    d = fl_put_lit(d, key, n);
    *d++ = '"';
    *d++ = ':';
    fl_buf_commit(b, d);
}

void fl_put_open(fl_buf *b, fl_type t)
{
    const fl_type_info *ti = fl_type_get(t);
    if (ti->version) {
        FL_BUF_LIT(b, "{\"version\":");
        fl_buf_u64(b, ti->version);
        fl_put_key(b, "type");
    } else {
        FL_BUF_LIT(b, "{\"type\":");
    }
    fl_buf_str(b, ti->name);
}

void fl_put_head(fl_buf *b, fl_type t, const char *session_id)
{
    fl_put_open(b, t);
    fl_put_key(b, "session_id");
    fl_buf_str(b, session_id);
}
