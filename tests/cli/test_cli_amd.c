/*
 * test_cli_amd.c - the command on AMD GPUs (--backend amd) over the fake
 * ROCm SMI (tests/fakes/fake_rocm_smi.c: GPU 0 reports every figure, GPU 1
 * no unique id, memory busy, power, temperature nor memory clock): exact
 * `devices` text and JSON, the run's JSON summary and --samples rows with
 * null where a GPU reports nothing, a GPU disappearing mid-run, serve's
 * exposition with AMD device-metrics-exporter's names; and Debian's real
 * librocm_smi64 on a machine without an AMD GPU: `devices` exits 1 with a
 * clear message, the profiled command's output and status are its own
 * (--strict: 125, not run), auto stays quiet.  Skips (77) without the fake.
 */
#include "harness.h"
#include "json_mini.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

static const char *fake;

static void set_scenario(const char *name)
{
    setenv("FAKE_ROCM_SMI_SCENARIO", name, 1);
}

/* Whether this machine's real ROCm SMI can be tried: installed, no AMD GPU. */
static int real_rocm_without_gpu(void)
{
    struct stat st;
    if (stat("/sys/class/kfd", &st) == 0)
        return 0;
    return stat("/usr/lib/librocm_smi64.so.1", &st) == 0 ||
           stat("/usr/lib/x86_64-linux-gnu/librocm_smi64.so.1", &st) == 0 ||
           stat("/opt/rocm/lib/librocm_smi64.so", &st) == 0;
}

static void test_devices(void)
{
    set_scenario("two");
    const char *argv[] = {h_cli, "devices", "--backend", "amd", "--rocm-smi-library", fake, NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, "index  name                  uuid              memory      pci\n"
                     "0      AMD Instinct MI210    1234abcd5678ef90  64.00 GiB   0000:03:00.0\n"
                     "1      AMD Radeon PRO W6800                    32.00 GiB   0001:08:01.1\n"
                     "backend amd, driver 6.8.5-fake\n");
    CHECK_STR(r.err, "");
    h_result_free(&r);

    const char *argv2[] = {h_cli, "devices", "--json", "--backend", "amd", NULL};
    const char *env[] = {NULL, NULL};
    char var[1024];
    snprintf(var, sizeof var, "GPU_PROFILE_ROCM_SMI_LIBRARY=%s", fake);
    env[0] = var;
    h_run(argv2, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out,
              "{\"schema\":\"gpu-profile.devices\",\"schema_version\":1,\"backend\":\"amd\","
              "\"driver_version\":\"6.8.5-fake\",\"devices\":[{\"index\":0,\"name\":\"AMD "
              "Instinct MI210\",\"uuid\":\"1234abcd5678ef90\",\"mem_total_bytes\":68719476736,"
              "\"mig\":null,\"pci_bus_id\":\"0000:03:00.0\"},{\"index\":1,\"name\":\"AMD Radeon "
              "PRO W6800\",\"uuid\":null,\"mem_total_bytes\":34359738368,\"mig\":null,"
              "\"pci_bus_id\":\"0001:08:01.1\"}],\"error\":null}\n");
    h_result_free(&r);

    /* A library that cannot be loaded: 1, the flag named. */
    const char *argv3[] = {h_cli,
                           "devices",
                           "--backend",
                           "amd",
                           "--rocm-smi-library",
                           "/nonexistent/librocm_smi64.so.1",
                           NULL};
    h_run(argv3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_PREFIX(r.err, "gpu-profile: devices: amd: cannot load /nonexistent/librocm_smi64.so.1: ");
    CHECK_CONTAINS(r.err, "check --rocm-smi-library PATH\n");
    CHECK_INT(h_count_lines(r.err), 1);
    h_result_free(&r);
}

static jn *read_json(const char *path)
{
    size_t len = 0;
    char *text = check_read_file(path, &len);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, len, &why) : NULL;
    free(text);
    CHECK(doc != NULL);
    return doc;
}

