/*
 * test_nvml_procs.c - per-process attribution in the NVML backend, against
 * the fake libnvidia-ml (tests/fakes/fake_nvml.c; scenarios
 * nvml_procs*.txt).
 *
 * Checks exact values: processes of ours beside a foreign one, a device
 * with none of ours, NOT_SUPPORTED, memory NVML cannot tell, a PID NVML
 * lists that /proc does not show (a container), no PIDs set, the summary
 * through the monitor (mean, max, text and JSON), and the descendants of
 * a listed process found through /proc (pid_tree), and the list of every
 * process on a device (serve --processes).
 */
#include "check.h"
#include "sampler/backends/backend.h"
#include "util/error.h"
#include "gpu_profile.h"
#include "sampler/nvml_open.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GIB 1073741824ull
#define MIB 1048576ull
#define PROC_BITS (GP_M_PROC_MEM | GP_M_PROC_UTIL)

static const char *src_dir;
static const char *fake_new;

static void read_slot(void *ctx, size_t slot, gp_device_sample *s)
{
    gp_error err;
    gp_error_clear(&err);
    memset(s, 0xa5, sizeof *s); /* read() must set every field */
    CHECK_INT(gp_backend_nvml.read(ctx, slot, 0, s, &err), GP_OK);
}

static const int our_pids[2] = {4000001, 4000002};

static void test_ours_and_foreign(void)
{
    unsigned idx[4] = {0, 1, 2, 3};
    void *ctx = nvml_open_start(src_dir, "nvml_procs.txt", fake_new, idx, 4);
    if (!ctx)
        return;
    gp_device_sample s;
    /* No PIDs set: nothing is read. */
    read_slot(ctx, 0, &s);
    CHECK_INT(s.valid & PROC_BITS, 0);
    CHECK_U64(s.proc_mem_used_bytes, 0);

    gp_backend_nvml.set_pids(ctx, our_pids, 2);
    read_slot(ctx, 0, &s);
    CHECK_INT(s.valid & PROC_BITS, PROC_BITS);
    CHECK_INT(s.proc_count, 2);
    CHECK_INT(s.proc_all_count, 3);
    CHECK_U64(s.proc_mem_used_bytes, GIB + 512 * MIB);
    CHECK_U64(s.proc_all_mem_used_bytes, 5 * GIB + 512 * MIB);
    CHECK_INT(s.proc_sm_pct, 35);
    CHECK_INT(s.proc_mem_pct, 11);
    CHECK_INT(s.proc_all_sm_pct, 75);
    CHECK_INT(s.proc_all_mem_pct, 41);
    read_slot(ctx, 0, &s);
    CHECK_U64(s.proc_mem_used_bytes, 2 * GIB + 512 * MIB);
    CHECK_U64(s.proc_all_mem_used_bytes, 6 * GIB + 512 * MIB);
    CHECK_INT(s.proc_sm_pct, 55);
    CHECK_INT(s.proc_mem_pct, 21);
    CHECK_INT(s.proc_all_sm_pct, 95);
    CHECK_INT(s.proc_all_mem_pct, 51);

    /* None of ours on the device: 0, and known to be 0. */
    read_slot(ctx, 1, &s);
    CHECK_INT(s.valid & PROC_BITS, PROC_BITS);
    CHECK_INT(s.proc_count, 0);
    CHECK_INT(s.proc_all_count, 1);
    CHECK_U64(s.proc_mem_used_bytes, 0);
    CHECK_U64(s.proc_all_mem_used_bytes, MIB);
    CHECK_INT(s.proc_sm_pct, 0);
    CHECK_INT(s.proc_all_sm_pct, 7);
    CHECK_INT(s.proc_all_mem_pct, 3);

    /* NOT_SUPPORTED: n/a, and the device's own metrics are still read. */
    read_slot(ctx, 2, &s);
    CHECK_INT(s.valid & PROC_BITS, 0);
    CHECK(s.valid & GP_M_UTIL_GPU);
    CHECK_U64(s.proc_mem_used_bytes, 0);
    CHECK_INT(s.proc_sm_pct, 0);

    /* Memory NVML cannot tell: memory n/a, utilisation read. */
    read_slot(ctx, 3, &s);
    CHECK_INT(s.valid & PROC_BITS, GP_M_PROC_UTIL);
    CHECK_INT(s.proc_sm_pct, 12);
    CHECK_INT(s.proc_mem_pct, 6);

    /* The list can be emptied again. */
    gp_backend_nvml.set_pids(ctx, NULL, 0);
    read_slot(ctx, 0, &s);
    CHECK_INT(s.valid & PROC_BITS, 0);
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
}

