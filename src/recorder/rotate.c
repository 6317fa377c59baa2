/*
 * recorder/rotate.c - bounded long runs: when a channel's window is due,
 * which lines max_disk stops, and a retired window
 * published as GPUFlight 1.3 publishes one.
 *
 * Promises: a window's rows are on disk at every moment under one name the
 * reader reads (the retired <channel>.<N>.log, then <channel>.<N>.log.gz;
 * while both exist the reader takes one), so a crash at any step loses no
 * row and duplicates none; the gzip is written to a hidden .part file and
 * renamed only after its sidecar (payload_bytes, payload_crc32 of the .gz)
 * is on disk, as GPUFlight orders them.  A window that cannot be
 * compressed stays published uncompressed, without a sidecar.
 */
#include "rotate.h"
#include "../util/clock.h"
#include "../wire/vocab.h"
#include "say.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK_BYTES ((size_t)64 << 10)

int fl_roll_due(const fl_roll *r, int ch, uint64_t add_bytes, uint64_t now_ms)
{
    if (r->win_bytes[ch] == 0)
        return FL_ROLL_NO;
    if (r->interval_ms > 0 && now_ms >= r->win_first_ms[ch] &&
        now_ms - r->win_first_ms[ch] >= r->interval_ms)
        return FL_ROLL_TIME;
    if (r->size_bytes > 0 && add_bytes > 0 && r->win_bytes[ch] + add_bytes > r->size_bytes)
        return FL_ROLL_SIZE;
    return FL_ROLL_NO;
}

bool fl_roll_is_detail(fl_type t)
{
    switch (t) {
    case FL_T_JOB_START:
    case FL_T_DICTIONARY_UPDATE:
    case FL_T_CAPTURE_CAPABILITIES:
    case FL_T_SHUTDOWN:
    case FL_T_SYSTEM_START:
    case FL_T_SYSTEM_STOP:
    case FL_T_DEVICE_LOST_EVENT:
    case FL_T_DEVICE_ERROR_EVENT:
    case FL_T_SASS_CONFIG:
    case FL_T_PM_SAMPLING_CONFIG:
    case FL_T_CAPTURE_WINDOW:
    case FL_T_DEVICE_METRIC_BATCH:
    case FL_T_HOST_METRIC_BATCH:
        return false;
    default:
        return true;
    }
}

uint64_t fl_roll_disk_bytes(const fl_roll *r)
{
    uint64_t n = r->published_bytes;
    for (int ch = 0; ch < FL_CH_COUNT; ch++)
        n += r->win_bytes[ch];
    return n;
}

/* ------------------------------------------------------------ publishing */

