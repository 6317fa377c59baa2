/*
 * recorder/host.c - host metrics for the flight recorder, read from /proc.
 *
 * Promises:
 *  - fl_host_read() allocates nothing (it runs on the sampler thread every
 *    round): files are read with open/read into stack buffers and parsed in
 *    place;
 *  - cpu_pct is the whole machine's busy share between this reading and the
 *    previous one of the same fl_host, from the aggregate "cpu" line of
 *    <proc_root>/stat: busy = total - idle - iowait, where total is
 *    user + nice + system + idle + iowait + irq + softirq + steal.  It is
 *    valid from the second successful reading on, and only when total
 *    advanced in between;
 *  - RAM is MemTotal - MemAvailable of <proc_root>/meminfo in MiB (rounded
 *    down), invalid when either line is missing;
 *  - a missing or unreadable file clears the bit, never fails loudly.
 */
#include "host.h"
#include "../wire/records.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The aggregate cpu line is the first line of /proc/stat and the two
 * meminfo lines are near the top, so a page holds everything needed even
 * on machines whose per-CPU lines make the whole file much longer. */
#define READ_MAX 4096

/* Reads up to cap - 1 bytes of root/name into buf, NUL-terminated.
 * Returns the length, or -1 when the file cannot be opened or read. */
static ssize_t read_proc(const char *root, const char *name, char *buf, size_t cap)
{
    char path[512];
    int pn = snprintf(path, sizeof path, "%s/%s", root, name);
    if (pn < 0 || (size_t)pn >= sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len < cap - 1) {
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

/* Parses the decimal number at *p (after blanks); advances *p past it.
 * Returns false when there is no number there. */
static bool next_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (uint64_t)(*s++ - '0');
    *p = s;
    *out = v;
    return true;
}

/* The aggregate "cpu" line.  guest and guest_nice (fields 9, 10) are left
 * out of the total: the kernel already counts them in user and nice. */
static bool parse_stat(const char *text, uint64_t *busy, uint64_t *total)
{
    if (strncmp(text, "cpu ", 4) != 0)
        return false;
    const char *p = text + 4;
    uint64_t f[8] = {0};
    int n = 0;
    while (n < 8 && next_u64(&p, &f[n]))
        n++;
    /* user nice system idle are there since Linux 2.4; the rest may not be. */
    if (n < 4)
        return false;
    uint64_t t = 0;
    for (int i = 0; i < n; i++)
        t += f[i];
    uint64_t idle = f[3] + f[4];
    *total = t;
    *busy = t >= idle ? t - idle : 0;
    return true;
}

/* The kB value of the meminfo line starting with key ("MemTotal:"). */
static bool meminfo_kb(const char *text, const char *key, uint64_t *kb)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, key, klen) == 0) {
            const char *p = line + klen;
            return next_u64(&p, kb);
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return false;
}

void fl_host_init(fl_host *h, const char *proc_root)
{
    h->proc_root = proc_root ? proc_root : "/proc";
    h->have_prev = false;
    h->prev_busy = h->prev_total = 0;
}

void fl_host_read(fl_host *h, fl_host_sample *out)
{
    char buf[READ_MAX];
    out->valid = 0;
    out->cpu_pct = 0;
    out->ram_used_mib = out->ram_total_mib = 0;
    const char *root = h->proc_root ? h->proc_root : "/proc";

    uint64_t busy, total;
    if (read_proc(root, "stat", buf, sizeof buf) >= 0 && parse_stat(buf, &busy, &total)) {
        if (h->have_prev && total > h->prev_total) {
            uint64_t dt = total - h->prev_total;
            /* busy may step back when iowait does (it is not monotonic on
             * every kernel): that interval counts as idle. */
            uint64_t db = busy > h->prev_busy ? busy - h->prev_busy : 0;
            double pct = 100.0 * (double)db / (double)dt;
            out->cpu_pct = pct > 100.0 ? 100.0 : pct;
            out->valid |= FL_HOST_CPU;
        }
        h->prev_busy = busy;
        h->prev_total = total;
        h->have_prev = true;
    }
    /* A failed reading keeps the previous one, so the next success spans
     * the longer interval instead of starting over. */

    uint64_t total_kb, avail_kb;
    if (read_proc(root, "meminfo", buf, sizeof buf) >= 0 &&
        meminfo_kb(buf, "MemTotal:", &total_kb) && meminfo_kb(buf, "MemAvailable:", &avail_kb)) {
        out->ram_total_mib = total_kb / 1024;
        out->ram_used_mib = total_kb > avail_kb ? (total_kb - avail_kb) / 1024 : 0;
        out->valid |= FL_HOST_RAM;
    }
}

void fl_host_name(char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return;
    if (gethostname(buf, cap) != 0) {
        buf[0] = '\0';
        return;
    }
    /* POSIX leaves a truncated name unterminated. */
    buf[cap - 1] = '\0';
}

void fl_host_ip(char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return;
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) == 0) {
        for (const struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
            if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET)
                continue;
            if (!(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK))
                continue;
            char text[INET_ADDRSTRLEN];
            const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)ifa->ifa_addr;
            if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text)) {
                snprintf(buf, cap, "%s", text);
                freeifaddrs(list);
                return;
            }
        }
        freeifaddrs(list);
    }
    snprintf(buf, cap, "%s", "127.0.0.1");
}
