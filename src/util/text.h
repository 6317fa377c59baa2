/*
 * util/text.h - UTF-8 checks, JSON string literals and locale-free numbers,
 * shared by every writer of the project (text.c), and the one boolean
 * spelling the options accept.
 */
#ifndef GP_UTIL_TEXT_H
#define GP_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed UTF-8 sequence at s (1..4, 1 for ASCII), 0 if
 * ill-formed (stray continuation, overlong, surrogate, > U+10FFFF, cut). */
size_t gp_utf8_len(const unsigned char *s, size_t n);

typedef void (*gp_emit_fn)(void *ctx, const char *p, size_t n);
/* Writes s (n bytes) as a JSON string literal, quotes included, through
 * emit: escapes quotes, backslashes and control characters; an ill-formed
 * UTF-8 byte becomes \ufffd.  Used by every JSON writer of the project. */
void gp_json_quote(const char *s, size_t n, gp_emit_fn emit, void *ctx);
/* A finite double in fixed point with `decimals` (0..6) digits, '.' whatever
 * the locale, trailing zeros dropped with trim.  JSON numbers use (6, 1). */
void gp_format_fixed(double v, int decimals, int trim, gp_emit_fn emit, void *ctx);

/* a, b and c end to end in a new string (the caller frees it); NULL when
 * out of memory.  Paths ("dir", "/", "name") and NAME=value pairs. */
char *gp_concat3(const char *a, const char *b, const char *c);

/* The index of text among names[0..n), compared without case; -1 when
 * absent or text is NULL. */
int gp_find_name(const char *const *names, size_t n, const char *text);

/* s through emit with every whole occurrence of any of secrets[0..n) (NULL
 * or "" ones skipped) replaced by a mask - "<redacted>", or another that
 * shares no character with a secret, or nothing - so that the output
 * contains no whole secret however the text around one reads.  Whole: not
 * part of a longer word (letters, digits, '_', UTF-8) - a short key "k"
 * leaves "check" alone; back-to-back copies are one occurrence. */
void gp_redact(const char *s, const char *const *secrets, size_t n, gp_emit_fn emit, void *ctx);
/* gp_redact on a NUL-terminated buffer of cap bytes, in place (truncated
 * to fit; emptied when out of memory).  True when it held a secret. */
bool gp_redact_in_place(char *s, size_t cap, const char *const *secrets, size_t n);

/* "1/true/yes/on" -> 1, "0/false/no/off" -> 0 (any case), else -1. */
int fl_parse_bool(const char *text);

/* A count as the command's options and our GPU_PROFILE_MAX_* variables
 * take it: a whole number from 1 in decimal digits only (no sign, space,
 * suffix or other base; at most UINT64_MAX) into *out, 0; else -1 (*out
 * untouched), so a typo is refused rather than read as something else. */
int gp_parse_count(const char *text, uint64_t *out);

/* A size as gpufl_init's rotate_size / max_disk and gpu-profile's
 * --rotate-size / --max-disk take it: "" or "0" (off: *bytes = 0), whole
 * bytes, or a whole number with K, M, G or T (binary; "KB", "KiB", ...
 * too).  0 with *bytes set, or -1 with why (naming the text and the fix). */
int gp_parse_size(const char *text, uint64_t *bytes, char *why, size_t len);

#endif /* GP_UTIL_TEXT_H */
