/*
 * report/units.c - the text report's units and one-line strings
 * (units.h), locale-independent in what they choose (the unit, the cut)
 * so that the report's text is the same on every machine.
 */
#include "units.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

char *fl_line_into(char *d, const char *s, size_t max)
{
    size_t n = strlen(s);
    bool cut = n > max;
    if (cut) {
        n = max > 3 ? max - 3 : 0;
        /* Never inside a UTF-8 sequence: back to its first byte. */
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        *d++ = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (cut)
        d = fl_put_lit(d, "...", 3);
    return d;
}

void fl_put_line(fl_buf *b, const char *s, size_t max)
{
    char *d = fl_buf_reserve(b, (max > 3 ? max : 3) + 1);
    if (d)
        fl_buf_commit(b, fl_line_into(d, s, max));
}

/* Whether a frame is a Python one, "func (path.py:12)" (plugin/pystack.h). */
static bool python_frame(const char *f, size_t len)
{
    if (len < 6 || f[len - 1] != ')')
        return false;
    size_t j = len - 2;
    while (j > 0 && f[j] >= '0' && f[j] <= '9')
        j--;
    return f[j] == ':' && j < len - 2 && j >= 3 && memcmp(f + j - 3, ".py", 3) == 0;
}

static size_t frame_len(const char *f)
{
    const char *end = strchr(f, '|');
    return end ? (size_t)(end - f) : strlen(f);
}

static void put_frame(fl_buf *b, const char *f)
{
    char one[256];
    snprintf(one, sizeof one, "%.*s", (int)frame_len(f), f);
    fl_put_line(b, one, 120);
}

void fl_put_stack(fl_buf *b, const char *st)
{
    const char *frames[64];
    size_t n = 0;
    for (const char *p = st; n < 64;) {
        frames[n++] = p;
        p = strchr(p, '|');
        if (!p)
            break;
        p++;
    }
    size_t shown = n < 4 ? n : 4;
    for (size_t i = 0; i < shown; i++) {
        if (i)
            fl_buf_puts(b, " <- ");
        put_frame(b, frames[n - 1 - i]);
    }
    /* A Python program's innermost frames are often C (the extension's,
     * ctypes'): its innermost Python frame is shown past them. */
    size_t py = shown;
    while (py < n && !python_frame(frames[n - 1 - py], frame_len(frames[n - 1 - py])))
        py++;
    if (py == n) {
        if (n > shown)
            fl_buf_printf(b, " <- ... (%zu more)", n - shown);
        return;
    }
    if (py > shown)
        fl_buf_printf(b, " <- ... (%zu more)", py - shown);
    fl_buf_puts(b, " <- ");
    put_frame(b, frames[n - 1 - py]);
    if (n - 1 - py > 0)
        fl_buf_printf(b, " <- ... (%zu more)", n - 1 - py);
}

void fl_dur_text(fl_buf *b, uint64_t ns)
{
    if (ns >= 1000000000ull)
        fl_buf_printf(b, "%.3f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        fl_buf_printf(b, "%.3f ms", (double)ns / 1e6);
    else
        fl_buf_printf(b, "%.3f us", (double)ns / 1e3);
}

void fl_bytes_str(char *buf, size_t len, double bytes)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024.0) {
        snprintf(buf, len, "%.0f B", bytes);
        return;
    }
    double v = bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.2f %s", v, units[u]);
}

void fl_bytes_text(fl_buf *b, double bytes)
{
    char buf[32];
    fl_bytes_str(buf, sizeof buf, bytes);
    fl_buf_puts(b, buf);
}

void fl_time_text(fl_buf *b, uint64_t ns)
{
    time_t s = (time_t)(ns / 1000000000ull);
    struct tm tm;
    if (!gmtime_r(&s, &tm)) {
        fl_buf_printf(b, "%" PRIu64 " ns", ns);
        return;
    }
    char buf[64];
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    fl_buf_printf(b, "%s.%06u UTC", buf, (unsigned)(ns % 1000000000ull / 1000));
}

const char *fl_plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}