static void test_run_json(void)
{
    set_scenario("two");
    char report[512], samples[512];
    h_path(report, sizeof report, "amd-run.json");
    h_path(samples, sizeof samples, "amd-samples.csv");
    const char *argv[] = {
        h_cli,  "--backend", "amd",   "--rocm-smi-library", fake,   "--json", "-o",
        report, "--samples", samples, "--interval",         "0.01", "--",     h_child,
        "exit", "3",         NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 3);
    h_result_free(&r);
    jn *doc = read_json(report);
    if (!doc)
        return;
    CHECK_STR(jn_str(jn_get(doc, "backend")), "amd");
    CHECK(jn_is_null(jn_get(doc, "note")));
    const jn *devs = jn_get(doc, "devices");
    CHECK_INT(devs ? devs->n : 0, 2);
    const jn *d0 = jn_at(devs, 0), *d1 = jn_at(devs, 1);
    CHECK_STR(jn_str(jn_get(d0, "name")), "AMD Instinct MI210");
    CHECK_STR(jn_str(jn_get(d0, "uuid")), "1234abcd5678ef90");
    CHECK_INT(jn_int(jn_get(d0, "util_gpu_max_pct")), 37);
    CHECK_INT(jn_int(jn_get(d0, "util_mem_max_pct")), 12);
    CHECK_U64(jn_u64(jn_get(d0, "mem_used_max_bytes")), 1073741824ull);
    CHECK_U64(jn_u64(jn_get(d0, "mem_total_bytes")), 68719476736ull);
    CHECK_INT(jn_int(jn_get(d0, "power_max_mw")), 123456);
    CHECK_INT(jn_int(jn_get(d0, "temp_max_c")), 45);
    CHECK_INT(jn_int(jn_get(d0, "clock_sm_max_mhz")), 1700);
    CHECK_NEAR(jn_num(jn_get(d0, "clock_mem_mean_mhz")), 1600, 1e-9);
    CHECK_STR(jn_str(jn_get(d0, "energy_source")), "power_integral");
    CHECK(jn_is_null(jn_get(d0, "throttle_reasons")));
    /* GPU 1: what it does not report is null, never 0. */
    CHECK(jn_is_null(jn_get(d1, "uuid")));
    CHECK_INT(jn_int(jn_get(d1, "util_gpu_max_pct")), 80);
    CHECK(jn_is_null(jn_get(d1, "util_mem_max_pct")));
    CHECK(jn_is_null(jn_get(d1, "power_max_mw")));
    CHECK(jn_is_null(jn_get(d1, "temp_max_c")));
    CHECK(jn_is_null(jn_get(d1, "clock_mem_mean_mhz")));
    CHECK(jn_is_null(jn_get(d1, "energy_j")));
    CHECK_INT(jn_int(jn_get(d1, "clock_sm_max_mhz")), 2000);
    CHECK_STR(jn_str(jn_get(d1, "device_status")), "ok");
    jn_free(doc);

    /* The samples: one row per GPU and round, empty cells for n/a. */
    size_t len = 0;
    char *csv = check_read_file(samples, &len);
    CHECK(csv != NULL);
    if (csv) {
        CHECK_CONTAINS(csv, ",0,37,12,1073741824,68719476736,123456,,45,1700,1600,,,,");
        CHECK_CONTAINS(csv, ",1,80,,2147483648,34359738368,,,,2000,,,,,");
        free(csv);
    }
}

/* GPU 1 disappears after its first read (the round at start): the one at
 * stop finds it gone, whatever ran between; its summary says so, GPU 0
 * goes on. */
