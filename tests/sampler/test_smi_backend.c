/*
 * test_smi_backend.c - gp_backend_smi driven directly, against the fake
 * nvidia-smi replaying the real captures: exact values per capture, MIG,
 * several GPUs per round, one streaming process for a whole run, and every
 * way nvidia-smi can fail (missing, no driver, hung at discovery or while
 * streaming, exiting mid-run, printing garbage) ending promptly with a
 * message and no zombie left behind.  Time bounds are generous: they only
 * tell "returned" from "hung".
 */
#include "check.h"
#include "sampler/backends/backend.h"
#include "sampler/backends/smi_parse.h"
#include "util/clock.h"
#include "util/error.h"
#include "gpu_profile.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define H100 "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
#define MIG "linux-x86_64__nvidia-h100-mig__590.48.01.txt"
#define RTX "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt"
#define MIB (1024ull * 1024ull)
#define SEC 1000000000ull
#define MS 1000000ull
#define ALL_SMI_METRICS                                                                            \
    (GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER | GP_M_TEMP |     \
     GP_M_CLOCK_SM | GP_M_CLOCK_MEM | GP_M_THROTTLE)

static const gp_backend *const B = &gp_backend_smi;
static const char *fake_smi;
static const char *source_dir;

/* Sets the fake's scenario: captures is a comma-separated list of capture
 * file names (NULL: none), the rest NULL for the defaults. */
