/*
 * visible.c - which devices a list names: `--device` and
 * CUDA_VISIBLE_DEVICES.
 *
 * An entry is a decimal index (the backend's order, which is NVML's PCI
 * bus order), a GPU UUID written in full or as a prefix that only one
 * device has ("GPU-1f2e"), or a MIG instance's UUID ("MIG-...", full or a
 * prefix) where the backend lists MIG instances as devices; a MIG UUID
 * that names none of them is left out with a note in CUDA_VISIBLE_DEVICES
 * and an error for --device.  Blanks around an entry are ignored.  Under CUDA's rule the first
 * entry that names no device (unknown, out of range, ambiguous, repeated,
 * malformed) ends the list, as the CUDA runtime does; under the strict rule
 * of --device it is an error naming the entry.  Pure functions: no I/O.
 */
#include "cli.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define ENTRY_MAX 128

/* The next comma-separated entry of *p, trimmed; advances *p.  Returns 0
 * at the end of the text. */
static int next_entry(const char **p, char *out, size_t cap, int *too_long)
{
    const char *s = *p;
    if (!s)
        return 0;
    const char *comma = strchr(s, ',');
    const char *end = comma ? comma : s + strlen(s);
    *p = comma ? comma + 1 : NULL;
    while (s < end && isspace((unsigned char)*s))
        s++;
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    size_t n = (size_t)(end - s);
    *too_long = n >= cap;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 1;
}

/* A decimal index: digits only, at most 4 of them. */
static int parse_index(const char *e, unsigned *out)
{
    size_t n = strlen(e);
    if (n == 0 || n > 4)
        return 0;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)e[i]))
            return 0;
        v = v * 10 + (unsigned)(e[i] - '0');
    }
    *out = v;
    return 1;
}

