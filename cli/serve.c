/*
 * serve.c - `gpu-profile serve`: a long-running Prometheus exporter of the
 * GPUs' newest samples at /metrics (prom.c), served by libmicrohttpd.
 *
 * Promises: bound to loopback unless --listen names another address (":PORT"
 * is every address, IPv6 and IPv4 alike), and only after the first round of
 * samples (at most 5 s: a scrape right after the address is printed has
 * values); a scrape reads the monitor's newest samples (gp_monitor_latest:
 * a mutex, no NVML call) and never waits on sampling, which runs on the
 * monitor's own thread at --interval.  One thread (this one) runs
 * libmicrohttpd's event loop, so slow clients cannot starve scrapes: a
 * request's headers must arrive whole within --request-timeout of the
 * connection (or of the previous answer on it), however slowly they
 * trickle; when the 256 connections are taken, a new one evicts the oldest
 * that has not finished its request; a connection silent for 10 s is
 * dropped; headers over 16 KiB are refused with an error status; every
 * answer is given as soon as the headers are in (a body is never read, so
 * `Expect: 100-continue` gets the answer, not 100 Continue).  A GPU whose
 * newest sample is older than 3 intervals + 2 s is shown by its sample age
 * alone (prom.c).  On INT/TERM/HUP/QUIT the listener and the monitor stop,
 * then the signal ends the process as by default.
 *
 * libmicrohttpd (and the gnutls chain it pulls in) is loaded with dlopen at
 * serve's start, not linked: the other subcommands do not pay its dynamic
 * linking.  Without it serve exits 1 naming Debian's libmicrohttpd12;
 * GPU_PROFILE_MHD_LIBRARY names another file to load.
 */
#include "cli.h"

#include <microhttpd.h>

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_LISTEN "127.0.0.1:9400"
#define CONN_TIMEOUT_S 10u
#define CONN_LIMIT 256u
/* libmicrohttpd's own limit is higher by this much: the connection past
 * CONN_LIMIT is accepted, and evicts the oldest unfinished one. */
#define CONN_SLACK 16u
#define CONN_MEMORY_BYTES (16u << 10)
#define DEFAULT_REQUEST_TIMEOUT_S 10.0

/* libmicrohttpd's calls, resolved by name at serve's start (load_mhd).
 * microhttpd.h is kept for the types and constants only (building needs
 * libmicrohttpd-dev's header, not its library); __typeof__ keeps each
 * pointer's prototype the header's, so a mismatch fails the build. */
static struct {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_run) *run;
    __typeof__(MHD_get_timeout) *get_timeout;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
} mhd;

/* 0, or -1 with the reason said.  The handle is never closed: serve runs
 * until a signal ends the process. */
static int load_mhd(void)
{
#define SYM(m) GP_DL_SYM("MHD_", mhd, m)
    const gp_dl_sym syms[] = {SYM(start_daemon),
                              SYM(stop_daemon),
                              SYM(run),
                              SYM(get_timeout),
                              SYM(get_daemon_info),
                              SYM(get_connection_info),
                              SYM(create_response_from_buffer),
                              SYM(add_response_header),
                              SYM(queue_response),
                              SYM(destroy_response)};
#undef SYM
    const char *name, *e, *missing;
    if (gp_dl_load("GPU_PROFILE_MHD_LIBRARY", "libmicrohttpd.so.12", syms,
                   sizeof syms / sizeof syms[0], &name, &e, &missing))
        return 0;
    if (e)
        cli_say("serve: libmicrohttpd (%s) could not be loaded (%s): serve needs it; install it "
                "(Debian/Ubuntu: apt-get install libmicrohttpd12)",
                name, e);
    else
        cli_say("serve: %s has no %s: serve needs libmicrohttpd 0.9.71 or later; install it "
                "(Debian/Ubuntu: apt-get install libmicrohttpd12)",
                name, missing);
    return -1;
}