static void scenario(const char *captures, const char *state, const char *fail)
{
    unsetenv("FAKE_SMI_CAPTURES");
    unsetenv("FAKE_SMI_STATE");
    unsetenv("FAKE_SMI_FAIL");
    unsetenv("FAKE_SMI_DROP");
    unsetenv("FAKE_SMI_LOG");
    if (captures) {
        char paths[4096] = "";
        char names[1024];
        snprintf(names, sizeof names, "%s", captures);
        char *save = NULL;
        for (char *p = strtok_r(names, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            size_t used = strlen(paths);
            snprintf(paths + used, sizeof paths - used, "%s%s/fixtures/nvidia-smi/%s",
                     used ? "," : "", source_dir, p);
        }
        setenv("FAKE_SMI_CAPTURES", paths, 1);
    }
    if (state)
        setenv("FAKE_SMI_STATE", state, 1);
    if (fail)
        setenv("FAKE_SMI_FAIL", fail, 1);
}

static gp_status open_smi(void **ctx, double timeout_s, gp_error *err)
{
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.smi_path = fake_smi;
    cfg.timeout_ns = (uint64_t)(timeout_s * 1e9);
    gp_error_clear(err);
    return B->open(&cfg, ctx, err);
}

static uint64_t now_ns(void)
{
    return gp_now_mono_ns();
}

/* True when this process has no child left, reaped or not (no zombie). */
static bool no_children(void)
{
    int st;
    pid_t r = waitpid(-1, &st, WNOHANG);
    return r == -1 && errno == ECHILD;
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static gp_status tick(void *ctx, size_t n, gp_device_sample *out, gp_status *st, gp_error *serr,
                      uint64_t wait_ns, gp_error *err)
{
    for (size_t i = 0; i < n; i++) {
        st[i] = GP_ERR_TIMEOUT;
        gp_error_clear(&serr[i]);
    }
    gp_error_clear(err);
    return B->wait_tick(ctx, out, st, serr, now_ns() + wait_ns, err);
}

static void check_h100_load(const gp_device_sample *s)
{
    CHECK_U64(s->valid, ALL_SMI_METRICS);
    CHECK_INT(s->util_gpu_pct, 100);
    CHECK_INT(s->util_mem_pct, 11);
    CHECK_U64(s->mem_used_bytes, 19818ull * MIB);
    CHECK_U64(s->mem_total_bytes, 81559ull * MIB);
    CHECK_INT(s->power_mw, 631950);
    CHECK_INT(s->temp_c, 59);
    CHECK_INT(s->clock_sm_mhz, 1980);
    CHECK_INT(s->clock_mem_mhz, 2619);
    CHECK_U64(s->throttle_reasons, 0);
}

static void check_h100_idle(const gp_device_sample *s)
{
    CHECK_U64(s->valid, ALL_SMI_METRICS);
    CHECK_INT(s->util_gpu_pct, 0);
    CHECK_INT(s->util_mem_pct, 0);
    CHECK_U64(s->mem_used_bytes, 0);
    CHECK_U64(s->mem_total_bytes, 81559ull * MIB);
    CHECK_INT(s->power_mw, 69850);
    CHECK_INT(s->temp_c, 41);
    CHECK_INT(s->clock_sm_mhz, 345);
    CHECK_INT(s->clock_mem_mhz, 2619);
    CHECK_U64(s->throttle_reasons, GP_THROTTLE_GPU_IDLE);
}

static void check_mig_load(const gp_device_sample *s)
{
    /* The parent GPU of MIG instances has no utilization: invalid, not 0. */
    CHECK_U64(s->valid, ALL_SMI_METRICS & ~(GP_M_UTIL_GPU | GP_M_UTIL_MEM));
    CHECK_U64(s->mem_used_bytes, 11125ull * MIB);
    CHECK_U64(s->mem_total_bytes, 81559ull * MIB);
    CHECK_INT(s->power_mw, 433780);
    CHECK_INT(s->temp_c, 53);
    CHECK_INT(s->clock_sm_mhz, 1980);
    CHECK_INT(s->clock_mem_mhz, 2619);
    CHECK_U64(s->throttle_reasons, 0);
}

static void check_rtx_load(const gp_device_sample *s)
{
    CHECK_U64(s->valid, ALL_SMI_METRICS);
    CHECK_INT(s->util_gpu_pct, 7);
    CHECK_INT(s->util_mem_pct, 2);
    CHECK_U64(s->mem_used_bytes, 1474ull * MIB);
    CHECK_U64(s->mem_total_bytes, 16376ull * MIB);
    CHECK_INT(s->power_mw, 84240);
    CHECK_INT(s->temp_c, 46);
    CHECK_INT(s->clock_sm_mhz, 2805);
    CHECK_INT(s->clock_mem_mhz, 11251);
    CHECK_U64(s->throttle_reasons, 0);
}

/* Opens one capture, samples one round of device 0 and checks it. */
static void one_round(const char *capture, const char *state, const char *driver,
                      void (*check)(const gp_device_sample *))
{
    scenario(capture, state, NULL);
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx) {
        fprintf(stderr, "  open: %s\n", err.message);
        return;
    }
    unsigned n = 0;
    CHECK_INT(B->device_count(ctx, &n, &err), GP_OK);
    CHECK_INT(n, strcmp(capture, MIG) == 0 ? 5 : 1); /* the GPU, then its 4 MIG instances */
    char drv[64];
    CHECK_INT(B->driver_version(ctx, drv, sizeof drv, &err), GP_OK);
    CHECK_STR(drv, driver);
    unsigned idx = 0;
    CHECK_INT(B->start(ctx, &idx, 1, 20 * MS, &err), GP_OK);
    gp_device_sample s;
    gp_status st;
    gp_error serr;
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
    CHECK_INT(st, GP_OK);
    check(&s);
    /* nvidia-smi has no energy counter; PCIe is not asked for. */
    CHECK_U64(s.valid & (GP_M_ENERGY | GP_M_PCIE_TX | GP_M_PCIE_RX), 0);
    B->stop(ctx);
    B->close(ctx);
    CHECK(no_children());
}

static void test_captures(void)
{
    scenario(H100, NULL, NULL);
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (ctx) {
        gp_device_info info;
        CHECK_INT(B->device_info(ctx, 0, &info, &err), GP_OK);
        CHECK_INT(info.index, 0);
        CHECK_STR(info.name, "NVIDIA H100 80GB HBM3");
        CHECK_STR(info.uuid, "GPU-00000000-0000-0000-0000-000000000000");
        CHECK_U64(info.valid, GP_M_MEM_TOTAL);
        CHECK_U64(info.mem_total_bytes, 81559ull * MIB);
        CHECK_INT(B->device_info(ctx, 1, &info, &err), GP_ERR_DEVICE_NOT_FOUND);
        CHECK_STR(err.message, "smi: device 1 does not exist: 1 device (0)");
        B->close(ctx);
    }
    one_round(H100, "load", "590.48.01", check_h100_load);
    one_round(H100, "idle", "590.48.01", check_h100_idle);
    one_round(MIG, NULL, "590.48.01", check_mig_load);
    one_round(RTX, NULL, "595.71.05", check_rtx_load);
}

static void test_multi_gpu(void)
{
    scenario(H100 "," MIG "," RTX, NULL, NULL);
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    unsigned n = 0;
    CHECK_INT(B->device_count(ctx, &n, &err), GP_OK);
    CHECK_INT(n, 7); /* 3 GPUs, then GPU 1's 4 MIG instances */
    gp_device_info info;
    CHECK_INT(B->device_info(ctx, 3, &info, &err), GP_OK);
    CHECK_INT(info.mig.is_mig, 1);
    CHECK_INT(info.mig.parent_index, 1);
    CHECK_STR(info.mig.parent_uuid, "GPU-00000000-0000-0000-0000-000000000001");
    /* The fake prints the first capture's default table (no MIG section):
     * ids and memory unknown, never 0. */
    CHECK_INT(info.mig.gpu_instance_id, -1);
    CHECK_U64(info.valid, 0);
    CHECK_INT(B->device_info(ctx, 2, &info, &err), GP_OK);
    CHECK_INT(info.index, 2);
    CHECK_STR(info.name, "NVIDIA GeForce RTX 4080 SUPER");
    CHECK_U64(info.mem_total_bytes, 16376ull * MIB);

    unsigned all[3] = {0, 1, 2};
    gp_device_sample s[3];
    gp_status st[3];
    gp_error serr[3];
    CHECK_INT(B->start(ctx, all, 3, 10 * MS, &err), GP_OK);
    for (int round = 0; round < 3; round++) {
        CHECK_INT(tick(ctx, 3, s, st, serr, 10 * SEC, &err), GP_OK);
        CHECK_INT(st[0], GP_OK);
        CHECK_INT(st[1], GP_OK);
        CHECK_INT(st[2], GP_OK);
        check_h100_load(&s[0]);
        check_mig_load(&s[1]);
        check_rtx_load(&s[2]);
    }
    B->stop(ctx);

    /* A second run on the same backend, a subset in another order. */
    unsigned some[2] = {2, 0};
    CHECK_INT(B->start(ctx, some, 2, 10 * MS, &err), GP_OK);
    CHECK_INT(tick(ctx, 2, s, st, serr, 10 * SEC, &err), GP_OK);
    CHECK_INT(st[0], GP_OK);
    CHECK_INT(st[1], GP_OK);
    check_rtx_load(&s[0]);
    check_h100_load(&s[1]);
    B->close(ctx); /* close without stop ends the child too */
    CHECK(no_children());
}

static size_t count_lines_with(const char *text, const char *needle);

/* The MIG capture: its 4 instances listed after the GPU from -L and the
 * default table; their slots get no values (nvidia-smi has none per
 * instance), at the parent's pace, whether the parent is sampled or not. */
static void check_instance(void *ctx, unsigned index, const char *profile, const char *uuid, int gi,
                           uint64_t mem_mib)
{
    gp_device_info info;
    gp_error err;
    CHECK_INT(B->device_info(ctx, index, &info, &err), GP_OK);
    CHECK_INT(info.index, index);
    char name[128];
    snprintf(name, sizeof name, "NVIDIA H100 80GB HBM3 MIG %s", profile);
    CHECK_STR(info.name, name);
    CHECK_STR(info.uuid, uuid);
    CHECK_U64(info.valid, GP_M_MEM_TOTAL);
    CHECK_U64(info.mem_total_bytes, mem_mib * MIB);
    CHECK_INT(info.mig.is_mig, 1);
    CHECK_INT(info.mig.parent_index, 0);
    CHECK_STR(info.mig.parent_uuid, "GPU-00000000-0000-0000-0000-000000000000");
    CHECK_STR(info.mig.parent_name, "NVIDIA H100 80GB HBM3");
    CHECK_STR(info.mig.profile, profile);
    CHECK_INT(info.mig.gpu_instance_id, gi);
    CHECK_INT(info.mig.compute_instance_id, 0);
}

static void test_mig(void)
{
    char log[256];
    snprintf(log, sizeof log, "/tmp/gp-test-smi-mig-log-%d.txt", (int)getpid());
    unlink(log);
    scenario(MIG, NULL, NULL);
    setenv("FAKE_SMI_LOG", log, 1);
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    gp_device_info info;
    CHECK_INT(B->device_info(ctx, 0, &info, &err), GP_OK);
    CHECK_INT(info.mig.is_mig, 0);
    check_instance(ctx, 1, "3g.40gb", "MIG-00000000-0000-0000-0000-000000000000", 2, 40448);
    check_instance(ctx, 2, "2g.20gb", "MIG-00000001-0000-0000-0000-000000000001", 3, 20096);
    check_instance(ctx, 3, "1g.10gb", "MIG-00000002-0000-0000-0000-000000000002", 9, 9984);
    check_instance(ctx, 4, "1g.10gb", "MIG-00000003-0000-0000-0000-000000000003", 10, 9984);

    unsigned idx[3] = {3, 0, 4};
    gp_device_sample s[3];
    gp_status st[3];
    gp_error serr[3];
    CHECK_INT(B->start(ctx, idx, 3, 10 * MS, &err), GP_OK);
    for (int round = 0; round < 3; round++) {
        memset(s, 0xa5, sizeof s);
        CHECK_INT(tick(ctx, 3, s, st, serr, 10 * SEC, &err), GP_OK);
        CHECK_INT(st[0], GP_OK);
        CHECK_INT(st[1], GP_OK);
        CHECK_INT(st[2], GP_OK);
        CHECK_U64(s[0].valid, 0);
        check_mig_load(&s[1]);
        CHECK_U64(s[2].valid, 0);
    }
    B->stop(ctx);
    /* An instance alone: the parent's rows still pace its rounds. */
    CHECK_INT(B->start(ctx, idx, 1, 10 * MS, &err), GP_OK);
    CHECK_INT(tick(ctx, 1, s, st, serr, 10 * SEC, &err), GP_OK);
    CHECK_INT(st[0], GP_OK);
    CHECK_U64(s[0].valid, 0);
    B->close(ctx);
    CHECK(no_children());
    char *text = check_read_file(log, NULL);
    CHECK(text != NULL);
    if (text) {
        CHECK_INT(count_lines_with(text, NULL), 5); /* query, -L, table, 2 streams */
        CHECK_INT(count_lines_with(text, "-L"), 1);
        CHECK_INT(count_lines_with(text, "-lms 10 -i 0"), 2);
        free(text);
    }
    unlink(log);
}

static void test_device_not_found(void)
{
    scenario(H100, NULL, NULL);
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    unsigned bad[2] = {0, 3};
    CHECK_INT(B->start(ctx, bad, 2, 10 * MS, &err), GP_ERR_DEVICE_NOT_FOUND);
    CHECK_STR(err.message, "smi: device 3 does not exist: 1 device (0)");
    CHECK_INT(B->start(ctx, bad, 0, 10 * MS, &err), GP_ERR_INVALID_ARG);
    B->close(ctx);

    scenario(H100 "," H100 "," H100, NULL, NULL);
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    unsigned five = 5;
    CHECK_INT(B->start(ctx, &five, 1, 10 * MS, &err), GP_ERR_DEVICE_NOT_FOUND);
    CHECK_STR(err.message, "smi: device 5 does not exist: 3 devices (0-2)");
    B->close(ctx);
    CHECK(no_children());
}

static size_t count_lines_with(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[2048];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        if (!needle || strstr(line, needle))
            n++;
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static void test_one_streaming_process(void)
{
    char log[256];
    snprintf(log, sizeof log, "/tmp/gp-test-smi-log-%d.txt", (int)getpid());
    unlink(log);
    scenario(H100, "alternate", NULL);
    setenv("FAKE_SMI_LOG", log, 1);
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    unsigned idx = 0;
    CHECK_INT(B->start(ctx, &idx, 1, 2 * MS, &err), GP_OK);
    gp_device_sample s;
    gp_status st;
    gp_error serr;
    int ok = 0, alternations = 0;
    uint32_t prev_util = 1000;
    for (int i = 0; i < 40; i++) {
        if (tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err) == GP_OK && st == GP_OK) {
            ok++;
            if (prev_util != 1000 && s.util_gpu_pct != prev_util)
                alternations++;
            prev_util = s.util_gpu_pct;
            if (s.util_gpu_pct == 100)
                check_h100_load(&s);
            else
                check_h100_idle(&s);
        }
    }
    CHECK_INT(ok, 40);
    CHECK_INT(alternations, 39); /* load, idle, load, ...: every row was read once, in order */
    B->stop(ctx);

    /* Sub-millisecond intervals are asked for as 1 ms. */
    CHECK_INT(B->start(ctx, &idx, 1, 100000, &err), GP_OK);
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
    B->stop(ctx);
    B->close(ctx);
    CHECK(no_children());

    char *text = check_read_file(log, NULL);
    CHECK(text != NULL);
    if (text) {
        /* One discovery (the query, then -L for MIG instances: this GPU
         * has none, so no table) and one streaming process per run: never
         * one per sample. */
        CHECK_INT(count_lines_with(text, NULL), 4);
        CHECK_INT(count_lines_with(text, "-L"), 1);
        CHECK_INT(count_lines_with(text, "-lms"), 2);
        CHECK_INT(count_lines_with(text, "--query-gpu=index,name,uuid,memory.total,driver_version "
                                         "--format=csv,noheader,nounits"),
                  1);
        CHECK_INT(count_lines_with(text, "--query-gpu=" SMI_SAMPLE_FIELDS
                                         " --format=csv,noheader,nounits -lms 2 -i 0"),
                  1);
        CHECK_INT(count_lines_with(text, "-lms 1 -i 0"), 1);
        free(text);
    }
    unlink(log);
}

static void test_missing_binary(void)
{
    scenario(H100, NULL, NULL);
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.timeout_ns = 10 * SEC;
    void *ctx = (void *)&cfg;
    gp_error err;

    cfg.smi_path = "/nonexistent-gp-test/nvidia-smi";
    CHECK_INT(B->open(&cfg, &ctx, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK(ctx == NULL);
    CHECK(strncmp(err.message, "smi: ", 5) == 0);
    CHECK_CONTAINS(err.message, "/nonexistent-gp-test/nvidia-smi");

    /* A file that is there but cannot be run. */
    char capture[1024];
    snprintf(capture, sizeof capture, "%s/fixtures/nvidia-smi/%s", source_dir, H100);
    cfg.smi_path = capture;
    CHECK_INT(B->open(&cfg, &ctx, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(err.message, capture);

    /* Searched in PATH. */
    char *saved = strdup(getenv("PATH") ? getenv("PATH") : "");
    cfg.smi_path = NULL;
    setenv("PATH", "/nonexistent-gp-test:/nonexistent-gp-test2", 1);
    CHECK_INT(B->open(&cfg, &ctx, &err), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_STR(err.message, "smi: nvidia-smi not found in PATH "
                           "(/nonexistent-gp-test:/nonexistent-gp-test2): install the NVIDIA "
                           "driver or set smi_path");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", fake_smi);
    *strrchr(dir, '/') = '\0';
    char path[2100];
    snprintf(path, sizeof path, "/nonexistent-gp-test:%s", dir);
    setenv("PATH", path, 1);
    CHECK_INT(B->open(&cfg, &ctx, &err), GP_OK);
    B->close(ctx);
    setenv("PATH", saved, 1);
    free(saved);
    CHECK(no_children());
}

static void test_driver_failure(void)
{
    const char *fails[2] = {"driver", NULL};
    for (int i = 0; i < 2; i++) {
        /* FAIL=driver, and no capture at all: both are a machine without the driver. */
        scenario(i == 0 ? H100 : NULL, NULL, fails[i]);
        void *ctx = NULL;
        gp_error err;
        CHECK_INT(open_smi(&ctx, 10, &err), GP_ERR_BACKEND_UNAVAILABLE);
        CHECK(ctx == NULL);
        CHECK(strncmp(err.message, "smi: ", 5) == 0);
        CHECK_CONTAINS(err.message, "exit status 9");
        CHECK_CONTAINS(err.message,
                       "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                       "driver. Make sure that the latest NVIDIA driver is installed and running.");
    }
    CHECK(no_children());
}

static void test_hang_at_discovery(void)
{
    scenario(H100, NULL, "hang");
    void *ctx = NULL;
    gp_error err;
    int fds = count_fds();
    uint64_t t0 = now_ns();
    CHECK_INT(open_smi(&ctx, 0.3, &err), GP_ERR_TIMEOUT);
    uint64_t took = now_ns() - t0;
    CHECK(took >= 250 * MS);
    CHECK(took < 10 * SEC);
    CHECK(ctx == NULL);
    CHECK_CONTAINS(err.message, "smi: nvidia-smi did not answer within 0.3 s");
    CHECK(no_children());
    CHECK_INT(count_fds(), fds);
}

static void test_hang_while_streaming(void)
{
    /* Two good rounds, then silence; SIGTERM is ignored, so stop needs SIGKILL. */
    scenario(H100, NULL, "hang_after=2");
    void *ctx = NULL;
    gp_error err;
    int fds = count_fds();
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    unsigned idx = 0;
    CHECK_INT(B->start(ctx, &idx, 1, 5 * MS, &err), GP_OK);
    gp_device_sample s;
    gp_status st;
    gp_error serr;
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
    uint64_t t0 = now_ns();
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 300 * MS, &err), GP_ERR_TIMEOUT);
    uint64_t took = now_ns() - t0;
    CHECK(took >= 250 * MS);
    CHECK(took < 10 * SEC);
    CHECK(strncmp(err.message, "smi: ", 5) == 0);
    /* A deadline already past returns at once. */
    gp_error_clear(&err);
    CHECK_INT(B->wait_tick(ctx, &s, &st, &serr, now_ns() - 1, &err), GP_ERR_TIMEOUT);

    t0 = now_ns();
    B->stop(ctx);
    took = now_ns() - t0;
    CHECK(took < 10 * SEC);
    CHECK(no_children());
    B->stop(ctx); /* idempotent */
    B->close(ctx);
    CHECK_INT(count_fds(), fds);
}

typedef struct interrupter {
    void *ctx;
    uint64_t delay_ns;
} interrupter;

static void *interrupt_later(void *arg)
{
    interrupter *it = arg;
    struct timespec ts = {.tv_sec = (time_t)(it->delay_ns / SEC),
                          .tv_nsec = (long)(it->delay_ns % SEC)};
    nanosleep(&ts, NULL);
    B->interrupt(it->ctx);
    return NULL;
}

static void test_interrupt(void)
{
    scenario(H100, NULL, "hang_after=0");
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    /* An interrupt before start does not end the run's first wait. */
    B->interrupt(ctx);
    unsigned idx = 0;
    CHECK_INT(B->start(ctx, &idx, 1, 5 * MS, &err), GP_OK);
    gp_device_sample s;
    gp_status st;
    gp_error serr;

    interrupter it = {ctx, 100 * MS};
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, interrupt_later, &it), 0);
    uint64_t t0 = now_ns();
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 60 * SEC, &err), GP_ERR_STATE);
    uint64_t took = now_ns() - t0;
    pthread_join(th, NULL);
    CHECK(took >= 50 * MS);
    CHECK(took < 10 * SEC);

    /* An interrupt that lands before the wait still ends it, once. */
    B->interrupt(ctx);
    B->interrupt(ctx);
    t0 = now_ns();
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 60 * SEC, &err), GP_ERR_STATE);
    CHECK(now_ns() - t0 < 5 * SEC);
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 50 * MS, &err), GP_ERR_TIMEOUT);

    B->stop(ctx);
    B->close(ctx);
    CHECK(no_children());
}