static int has_prefix_ci(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static void append(char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void append(char *msg, size_t len, const char *fmt, ...)
{
    size_t used = strlen(msg);
    if (used + 1 >= len)
        return;
    if (used) {
        snprintf(msg + used, len - used, "; ");
        used = strlen(msg);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + used, len - used, fmt, ap);
    va_end(ap);
}

int cli_list_indices_only(const char *spec, unsigned *out, size_t cap, size_t *n, char *msg,
                          size_t msg_len)
{
    *n = 0;
    msg[0] = '\0';
    int only_indices = 1;
    size_t entries = 0;
    const char *p = spec;
    char e[ENTRY_MAX];
    int too_long;
    while (next_entry(&p, e, sizeof e, &too_long)) {
        unsigned idx;
        entries++;
        if (entries > cap) {
            snprintf(msg, msg_len, "'%s' names more than %zu devices", spec, cap);
            return -1;
        }
        if (e[0] == '\0') {
            snprintf(msg, msg_len, "'%s' has an empty entry: write indices or UUIDs like 0,2",
                     spec);
            return -1;
        }
        if (parse_index(e, &idx)) {
            for (size_t k = 0; k < *n; k++)
                if (out[k] == idx) {
                    snprintf(msg, msg_len, "'%s' names device %u twice: list each device once",
                             spec, idx);
                    return -1;
                }
            out[(*n)++] = idx;
        } else if ((has_prefix_ci(e, "GPU-") || has_prefix_ci(e, "MIG-")) && !too_long && e[4]) {
            only_indices = 0;
        } else {
            snprintf(msg, msg_len,
                     "'%s' is not a device: use an index (0), a comma list (0,2), a GPU UUID "
                     "(GPU-...) or all",
                     e);
            return -1;
        }
    }
    if (entries == 0) {
        snprintf(msg, msg_len, "the list is empty: give an index, a comma list or all");
        return -1;
    }
    if (!only_indices)
        *n = 0;
    return only_indices;
}

/* Finds the one device whose UUID starts with `prefix`; -1 none, -2 more. */
static int match_uuid(const char *prefix, const gp_device_info *devs, size_t n_devs)
{
    int found = -1;
    for (size_t i = 0; i < n_devs; i++) {
        if (has_prefix_ci(devs[i].uuid, prefix)) {
            if (found >= 0)
                return -2;
            found = (int)i;
        }
    }
    return found;
}

int cli_list_resolve(const char *spec, enum cli_list_rule rule, const gp_device_info *devs,
                     size_t n_devs, unsigned *out, size_t cap, size_t *n_out, char *msg,
                     size_t msg_len)
{
    *n_out = 0;
    msg[0] = '\0';
    int cuda = rule == CLI_LIST_CUDA;
    const char *who = cuda ? "CUDA_VISIBLE_DEVICES" : "--device";
    if (cuda && spec[strspn(spec, " \t")] == '\0') {
        append(msg, msg_len, "CUDA_VISIBLE_DEVICES is empty: no GPU is visible to the command");
        return 0;
    }
    const char *p = spec;
    char e[ENTRY_MAX];
    int too_long;
    while (next_entry(&p, e, sizeof e, &too_long)) {
        char why[256] = "";
        unsigned idx = 0;
        int ok = 0;
        if (e[0] == '\0') {
            snprintf(why, sizeof why, "an empty entry");
        } else if (parse_index(e, &idx)) {
            if (idx < n_devs)
                ok = 1;
            else if (n_devs == 0)
                snprintf(why, sizeof why, "'%s': the backend sees no device", e);
            else
                snprintf(why, sizeof why, "'%s': no such device (the backend sees %zu: 0-%zu)", e,
                         n_devs, n_devs - 1);
        } else if (has_prefix_ci(e, "GPU-") && e[4] && !too_long) {
            int k = match_uuid(e, devs, n_devs);
            if (k >= 0) {
                idx = devs[k].index;
                ok = 1;
            } else {
                snprintf(why, sizeof why,
                         k == -2 ? "'%s': more than one GPU has this UUID prefix"
                                 : "'%s': no GPU has this UUID",
                         e);
            }
        } else if (has_prefix_ci(e, "MIG-") && e[4] && !too_long) {
            /* A MIG instance the backend lists as a device of its own. */
            int k = match_uuid(e, devs, n_devs);
            if (k >= 0) {
                idx = devs[k].index;
                ok = 1;
            } else if (k == -2) {
                snprintf(why, sizeof why, "'%s': more than one MIG instance has this UUID prefix",
                         e);
            } else if (cuda) {
                append(msg, msg_len,
                       "CUDA_VISIBLE_DEVICES: %s is a MIG instance, not sampled: the backend "
                       "lists no MIG instance with this UUID (see gpu-profile devices)",
                       e);
                continue;
            } else {
                snprintf(why, sizeof why,
                         "'%s': no MIG instance has this UUID (gpu-profile devices lists the "
                         "ones the backend sees; or name the parent GPU's index or UUID)",
                         e);
            }
        } else {
            snprintf(why, sizeof why, "'%s' is not a device index or GPU UUID", e);
        }
        if (ok) {
            for (size_t k = 0; k < *n_out; k++)
                if (out[k] == idx) {
                    ok = 0;
                    snprintf(why, sizeof why, "'%s' names device %u a second time", e, idx);
                }
        }
        if (ok && *n_out >= cap) {
            ok = 0;
            snprintf(why, sizeof why, "more than %zu devices", cap);
        }
        if (!ok) {
            if (!cuda) {
                snprintf(msg, msg_len, "%s", why);
                return -1;
            }
            append(msg, msg_len, "%s: %s: it and the entries after it are ignored, as CUDA does",
                   who, why);
            break;
        }
        out[(*n_out)++] = idx;
    }
    if (cuda && *n_out == 0 && msg[0] == '\0')
        append(msg, msg_len, "CUDA_VISIBLE_DEVICES names no GPU");
    return 0;
}