static void test_hidden_pid(void)
{
    unsigned idx[1] = {0};
    void *ctx = nvml_open_start(src_dir, "nvml_procs_hidden.txt", fake_new, idx, 1);
    if (!ctx)
        return;
    gp_backend_nvml.set_pids(ctx, our_pids, 1);
    gp_device_sample s;
    read_slot(ctx, 0, &s);
    CHECK_INT(s.valid & PROC_BITS, 0);
    CHECK_INT(s.proc_count, 0);
    CHECK_U64(s.proc_mem_used_bytes, 0);
    CHECK(s.valid & GP_M_UTIL_GPU);
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);
}

/* A region of `rounds` samples (an interval long enough that the test
 * controls the count: the first and the last round only). */
static gp_monitor *region(const int *pids, size_t n, int tree, int device, gp_error *err)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.nvml_library = fake_new;
    o.device = device;
    o.interval_s = 100.0;
    o.pids = pids;
    o.n_pids = n;
    o.pid_tree = tree;
    gp_monitor *m = NULL;
    CHECK_INT(gp_monitor_create(&o, &m, err), GP_OK);
    if (!m)
        return NULL;
    CHECK_INT(gp_monitor_start(m, err), GP_OK);
    CHECK_INT(gp_monitor_stop(m, err), GP_OK);
    return m;
}

static void test_monitor_summary(void)
{
    nvml_use_scenario(src_dir, "nvml_procs.txt");
    gp_error err;
    gp_monitor *m = region(our_pids, 2, 0, 0, &err);
    if (!m)
        return;
    const gp_summary *s = gp_monitor_summary(m, 0);
    CHECK_U64(s->sample_count, 2);
    CHECK_INT(s->proc_requested, 1);
    CHECK_INT(s->valid & PROC_BITS, PROC_BITS);
    CHECK_INT(s->proc_count_max, 2);
    CHECK_NEAR(s->proc_mem_used_mean_bytes, (double)(2 * GIB), 1e-3);
    CHECK_U64(s->proc_mem_used_max_bytes, 2 * GIB + 512 * MIB);
    CHECK_U64(s->proc_all_mem_used_max_bytes, 6 * GIB + 512 * MIB);
    CHECK_NEAR(s->proc_sm_mean_pct, 45.0, 1e-9);
    CHECK_INT(s->proc_sm_max_pct, 55);
    CHECK_NEAR(s->proc_mem_mean_pct, 16.0, 1e-9);
    CHECK_INT(s->proc_mem_max_pct, 21);
    CHECK_NEAR(s->proc_all_sm_mean_pct, 85.0, 1e-9);

    char text[4096];
    gp_summary_format(s, GP_FMT_ASCII, text, sizeof text);
    CHECK_CONTAINS(text, "\n  process memory    max 2.50 GiB of 1.00 GiB used (2 processes)\n");
    CHECK_CONTAINS(text, "\n  process util      SM 45.0% of 85.0% | mem 16.0% of 45.0% (means)\n");
    char json[8192];
    gp_summary_to_json(s, 0, json, sizeof json);
    CHECK_CONTAINS(json, ",\"process\":{\"count_max\":2,\"mem_used_mean_bytes\":2147483648,"
                         "\"mem_used_max_bytes\":2684354560,\"all_mem_used_max_bytes\":"
                         "6979321856,\"sm_mean_pct\":45,\"sm_max_pct\":55,\"mem_mean_pct\":16,"
                         "\"mem_max_pct\":21,\"all_sm_mean_pct\":85},\"mig\":null}");
    gp_monitor_destroy(m);

    /* NOT_SUPPORTED through the monitor: the lines say n/a, JSON null. */
    m = region(our_pids, 2, 0, 2, &err);
    if (!m)
        return;
    s = gp_monitor_summary(m, 0);
    CHECK_INT(s->valid & PROC_BITS, 0);
    gp_summary_format(s, 0, text, sizeof text);
    CHECK_CONTAINS(text, "\n  process memory    n/a\n  process util      n/a\n");
    gp_summary_to_json(s, 0, json, sizeof json);
    CHECK_CONTAINS(json, ",\"process\":{\"count_max\":null,\"mem_used_mean_bytes\":null,"
                         "\"mem_used_max_bytes\":null,\"all_mem_used_max_bytes\":null,"
                         "\"sm_mean_pct\":null,\"sm_max_pct\":null,\"mem_mean_pct\":null,"
                         "\"mem_max_pct\":null,\"all_sm_mean_pct\":null},\"mig\":null}");
    gp_monitor_destroy(m);

    /* No processes named: no lines, no "process" key. */
    m = region(NULL, 0, 0, 0, &err);
    if (!m)
        return;
    s = gp_monitor_summary(m, 0);
    CHECK_INT(s->proc_requested, 0);
    gp_summary_format(s, 0, text, sizeof text);
    CHECK(strstr(text, "process") == NULL);
    gp_summary_to_json(s, 0, json, sizeof json);
    CHECK(strstr(json, "\"process\"") == NULL);
    gp_monitor_destroy(m);
}

