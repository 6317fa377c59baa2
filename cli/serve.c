/*
 * serve.c - `gpu-profile serve`: a long-running Prometheus exporter of the
 * GPUs' newest samples at /metrics (prom.c), served by libmicrohttpd.
 *
 * Promises: bound to loopback unless --listen names another address, and
 * only after the first round of samples (at most 5 s: a scrape right after
 * the address is printed has values); a
 * scrape reads the monitor's newest samples (gp_monitor_latest: a mutex, no
 * NVML call) and never waits on sampling, which runs on the monitor's own
 * thread at --interval; one libmicrohttpd polling thread serves every
 * connection, so a client that never finishes its request holds only its
 * own connection (dropped after 10 s of silence), and headers over 16 KiB
 * are refused with an error status; at most 256 connections at once; a
 * GPU whose newest sample is older than 3 intervals + 2 s is shown by its
 * sample age alone (prom.c).  On
 * INT/TERM/HUP/QUIT the listener and the monitor stop, then the signal
 * ends the process as by default.
 */
#include "cli.h"

#include <microhttpd.h>

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_LISTEN "127.0.0.1:9400"
#define CONN_TIMEOUT_S 10u
#define CONN_LIMIT 256u
#define CONN_MEMORY_BYTES (16u << 10)

typedef struct server {
    gp_monitor *mon;
    uint64_t stale_ns; /* 3 intervals + 2 s: a sample older is a lost GPU's */
    cli_prom_device *devs;
    size_t n;
    char host[256];
} server;

void cli_serve_usage(FILE *f)
{
    fputs("usage: gpu-profile serve [--listen ADDR:PORT] [--interval SECONDS] [--device LIST]\n"
          "                         [--backend auto|nvml|smi|none] [--pcie]\n"
          "                         [--nvml-library FILE] [--smi-path FILE]\n"
          "\n"
          "Samples the GPUs every --interval (default 1 s) and serves the newest values at\n"
          "http://ADDR:PORT/metrics in Prometheus' text format, with dcgm-exporter's metric\n"
          "names and labels (DCGM_FI_DEV_GPU_UTIL{gpu,UUID,device,modelName,Hostname}, ...).\n"
          "--listen defaults to " DEFAULT_LISTEN " (loopback only); \":9400\" listens on every\n"
          "address, \"[::1]:9400\" on IPv6 loopback, port 0 on a free port (printed).\n"
          "--pcie also reads PCIe throughput (NVML blocks ~20 ms a reading).\n"
          "Runs until INT/TERM/HUP/QUIT.  Exit status 1 when the address or the devices\n"
          "cannot be opened, 125 for a bad option.  --nvml-library / --smi-path: the NVML\n"
          "or nvidia-smi to use instead of the default ones.  -h, --help: this text.\n",
          f);
}

/* "ADDR:PORT", ":PORT", "[V6]:PORT" into host (NULL: every address) and port. */
static int split_listen(const char *spec, char *host, size_t cap, char *port, size_t pcap)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || !colon[1] || strlen(colon + 1) >= pcap)
        return -1;
    for (const char *p = colon + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    size_t hl = (size_t)(colon - spec);
    const char *h = spec;
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl >= cap || strtoul(colon + 1, NULL, 10) > 65535)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    snprintf(port, pcap, "%s", colon + 1);
    return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             fl_buf *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        body->len, body->len ? body->p : (void *)"", MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static uint64_t wall_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **state)
{
    (void)version;
    (void)upload_data;
    server *s = cls;
    /* The first call only announces the request (its headers). */
    if (!*state) {
        *state = (void *)1;
        return MHD_YES;
    }
    if (*upload_size) { /* a body we do not want: ignored */
        *upload_size = 0;
        return MHD_YES;
    }
    fl_buf b = {0};
    enum MHD_Result ret;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        fl_buf_puts(&b, "only GET and HEAD\n");
        ret = reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", &b);
    } else if (strcmp(url, "/metrics") == 0) {
        cli_prom_device *d = s->devs;
        for (size_t i = 0; i < s->n; i++)
            d[i].have = gp_monitor_latest(s->mon, i, &d[i].sample) == GP_OK;
        cli_prom_format(&b, d, s->n, s->host, wall_ns(), s->stale_ns);
        ret =
            b.oom ? MHD_NO : reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &b);
    } else if (strcmp(url, "/") == 0) {
        fl_buf_puts(&b, "<html><head><title>gpu-profile</title></head><body>"
                        "<h1>gpu-profile serve</h1><p><a href=\"/metrics\">/metrics</a></p>"
                        "</body></html>\n");
        ret = reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", &b);
    } else {
        fl_buf_puts(&b, "not found: the metrics are at /metrics\n");
        ret = reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", &b);
    }
    fl_buf_free(&b);
    return ret;
}

