/*
 * test_units.c - how the text report (and the command's trace summary)
 * write what a person reads (src/report/units.h): one-line strings cut on
 * a character boundary, byte sizes, durations, plurals.
 */
#include "check.h"
#include "report/units.h"

#include <string.h>

static const char *line(const char *s, size_t max)
{
    static char out[256];
    *fl_line_into(out, s, max) = '\0';
    return out;
}

static void test_one_line(void)
{
    CHECK_STR(line("gemm_kernel", 100), "gemm_kernel");
    CHECK_STR(line("a\tb\nc\x7f", 100), "a?b?c?");
    CHECK_STR(line("abcdef", 6), "abcdef");  /* exactly max: not cut */
    CHECK_STR(line("abcdefg", 6), "abc..."); /* cut: max bytes in all */
    CHECK_STR(line("abcdefg", 2), "...");    /* no room for any of it */
    /* "\xc3\xa9" is one character (e-acute): never cut in two. */
    CHECK_STR(line("ab\xc3\xa9\xc3\xa9xyz", 6), "ab...");
    CHECK_STR(line("abc\xc3\xa9xyzw", 7), "abc...");
    CHECK_STR(line("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 7), "\xe2\x82\xac...");
    fl_buf b = {0};
    fl_put_line(&b, "abcdefg", 6);
    fl_put_line(&b, "|x", 100);
    CHECK_STR(b.p, "abc...|x");
    fl_buf_free(&b);
}

static void test_numbers(void)
{
    char s[32];
    fl_bytes_str(s, sizeof s, 0);
    CHECK_STR(s, "0 B");
    fl_bytes_str(s, sizeof s, 1023);
    CHECK_STR(s, "1023 B");
    fl_bytes_str(s, sizeof s, 1536);
    CHECK_STR(s, "1.50 KiB");
    fl_bytes_str(s, sizeof s, 3.0 * 1024 * 1024 * 1024);
    CHECK_STR(s, "3.00 GiB");
    CHECK_STR(fl_plural(1, "launch", "launches"), "launch");
    CHECK_STR(fl_plural(0, "launch", "launches"), "launches");
    fl_buf b = {0};
    fl_dur_text(&b, 1500);
    CHECK_STR(b.p, "1.500 us");
    fl_buf_free(&b);
}

static const char *stack(const char *st)
{
    static char out[1024];
    fl_buf b = {0};
    fl_put_stack(&b, st);
    snprintf(out, sizeof out, "%s", b.p ? b.p : "");
    fl_buf_free(&b);
    return out;
}

/* Innermost first, 4 frames; a Python frame left out is shown past them. */
static void test_stacks(void)
{
    CHECK_STR(stack("main (a.c:1)|f (a.c:2)"), "f (a.c:2) <- main (a.c:1)");
    CHECK_STR(stack("m|a|b|c|d|e"), "e <- d <- c <- b <- ... (2 more)");
    CHECK_STR(stack("<module> (t.py:9)|main (t.py:5)|step (t.py:3)|ffi_call|a|b|c|launch (x.c:1)"),
              "launch (x.c:1) <- c <- b <- a <- ... (1 more) <- step (t.py:3) <- ... (2 more)");
    CHECK_STR(stack("main (t.py:5)|step (t.py:3)|a|b|c|d"),
              "d <- c <- b <- a <- step (t.py:3) <- ... (1 more)");
    CHECK_STR(stack("step (pkg/t.py:3)|x|a|b|c|d"),
              "d <- c <- b <- a <- ... (1 more) <- step (pkg/t.py:3)");
    /* Not Python: a C file, no line, a .pyx (Cython: C frames). */
    CHECK_STR(stack("f (t.pyx:3)|g (t.py)|h (a.py:)|a|b|c|d"), "d <- c <- b <- a <- ... (3 more)");
    CHECK_STR(stack("step (t.py:3)|a|b|c"), "c <- b <- a <- step (t.py:3)");
}

int main(void)
{
    test_stacks();
    test_one_line();
    test_numbers();
    return check_done("test_units");
}