static void test_child_exits(void)
{
    scenario(H100, NULL, "exit_after=3");
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    unsigned idx = 0;
    CHECK_INT(B->start(ctx, &idx, 1, 5 * MS, &err), GP_OK);
    gp_device_sample s;
    gp_status st;
    gp_error serr;
    for (int i = 0; i < 3; i++) {
        CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
        check_h100_load(&s);
    }
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_ERR_BACKEND);
    CHECK(strncmp(err.message, "smi: ", 5) == 0);
    CHECK_CONTAINS(err.message, "exit status 15");
    CHECK_CONTAINS(err.message, "Unable to determine the device handle for GPU 00000000:00:09.0: "
                                "GPU is lost.");
    /* And again, without waiting: the producer is gone. */
    uint64_t t0 = now_ns();
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_ERR_BACKEND);
    CHECK(now_ns() - t0 < 5 * SEC);
    CHECK_CONTAINS(err.message, "exit status 15");
    CHECK(no_children());
    B->stop(ctx);
    B->close(ctx);
}

static void test_garbage_skipped(void)
{
    scenario(H100 "," RTX, NULL, "garbage");
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    unsigned idx[2] = {0, 1};
    CHECK_INT(B->start(ctx, idx, 2, 2 * MS, &err), GP_OK);
    gp_device_sample s[2];
    gp_status st[2];
    gp_error serr[2];
    for (int i = 0; i < 12; i++) {
        CHECK_INT(tick(ctx, 2, s, st, serr, 10 * SEC, &err), GP_OK);
        CHECK_INT(st[0], GP_OK);
        CHECK_INT(st[1], GP_OK);
        check_h100_load(&s[0]);
        check_rtx_load(&s[1]);
    }
    B->close(ctx);
    CHECK(no_children());
}