/* The listener on spec, or NULL after saying why. */
static struct MHD_Daemon *listen_on(const char *spec, server *s, char *shown, size_t cap)
{
    char host[256], port[16];
    if (split_listen(spec, host, sizeof host, port, sizeof port) != 0)
        return NULL; /* parse() checked it */
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int e = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (e != 0 || !ai) {
        cli_say("serve: --listen '%s': %s", spec, gai_strerror(e));
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, &on_request, s, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)CONN_LIMIT, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_BYTES,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        cli_say("serve: cannot listen on %s: %s (in use, or not an address of this machine?)", spec,
                strerror(errno ? errno : EADDRNOTAVAIL));
        return NULL;
    }
    const union MHD_DaemonInfo *fd = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    char h[NI_MAXHOST] = "?", p[NI_MAXSERV] = "?";
    if (fd && getsockname(fd->listen_fd, (struct sockaddr *)&sa, &sl) == 0)
        getnameinfo((struct sockaddr *)&sa, sl, h, sizeof h, p, sizeof p,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(shown, cap, strchr(h, ':') ? "[%s]:%s" : "%s:%s", h, p);
    return d;
}

/* The devices' names and UUIDs, once: the scrapes then need no NVML call. */
static int open_devices(server *s, const gp_options *o)
{
    gp_error err;
    if (gp_monitor_create(o, &s->mon, &err) != GP_OK || gp_monitor_start(s->mon, &err) != GP_OK) {
        cli_say("serve: %s", err.message);
        return -1;
    }
    s->n = gp_monitor_device_count(s->mon);
    /* The first round, before the listener opens: a scrape right after the
     * address is announced has values, and each slot's device index is
     * known (the first sample carries it).  Bounded: a device that never
     * answers is served without values (its sample age tells). */
    for (int waited_ms = 0; waited_ms < 5000; waited_ms += 10) {
        size_t have = 0;
        gp_sample first;
        for (size_t i = 0; i < s->n; i++)
            have += gp_monitor_latest(s->mon, i, &first) == GP_OK;
        if (have == s->n)
            break;
        struct timespec ten_ms = {0, 10000000};
        nanosleep(&ten_ms, NULL);
    }
    s->devs = calloc(s->n ? s->n : 1, sizeof *s->devs);
    gp_device_info *all = NULL;
    size_t n_all = 0;
    char driver[96];
    const char *be = NULL;
    if (!s->devs)
        return -1;
    if (gp_list_devices(o, &all, &n_all, driver, sizeof driver, &be, &err) != GP_OK)
        n_all = 0;
    for (size_t i = 0; i < s->n; i++) {
        gp_sample first;
        uint32_t idx = (uint32_t)i;
        if (gp_monitor_latest(s->mon, i, &first) == GP_OK)
            idx = first.device_index;
        else if (o->n_devices > i)
            idx = o->devices[i];
        s->devs[i].index = idx;
        for (size_t k = 0; k < n_all; k++)
            if (all[k].index == idx) {
                snprintf(s->devs[i].name, sizeof s->devs[i].name, "%s", all[k].name);
                snprintf(s->devs[i].uuid, sizeof s->devs[i].uuid, "%s", all[k].uuid);
                s->devs[i].mig = all[k].mig;
            }
    }
    gp_devices_free(all);
    return 0;
}

enum { K_LISTEN = 256, K_INTERVAL, K_DEVICE, K_BACKEND, K_PCIE, K_NVML_LIBRARY, K_SMI_PATH };
const cli_opt cli_serve_opts[] = {
    {"listen", K_LISTEN, 1, "ADDR:PORT", "ADDR:PORT (e.g. 127.0.0.1:9400, :9400)", NULL},
    {"interval", K_INTERVAL, 1, "SECONDS", "a number of seconds (e.g. 1)", NULL},
    {"device", K_DEVICE, 1, "LIST", "an index, a comma list (0,2), a GPU UUID or all", NULL},
    {"backend", K_BACKEND, 1, "B", "auto, nvml, smi or none", "auto nvml smi none"},
    {"pcie", K_PCIE, 0, NULL, NULL, NULL},
    {"help", 'h', 0, NULL, NULL, NULL},
    {"nvml-library", K_NVML_LIBRARY, 1, "FILE", "the path of libnvidia-ml.so.1", NULL},
    {"smi-path", K_SMI_PATH, 1, "FILE", "the path of nvidia-smi", NULL},
};
const size_t cli_serve_n_opts = sizeof cli_serve_opts / sizeof cli_serve_opts[0];