static void test_lost(void)
{
    set_scenario("lost");
    char report[512];
    h_path(report, sizeof report, "amd-lost.json");
    const char *argv[] = {h_cli,        "--backend", "amd", "--rocm-smi-library",
                          fake,         "--json",    "-o",  report,
                          "--interval", "0.01",      "--",  h_child,
                          "exit",       "0",         NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
    jn *doc = read_json(report);
    if (!doc)
        return;
    const jn *devs = jn_get(doc, "devices");
    CHECK_STR(jn_str(jn_get(jn_at(devs, 0), "device_status")), "ok");
    const jn *d1 = jn_at(devs, 1);
    CHECK_STR(jn_str(jn_get(d1, "device_status")), "device_lost");
    CHECK_STR(jn_str(jn_get(d1, "device_error")),
              "amd: device 1 is gone: ROCm SMI cannot read any of its figures "
              "(RSMI_STATUS_FILE_ERROR: Problem accessing a file): it was removed or its driver "
              "reset");
    CHECK_INT(jn_int(jn_get(d1, "sample_count")), 1);
    jn_free(doc);
}

/* --log-dir: the session's job_start lists the GPUs in rocm_static_devices
 * (vendor AMD), and the report reads them back, n/a where GPU 1 had none. */
static void test_session(void)
{
    set_scenario("two");
    char dir[512];
    h_path(dir, sizeof dir, "amd-logs");
    const char *argv[] = {h_cli,  "-q",        "--backend", "amd", "--rocm-smi-library",
                          fake,   "--log-dir", dir,         "--",  h_child,
                          "exit", "0",         NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
    const char *argv2[] = {h_cli, "report", dir, NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "\n  GPU 0  AMD Instinct MI210  ");
    CHECK_CONTAINS(r.out, "\n    power             mean 123.5 W  max 123.5 W\n");
    CHECK_CONTAINS(r.out, "\n  GPU 1  AMD Radeon PRO W6800  ");
    CHECK_CONTAINS(r.out, "\n    power             n/a\n");
    h_result_free(&r);
    /* job_start as GPUFlight writes it for AMD devices. */
    DIR *d = opendir(dir);
    struct dirent *e;
    char log[1024] = "";
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            snprintf(log, sizeof log, "%s/%s/system.log", dir, e->d_name);
    if (d)
        closedir(d);
    size_t len = 0;
    char *text = log[0] ? check_read_file(log, &len) : NULL;
    CHECK(text != NULL);
    if (text) {
        CHECK_CONTAINS(text, "\"rocm_static_devices\":[{\"id\":0,\"name\":\"AMD Instinct "
                             "MI210\",\"uuid\":\"1234abcd5678ef90\",\"vendor\":\"AMD\",");
        CHECK_CONTAINS(text, "{\"id\":1,\"name\":\"AMD Radeon PRO W6800\",\"uuid\":null,"
                             "\"vendor\":\"AMD\",\"pci_bus\":\"0001:08:01.1\",");
        CHECK_CONTAINS(text, "\"cuda_static_devices\":[],");
        free(text);
    }
}

/* One GET of /metrics on 127.0.0.1:port into out ("" on failure). */
static void scrape(int port, char *out, size_t cap)
{
    out[0] = '\0';
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (send(fd, req, sizeof req - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof req - 1)) {
        close(fd);
        return;
    }
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got + 1 < cap && poll(&p, 1, 10000) > 0) {
        ssize_t n = recv(fd, out + got, cap - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    out[got] = '\0';
    close(fd);
}

static int serve_port(const void *err_path)
{
    size_t len = 0;
    char *text = check_read_file(err_path, &len);
    const char *at = text ? strstr(text, "http://127.0.0.1:") : NULL;
    int port = at ? atoi(at + strlen("http://127.0.0.1:")) : 0;
    free(text);
    return port;
}

static int cond_serve_port(const void *err_path)
{
    return serve_port(err_path) > 0;
}

static void test_serve(void)
{
    set_scenario("two");
    char err[512], out[512];
    h_path(err, sizeof err, "amd-serve.err");
    h_path(out, sizeof out, "amd-serve.out");
    const char *argv[] = {h_cli,      "serve",    "--backend",   "amd",        "--rocm-smi-library",
                          fake,       "--listen", "127.0.0.1:0", "--interval", "0.05",
                          "--device", "all",      NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, out, err);
    CHECK(h_wait_for(cond_serve_port, err, 30));
    int port = serve_port(err);
    static char a[1 << 16];
    if (port > 0) {
        for (int i = 0; i < 200; i++) { /* until both GPUs have a sample */
            scrape(port, a, sizeof a);
            if (strstr(a, "gpu_gfx_activity{gpu_id=\"1\""))
                break;
            h_nap_ms(50);
        }
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        char l0[512], l1[512], want[1024];
        snprintf(l0, sizeof l0,
                 "{gpu_id=\"0\",gpu_uuid=\"1234abcd5678ef90\",card_model=\"AMD Instinct MI210\","
                 "hostname=\"%s\"",
                 host);
        snprintf(l1, sizeof l1,
                 "{gpu_id=\"1\",gpu_uuid=\"\",card_model=\"AMD Radeon PRO W6800\",hostname=\"%s\"",
                 host);
        static const struct {
            const char *metric, *value;
            int gpu;
        } lines[] = {
            {"gpu_gfx_activity", "37", 0},     {"gpu_gfx_activity", "80", 1},
            {"gpu_umc_activity", "12", 0},     {"gpu_used_vram", "1024", 0},
            {"gpu_used_vram", "2048", 1},      {"gpu_total_vram", "65536", 0},
            {"gpu_total_vram", "32768", 1},    {"gpu_power_usage", "123.456", 0},
            {"gpu_edge_temperature", "45", 0},
        };
        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
            snprintf(want, sizeof want, "\n%s%s} %s\n", lines[i].metric, lines[i].gpu ? l1 : l0,
                     lines[i].value);
            CHECK_CONTAINS(a, want);
        }
        snprintf(want, sizeof want,
                 "\n# HELP gpu_clock Clock measure of the GPU in Mhz.\n# TYPE gpu_clock gauge\n"
                 "gpu_clock%s,clock_type=\"system\",clock_index=\"0\"} 1700\n"
                 "gpu_clock%s,clock_type=\"system\",clock_index=\"0\"} 2000\n"
                 "gpu_clock%s,clock_type=\"memory\",clock_index=\"0\"} 1600\n",
                 l0, l1, l0);
        CHECK_CONTAINS(a, want);
        CHECK_CONTAINS(a, "\n# TYPE gpu_gfx_activity gauge\n");
        /* What GPU 1 does not report has no line (never a 0); no DCGM name. */
        snprintf(want, sizeof want, "gpu_power_usage%s", l1);
        CHECK(strstr(a, want) == NULL);
        snprintf(want, sizeof want, "gpu_umc_activity%s", l1);
        CHECK(strstr(a, want) == NULL);
        CHECK(strstr(a, "DCGM_FI_") == NULL);
    }
    kill(pid, SIGTERM);
    CHECK_INT(h_code(h_wait(pid)), 128 + SIGTERM);
}

/* Debian's librocm_smi64 here, where there is no AMD GPU. */
static void test_real_library(void)
{
    if (!real_rocm_without_gpu()) {
        printf("skip: no ROCm SMI installed, or an AMD GPU present\n");
        return;
    }
    unsetenv("GPU_PROFILE_ROCM_SMI_LIBRARY");
    const char *argv[] = {h_cli, "devices", "--backend", "amd", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_STR(r.out, "");
    CHECK_PREFIX(r.err, "gpu-profile: devices: amd: no AMD GPU: no AMD device (PCI vendor "
                        "0x1002) under /sys/class/drm: ");
    CHECK_INT(h_count_lines(r.err), 1);
    h_result_free(&r);

    /* Named by path, rsmi_init runs: what the library prints is caught
     * into the one line. */
    const char *lib = access("/usr/lib/librocm_smi64.so.1", R_OK) == 0
                          ? "/usr/lib/librocm_smi64.so.1"
                          : "/usr/lib/x86_64-linux-gnu/librocm_smi64.so.1";
    struct stat st_drm;
    if (access(lib, R_OK) == 0 && stat("/sys/class/drm", &st_drm) != 0) {
        const char *argv1[] = {h_cli, "devices", "--backend", "amd", "--rocm-smi-library",
                               lib,   NULL};
        h_run(argv1, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 1);
        CHECK_CONTAINS(r.err, "failed: ");
        CHECK_CONTAINS(r.err, "; it said: Failed to open drm root directory /sys/class/drm");
        CHECK_INT(h_count_lines(r.err), 1); /* the library's own lines were caught */
        h_result_free(&r);
    }

    /* --backend amd with a command: the command's output and status are
     * its own, a note says why nothing was sampled. */
    const char *argv2[] = {h_cli, "--backend",       "amd", "--no-live", "--", "/bin/sh",
                           "-c",  "echo hi; exit 3", NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 3);
    CHECK_STR(r.out, "hi\n");
    CHECK_PREFIX(r.err, "gpu-profile: no GPU backend, nothing sampled (amd: no AMD GPU: ");
    CHECK(strstr(r.err, "Exception caught") == NULL);
    h_result_free(&r);

    /* --strict: 125 and the command not run. */
    char marker[512];
    h_path(marker, sizeof marker, "amd-strict-marker");
    const char *argv3[] = {h_cli,   "--backend", "amd",  "--strict", "--",
                           h_child, "touch",     marker, NULL};
    h_run(argv3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK(!h_exists(marker));
    CHECK_PREFIX(r.err, "gpu-profile: amd: no AMD GPU: ");
    h_result_free(&r);

    /* auto without NVIDIA or AMD GPU: as before, the library unheard. */
    h_scenario("init_error 9\n");
    const char *argv4[] = {h_cli, "--no-live", "--", "/bin/sh", "-c", "echo auto; exit 4", NULL};
    const char *no_smi[] = {"FAKE_SMI_CAPTURES", NULL};
    h_run(argv4, no_smi, NULL, 0, &r);
    CHECK_INT(r.code, 4);
    CHECK_STR(r.out, "auto\n");
    CHECK_PREFIX(r.err, "gpu-profile: no GPU backend, nothing sampled (nvml: ");
    CHECK(strstr(r.err, "amd: ") == NULL);
    CHECK(strstr(r.err, "drm root") == NULL);
    if (strstr(r.err, "amd: ") || strstr(r.err, "drm root"))
        fprintf(stderr, "  stderr: %s\n", r.err);
    h_result_free(&r);
}

int main(void)
{
    fake = getenv("GP_TEST_FAKE_ROCM_SMI");
    if (!fake || !*fake) {
        printf("skip: no fake ROCm SMI (rocm_smi/rocm_smi.h was not found at configure time)\n");
        return 77;
    }
    h_init();
    test_devices();
    test_run_json();
    test_lost();
    test_session();
    test_serve();
    test_real_library();
    h_cleanup();
    return check_done("test_cli_amd");
}
