/*
 * test_gpufl_host.c - host metrics from /proc (src/recorder/host.c).
 *
 * Fake proc roots under tests/fixtures/proc/ hold two snapshots (t0, t1)
 * of stat and meminfo, and a damaged one (partial: a cut "cpu" line,
 * meminfo without MemAvailable).  One fl_host reads them in turn by
 * pointing proc_root at the next snapshot, as two readings of the real
 * /proc would follow each other:
 *
 *   t0   busy 1500 / total 10000                      RAM 2048 / 16384 MiB
 *   t1   busy 2250 / total 12000 (guest 400 left out)  RAM 2712 / 16384 MiB
 *        -> cpu 750 / 2000 = 37.5 %
 *
 * The real /proc, hostname and address are checked for sanity only.
 */
#include "check.h"
#include "recorder/host.h"
#include "wire/records.h"

#include <arpa/inet.h>
#include <time.h>

static char root_t0[1024], root_t1[1024], root_partial[1024], root_missing[1024];

static void roots(void)
{
    const char *src = check_env("GP_TEST_SOURCE_DIR");
    snprintf(root_t0, sizeof root_t0, "%s/fixtures/proc/t0", src);
    snprintf(root_t1, sizeof root_t1, "%s/fixtures/proc/t1", src);
    snprintf(root_partial, sizeof root_partial, "%s/fixtures/proc/partial", src);
    snprintf(root_missing, sizeof root_missing, "%s/fixtures/proc/no-such-dir", src);
}

static void check_two_snapshots(void)
{
    fl_host h;
    fl_host_sample s;
    fl_host_init(&h, root_t0);
    CHECK(!h.have_prev);

    /* The first reading has no difference to take yet. */
    memset(&s, 0xA5, sizeof s);
    fl_host_read(&h, &s);
    CHECK_INT(s.valid, FL_HOST_RAM);
    CHECK_U64(s.ram_total_mib, 16384);
    CHECK_U64(s.ram_used_mib, 2048);
    CHECK(h.have_prev);
    CHECK_U64(h.prev_busy, 1500);
    CHECK_U64(h.prev_total, 10000);

    h.proc_root = root_t1;
    fl_host_read(&h, &s);
    CHECK_INT(s.valid, FL_HOST_CPU | FL_HOST_RAM);
    CHECK(s.cpu_pct == 37.5);
    CHECK_U64(s.ram_total_mib, 16384);
    /* (16777216 - 14000000) kB = 2712.125 MiB, rounded down. */
    CHECK_U64(s.ram_used_mib, 2712);
    CHECK_U64(h.prev_busy, 2250);
    CHECK_U64(h.prev_total, 12000);

    /* The same snapshot again: total did not advance, no cpu figure. */
    fl_host_read(&h, &s);
    CHECK_INT(s.valid, FL_HOST_RAM);
}

static void check_failed_reading_keeps_previous(void)
{
    fl_host h;
    fl_host_sample s;
    fl_host_init(&h, root_t0);
    fl_host_read(&h, &s);

    /* Damaged files: nothing valid, and the t0 reading is kept... */
    h.proc_root = root_partial;
    fl_host_read(&h, &s);
    CHECK_INT(s.valid, 0);
    CHECK_U64(h.prev_total, 10000);

    /* ...so t1 still differs from t0. */
    h.proc_root = root_t1;
    fl_host_read(&h, &s);
    CHECK_INT(s.valid, FL_HOST_CPU | FL_HOST_RAM);
    CHECK(s.cpu_pct == 37.5);
}

static void check_missing(void)
{
    fl_host h;
    fl_host_sample s;
    fl_host_init(&h, root_missing);
    for (int i = 0; i < 2; i++) {
        memset(&s, 0xA5, sizeof s);
        fl_host_read(&h, &s);
        CHECK_INT(s.valid, 0);
        CHECK(!h.have_prev);
    }

    /* Backwards counters (a different machine's file, a reset) give no
     * figure rather than a negative or huge one. */
    fl_host_init(&h, root_t1);
    fl_host_read(&h, &s);
    h.proc_root = root_t0;
    fl_host_read(&h, &s);
    CHECK_INT(s.valid, FL_HOST_RAM);
    CHECK_U64(h.prev_total, 10000);
}

static void check_real_proc(void)
{
    fl_host h;
    fl_host_sample s;
    fl_host_init(&h, NULL);
    CHECK_STR(h.proc_root, "/proc");
    fl_host_read(&h, &s);
    CHECK((s.valid & FL_HOST_CPU) == 0);
    CHECK(s.valid & FL_HOST_RAM);
    CHECK(s.ram_total_mib > 0);
    CHECK(s.ram_used_mib <= s.ram_total_mib);

    /* Burn a little CPU so the counters move; the figure, if any, is a
     * percentage. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile unsigned long spin = 0;
    do {
        for (int i = 0; i < 100000; i++)
            spin += (unsigned long)i;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 50000000L);
    fl_host_read(&h, &s);
    if (s.valid & FL_HOST_CPU)
        CHECK(s.cpu_pct >= 0.0 && s.cpu_pct <= 100.0);
    else
        CHECK(1);
}

static void check_name_and_ip(void)
{
    char name[256];
    memset(name, 'x', sizeof name);
    fl_host_name(name, sizeof name);
    CHECK(memchr(name, '\0', sizeof name) != NULL);

    /* A tiny buffer is still terminated. */
    char tiny[2] = {'x', 'x'};
    fl_host_name(tiny, sizeof tiny);
    CHECK(memchr(tiny, '\0', sizeof tiny) != NULL);
    fl_host_name(NULL, 0);

    char ip[64];
    memset(ip, 'x', sizeof ip);
    fl_host_ip(ip, sizeof ip);
    struct in_addr a;
    CHECK(inet_pton(AF_INET, ip, &a) == 1);

    char small[4];
    fl_host_ip(small, sizeof small);
    CHECK(strlen(small) == 3);
    fl_host_ip(NULL, 0);
}

int main(void)
{
    roots();
    check_two_snapshots();
    check_failed_reading_keeps_previous();
    check_missing();
    check_real_proc();
    check_name_and_ip();
    return check_done("test_gpufl_host");
}
