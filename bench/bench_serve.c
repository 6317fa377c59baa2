/*
 * bench_serve.c - what a scrape of `gpu-profile serve` costs.
 *
 *   bench_serve GPU_PROFILE --fake-nvml DIR [--devices N] [--scrapes K] [--interval S]
 *
 * Starts `gpu-profile serve --listen 127.0.0.1:0` over the fake NVML (DIR:
 * the folder of the fake libnvidia-ml.so.1) with N devices (default 8),
 * sampling every S seconds (default 1), and scrapes /metrics K times
 * (default 2000) one after another on a fresh connection each (as
 * Prometheus does after an idle timeout).  Prints the latency p50 / p99 /
 * max (connect to the last byte), the answer's size, and the server's CPU
 * per scrape: its utime + stime (/proc/PID/stat) over the scrapes, minus
 * the same span idle (its sampling), divided by K.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* utime + stime of pid, in clock ticks. */
static long long cpu_ticks(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    long long ut = 0, st = 0;
    /* after ')': state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &ut, &st) != 2)
        return -1;
    return ut + st;
}

static size_t scrape(int port, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return 0;
    }
    const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
        close(fd);
        return 0;
    }
    size_t got = 0;
    ssize_t r;
    while (got < cap && (r = recv(fd, buf + got, cap - got, 0)) > 0)
        got += (size_t)r;
    close(fd);
    return got;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_serve GPU_PROFILE --fake-nvml DIR [--devices N] "
                        "[--scrapes K] [--interval S]\n");
        return 2;
    }
    const char *cli = argv[1], *fake = NULL, *interval = "1";
    int devices = 8, scrapes = 2000;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--fake-nvml") == 0)
            fake = argv[i + 1];
        else if (strcmp(argv[i], "--devices") == 0)
            devices = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--scrapes") == 0)
            scrapes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--interval") == 0)
            interval = argv[i + 1];
    }
    if (!fake || devices < 1 || devices > 16 || scrapes < 1) {
        fprintf(stderr, "bench_serve: --fake-nvml DIR is needed; 1-16 devices\n");
        return 2;
    }
    char scen[] = "/tmp/bench_serve_XXXXXX";
    int sfd = mkstemp(scen);
    FILE *sf = fdopen(sfd, "w");
    for (int d = 0; d < devices; d++)
        fprintf(sf, "device %d name \"NVIDIA H100 80GB HBM3\"\n", d);
    fclose(sf);
    char errf[] = "/tmp/bench_serve_err_XXXXXX";
    int efd = mkstemp(errf);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("LD_LIBRARY_PATH", fake, 1);
        setenv("FAKE_NVML_SCENARIO", scen, 1);
        dup2(efd, 2);
        execl(cli, cli, "serve", "--listen", "127.0.0.1:0", "--interval", interval, "--backend",
              "nvml", (char *)NULL);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 200 && !port; i++) {
        usleep(50000);
        char buf[1024] = "";
        ssize_t n = pread(efd, buf, sizeof buf - 1, 0);
        if (n > 0) {
            buf[n] = '\0';
            const char *at = strstr(buf, "http://127.0.0.1:");
            if (at)
                port = atoi(at + strlen("http://127.0.0.1:"));
        }
    }
    if (!port) {
        fprintf(stderr, "bench_serve: the server did not start\n");
        kill(pid, SIGKILL);
        return 1;
    }
    static char buf[1 << 20];
    size_t size = scrape(port, buf, sizeof buf); /* warm */
    uint64_t *lat = malloc((size_t)scrapes * sizeof *lat);
    long long c0 = cpu_ticks(pid);
    uint64_t t0 = now_ns();
    for (int i = 0; i < scrapes; i++) {
        uint64_t a = now_ns();
        if (scrape(port, buf, sizeof buf) == 0) {
            fprintf(stderr, "bench_serve: scrape %d failed\n", i);
            break;
        }
        lat[i] = now_ns() - a;
    }
    uint64_t span = now_ns() - t0;
    long long c1 = cpu_ticks(pid);
    /* The same span idle: the sampler's own CPU. */
    struct timespec idle = {(time_t)(span / 1000000000ull), (long)(span % 1000000000ull)};
    nanosleep(&idle, NULL);
    long long c2 = cpu_ticks(pid);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    unlink(scen);
    unlink(errf);
    qsort(lat, (size_t)scrapes, sizeof *lat, cmp_u64);
    double tick_us = 1e6 / (double)sysconf(_SC_CLK_TCK);
    double cpu_us = ((double)(c1 - c0) - (double)(c2 - c1)) * tick_us / scrapes;
    printf("bench_serve: %d devices, %d scrapes, %zu bytes each (headers included)\n", devices,
           scrapes, size);
    printf("latency: p50 %.1f us, p99 %.1f us, max %.1f us\n", lat[scrapes / 2] / 1e3,
           lat[(size_t)scrapes * 99 / 100] / 1e3, lat[scrapes - 1] / 1e3);
    printf("server CPU per scrape: %.1f us (over %.2f s; idle sampling subtracted: %.1f ms)\n",
           cpu_us, span / 1e9, (double)(c2 - c1) * tick_us / 1e3);
    free(lat);
    return 0;
}