/* One connection: since when its current request's headers are awaited
 * (its start, or the previous answer's end); busy once they are in. */
typedef struct conn_slot {
    int fd;
    uint64_t since_ns;
    bool used, busy, closing;
} conn_slot;

typedef struct server {
    gp_monitor *mon;
    uint64_t stale_ns; /* 3 intervals + 2 s: a sample older is a lost GPU's */
    cli_prom_device *devs;
    size_t n;
    char host[256];
    char driver[96]; /* the DCGM_FI_DRIVER_VERSION label; "" unknown */
    uint64_t request_timeout_ns;
    conn_slot slots[CONN_LIMIT + CONN_SLACK];
    unsigned live; /* used and not closing */
    /* "Busy but stuck", per slot: fed by the sampling thread (on_sample),
     * read by the scrapes, under stuck_mu. */
    pthread_mutex_t stuck_mu;
    gp_stuck_rule stuck_rule;
    gp_stuck_state *stuck;
    size_t n_stuck;
    /* --processes: each device's list (SERVE_PROCS_CAP a device), read by
     * the scrapes (one thread); max 0: not asked. */
    size_t procs_max;
    gp_process_use *procs;
    const char *proc_root; /* $GPU_PROFILE_TEST_PROC_ROOT (tests), else /proc */
} server;

#define SERVE_PROCS_CAP 256u

static uint64_t wall_ns(void);

/* --processes: each device's newest list, then its series. */
static void format_procs(server *s, fl_buf *b)
{
    for (size_t i = 0; i < s->n; i++) {
        cli_prom_device *d = &s->devs[i];
        d->procs = s->procs + i * SERVE_PROCS_CAP;
        d->procs_have =
            gp_monitor_processes(s->mon, i, d->procs, SERVE_PROCS_CAP, &d->n_procs) == GP_OK;
    }
    cli_prom_format_procs(b, s->devs, s->n, s->host, s->driver, s->procs_max, s->proc_root,
                          wall_ns(), s->stale_ns);
}