/* One valued option; -1 after a message. */
static int apply(int key, const char *v, gp_options *o, const char **listen_spec, char *list,
                 size_t list_cap)
{
    char h[256], port[16];
    if (key == K_LISTEN) {
        if (split_listen(v, h, sizeof h, port, sizeof port) != 0) {
            cli_say("serve: --listen '%s' is not ADDR:PORT with a port of 0 to 65535 (e.g. "
                    "127.0.0.1:9400, :9400, [::1]:9400)",
                    v);
            return -1;
        }
        *listen_spec = v;
    } else if (key == K_INTERVAL) {
        return cli_parse_seconds("--interval", v, 0.001, 86400, &o->interval_s);
    } else if (key == K_BACKEND) {
        return cli_parse_backend("--backend", v, &o->backend);
    } else if (key == K_NVML_LIBRARY) {
        o->nvml_library = v;
    } else if (key == K_SMI_PATH) {
        o->smi_path = v;
    } else {
        snprintf(list, list_cap, "%s", v);
    }
    return 0;
}

static int parse(int argc, char **argv, gp_options *o, const char **listen_spec, char *list,
                 size_t list_cap)
{
    cli_getopt g;
    cli_getopt_init(&g, "serve", cli_serve_opts, cli_serve_n_opts, 0);
    const char *v;
    int key;
    while ((key = cli_getopt_next(&g, argc, argv, &v)) != -1) {
        if (key == CLI_OPT_ERROR)
            return -1;
        if (key == 'h') {
            cli_serve_usage(stdout);
            return 1;
        }
        if (key == K_PCIE)
            o->sample_pcie = 1;
        else if (apply(key, v, o, listen_spec, list, list_cap) < 0)
            return -1;
    }
    if (optind < argc) {
        cli_say("serve: unknown argument '%s' (see gpu-profile serve --help)", argv[optind]);
        return -1;
    }
    return 0;
}

/* The devices of --device (or all), as the monitor's list. */
static int resolve_devices(gp_options *o, const char *list, unsigned *idx, size_t cap)
{
    o->device = GP_ALL_DEVICES;
    if (!list[0] || strcmp(list, "all") == 0)
        return 0;
    gp_device_info *devs = NULL;
    size_t n = 0, n_idx = 0;
    char driver[96], msg[512];
    const char *be = NULL;
    gp_error err;
    if (gp_list_devices(o, &devs, &n, driver, sizeof driver, &be, &err) != GP_OK) {
        cli_say("serve: %s", err.message);
        return -1;
    }
    int r = cli_list_resolve(list, CLI_LIST_STRICT, devs, n, idx, cap, &n_idx, msg, sizeof msg);
    gp_devices_free(devs);
    if (r != 0) {
        cli_say("serve: --device %s", msg);
        return -1;
    }
    o->devices = idx;
    o->n_devices = n_idx;
    return 0;
}

int cli_serve_main(int argc, char **argv)
{
    gp_options o;
    gp_options_init(&o);
    o.strict = 1;
    o.interval_s = 1.0;
    const char *spec = DEFAULT_LISTEN;
    char list[1024] = "";
    int p = parse(argc, argv, &o, &spec, list, sizeof list);
    if (p != 0)
        return p > 0 ? 0 : CLI_EXIT_USAGE;
    /* Until the listener runs the signals end the process at once; then
     * they are waited for, so the listener and monitor stop first. */
    sigset_t stop;
    sigemptyset(&stop);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < 4; i++)
        sigaddset(&stop, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    unsigned idx[256];
    server s = {.stale_ns = (uint64_t)((3.0 * o.interval_s + 2.0) * 1e9)};
    gethostname(s.host, sizeof s.host - 1);
    char shown[300];
    struct MHD_Daemon *d = NULL;
    int rc = CLI_EXIT_FAIL;
    if (resolve_devices(&o, list, idx, 256) != 0)
        rc = CLI_EXIT_USAGE;
    else if (open_devices(&s, &o) == 0 && (d = listen_on(spec, &s, shown, sizeof shown)))
        rc = 0;
    if (rc == 0) {
        /* A MIG instance is served as a device of its own, but is no GPU. */
        size_t n_mig = 0;
        for (size_t i = 0; i < s.n; i++)
            n_mig += s.devs[i].mig.is_mig != 0;
        char mig[48] = "";
        if (n_mig)
            snprintf(mig, sizeof mig, " and %zu MIG instance%s", n_mig, n_mig == 1 ? "" : "s");
        cli_fsay(stderr, "serve: %zu GPU%s%s (backend %s) every %g s at http://%s/metrics",
                 s.n - n_mig, s.n - n_mig == 1 ? "" : "s", mig, gp_monitor_backend(s.mon),
                 o.interval_s, shown);
        int sig = 0;
        while (sigwait(&stop, &sig) != 0)
            ;
        MHD_stop_daemon(d);
        gp_monitor_stop(s.mon, NULL);
        gp_monitor_destroy(s.mon);
        free(s.devs);
        signal(sig, SIG_DFL);
        pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
        raise(sig);
        return 128 + sig;
    }
    if (s.mon) {
        gp_monitor_stop(s.mon, NULL);
        gp_monitor_destroy(s.mon);
    }
    free(s.devs);
    return rc;
}
