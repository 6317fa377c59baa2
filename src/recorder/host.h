/*
 * recorder/host.h - host metrics read from /proc, the host's name and
 * address (host.c).
 */
#ifndef GP_RECORDER_HOST_H
#define GP_RECORDER_HOST_H

#include "../wire/records.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_host {
    const char *proc_root; /* "/proc" unless a test points elsewhere */
    bool have_prev;
    uint64_t prev_busy, prev_total;
} fl_host;

void fl_host_init(fl_host *h, const char *proc_root);
/* Reads /proc/stat and /proc/meminfo.  cpu_pct is valid from the second
 * reading on (it is a difference); RAM is MemTotal - MemAvailable. */
void fl_host_read(fl_host *h, fl_host_sample *out);
/* gethostname(); "" on failure. */
void fl_host_name(char *buf, size_t cap);
/* The first non-loopback IPv4 address of an interface that is up, else
 * "127.0.0.1". */
void fl_host_ip(char *buf, size_t cap);

#endif /* GP_RECORDER_HOST_H */
