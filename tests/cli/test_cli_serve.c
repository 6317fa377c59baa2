/*
 * test_cli_serve.c - `gpu-profile serve`, the Prometheus exporter, over the
 * fake NVML:
 *
 *  - /metrics: dcgm-exporter's names, types, help texts and labels with the
 *    fake GPUs' exact values; a metric a GPU does not report has no line
 *    for it (never a 0); a label with a backslash or a quote escaped; the
 *    energy counter although the sampler reads it only now and then; a GPU
 *    lost mid-run keeps only its sample age once its values are stale;
 *  - `promtool check metrics` on the output (Debian's prometheus package);
 *  - a real Prometheus server on loopback scraping it, and a PromQL query
 *    over its HTTP API that returns the fake GPU's value;
 *  - 50 concurrent scrapers for 10 s: every answer complete;
 *  - bad requests answered or dropped without blocking others: an unknown
 *    path (404), POST (405 with Allow; with `Expect: 100-continue` the 405
 *    and no 100 Continue), 64 KiB of headers, a client that never finishes
 *    its request;
 *  - slow clients cannot starve it: 300 connections trickling header
 *    lines, more than its 256 slots, and 5 scrapes all answered, the
 *    oldest unfinished connections evicted (exactly the first ones); a
 *    connection whose headers never end is closed at --request-timeout
 *    however often it sends a line;
 *  - `--listen :0` is every address: IPv4 and IPv6 loopback both answer;
 *  - bad options (125), an address in use (1), and SIGTERM ending it with
 *    128 + 15;
 *  - libmicrohttpd loaded at serve's start, not linked: the command's
 *    DT_NEEDED names neither it nor gnutls; GPU_PROFILE_MHD_LIBRARY naming a
 *    missing file, or a library without its functions, exits 1 naming
 *    Debian's libmicrohttpd12;
 *  - MIG instances (tests/scenarios/nvml_mig.txt) labelled as dcgm-exporter
 *    labels them: the parent's gpu / UUID, GPU_I_PROFILE, GPU_I_ID.
 */
#include "harness.h"
#include "serve_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

static const char *g_scenario =
    "device 0 name \"NVIDIA H100 80GB HBM3\" uuid GPU-5a1e1f4e-0c7d-4c43-9a52-3b8a1d2e6f01\n"
    "device 1 name \"Odd \\GPU\" uuid GPU-00000000-0000-0000-0000-000000000001\n"
    "device 2 name \"Lost GPU\" uuid GPU-00000000-0000-0000-0000-000000000002\n"
    "seq 0 util_gpu 55\n"
    "seq 0 util_mem 21\n"
    "seq 0 power_mw 123456\n"
    "seq 0 temp_c 61\n"
    "gpm 0\n" /* GPM on GPU 0 only: the fake's default GPM values */
    "unsupported 1 power\n"
    "unsupported 1 temp\n"
    "error 2 lost_after 3\n";

/* ------------------------------------------------------------- values */

static const char *LBL0 = "{gpu=\"0\",UUID=\"GPU-5a1e1f4e-0c7d-4c43-9a52-3b8a1d2e6f01\","
                          "pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\",modelName=\"NVIDIA "
                          "H100 80GB HBM3\",Hostname=\"";
static const char *LBL1 =
    "{gpu=\"1\",UUID=\"GPU-00000000-0000-0000-0000-000000000001\","
    "pci_bus_id=\"00000000:08:00.0\",device=\"nvidia1\",modelName=\"Odd \\\\GPU\",Hostname=\"";