/* pid_tree: a child of this process, named to the fake through a file,
 * is attributed although only this process is listed. */
static void test_tree(void)
{
    char dir[] = "/tmp/gp-procs-XXXXXX", pid_file[256], scen[256];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        CHECK(0);
        return;
    }
    snprintf(pid_file, sizeof pid_file, "%s/pid", dir);
    snprintf(scen, sizeof scen, "%s/scenario.txt", dir);
    pid_t child = fork();
    if (child == 0) {
        pause(); /* killed below */
        _exit(0);
    }
    CHECK(child > 0);
    FILE *f = fopen(pid_file, "w");
    fprintf(f, "%d\n", (int)child);
    fclose(f);
    f = fopen(scen, "w");
    fprintf(f,
            "device 0\nproc 0 file:%s mem 3221225472 sm 60 memutil 25\n"
            "proc 0 1 mem 1073741824 sm 10 memutil 5\n",
            pid_file);
    fclose(f);
    setenv("FAKE_NVML_SCENARIO", scen, 1);
    int self = (int)getpid();
    gp_error err;
    gp_monitor *m = region(&self, 1, 1, 0, &err);
    if (m) {
        const gp_summary *s = gp_monitor_summary(m, 0);
        CHECK_INT(s->valid & PROC_BITS, PROC_BITS);
        CHECK_INT(s->proc_count_max, 1);
        CHECK_U64(s->proc_mem_used_max_bytes, 3 * GIB);
        CHECK_U64(s->proc_all_mem_used_max_bytes, 4 * GIB);
        CHECK_NEAR(s->proc_sm_mean_pct, 60.0, 1e-9);
        CHECK_NEAR(s->proc_all_sm_mean_pct, 70.0, 1e-9);
        gp_monitor_destroy(m);
    }
    /* Without the tree, the child is foreign. */
    m = region(&self, 1, 0, 0, &err);
    if (m) {
        const gp_summary *s = gp_monitor_summary(m, 0);
        CHECK_INT(s->proc_count_max, 0);
        CHECK_U64(s->proc_mem_used_max_bytes, 0);
        CHECK_NEAR(s->proc_sm_mean_pct, 0.0, 1e-9);
        gp_monitor_destroy(m);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    unlink(pid_file);
    unlink(scen);
    rmdir(dir);
}

/* Every process on a device (serve --processes): NVML's PIDs as given
 * (PID 1 included), memory and SM share per process, the newest read's;
 * unknown memory and a device refusing both calls said so, not as 0. */