void cli_serve_usage(FILE *f)
{
    fputs("usage: gpu-profile serve [--listen ADDR:PORT] [--interval SECONDS] [--device LIST]\n"
          "                         [--backend auto|nvml|smi|amd|none] [--pcie]\n"
          "                         [--nvml-library FILE] [--smi-path FILE]\n"
          "                         [--rocm-smi-library FILE]\n"
          "                         [--request-timeout SECONDS] [--stuck-after SECONDS]\n"
          "                         [--stuck-util PCT] [--stuck-sm PCT] [--stuck-power RATIO]\n"
          "                         [--processes] [--processes-max N]\n"
          "\n"
          "Samples the GPUs every --interval (default 1 s) and serves the newest values at\n"
          "http://ADDR:PORT/metrics in Prometheus' text format, with dcgm-exporter's metric\n"
          "names and labels (DCGM_FI_DEV_GPU_UTIL{gpu,UUID,device,modelName,Hostname}, ...);\n"
          "AMD GPUs (--backend amd) with AMD device-metrics-exporter's (gpu_gfx_activity{\n"
          "gpu_id,gpu_uuid,card_model,hostname}, ...).\n"
          "--listen defaults to " DEFAULT_LISTEN " (loopback only); \":9400\" listens on every\n"
          "address, \"[::1]:9400\" on IPv6 loopback, port 0 on a free port (printed).\n"
          "--pcie also reads PCIe throughput (NVML blocks ~20 ms a reading).\n"
          "--request-timeout: a request's headers must arrive within this many seconds\n"
          "(default 10); at most 256 connections, a new one evicting the oldest that has\n"
          "not finished its request.\n"
          "gpu_profile_stuck is 1 while a GPU is busy but stuck: util.gpu >= --stuck-util\n"
          "(default 90) with GPM SM activity <= --stuck-sm (default 5) and power <=\n"
          "--stuck-power (default 1.25) x the lowest it has shown, for --stuck-after\n"
          "seconds (default 60) of samples in a row; no line without GPM or power.\n"
          "--processes (NVML): per GPU, gpu_profile_processes and, for the --processes-max\n"
          "(default 8) using most memory, gpu_profile_process_memory_bytes and\n"
          "gpu_profile_process_sm_util_percent labelled pid, process_name, container_id,\n"
          "pod_uid; the rest summed into one pid=\"other\" line.\n"
          "Runs until INT/TERM/HUP/QUIT.  Exit status 1 when the address or the devices\n"
          "cannot be opened, 125 for a bad option.  --nvml-library / --smi-path /\n"
          "--rocm-smi-library: the NVML, nvidia-smi or ROCm SMI to use instead of the\n"
          "default ones.  -h, --help: this text.\n",
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
    struct MHD_Response *r = mhd.create_response_from_buffer(
        body->len, body->len ? body->p : (void *)"", MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = mhd.queue_response(c, status, r);
    mhd.destroy_response(r);
    return ret;
}

static uint64_t wall_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* shutdown(), not close(): libmicrohttpd owns the descriptor and closes it
 * itself when it sees the end (on this same thread, so the fd is still the
 * connection's). */
static void evict(server *s, conn_slot *k)
{
    shutdown(k->fd, SHUT_RDWR);
    k->closing = true;
    s->live--;
}

/* Connections past CONN_LIMIT: the oldest whose request is not in yet goes
 * (the newest itself when every other one is being answered). */
static void evict_oldest(server *s)
{
    conn_slot *old = NULL;
    for (size_t i = 0; i < CONN_LIMIT + CONN_SLACK; i++) {
        conn_slot *k = &s->slots[i];
        if (k->used && !k->busy && !k->closing && (!old || k->since_ns < old->since_ns))
            old = k;
    }
    if (old)
        evict(s, old);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
                          enum MHD_ConnectionNotificationCode toe)
{
    server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_slot *k = *ctx;
        if (k) {
            s->live -= !k->closing;
            memset(k, 0, sizeof *k);
        }
        *ctx = NULL;
        return;
    }
    const union MHD_ConnectionInfo *fd =
        mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    conn_slot *k = NULL;
    for (size_t i = 0; i < CONN_LIMIT + CONN_SLACK && !k; i++)
        if (!s->slots[i].used)
            k = &s->slots[i];
    if (!k || !fd) /* cannot happen: libmicrohttpd's limit is the table's size */
        return;
    *k = (conn_slot){.fd = fd->connect_fd, .since_ns = mono_ns(), .used = true};
    *ctx = k;
    if (++s->live > CONN_LIMIT)
        evict_oldest(s);
}

static conn_slot *slot_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* A request answered (or abandoned): the next one's headers are awaited
 * from now. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)state;
    (void)toe;
    conn_slot *k = slot_of(c);
    if (k) {
        k->busy = false;
        k->since_ns = mono_ns();
    }
}

/* The connections whose headers are overdue, shut; the milliseconds until
 * the next deadline (-1: none). */
static int reap(server *s)
{
    uint64_t now = mono_ns(), next = UINT64_MAX;
    for (size_t i = 0; i < CONN_LIMIT + CONN_SLACK; i++) {
        conn_slot *k = &s->slots[i];
        if (!k->used || k->busy || k->closing)
            continue;
        uint64_t due = k->since_ns + s->request_timeout_ns;
        if (due <= now)
            evict(s, k);
        else if (due < next)
            next = due;
    }
    if (next == UINT64_MAX)
        return -1;
    uint64_t ms = (next - now) / 1000000u + 1;
    return ms > 60000 ? 60000 : (int)ms;
}