static void test_values(int port)
{
    static char a[1 << 16];
    /* GPM needs two samples of a device: wait for the second (at most 5 s). */
    for (int i = 0; i < 100; i++) {
        CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
        if (strstr(a, "DCGM_FI_PROF_SM_ACTIVE{"))
            break;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    CHECK_CONTAINS(a, "Content-Type: text/plain; version=0.0.4; charset=utf-8");
    const char *b = body_of(a);
    CHECK_CONTAINS(b, "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
                      "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n");
    CHECK_CONTAINS(b, "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption "
                      "since boot (in mJ).\n# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n");
    CHECK_CONTAINS(b, "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n");
    expect(b, "DCGM_FI_DEV_GPU_UTIL", LBL0, "55");
    expect(b, "DCGM_FI_DEV_MEM_COPY_UTIL", LBL0, "21");
    expect(b, "DCGM_FI_DEV_POWER_USAGE", LBL0, "123.456");
    expect(b, "DCGM_FI_DEV_GPU_TEMP", LBL0, "61");
    expect(b, "DCGM_FI_DEV_SM_CLOCK", LBL0, "1980");
    expect(b, "DCGM_FI_DEV_MEM_CLOCK", LBL0, "2619");
    expect(b, "DCGM_FI_DEV_FB_USED", LBL0, "1024");
    expect(b, "DCGM_FI_DEV_FB_FREE", LBL0, "80896");
    expect(b, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", LBL0, "123456789");
    expect(b, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", LBL0, "1");
    /* GPU 1: no power, no temperature - no line, not a 0. */
    expect(b, "DCGM_FI_DEV_GPU_UTIL", LBL1, "42");
    absent(b, "DCGM_FI_DEV_POWER_USAGE", LBL1);
    absent(b, "DCGM_FI_DEV_GPU_TEMP", LBL1);
    /* DCGM's profiling fields from GPM on GPU 0: ratios, PCIe in bytes/s
     * (NVML's MiB/s converted); none at all for GPU 1, which has no GPM. */
    CHECK_CONTAINS(b, "# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 "
                      "warp assigned.\n# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n");
    expect(b, "DCGM_FI_PROF_SM_ACTIVE", LBL0, "0.38");
    expect(b, "DCGM_FI_PROF_SM_OCCUPANCY", LBL0, "0.25");
    expect(b, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", LBL0, "0.12");
    expect(b, "DCGM_FI_PROF_DRAM_ACTIVE", LBL0, "0.61");
    expect(b, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", LBL0, "0.01");
    expect(b, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", LBL0, "0.2");
    expect(b, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", LBL0, "0.05");
    expect(b, "DCGM_FI_PROF_PCIE_TX_BYTES", LBL0, "1048576000");
    expect(b, "DCGM_FI_PROF_PCIE_RX_BYTES", LBL0, "2097152000");
    expect(b, "gpu_profile_tensor_active_ratio", LBL0, "0.12");
    expect(b, "gpu_profile_nvlink_rx_bytes_per_second", LBL0, "0");
    static const char *const prof[] = {
        "DCGM_FI_PROF_SM_ACTIVE",          "DCGM_FI_PROF_SM_OCCUPANCY",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE",   "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE",   "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",      "gpu_profile_tensor_active_ratio"};
    for (size_t i = 0; i < sizeof prof / sizeof prof[0]; i++)
        absent(b, prof[i], LBL1);
    /* PCIe only with --pcie. */
    CHECK(strstr(b, "gpu_profile_pcie_tx_bytes_per_second") == NULL);
    CHECK_CONTAINS(b, "gpu_profile_sample_age_seconds{gpu=\"2\"");
    /* dcgm-exporter's driver label, last, on every series. */
    CHECK_CONTAINS(b, "\",DCGM_FI_DRIVER_VERSION=\"999.99.99\"} 55\n");
}

static int count_lines_of(const char *body, const char *prefix)
{
    int n = 0;
    for (const char *p = body; (p = strstr(p, prefix)); p++)
        n++;
    return n;
}

/* ----------------------------------------------------- promtool, server */

static void test_promtool(int port)
{
    if (system("command -v promtool >/dev/null 2>&1") != 0) {
        printf("promtool: skipped: no promtool (Debian package prometheus)\n");
        return;
    }
    static char a[1 << 16];
    CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
    char path[512], cmd[1200];
    h_path(path, sizeof path, "metrics.txt");
    const char *b = body_of(a);
    h_write_file(path, b, strlen(b));
    char out[512];
    h_path(out, sizeof out, "promtool.out");
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s > %s 2>&1", path, out);
    int st = system(cmd);
    /* Exit 3 is lint advice only; dcgm-exporter's own names draw two kinds
     * (camelCase labels UUID/modelName/Hostname, a counter without _total),
     * which we keep for its dashboards.  Anything else - a parse error
     * above all - fails. */
    size_t len = 0;
    char *text = check_read_file(out, &len);
    int other = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
        if (!strstr(line, "label names should be written in 'snake_case' not 'camelCase'") &&
            !strstr(line, "counter metrics should have \"_total\" suffix")) {
            fprintf(stderr, "  promtool: %s\n", line);
            other++;
        }
    free(text);
    printf("promtool check metrics: exit %d, %d complaints besides dcgm-exporter's naming\n",
           WIFEXITED(st) ? WEXITSTATUS(st) : -1, other);
    CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3));
    CHECK_INT(other, 0);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void test_prometheus(int port)
{
    if (system("command -v prometheus >/dev/null 2>&1") != 0) {
        printf("prometheus: skipped: no prometheus server (Debian package prometheus)\n");
        return;
    }
    char cfg[512], data[512], log[512], listen[64], text[512];
    h_path(cfg, sizeof cfg, "prometheus.yml");
    h_path(data, sizeof data, "tsdb");
    h_path(log, sizeof log, "prometheus.log");
    int pport = free_port();
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", pport);
    int n = snprintf(text, sizeof text,
                     "global:\n  scrape_interval: 1s\nscrape_configs:\n"
                     "  - job_name: gpu\n    static_configs:\n"
                     "      - targets: ['127.0.0.1:%d']\n",
                     port);
    h_write_file(cfg, text, (size_t)n);
    char cfg_arg[600], data_arg[600];
    snprintf(cfg_arg, sizeof cfg_arg, "--config.file=%s", cfg);
    snprintf(data_arg, sizeof data_arg, "--storage.tsdb.path=%s", data);
    const char *argv[] = {"/usr/bin/prometheus", cfg_arg, data_arg, listen, NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, log, log);
    static char a[1 << 16];
    bool found = false;
    const char *q = "/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL%7Bgpu%3D%220%22%7D";
    for (int i = 0; i < 300 && !found; i++) { /* 30 s at most: it never came */
        h_nap_ms(100);
        if (get(pport, "GET", q, a, sizeof a) == 200 && strstr(a, "\"modelName\":\"NVIDIA H100") &&
            strstr(a, "\"55\"]"))
            found = true;
    }
    printf("prometheus: PromQL DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"}: %s\n",
           found ? "55, scraped from the exporter" : "no answer");
    CHECK(found);
    if (!found)
        fprintf(stderr, "  last answer: %.400s\n", a);
    kill(pid, SIGTERM);
    h_wait(pid);
}

/* ------------------------------------------------------------ load */

typedef struct scraper {
    int port;
    int ok, bad;
    atomic_int *stop;
} scraper;

static void *scrape_loop(void *arg)
{
    scraper *s = arg;
    static __thread char a[1 << 16];
    while (!atomic_load(s->stop)) {
        int st = get(s->port, "GET", "/metrics", a, sizeof a);
        const char *b = body_of(a);
        /* Complete: three GPUs' utilisation and the last family. */
        if (st == 200 && count_lines_of(b, "DCGM_FI_DEV_GPU_UTIL{") >= 2 &&
            strstr(b, "gpu_profile_sample_age_seconds{gpu=\"2\""))
            s->ok++;
        else
            s->bad++;
    }
    return NULL;
}

static void test_load(int port)
{
    enum { N = 50 };
    static scraper s[N];
    pthread_t t[N];
    atomic_int stop = 0;
    for (int i = 0; i < N; i++) {
        s[i] = (scraper){.port = port, .stop = &stop};
        pthread_create(&t[i], NULL, scrape_loop, &s[i]);
    }
    h_nap_ms(10000);
    atomic_store(&stop, 1);
    int ok = 0, bad = 0, idle = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        ok += s[i].ok;
        bad += s[i].bad;
        idle += s[i].ok == 0;
    }
    printf("50 scrapers for 10 s: %d complete answers, %d incomplete, %d scrapers never answered\n",
           ok, bad, idle);
    CHECK_INT(bad, 0);
    CHECK_INT(idle, 0);
}

/* ------------------------------------------------------------ bad input */

static void test_bad_requests(int port)
{
    static char a[1 << 16];
    CHECK_INT(get(port, "GET", "/nope", a, sizeof a), 404);
    CHECK_INT(get(port, "POST", "/metrics", a, sizeof a), 405);
    CHECK_CONTAINS(a, "Allow: GET, HEAD");
    /* A body announced with Expect: 100-continue: the 405 at once, never
     * "100 Continue" (the client would send a body only to be refused). */
    const char *expect100 = "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                            "Expect: 100-continue\r\n\r\n";
    CHECK_INT(exchange(port, expect100, strlen(expect100), a, sizeof a, 5000), 405);
    CHECK(strstr(a, "100 Continue") == NULL);
    CHECK_CONTAINS(a, "Allow: GET, HEAD");
    CHECK_INT(get(port, "HEAD", "/metrics", a, sizeof a), 200);
    CHECK_STR(body_of(a), "");
    CHECK_INT(get(port, "GET", "/", a, sizeof a), 200);
    CHECK_CONTAINS(a, "href=\"/metrics\"");

    /* A client that never finishes its request holds only its own
     * connection. */
    int slow = dial(port);
    CHECK(slow >= 0);
    const char *part = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
    CHECK((size_t)send(slow, part, strlen(part), MSG_NOSIGNAL) == strlen(part));
    CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);

    /* 64 KiB of headers: refused (an error status, or the connection
     * closed), and the server goes on. */
    size_t big = 64u << 10;
    char *req = malloc(big + 256);
    int n = snprintf(req, 256, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(req + n, 'a', big);
    memcpy(req + n + big, "\r\n\r\n", 5);
    int st = exchange(port, req, (size_t)n + big + 4, a, sizeof a, 5000);
    printf("64 KiB of headers: status %d\n", st);
    CHECK(st != 200);
    free(req);
    CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
    close(slow);
}

/* ------------------------------------------------------- slow clients */

/* A connection to [::1]:port, or -1. */
static int dial6(int port)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                             .sin6_port = htons((uint16_t)port),
                             .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Whether the server has closed fd (an end or a reset waiting), without
 * blocking. */
static bool closed_by_server(int fd)
{
    char c[256];
    for (;;) {
        ssize_t r = recv(fd, c, sizeof c, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return true;
        if (r < 0)
            return false;
    }
}

/* A server of its own with extra arguments; its port (0: none), the address
 * it printed into shown. */
static pid_t spawn_server(const char *name, const char *listen, const char *timeout_s, int *port,
                          char *shown, size_t cap)
{
    char err[512], out[512], nm[64];
    snprintf(nm, sizeof nm, "%s.err", name);
    h_path(err, sizeof err, nm);
    snprintf(nm, sizeof nm, "%s.out", name);
    h_path(out, sizeof out, nm);
    const char *argv[] = {h_cli,        "serve", "--listen",          listen,
                          "--interval", "0.05",  "--request-timeout", timeout_s,
                          NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, out, err);
    *port = 0;
    shown[0] = '\0';
    for (int i = 0; i < 400 && !*port; i++) { /* 20 s at most */
        size_t len = 0;
        char *text = check_read_file(err, &len);
        const char *at = text ? strstr(text, "/metrics") : NULL;
        const char *h = text ? strstr(text, "http://") : NULL;
        if (at && h && h < at) {
            snprintf(shown, cap, "%.*s", (int)(at - h - 7), h + 7);
            const char *colon = strrchr(shown, ':');
            *port = colon ? atoi(colon + 1) : 0;
        }
        free(text);
        if (!*port)
            h_nap_ms(50);
    }
    return pid;
}

typedef struct trickle {
    int *fds;
    int n;
    atomic_int stop;
} trickle;

/* One header line to every slow connection each 0.5 s: never silent long
 * enough for the idle timeout, never a finished request. */
static void *trickle_main(void *arg)
{
    trickle *t = arg;
    while (!atomic_load(&t->stop)) {
        for (int i = 0; i < t->n; i++)
            if (t->fds[i] >= 0)
                send(t->fds[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT);
        h_nap_ms(500);
    }
    return NULL;
}

/* 300 trickling connections hold more than the 256 slots; each scrape
 * still gets its answer (the oldest unfinished connection makes room),
 * the evicted ones are exactly the oldest, and the server never holds more
 * than 256.  --request-timeout 3600: eviction alone makes the room. */
static void test_slow_clients(void)
{
    enum { SLOW = 300, SCRAPES = 5, SLOTS = 256 };
    int port;
    char shown[128];
    pid_t pid = spawn_server("serve-slow", "127.0.0.1:0", "3600", &port, shown, sizeof shown);
    CHECK(port > 0);
    static int fds[SLOW];
    int opened = 0;
    for (int i = 0; i < SLOW; i++) {
        fds[i] = port > 0 ? dial(port) : -1;
        const char *part = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
        if (fds[i] >= 0 && send(fds[i], part, strlen(part), MSG_NOSIGNAL) > 0)
            opened++;
    }
    CHECK_INT(opened, port > 0 ? SLOW : 0);
    trickle t = {.fds = fds, .n = SLOW};
    pthread_t th;
    pthread_create(&th, NULL, trickle_main, &t);
    static char a[1 << 16];
    int answered = 0;
    for (int i = 0; i < SCRAPES && port > 0; i++) {
        char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        int st = exchange(port, req, strlen(req), a, sizeof a, 20000);
        answered += st == 200 && strstr(a, "DCGM_FI_DEV_GPU_UTIL{") != NULL;
        if (st != 200)
            break; /* starved: the others would wait as long */
    }
    atomic_store(&t.stop, 1);
    pthread_join(th, NULL);
    int evicted = 0, first_open = SLOW;
    for (int i = 0; i < SLOW; i++)
        if (fds[i] >= 0 && closed_by_server(fds[i]))
            evicted++;
        else if (first_open == SLOW)
            first_open = i;
    printf("300 slow connections: %d of %d scrapes answered, %d evicted, the first still open "
           "#%d\n",
           answered, SCRAPES, evicted, first_open);
    CHECK_INT(answered, SCRAPES);
    /* 44 past the slots, one per scrape at most. */
    CHECK(evicted >= SLOW - SLOTS + 1 && evicted <= SLOW - SLOTS + SCRAPES);
    CHECK_INT(first_open, evicted); /* the oldest went first */
    for (int i = 0; i < SLOW; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    kill(pid, SIGTERM);
    h_wait(pid);
}

/* --request-timeout 1 on ":0" (every address): a connection that sends a
 * header line every 0.2 s but never ends its headers is closed (within 200
 * lines: a bound far past the second it has); IPv4 and IPv6 loopback both
 * answer. */
static void test_deadline_and_dual_stack(void)
{
    int port;
    char shown[128];
    pid_t pid = spawn_server("serve-any", ":0", "1", &port, shown, sizeof shown);
    CHECK(port > 0);
    printf("--listen :0 listens at %s\n", shown);
    int v6 = socket(AF_INET6, SOCK_STREAM, 0);
    if (v6 >= 0) {
        close(v6);
        CHECK(strncmp(shown, "[::]:", 5) == 0);
    } else {
        printf("dual stack: skipped: no IPv6 on this machine\n");
    }
    static char a[1 << 16];
    if (port > 0) {
        CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
        int fd = v6 >= 0 ? dial6(port) : -1;
        CHECK(v6 < 0 || fd >= 0);
        if (fd >= 0) {
            char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
            CHECK(send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
            size_t got = 0;
            struct pollfd p = {fd, POLLIN, 0};
            while (got + 1 < sizeof a && poll(&p, 1, 5000) > 0) {
                ssize_t r = recv(fd, a + got, sizeof a - 1 - got, 0);
                if (r <= 0)
                    break;
                got += (size_t)r;
            }
            a[got] = '\0';
            CHECK(strncmp(a, "HTTP/1.1 200", 12) == 0);
            close(fd);
        }
        int slow = dial(port);
        const char *part = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
        CHECK(slow >= 0 && send(slow, part, strlen(part), MSG_NOSIGNAL) > 0);
        int lines = 0;
        while (slow >= 0 && lines < 200 && !closed_by_server(slow)) {
            send(slow, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
            lines++;
            h_nap_ms(200);
        }
        printf("a request whose headers never end: closed after %d header lines\n", lines);
        CHECK(lines < 200);
        if (slow >= 0)
            close(slow);
        CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
    }
    kill(pid, SIGTERM);
    h_wait(pid);
}

static void test_options(void)
{
    static const char *const bad[][4] = {
        {"serve", "--listen", "nonsense", NULL}, {"serve", "--listen", "127.0.0.1:99999", NULL},
        {"serve", "--interval", "0", NULL},      {"serve", "--bogus", NULL, NULL},
        {"serve", "--device", "7", NULL},        {"serve", "--request-timeout", "0", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[6] = {h_cli};
        for (int k = 0; k < 4 && bad[i][k]; k++)
            argv[k + 1] = bad[i][k];
        h_result r;
        h_run(argv, NULL, NULL, 0, &r);
        printf("%s %s: %d: %s", bad[i][1], bad[i][2] ? bad[i][2] : "", r.code, r.err);
        CHECK_INT(r.code, 125);
        CHECK_CONTAINS(r.err, "gpu-profile: ");
        h_result_free(&r);
    }
    const char *help[] = {h_cli, "serve", "--help", NULL};
    h_result r;
    h_run(help, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "usage: gpu-profile serve [--listen ADDR:PORT]");
    h_result_free(&r);
}

/* libmicrohttpd is serve's alone: not among the command's DT_NEEDED (the
 * other subcommands would pay its and gnutls's dynamic linking), loaded at
 * serve's start with a clear error when it cannot be. */
static void test_mhd_on_demand(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "readelf -d '%s'", h_cli);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    static char dyn[1 << 16];
    size_t n = p ? fread(dyn, 1, sizeof dyn - 1, p) : 0;
    dyn[n] = 0;
    if (p)
        CHECK_INT(pclose(p), 0);
    CHECK_CONTAINS(dyn, "(NEEDED)");
    CHECK_CONTAINS(dyn, "[libc.so.6]");
    CHECK(strstr(dyn, "microhttpd") == NULL);
    CHECK(strstr(dyn, "gnutls") == NULL);

    /* An address no interface has: a serve that ignored the variable would
     * fail to listen (1, another message) rather than serve forever. */
    const char *argv[] = {h_cli, "serve", "--listen", "192.0.2.1:9", NULL};
    const char *missing[] = {"GPU_PROFILE_MHD_LIBRARY=/nonexistent/libmicrohttpd.so.12", NULL};
    h_result r;
    h_run(argv, missing, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_STR(r.err, "gpu-profile: serve: libmicrohttpd (/nonexistent/libmicrohttpd.so.12) could "
                     "not be loaded (/nonexistent/libmicrohttpd.so.12: cannot open shared object "
                     "file: No such file or directory): serve needs it; install it "
                     "(Debian/Ubuntu: apt-get install libmicrohttpd12)\n");
    CHECK_STR(r.out, "");
    h_result_free(&r);

    /* A library that loads but is not libmicrohttpd. */
    const char *wrong[] = {"GPU_PROFILE_MHD_LIBRARY=libz.so.1", NULL};
    h_run(argv, wrong, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_STR(r.err, "gpu-profile: serve: libz.so.1 has no MHD_start_daemon: serve needs "
                     "libmicrohttpd 0.9.71 or later; install it (Debian/Ubuntu: apt-get install "
                     "libmicrohttpd12)\n");
    h_result_free(&r);
}

/* MIG instances (tests/scenarios/nvml_mig.txt) carry dcgm-exporter's
 * labels: gpu, UUID, device and modelName of the parent GPU, then
 * GPU_I_PROFILE and GPU_I_ID; no utilisation line (n/a on an instance). */
static void test_mig(void)
{
    char scen[1024], err[512], out[512];
    snprintf(scen, sizeof scen, "%s/scenarios/nvml_mig.txt", check_env("GP_TEST_SOURCE_DIR"));
    setenv("FAKE_NVML_SCENARIO", scen, 1);
    h_path(err, sizeof err, "serve-mig.err");
    h_path(out, sizeof out, "serve-mig.out");
    const char *argv[] = {h_cli, "serve", "--listen", "127.0.0.1:0", "--interval", "0.05", NULL};
    pid_t pid = h_spawn(argv, NULL, NULL, out, err);
    CHECK(h_wait_for(cond_port, err, 20));
    int port = read_port(err);
    /* Two GPUs, three instances: an instance is not counted as a GPU. */
    char *said = check_read_file(err, NULL);
    CHECK_CONTAINS(said, "gpu-profile: serve: 2 GPUs and 3 MIG instances (backend nvml) every ");
    free(said);
    static char a[1 << 16];
    if (port > 0) {
        for (int i = 0; i < 100; i++) {
            CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
            if (strstr(a, "GPU_I_ID=\"10\",DCGM_FI_DRIVER_VERSION=\"590.48.01\"} 10\n"))
                break;
            h_nap_ms(50);
        }
        const char *lbl = "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-0000-"
                          "000000000000\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
                          "modelName=\"NVIDIA H100 80GB HBM3\","
                          "Hostname=\"";
        CHECK_CONTAINS(a, lbl);
        CHECK_CONTAINS(a, "\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\",DCGM_FI_DRIVER_VERSION="
                          "\"590.48.01\"} 11091\n");
        CHECK_CONTAINS(a, "\",GPU_I_PROFILE=\"2g.20gb\",GPU_I_ID=\"3\",DCGM_FI_DRIVER_VERSION="
                          "\"590.48.01\"} 17\n");
        CHECK_CONTAINS(a, "\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"10\",DCGM_FI_DRIVER_VERSION="
                          "\"590.48.01\"} 10\n");
        /* The parent GPU's own series has no instance labels. */
        CHECK_CONTAINS(a, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"");
        /* No utilisation line for an instance (n/a there, never 0). */
        for (const char *l = a; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            const char *e = strchr(l, '\n');
            size_t n = e ? (size_t)(e - l) : strlen(l);
            char line[1024];
            snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
            if (strncmp(line, "DCGM_FI_DEV_GPU_UTIL{", 21) == 0)
                CHECK(strstr(line, "GPU_I_ID") == NULL);
        }
    }
    kill(pid, SIGTERM);
    h_wait(pid);
}

int main(void)
{
    h_init();
    h_scenario(g_scenario);
    test_options();
    test_mhd_on_demand();
    char err[512], out[512];
    h_path(err, sizeof err, "serve.err");
    h_path(out, sizeof out, "serve.out");
    const char *argv[] = {h_cli, "serve", "--listen", "127.0.0.1:0", "--interval", "0.05", NULL};
    /* Its output into files: a test that dies early leaves no process
     * holding CTest's pipe. */
    pid_t pid = h_spawn(argv, NULL, NULL, out, err);
    CHECK(h_wait_for(cond_port, err, 20));
    int port = read_port(err);
    printf("serving on port %d\n", port);
    if (port > 0) {
        test_values(port);
        test_promtool(port);
        test_bad_requests(port);

        /* The same address again: in use. */
        char spec[64];
        snprintf(spec, sizeof spec, "127.0.0.1:%d", port);
        const char *again[] = {h_cli, "serve", "--listen", spec, NULL};
        h_result r;
        h_run(again, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 1);
        CHECK_CONTAINS(r.err, "cannot listen on");
        h_result_free(&r);

        test_load(port);
        /* By now the lost GPU's values are stale: its age alone. */
        static char a[1 << 16];
        CHECK_INT(get(port, "GET", "/metrics", a, sizeof a), 200);
        CHECK(strstr(a, "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\"") == NULL);
        CHECK_CONTAINS(a, "gpu_profile_sample_age_seconds{gpu=\"2\"");
        expect(body_of(a), "DCGM_FI_DEV_GPU_UTIL", LBL0, "55");
        test_prometheus(port);
    }
    kill(pid, SIGTERM);
    int st = h_wait(pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    test_mig();
    test_slow_clients();
    test_deadline_and_dual_stack();
    h_cleanup();
    return check_done("test_cli_serve");
}