static void test_missing_row(void)
{
    /* GPU 1's row is left out of every odd tick: GPU 0 repeating closes the
     * round, GPU 1 is marked as having no sample this round. */
    scenario(H100 "," RTX, NULL, NULL);
    setenv("FAKE_SMI_DROP", "1", 1);
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (!ctx)
        return;
    unsigned idx[2] = {0, 1};
    CHECK_INT(B->start(ctx, idx, 2, 2 * MS, &err), GP_OK);
    gp_device_sample s[2];
    gp_status st[2];
    gp_error serr[2];
    int full = 0, partial = 0;
    for (int i = 0; i < 6; i++) {
        CHECK_INT(tick(ctx, 2, s, st, serr, 10 * SEC, &err), GP_OK);
        CHECK_INT(st[0], GP_OK);
        check_h100_load(&s[0]);
        if (st[1] == GP_OK) {
            full++;
            check_rtx_load(&s[1]);
        } else {
            partial++;
            CHECK_INT(st[1], GP_ERR_TIMEOUT);
            CHECK_CONTAINS(serr[1].message, "no row for device 1");
        }
    }
    CHECK_INT(full, 3);
    CHECK_INT(partial, 3);
    B->close(ctx);
    CHECK(no_children());
}

static void test_call_order(void)
{
    B->close(NULL);
    B->stop(NULL);
    B->interrupt(NULL);
    scenario(H100, NULL, NULL);
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 0, &err), GP_OK); /* 0: the default limit */
    if (!ctx)
        return;
    gp_device_sample s;
    gp_status st;
    gp_error serr;
    B->stop(ctx); /* before start: nothing to do */
    CHECK_INT(tick(ctx, 1, &s, &st, &serr, SEC, &err), GP_ERR_STATE);
    unsigned idx = 0;
    CHECK_INT(B->start(ctx, &idx, 1, 5 * MS, &err), GP_OK);
    CHECK_INT(B->start(ctx, &idx, 1, 5 * MS, &err), GP_ERR_STATE);
    B->stop(ctx);
    B->stop(ctx);
    B->close(ctx);
    CHECK(no_children());
}