/* Answered on the first call, when the headers are in: a body is never
 * wanted, so none is read (nor a 100 Continue sent for one). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **state)
{
    (void)version;
    (void)upload_data;
    (void)state;
    server *s = cls;
    conn_slot *k = slot_of(c);
    if (k)
        k->busy = true;
    *upload_size = 0;
    fl_buf b = {0};
    enum MHD_Result ret;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        fl_buf_puts(&b, "only GET and HEAD\n");
        ret = reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", &b);
    } else if (strcmp(url, "/metrics") == 0) {
        cli_prom_device *d = s->devs;
        for (size_t i = 0; i < s->n; i++)
            d[i].have = gp_monitor_latest(s->mon, i, &d[i].sample) == GP_OK;
        pthread_mutex_lock(&s->stuck_mu);
        for (size_t i = 0; i < s->n; i++)
            d[i].stuck = i < s->n_stuck && s->stuck[i].known ? s->stuck[i].stuck : -1;
        pthread_mutex_unlock(&s->stuck_mu);
        cli_prom_format(&b, d, s->n, s->host, s->driver, wall_ns(), s->stale_ns);
        if (s->procs_max)
            format_procs(s, &b);
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

static struct MHD_Daemon *start(server *s, unsigned flags, const struct sockaddr *sa)
{
    return mhd.start_daemon(flags | MHD_USE_EPOLL, 0, NULL, NULL, &on_request, s,
                            MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)CONN_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)(CONN_LIMIT + CONN_SLACK), MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            (size_t)CONN_MEMORY_BYTES, MHD_OPTION_NOTIFY_CONNECTION, &on_connection,
                            s, MHD_OPTION_NOTIFY_COMPLETED, &on_completed, s, MHD_OPTION_END);
}

/* The listener on spec, or NULL after saying why.  No host (":PORT"): one
 * IPv6 socket that takes IPv4 too, else (no IPv6 here) IPv4's any. */
static struct MHD_Daemon *listen_on(const char *spec, server *s, char *shown, size_t cap)
{
    char host[256], port[16];
    if (split_listen(spec, host, sizeof host, port, sizeof port) != 0)
        return NULL; /* parse() checked it */
    struct MHD_Daemon *d = NULL;
    errno = 0;
    if (!host[0]) {
        struct sockaddr_in6 any6 = {.sin6_family = AF_INET6,
                                    .sin6_port = htons((uint16_t)atoi(port)),
                                    .sin6_addr = IN6ADDR_ANY_INIT};
        struct sockaddr_in any4 = {.sin_family = AF_INET,
                                   .sin_port = htons((uint16_t)atoi(port)),
                                   .sin_addr.s_addr = htonl(INADDR_ANY)};
        int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0) {
            close(probe);
            d = start(s, MHD_USE_DUAL_STACK, (const struct sockaddr *)&any6);
        } else {
            d = start(s, 0, (const struct sockaddr *)&any4);
        }
    } else {
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
        struct addrinfo *ai = NULL;
        int e = getaddrinfo(host, port, &hints, &ai);
        if (e != 0 || !ai) {
            cli_say("serve: --listen '%s': %s", spec, gai_strerror(e));
            return NULL;
        }
        d = start(s, ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0, ai->ai_addr);
        freeaddrinfo(ai);
    }
    if (!d) {
        cli_say("serve: cannot listen on %s: %s (in use, or not an address of this machine?)", spec,
                strerror(errno ? errno : EADDRNOTAVAIL));
        return NULL;
    }
    const union MHD_DaemonInfo *fd = mhd.get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    char h[NI_MAXHOST] = "?", p[NI_MAXSERV] = "?";
    if (fd && getsockname(fd->listen_fd, (struct sockaddr *)&sa, &sl) == 0)
        getnameinfo((struct sockaddr *)&sa, sl, h, sizeof h, p, sizeof p,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(shown, cap, strchr(h, ':') ? "[%s]:%s" : "%s:%s", h, p);
    return d;
}

/* libmicrohttpd's events and the stop signals on this thread until one of
 * those comes; the signal. */