static void test_process_list(void)
{
    unsigned idx[4] = {0, 1, 2, 3};
    void *ctx = nvml_open_start(src_dir, "nvml_procs.txt", fake_new, idx, 4);
    if (!ctx)
        return;
    gp_process_use u[8];
    size_t n = 9;
    CHECK_INT(gp_backend_nvml.processes(ctx, 0, u, 8, &n), GP_ERR_STATE); /* none read yet */
    CHECK_INT(n, 0);
    gp_backend_nvml.list_processes(ctx);
    gp_device_sample s;
    for (size_t i = 0; i < 4; i++)
        read_slot(ctx, i, &s);
    read_slot(ctx, 0, &s); /* the second values of 4000001's sequences */
    CHECK_INT(gp_backend_nvml.processes(ctx, 0, u, 8, &n), GP_OK);
    CHECK_INT(n, 3);
    const gp_process_use want[3] = {
        {4000001, 1, 2 * GIB, 1, 50}, {4000002, 1, 512 * MIB, 1, 5}, {1, 1, 4 * GIB, 1, 40}};
    for (size_t i = 0; i < 3 && n == 3; i++) {
        CHECK_INT(u[i].pid, want[i].pid);
        CHECK_INT(u[i].mem_known, 1);
        CHECK_U64(u[i].mem_used_bytes, want[i].mem_used_bytes);
        CHECK_INT(u[i].sm_known, 1);
        CHECK_INT(u[i].sm_pct, want[i].sm_pct);
    }
    CHECK_INT(gp_backend_nvml.processes(ctx, 0, u, 1, &n), GP_OK); /* cut at cap */
    CHECK_INT(n, 1);
    CHECK_INT(gp_backend_nvml.processes(ctx, 1, u, 8, &n), GP_OK);
    CHECK_INT(n, 1);
    CHECK_INT(u[0].pid, 1);
    CHECK_INT(u[0].sm_pct, 7);
    CHECK_INT(gp_backend_nvml.processes(ctx, 2, u, 8, &n), GP_ERR_STATE); /* NOT_SUPPORTED */
    CHECK_INT(gp_backend_nvml.processes(ctx, 3, u, 8, &n), GP_OK);
    CHECK_INT(n, 1);
    CHECK_INT(u[0].mem_known, 0); /* NVML_VALUE_NOT_AVAILABLE */
    CHECK_U64(u[0].mem_used_bytes, 0);
    CHECK_INT(u[0].sm_known, 1);
    CHECK_INT(u[0].sm_pct, 12);
    gp_backend_nvml.stop(ctx);
    gp_backend_nvml.close(ctx);

    /* Through the monitor: a backend that cannot list, and out of order. */
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NONE;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    CHECK_INT(gp_monitor_list_processes(m, &err), GP_ERR_NOT_SUPPORTED);
    CHECK_STR(err.message, "the none backend cannot list the processes on a GPU (NVML can)");
    CHECK_INT(gp_monitor_processes(m, 0, u, 8, &n), GP_ERR_NOT_SUPPORTED);
    gp_monitor_destroy(m);
    nvml_use_scenario(src_dir, "nvml_procs.txt");
    gp_options_init(&o);
    o.backend = GP_BACKEND_NVML;
    o.nvml_library = fake_new;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_OK);
    if (!m)
        return;
    CHECK_INT(gp_monitor_processes(m, 0, u, 8, &n), GP_ERR_STATE); /* not asked */
    CHECK_INT(gp_monitor_list_processes(m, &err), GP_OK);
    CHECK_INT(gp_monitor_start(m, &err), GP_OK);
    CHECK_INT(gp_monitor_list_processes(m, &err), GP_ERR_STATE);
    CHECK_INT(gp_monitor_stop(m, &err), GP_OK);
    CHECK_INT(gp_monitor_processes(m, 0, u, 8, &n), GP_OK); /* the last round's */
    CHECK_INT(n, 3);
    CHECK_INT(gp_monitor_processes(m, 1, u, 8, &n), GP_ERR_DEVICE_NOT_FOUND);
    gp_monitor_destroy(m);
}

static void test_bad_options(void)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NONE;
    gp_monitor *m = NULL;
    gp_error err;
    o.n_pids = 1;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_INVALID_ARG);
    CHECK_STR(err.message, "n_pids is 1 but pids is NULL: pass the list or set n_pids to 0");
    int bad[2] = {12, 0};
    o.pids = bad;
    o.n_pids = 2;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_INVALID_ARG);
    CHECK_STR(err.message, "pids[1] = 0 is not a process id: use PIDs from 1");
    o.n_pids = GP_PROC_PIDS_MAX + 1;
    CHECK_INT(gp_monitor_create(&o, &m, &err), GP_ERR_INVALID_ARG);
    CHECK(m == NULL);
}

int main(void)
{
    src_dir = check_env("GP_TEST_SOURCE_DIR");
    fake_new = check_env("GP_TEST_FAKE_NVML");
    unsetenv("FAKE_NVML_STATS");
    test_ours_and_foreign();
    test_hidden_pid();
    test_monitor_summary();
    test_tree();
    test_process_list();
    test_bad_options();
    return check_done("test_nvml_procs");
}
