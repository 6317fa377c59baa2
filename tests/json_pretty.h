/*
 * json_pretty.h - the report tests' re-indenting of compact JSON for
 * goldens a person can read and diff.  Test code only.
 */
#ifndef GP_TEST_JSON_PRETTY_H
#define GP_TEST_JSON_PRETTY_H

#include "util/buf.h"

#include <stdbool.h>

/* Compact JSON re-indented: one key or element per line, two spaces per
 * level, strings untouched. */
static inline char *pretty(const char *s)
{
    fl_buf b = {0};
    int depth = 0;
    bool in_str = false, esc = false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (in_str) {
            fl_buf_put(&b, p, 1);
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        switch (c) {
        case '"':
            in_str = true;
            fl_buf_put(&b, p, 1);
            break;
        case '{':
        case '[':
            fl_buf_put(&b, p, 1);
            if (p[1] == '}' || p[1] == ']') {
                fl_buf_put(&b, p + 1, 1);
                p++;
                break;
            }
            depth++;
            fl_buf_printf(&b, "\n%*s", depth * 2, "");
            break;
        case '}':
        case ']':
            depth--;
            fl_buf_printf(&b, "\n%*s", depth * 2, "");
            fl_buf_put(&b, p, 1);
            break;
        case ',':
            fl_buf_printf(&b, ",\n%*s", depth * 2, "");
            break;
        case ':':
            fl_buf_puts(&b, ": ");
            break;
        default:
            fl_buf_put(&b, p, 1);
        }
    }
    return fl_buf_take(&b);
}

#endif /* GP_TEST_JSON_PRETTY_H */