static int serve_until_signal(server *s, struct MHD_Daemon *d, const sigset_t *stop)
{
    int sfd = signalfd(-1, stop, SFD_CLOEXEC);
    const union MHD_DaemonInfo *ep = mhd.get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
    if (sfd < 0 || !ep) { /* cannot happen on Linux; then only the signal is awaited */
        int sig = SIGTERM;
        while (sigwait(stop, &sig) != 0)
            ;
        if (sfd >= 0)
            close(sfd);
        return sig;
    }
    struct pollfd p[2] = {{ep->epoll_fd, POLLIN, 0}, {sfd, POLLIN, 0}};
    for (;;) {
        int wait_ms = reap(s);
        MHD_UNSIGNED_LONG_LONG mhd_ms;
        if (mhd.get_timeout(d, &mhd_ms) == MHD_YES && (wait_ms < 0 || mhd_ms < (unsigned)wait_ms))
            wait_ms = mhd_ms > 60000 ? 60000 : (int)mhd_ms;
        if (poll(p, 2, wait_ms) < 0 && errno != EINTR)
            break;
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                close(sfd);
                return (int)si.ssi_signo;
            }
        }
        mhd.run(d);
    }
    close(sfd);
    int sig = SIGTERM;
    while (sigwait(stop, &sig) != 0)
        ;
    return sig;
}

/* Every sample, on the sampling thread: the slot's stuck detector. */
static void on_sample(const gp_sample *sm, void *user)
{
    server *s = user;
    pthread_mutex_lock(&s->stuck_mu);
    if (sm->slot < s->n_stuck)
        (void)gp_stuck_feed(&s->stuck[sm->slot], &s->stuck_rule, &sm->m);
    pthread_mutex_unlock(&s->stuck_mu);
}

