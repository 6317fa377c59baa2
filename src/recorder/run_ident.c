/*
 * recorder/run_ident.c - a session's place in its run, as job_start
 * records it: run_id (GPUFL_RUN_ID, else a fresh UUID v4 - the form
 * GPUFlight 1.3's launcher gives job_start.run_id), the rank, local rank
 * and world size from the first launcher family that names a rank, and
 * CLOCK_MONOTONIC beside the wall clock.
 *
 * Promises: never fails and never stops a session; a variable that is set
 * but unusable is left out (null) with a warning naming it and the fix.
 * A launcher family is taken whole or not at all, so that a rank never
 * pairs with another launcher's world size.
 */
#include "run_ident.h"
#include "launcher.h"
#include "../util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Innermost launcher first: torchrun started by srun or mpirun sees the
 * outer launcher's variables too, and its RANK is the worker's own. */
typedef struct rank_family {
    const char *rank, *size, *local; /* NULL: the family has none */
} rank_family;

static const rank_family families[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

int fl_run_id_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > FL_RUN_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return 0;
    }
    return 1;
}

void fl_run_id_new(char *buf)
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n > 0) {
            got += (size_t)n;
        } else if (n < 0 && errno != EINTR) {
            break;
        }
    }
    if (got < sizeof b) { /* no entropy source: still distinct per process and instant */
        uint64_t x = gp_now_wall_ns() ^ ((uint64_t)getpid() << 32) ^ gp_now_mono_ns();
        for (size_t i = 0; i < sizeof b; i++) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            b[i] = (unsigned char)((x * 0x2545F4914F6CDD1Dull) >> 56);
        }
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    for (size_t i = 0; i < sizeof b; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            buf[k++] = '-';
        buf[k++] = hex[b[i] >> 4];
        buf[k++] = hex[b[i] & 15];
    }
    buf[k] = '\0';
}

/* A whole number 0..2^31-1 of digits only; -1 otherwise. */
static int64_t count_of(const char *s)
{
    if (!s || !*s || strlen(s) > 10)
        return -1;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v <= 2147483647 ? v : -1;
}

static void add_warning(char *warn, size_t cap, const char *name, const char *value,
                        const char *fix)
{
    size_t used = strlen(warn);
    if (used + 1 < cap)
        snprintf(warn + used, cap - used, "%s%s=\"%.64s\" %s", used ? "; " : "", name, value, fix);
}

/* The first family whose rank variable is set, taken whole; a value that
 * is no whole number makes the family unusable (said in warn). */
static void read_rank(fl_run_ident *ri, char *warn, size_t cap)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        const rank_family *f = &families[i];
        const char *rank = getenv(f->rank);
        if (!rank)
            continue;
        const char *size = getenv(f->size), *local = getenv(f->local);
        int64_t r = count_of(rank), n = size ? count_of(size) : -1,
                l = local ? count_of(local) : -1;
        if (r < 0 || (size && (n < 1 || r >= n)) || (local && l < 0)) {
            const char *bad = r < 0 ? f->rank : size && (n < 1 || r >= n) ? f->size : f->local;
            const char *val = r < 0 ? rank : size && (n < 1 || r >= n) ? size : local;
            add_warning(warn, cap, bad, val,
                        "is not a whole number (a rank below the world size): the session's "
                        "rank is recorded as null; unset it or give the launcher's value");
            return;
        }
        ri->rank = r;
        ri->have_rank = true;
        ri->world_size = n;
        ri->have_world_size = n >= 1;
        ri->local_rank = l;
        ri->have_local_rank = l >= 0;
        ri->rank_source = f->rank;
        return;
    }
}

void fl_run_ident_read(fl_run_ident *ri, char *buf, char *warn, size_t cap)
{
    memset(ri, 0, sizeof *ri);
    if (cap)
        warn[0] = '\0';
    const char *env = getenv("GPUFL_RUN_ID");
    if (env && fl_run_id_ok(env)) {
        snprintf(buf, FL_RUN_ID_MAX + 1, "%s", env);
    } else {
        if (env)
            add_warning(warn, cap, "GPUFL_RUN_ID", env,
                        "is not a run id (1 to 64 of A-Z a-z 0-9 . _ : -): this session has "
                        "a run id of its own");
        fl_run_id_new(buf);
    }
    ri->run_id = buf;
    read_rank(ri, warn, cap);
}