static volatile sig_atomic_t sigchld_seen;

static void on_sigchld(int sig)
{
    (void)sig;
    sigchld_seen++;
}

static void test_sigchld_handlers(void)
{
    /* A program's own SIGCHLD handler (no SA_RESTART: calls see EINTR). */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, &old);
    scenario(H100, NULL, "exit_after=2");
    void *ctx = NULL;
    gp_error err;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (ctx) {
        unsigned idx = 0;
        gp_device_sample s;
        gp_status st;
        gp_error serr;
        CHECK_INT(B->start(ctx, &idx, 1, 5 * MS, &err), GP_OK);
        CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
        CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
        CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_ERR_BACKEND);
        CHECK_CONTAINS(err.message, "exit status 15");
        B->close(ctx);
    }
    CHECK(sigchld_seen > 0);
    CHECK(no_children());

    /* SIGCHLD ignored: the kernel reaps for us and statuses are lost, yet
     * discovery works and a dying child is still an error, promptly. */
    sa.sa_handler = SIG_IGN;
    sigaction(SIGCHLD, &sa, NULL);
    ctx = NULL;
    CHECK_INT(open_smi(&ctx, 10, &err), GP_OK);
    if (ctx) {
        unsigned idx = 0;
        gp_device_sample s;
        gp_status st;
        gp_error serr;
        CHECK_INT(B->start(ctx, &idx, 1, 5 * MS, &err), GP_OK);
        CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
        CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_OK);
        uint64_t t0 = now_ns();
        CHECK_INT(tick(ctx, 1, &s, &st, &serr, 10 * SEC, &err), GP_ERR_BACKEND);
        CHECK(now_ns() - t0 < 5 * SEC);
        CHECK_CONTAINS(err.message, "GPU is lost");
        B->close(ctx);
    }
    sigaction(SIGCHLD, &old, NULL);
    CHECK(no_children());
}

int main(void)
{
    fake_smi = check_env("GP_TEST_FAKE_SMI");
    source_dir = check_env("GP_TEST_SOURCE_DIR");
    /* A reader that goes away must not kill the test with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);

    test_captures();
    test_multi_gpu();
    test_device_not_found();
    test_one_streaming_process();
    test_mig();
    test_missing_binary();
    test_driver_failure();
    test_hang_at_discovery();
    test_hang_while_streaming();
    test_interrupt();
    test_child_exits();
    test_garbage_skipped();
    test_missing_row();
    test_call_order();
    test_sigchld_handlers();
    return check_done("test_smi_backend");
}