/* The devices' names and UUIDs, once: the scrapes then need no NVML call. */
static int open_devices(server *s, gp_options *o)
{
    gp_error err;
    /* One detector per slot, before the first sample can arrive. */
    s->stuck = calloc(256, sizeof *s->stuck);
    if (!s->stuck)
        return -1;
    s->n_stuck = 256;
    o->on_sample = on_sample;
    o->on_sample_user = s;
    if (gp_monitor_create(o, &s->mon, &err) != GP_OK ||
        (s->procs_max && gp_monitor_list_processes(s->mon, &err) != GP_OK) ||
        gp_monitor_start(s->mon, &err) != GP_OK) {
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
    if (s->procs_max && !(s->procs = calloc((s->n ? s->n : 1) * SERVE_PROCS_CAP, sizeof *s->procs)))
        return -1;
    gp_device_info *all = NULL;
    size_t n_all = 0;
    char driver[96];
    const char *be = NULL;
    if (!s->devs)
        return -1;
    if (gp_list_devices(o, &all, &n_all, driver, sizeof driver, &be, &err) != GP_OK)
        n_all = 0;
    else
        snprintf(s->driver, sizeof s->driver, "%s", driver);
    for (size_t i = 0; i < s->n; i++) {
        gp_sample first;
        uint32_t idx = (uint32_t)i;
        if (gp_monitor_latest(s->mon, i, &first) == GP_OK)
            idx = first.device_index;
        else if (o->n_devices > i)
            idx = o->devices[i];
        s->devs[i].index = idx;
        s->devs[i].amd = strcmp(gp_monitor_backend(s->mon), "amd") == 0;
        for (size_t k = 0; k < n_all; k++)
            if (all[k].index == idx) {
                snprintf(s->devs[i].name, sizeof s->devs[i].name, "%s", all[k].name);
                snprintf(s->devs[i].uuid, sizeof s->devs[i].uuid, "%s", all[k].uuid);
                s->devs[i].mig = all[k].mig;
                snprintf(s->devs[i].pci_bus_id, sizeof s->devs[i].pci_bus_id, "%s",
                         all[k].pci_bus_id);
            }
    }
    gp_devices_free(all);
    return 0;
}

enum {
    K_LISTEN = 256,
    K_INTERVAL,
    K_DEVICE,
    K_PCIE,
    K_REQUEST_TIMEOUT,
    K_STUCK_AFTER,
    K_STUCK_UTIL,
    K_STUCK_SM,
    K_STUCK_POWER,
    K_PROCESSES,
    K_PROCESSES_MAX
};
const cli_opt cli_serve_opts[] = {
    {"listen", K_LISTEN, 1, "ADDR:PORT", "ADDR:PORT (e.g. 127.0.0.1:9400, :9400)", NULL},
    {"interval", K_INTERVAL, 1, "SECONDS", "a number of seconds (e.g. 1)", NULL},
    {CLI_ROW_DEVICE(K_DEVICE)},
    {CLI_ROW_BACKEND},
    {"pcie", K_PCIE, 0, NULL, NULL, NULL},
    {"help", 'h', 0, NULL, NULL, NULL},
    {CLI_ROW_NVML_LIBRARY},
    {CLI_ROW_SMI_PATH},
    {"request-timeout", K_REQUEST_TIMEOUT, 1, "SECONDS", "a number of seconds (e.g. 10)", NULL},
    {CLI_ROW_ROCM_SMI_LIBRARY},
    {"stuck-after", K_STUCK_AFTER, 1, "SECONDS", "a number of seconds (e.g. 60)", NULL},
    {"stuck-util", K_STUCK_UTIL, 1, "PCT", "a percentage (e.g. 90)", NULL},
    {"stuck-sm", K_STUCK_SM, 1, "PCT", "a percentage (e.g. 5)", NULL},
    {"stuck-power", K_STUCK_POWER, 1, "RATIO", "a ratio to the idle power (e.g. 1.25)", NULL},
    {"processes", K_PROCESSES, 0, NULL, NULL, NULL},
    {"processes-max", K_PROCESSES_MAX, 1, "N", "a whole number from 1 to 256 (e.g. 8)", NULL},
};
const size_t cli_serve_n_opts = sizeof cli_serve_opts / sizeof cli_serve_opts[0];

/* What serve's options give besides the monitor's. */
typedef struct serve_args {
    const char *listen;
    char list[1024]; /* --device */
    double request_timeout_s;
    double stuck_after_s;
    gp_stuck_rule stuck;
    bool processes;
    double processes_max;
} serve_args;

/* A plain decimal number in [min, max] into *out; -1 after a message. */
static int parse_number(const char *opt, const char *text, double min, double max, const char *what,
                        double *out)
{
    char *end = NULL;
    errno = 0;
    double d = text[0] && (text[0] == '.' || (text[0] >= '0' && text[0] <= '9'))
                   ? strtod(text, &end)
                   : NAN;
    if (!end || end == text || *end || errno == ERANGE || !isfinite(d) || d < min || d > max) {
        cli_say("serve: %s '%s' is not %s from %g to %g", opt, text, what, min, max);
        return -1;
    }
    *out = d;
    return 0;
}

/* What parse() fills: the monitor's options and serve's own. */
typedef struct serve_parse {
    gp_options *o;
    serve_args *a;
} serve_parse;

/* One option; -1 after a message. */
static int apply(void *ctx, int key, const char *v)
{
    gp_options *o = ((serve_parse *)ctx)->o;
    serve_args *a = ((serve_parse *)ctx)->a;
    char h[256], port[16];
    int r = cli_backend_option(o, key, v);
    if (r <= 0)
        return r;
    if (key == K_PCIE) {
        o->sample_pcie = 1;
    } else if (key == K_PROCESSES) {
        a->processes = true;
    } else if (key == K_LISTEN) {
        if (split_listen(v, h, sizeof h, port, sizeof port) != 0) {
            cli_say("serve: --listen '%s' is not ADDR:PORT with a port of 0 to 65535 (e.g. "
                    "127.0.0.1:9400, :9400, [::1]:9400)",
                    v);
            return -1;
        }
        a->listen = v;
    } else if (key == K_INTERVAL) {
        return cli_parse_seconds("--interval", v, 0.001, 86400, &o->interval_s);
    } else if (key == K_REQUEST_TIMEOUT) {
        return cli_parse_seconds("--request-timeout", v, 0.001, 3600, &a->request_timeout_s);
    } else if (key == K_STUCK_AFTER) {
        return cli_parse_seconds("--stuck-after", v, 0.001, 86400, &a->stuck_after_s);
    } else if (key == K_STUCK_UTIL) {
        return parse_number("--stuck-util", v, 0, 100, "a percentage", &a->stuck.util_min_pct);
    } else if (key == K_STUCK_SM) {
        return parse_number("--stuck-sm", v, 0, 100, "a percentage", &a->stuck.sm_active_max_pct);
    } else if (key == K_STUCK_POWER) {
        return parse_number("--stuck-power", v, 1, 100, "a ratio", &a->stuck.power_idle_ratio);
    } else if (key == K_PROCESSES_MAX) {
        if (parse_number("--processes-max", v, 1, SERVE_PROCS_CAP, "a whole number",
                         &a->processes_max) != 0)
            return -1;
        if (a->processes_max != floor(a->processes_max)) {
            cli_say("serve: --processes-max '%s' is not a whole number from 1 to %u", v,
                    SERVE_PROCS_CAP);
            return -1;
        }
    } else {
        snprintf(a->list, sizeof a->list, "%s", v);
    }
    return 0;
}

static int parse(int argc, char **argv, gp_options *o, serve_args *a)
{
    serve_parse p = {o, a};
    return cli_getopt_each("serve", cli_serve_opts, cli_serve_n_opts, CLI_OPERANDS_NONE, argc, argv,
                           cli_serve_usage, apply, &p);
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
    serve_args a = {.listen = DEFAULT_LISTEN,
                    .request_timeout_s = DEFAULT_REQUEST_TIMEOUT_S,
                    .stuck_after_s = 60.0};
    gp_stuck_rule_init(&a.stuck);
    int p = parse(argc, argv, &o, &a);
    if (p == 0 && a.processes_max > 0 && !a.processes) {
        cli_say("serve: --processes-max needs --processes (add --processes)");
        p = -1;
    }
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
    static server s; /* its connection table is large for a stack */
    s.stale_ns = (uint64_t)((3.0 * o.interval_s + 2.0) * 1e9);
    s.request_timeout_ns = (uint64_t)(a.request_timeout_s * 1e9);
    /* The stretch as a number of samples: the same samples decide alike
     * at any pace (a round that overran still counts one). */
    s.stuck_rule = a.stuck;
    double n_stuck = ceil(a.stuck_after_s / o.interval_s - 1e-9);
    s.stuck_rule.after_samples = n_stuck < 1 ? 1 : n_stuck > 1e9 ? 1000000000u : (uint32_t)n_stuck;
    pthread_mutex_init(&s.stuck_mu, NULL);
    s.procs_max = a.processes ? (a.processes_max > 0 ? (size_t)a.processes_max : 8) : 0;
    s.proc_root = getenv("GPU_PROFILE_TEST_PROC_ROOT");
    gethostname(s.host, sizeof s.host - 1);
    char shown[300];
    struct MHD_Daemon *d = NULL;
    int rc = CLI_EXIT_FAIL;
    if (resolve_devices(&o, a.list, idx, 256) != 0)
        rc = CLI_EXIT_USAGE;
    /* Loaded before any device is opened: a missing library costs nothing. */
    else if (load_mhd() == 0 && open_devices(&s, &o) == 0 &&
             (d = listen_on(a.listen, &s, shown, sizeof shown)))
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
        int sig = serve_until_signal(&s, d, &stop);
        mhd.stop_daemon(d);
        gp_monitor_stop(s.mon, NULL);
        gp_monitor_destroy(s.mon);
        free(s.devs);
        free(s.stuck);
        free(s.procs);
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
    free(s.stuck);
    free(s.procs);
    return rc;
}