static bool write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* fd's contents gzipped into out; its size and CRC-32 as written. */
static bool gzip_fd(int fd, int out, uint64_t *gz_bytes, uint32_t *crc)
{
    unsigned char *in = malloc(CHUNK_BYTES), *buf = malloc(CHUNK_BYTES);
    z_stream z;
    memset(&z, 0, sizeof z);
    bool ok = in && buf && deflateInit2(&z, 3, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    bool inited = ok;
    uLong c = crc32(0L, Z_NULL, 0);
    off_t off = 0;
    int flush = Z_NO_FLUSH;
    *gz_bytes = 0;
    while (ok && flush != Z_FINISH) {
        ssize_t r = pread(fd, in, CHUNK_BYTES, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ok = false;
            break;
        }
        off += r;
        flush = r == 0 ? Z_FINISH : Z_NO_FLUSH;
        z.next_in = in;
        z.avail_in = (uInt)r;
        int zr;
        do {
            z.next_out = buf;
            z.avail_out = (uInt)CHUNK_BYTES;
            zr = deflate(&z, flush);
            size_t have = CHUNK_BYTES - z.avail_out;
            if (zr == Z_STREAM_ERROR || !write_all(out, buf, have)) {
                ok = false;
                break;
            }
            c = crc32(c, buf, (uInt)have);
            *gz_bytes += have;
        } while (z.avail_out == 0);
    }
    if (inited)
        deflateEnd(&z);
    free(in);
    free(buf);
    *crc = (uint32_t)c;
    return ok;
}

/* The sidecar GPUFlight writes beside a published window; its size, or 0
 * when it cannot be written. */
static uint64_t write_sidecar(session *s, int ch, unsigned n, const char *id, const char *payload,
                              uint64_t gz_bytes, uint32_t crc, uint64_t first_ms,
                              uint64_t closed_ms)
{
    char name[96], text[1024];
    snprintf(name, sizeof name, ".gpufl-window.%s.%u.json", fl_channel_name(ch), n);
    int len = snprintf(text, sizeof text,
                       "{\"schema_version\":1,\"type\":\"%s\",\"window_id\":\"%s\",\"session_id\":"
                       "\"%s\",\"channel\":\"%s\",\"window_sequence\":%u,\"opened_mono_ms\":%llu,"
                       "\"closed_mono_ms\":%llu,\"created_wall_ms\":%llu,\"payload_file\":\"%s\","
                       "\"payload_bytes\":%llu,\"payload_crc32\":%lu}\n",
                       FL_WINDOW_SIDECAR_TYPE, id, s->id, fl_channel_name(ch), n,
                       (unsigned long long)first_ms, (unsigned long long)closed_ms,
                       (unsigned long long)(gp_now_wall_ns() / 1000000u), payload,
                       (unsigned long long)gz_bytes, (unsigned long)crc);
    if (len <= 0 || (size_t)len >= sizeof text)
        return 0;
    unlinkat(s->dir_fd, name, 0); /* a husk of an earlier failed try */
    int fd = openat(s->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return 0;
    bool ok = write_all(fd, (const unsigned char *)text, (size_t)len);
    if (ok && s->cfg.flush_logs_always)
        fsync(fd);
    close(fd);
    if (!ok) {
        unlinkat(s->dir_fd, name, 0);
        return 0;
    }
    return (uint64_t)len;
}

void fl_roll_publish(session *s, int ch, int fd, unsigned n, const char *window_id,
                     uint64_t first_ms, uint64_t closed_ms)
{
    char plain[64], gz[64], part[72];
    const char *c = fl_channel_name(ch);
    snprintf(plain, sizeof plain, "%s.%u.log", c, n);
    snprintf(gz, sizeof gz, "%s.%u.log.gz", c, n);
    snprintf(part, sizeof part, ".%s.%u.log.gz.part", c, n);
    off_t raw = lseek(fd, 0, SEEK_END);
    int out = openat(s->dir_fd, part, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    uint64_t gz_bytes = 0, side = 0;
    uint32_t crc = 0;
    bool ok = out >= 0 && gzip_fd(fd, out, &gz_bytes, &crc);
    if (ok && s->cfg.flush_logs_always)
        fsync(out);
    if (out >= 0)
        close(out);
    if (ok)
        side = write_sidecar(s, ch, n, window_id, gz, gz_bytes, crc, first_ms, closed_ms);
    ok = ok && side > 0 && renameat(s->dir_fd, part, s->dir_fd, gz) == 0;
    if (!ok) {
        int e = errno;
        unlinkat(s->dir_fd, part, 0);
        if (side > 0) {
            char name[96];
            snprintf(name, sizeof name, ".gpufl-window.%s.%u.json", c, n);
            unlinkat(s->dir_fd, name, 0);
        }
        s->roll.not_compressed++;
        s->roll.published_bytes += raw > 0 ? (uint64_t)raw : 0;
        FL_DEBUG(s, "window %s/%s could not be compressed (%s): it stays published uncompressed",
                 s->dir, plain, strerror(e));
        return;
    }
    unlinkat(s->dir_fd, plain, 0);
    s->roll.published_bytes += gz_bytes + side;
}
