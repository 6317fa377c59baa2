/*
 * sampler/backends/smi.c - the nvidia-smi backend (self-paced).
 *
 * open() finds the binary (smi_path, else PATH) and runs ONE time-limited
 * discovery query; start() runs ONE long-lived
 *   nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N -i a,b
 * whose rows wait_tick() reads with poll() on a non-blocking pipe, together
 * with a wake-up pipe that interrupt() writes to.  No call blocks without a
 * bound: a hung nvidia-smi costs the caller its deadline, stop() kills the
 * child (SIGTERM, then SIGKILL) and reaps it by its own pid only, so a
 * program's SIGCHLD handler or other children are left alone.
 *
 * The child processes themselves (spawn, reading with deadlines, kill,
 * reap) are smi_proc.c's; this file decides what to ask nvidia-smi and
 * turns its answers into devices, rounds and messages.
 */
#include "../../util/error.h"
#include "../../util/fs.h"
#include "backend.h"
#include "smi_parse.h"
#include "smi_proc.h"
#include "gpu_profile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SMI_DEFAULT_TIMEOUT_NS 5000000000ull
#define SMI_MAX_TIMEOUT_NS (24ull * 3600ull * 1000000000ull)
/* How long a child that closed its output gets to exit before it is killed. */
#define SMI_EXIT_WAIT_NS 500000000ull
#define SMI_TEXT_MAX 400
#define SMI_DRIVER_MAX 64

/* One device of a run: its state in one place, allocated with the run's. */
typedef struct smi_slot {
    unsigned index; /* nvidia-smi's index (a MIG instance: its parent's) */
    bool mig;       /* a MIG instance: its parent's rows, no values of its own */
    bool have;      /* pend holds this round's sample */
    gp_device_sample pend;
} smi_slot;

typedef struct smi_ctx {
    char path[PATH_MAX];
    uint64_t timeout_ns;

    unsigned n_dev;
    gp_device_info *devs;
    char driver[SMI_DRIVER_MAX];

    int wake_rd, wake_wr; /* interrupt() -> wait_tick() */

    /* Streaming run. */
    bool started;
    smi_child child;
    size_t n_slots;
    smi_slot *slots;
    size_t n_have;
    smi_lines lines; /* the child's output */
    bool dead;       /* the child is gone: wait_tick repeats dead_msg */
    gp_status dead_status;
    char dead_msg[GP_ERROR_MESSAGE_MAX];
    char last_text[SMI_TEXT_MAX]; /* the last line that was not a row */
    uint64_t malformed_lines;     /* lines that were not rows (over-long ones: lines.overlong) */
} smi_ctx;

/* ------------------------------------------------------------- helpers */

/* The first lines of a child's text, trimmed and joined, for messages. */
static void summarize_text(const char *text, char *out, size_t cap)
{
    size_t used = 0;
    int lines = 0;
    out[0] = '\0';
    const char *p = text;
    while (*p && lines < 3 && used + 1 < cap) {
        const char *e = strchr(p, '\n');
        if (!e)
            e = p + strlen(p);
        const char *b = p;
        while (b < e && (*b == ' ' || *b == '\t' || *b == '\r'))
            b++;
        const char *t = e;
        while (t > b && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r'))
            t--;
        if (t > b) {
            int n = snprintf(out + used, cap - used, "%s%.*s", used ? " " : "", (int)(t - b), b);
            if (n < 0)
                break;
            used += (size_t)n < cap - used ? (size_t)n : cap - used - 1;
            lines++;
        }
        p = *e ? e + 1 : e;
    }
}

/* ------------------------------------------------------------- discovery */

static bool is_executable_file(const char *path, int *why)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        *why = errno;
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = EISDIR;
        return false;
    }
    if (access(path, X_OK) != 0) {
        *why = errno;
        return false;
    }
    return true;
}

static gp_status locate_binary(const char *want, char *out, size_t cap, gp_error *err)
{
    int why = 0;
    if (want && strchr(want, '/')) {
        if (!is_executable_file(want, &why))
            return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                                "smi: nvidia-smi not found at '%s' (%s): install the NVIDIA "
                                "driver or fix smi_path",
                                want, why == EISDIR ? "not a regular file" : strerror(why));
        snprintf(out, cap, "%s", want);
        return GP_OK;
    }
    const char *name = want && *want ? want : "nvidia-smi";
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char cand[PATH_MAX];
        /* An empty PATH entry means the current directory, as for execvp. */
        int w = n ? snprintf(cand, sizeof cand, "%.*s/%s", (int)n, p, name)
                  : snprintf(cand, sizeof cand, "./%s", name);
        if (w > 0 && (size_t)w < sizeof cand && is_executable_file(cand, &why)) {
            snprintf(out, cap, "%s", cand);
            return GP_OK;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                        "smi: %s not found in PATH (%s): install the NVIDIA driver or set smi_path",
                        name, path);
}

/* The discovery query's rows become c->devs and c->driver; text is freed. */
static gp_status take_devices(smi_ctx *c, char *text, gp_error *err)
{
    size_t cap = 8, n = 0;
    gp_device_info *devs = malloc(cap * sizeof *devs);
    char other[SMI_TEXT_MAX] = "";
    for (char *line = text; devs && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        gp_device_info d;
        char drv[SMI_DRIVER_MAX];
        if (gp_smi_parse_device(line, &d, drv, sizeof drv) == GP_OK) {
            if (n == cap) {
                gp_device_info *g = realloc(devs, 2 * cap * sizeof *devs);
                if (!g) {
                    free(devs);
                    devs = NULL;
                    break;
                }
                devs = g;
                cap *= 2;
            }
            devs[n++] = d;
            if (!c->driver[0])
                snprintf(c->driver, sizeof c->driver, "%s", drv);
        } else if (!other[0]) {
            summarize_text(line, other, sizeof other);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (!devs)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    if (n == 0) {
        free(devs);
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE, "smi: %s listed no GPU: %s",
                            fl_path_show(c->path).text, other[0] ? other : "(no output)");
    }
    c->devs = devs;
    c->n_dev = (unsigned)n;
    return GP_OK;
}

/* ------------------------------------------------------------------- MIG */

#define SMI_MIG_MAX 64

/* The output of one `nvidia-smi ARGS` run for MIG discovery, or NULL when
 * it failed (then no instance is listed: the GPUs are sampled as before). */
static char *run_quiet(smi_ctx *c, char *const argv[])
{
    smi_child ch;
    char *text = NULL;
    gp_error e;
    if (gp_smi_run_once(c->path, argv, c->timeout_ns, &ch, &text, &e) != GP_OK)
        return NULL;
    if (ch.status_known && (!WIFEXITED(ch.wstatus) || WEXITSTATUS(ch.wstatus) != 0)) {
        free(text);
        return NULL;
    }
    return text;
}

/* One MIG instance as a device after the GPUs: parent p (a position in
 * c->devs), named like NVML names it ("<parent> MIG <profile>"). */
static void add_instance(smi_ctx *c, unsigned p, const smi_mig_row *r)
{
    const gp_device_info parent = c->devs[p]; /* a copy: m is in the same array */
    const gp_device_info *g = &parent;
    gp_device_info *m = &c->devs[c->n_dev++];
    memset(m, 0, sizeof *m);
    m->index = g->index; /* what -i gets: the parent's rows carry its pace */
    size_t gn = strnlen(g->name, sizeof g->name), pn = strnlen(r->profile, sizeof r->profile);
    snprintf(m->name, sizeof m->name, "%.*s MIG %.*s", (int)gn, g->name, (int)pn, r->profile);
    snprintf(m->uuid, sizeof m->uuid, "%s", r->uuid);
    if (r->have_mem) {
        m->valid = GP_M_MEM_TOTAL;
        m->mem_total_bytes = r->mem_total_bytes;
    }
    m->mig.is_mig = 1;
    m->mig.parent_index = p;
    snprintf(m->mig.parent_uuid, sizeof m->mig.parent_uuid, "%s", g->uuid);
    snprintf(m->mig.parent_name, sizeof m->mig.parent_name, "%s", g->name);
    snprintf(m->mig.profile, sizeof m->mig.profile, "%s", r->profile);
    m->mig.gpu_instance_id = r->gi;
    m->mig.compute_instance_id = r->ci;
}

/* MIG instances, which --query-gpu does not list: `nvidia-smi -L` names
 * them; the default table (run only when there is one) gives their ids and
 * memory.  Either run failing lists no instance, or leaves ids and memory
 * unknown: never an error. */
static gp_status discover_mig(smi_ctx *c, gp_error *err)
{
    char *list_argv[] = {c->path, "-L", NULL};
    char *text = run_quiet(c, list_argv);
    if (!text)
        return GP_OK;
    smi_mig_row rows[SMI_MIG_MAX];
    size_t n = gp_smi_parse_mig_list(text, rows, SMI_MIG_MAX);
    free(text);
    if (n == 0)
        return GP_OK;
    if (n > SMI_MIG_MAX)
        n = SMI_MIG_MAX;
    char *table_argv[] = {c->path, NULL};
    if ((text = run_quiet(c, table_argv)) != NULL) {
        gp_smi_parse_mig_table(text, rows, n);
        free(text);
    }
    gp_device_info *d = realloc(c->devs, (c->n_dev + n) * sizeof *d);
    if (!d)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    c->devs = d;
    unsigned n_gpus = c->n_dev;
    for (size_t i = 0; i < n; i++) {
        for (unsigned p = 0; p < n_gpus; p++) {
            if (d[p].index == rows[i].gpu) {
                add_instance(c, p, &rows[i]);
                break;
            }
        }
    }
    return GP_OK;
}

/* Runs the one-shot discovery query and keeps the devices it lists. */
static gp_status discover(smi_ctx *c, gp_error *err)
{
    char *argv[] = {c->path, "--query-gpu=" SMI_DEVICE_FIELDS, "--format=csv,noheader,nounits",
                    NULL};
    smi_child ch;
    char *text = NULL;
    gp_status st = gp_smi_run_once(c->path, argv, c->timeout_ns, &ch, &text, err);
    if (st != GP_OK)
        return st;

    char said[SMI_TEXT_MAX];
    summarize_text(text, said, sizeof said);
    char how[96];
    gp_smi_child_describe_exit(&ch, how, sizeof how);
    /* An unknown status (a program that sets SIGCHLD to SIG_IGN reaps for
     * us) is judged by the output alone. */
    if (ch.status_known && (!WIFEXITED(ch.wstatus) || WEXITSTATUS(ch.wstatus) != 0)) {
        /* nvidia-smi's own words say why (no driver, no device, bad field). */
        st = gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE, "smi: %s failed with %s: %s",
                          fl_path_show(c->path).text, how, said[0] ? said : "(no output)");
        free(text);
        return st;
    }
    st = take_devices(c, text, err);
    return st == GP_OK ? discover_mig(c, err) : st;
}

/* ------------------------------------------------------------- backend */

static void smi_stop(void *ctx);

static void smi_close(void *ctx)
{
    smi_ctx *c = ctx;
    if (!c)
        return;
    smi_stop(c);
    gp_smi_close_fd(&c->wake_rd);
    gp_smi_close_fd(&c->wake_wr);
    free(c->devs);
    free(c);
}

static gp_status smi_open(const gp_backend_config *cfg, void **ctx, gp_error *err)
{
    *ctx = NULL;
    smi_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    c->wake_rd = c->wake_wr = -1;
    c->child.fd = -1;
    c->timeout_ns = cfg && cfg->timeout_ns ? cfg->timeout_ns : SMI_DEFAULT_TIMEOUT_NS;
    if (c->timeout_ns > SMI_MAX_TIMEOUT_NS)
        c->timeout_ns = SMI_MAX_TIMEOUT_NS; /* keeps now + timeout from wrapping */

    gp_status st = locate_binary(cfg ? cfg->smi_path : NULL, c->path, sizeof c->path, err);
    if (st == GP_OK) {
        int w[2];
        if (pipe2(w, O_CLOEXEC | O_NONBLOCK) != 0) {
            st = gp_error_set(err, GP_ERR_IO, "smi: cannot create a pipe: %s", strerror(errno));
        } else {
            c->wake_rd = w[0];
            c->wake_wr = w[1];
        }
    }
    if (st == GP_OK)
        st = discover(c, err);
    if (st != GP_OK) {
        smi_close(c);
        return st;
    }
    *ctx = c;
    return GP_OK;
}

static gp_status smi_device_count(void *ctx, unsigned *count, gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c)
        return gp_error_set(err, GP_ERR_STATE, "smi: the backend is not open");
    *count = c->n_dev;
    return GP_OK;
}

static void describe_devices(const smi_ctx *c, char *buf, size_t len)
{
    if (c->n_dev == 0)
        snprintf(buf, len, "no device");
    else if (c->n_dev == 1)
        snprintf(buf, len, "1 device (0)");
    else
        snprintf(buf, len, "%u devices (0-%u)", c->n_dev, c->n_dev - 1);
}

static gp_status smi_device_info(void *ctx, unsigned index, gp_device_info *out, gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c)
        return gp_error_set(err, GP_ERR_STATE, "smi: the backend is not open");
    if (index >= c->n_dev) {
        char have[64];
        describe_devices(c, have, sizeof have);
        return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND, "smi: device %u does not exist: %s",
                            index, have);
    }
    *out = c->devs[index];
    /* The library's device index is the position; nvidia-smi's own index is
     * what -i gets.  They agree unless nvidia-smi skipped a number. */
    out->index = index;
    return GP_OK;
}

static gp_status smi_driver_version(void *ctx, char *buf, size_t len, gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c)
        return gp_error_set(err, GP_ERR_STATE, "smi: the backend is not open");
    if (len)
        snprintf(buf, len, "%s", c->driver);
    return GP_OK;
}

static void drain_wake(smi_ctx *c)
{
    char tmp[64];
    while (read(c->wake_rd, tmp, sizeof tmp) > 0)
        ;
}

static void free_run(smi_ctx *c)
{
    free(c->slots);
    c->slots = NULL;
    c->n_slots = 0;
}

/* start()'s preconditions: open, not sampling, devices that exist. */
static gp_status check_start(const smi_ctx *c, const unsigned *indices, size_t n, gp_error *err)
{
    if (!c)
        return gp_error_set(err, GP_ERR_STATE, "smi: the backend is not open");
    if (c->started)
        return gp_error_set(err, GP_ERR_STATE, "smi: already sampling: call stop first");
    if (n == 0 || !indices)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "smi: no device to sample");
    for (size_t i = 0; i < n; i++) {
        if (indices[i] >= c->n_dev) {
            char have[64];
            describe_devices(c, have, sizeof have);
            return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND, "smi: device %u does not exist: %s",
                                indices[i], have);
        }
    }
    return GP_OK;
}

/* The run's slots (slot -> nvidia-smi index, an empty round) and *ids, the
 * "-i a,b,..." list (malloc'd) with each nvidia-smi index once, in slot
 * order. */
static gp_status make_slots(smi_ctx *c, const unsigned *indices, size_t n, char **ids_out,
                            gp_error *err)
{
    c->slots = calloc(n, sizeof *c->slots);
    size_t id_cap = n * 12 + 1;
    char *ids = malloc(id_cap);
    if (!c->slots || !ids) {
        free(ids);
        free_run(c);
        return gp_error_set(err, GP_ERR_NO_MEMORY, "smi: out of memory");
    }
    size_t used = 0;
    ids[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        unsigned smi_index = c->devs[indices[i]].index;
        c->slots[i].index = smi_index;
        c->slots[i].mig = c->devs[indices[i]].mig.is_mig != 0;
        bool dup = false;
        for (size_t j = 0; j < i; j++)
            dup = dup || c->slots[j].index == smi_index;
        if (!dup)
            used += (size_t)snprintf(ids + used, id_cap - used, "%s%u", used ? "," : "", smi_index);
    }
    c->n_slots = n;
    c->n_have = 0;
    *ids_out = ids;
    return GP_OK;
}

static gp_status smi_start(void *ctx, const unsigned *indices, size_t n, uint64_t interval_ns,
                           gp_error *err)
{
    smi_ctx *c = ctx;
    gp_status st = check_start(c, indices, n, err);
    if (st != GP_OK)
        return st;
    char *ids = NULL;
    st = make_slots(c, indices, n, &ids, err);
    if (st != GP_OK)
        return st;

    uint64_t ms = (interval_ns + 500000) / 1000000;
    if (ms < 1)
        ms = 1;
    char ms_text[24];
    snprintf(ms_text, sizeof ms_text, "%llu", (unsigned long long)ms);
    char *argv[] = {c->path,
                    "--query-gpu=" SMI_SAMPLE_FIELDS,
                    "--format=csv,noheader,nounits",
                    "-lms",
                    ms_text,
                    "-i",
                    ids,
                    NULL};

    /* A stale interrupt from before this run must not end its first wait. */
    drain_wake(c);
    gp_smi_lines_reset(&c->lines);
    c->dead = false;
    c->dead_msg[0] = '\0';
    c->last_text[0] = '\0';
    c->malformed_lines = 0;

    st = gp_smi_child_spawn(c->path, argv, &c->child, err);
    free(ids);
    if (st != GP_OK) {
        free_run(c);
        return st;
    }
    c->started = true;
    return GP_OK;
}

/* Hands the round over: slots that got a row are GP_OK, the others
 * GP_ERR_TIMEOUT (the row never came this round; not a device failure). */
static void emit_round(smi_ctx *c, gp_device_sample *out, gp_status *slot_status,
                       gp_error *slot_err)
{
    for (size_t i = 0; i < c->n_slots; i++) {
        if (c->slots[i].have) {
            out[i] = c->slots[i].pend;
            if (slot_status)
                slot_status[i] = GP_OK;
        } else {
            memset(&out[i], 0, sizeof out[i]);
            if (slot_status)
                slot_status[i] = GP_ERR_TIMEOUT;
            if (slot_err)
                gp_error_set(&slot_err[i], GP_ERR_TIMEOUT,
                             "smi: nvidia-smi sent no row for device %u in this round",
                             c->slots[i].index);
        }
        c->slots[i].have = false;
    }
    c->n_have = 0;
}

/* Puts a row into the first slot of its index that is still empty, and
 * an empty sample into the empty slots of that GPU's MIG instances
 * (nvidia-smi has no per-instance values: they are n/a, never the GPU's). */
static bool place_row(smi_ctx *c, unsigned index, const gp_device_sample *s, bool *known)
{
    *known = false;
    bool whole = false, placed = false;
    for (size_t i = 0; i < c->n_slots; i++) {
        smi_slot *t = &c->slots[i];
        if (t->index != index || t->have || (whole && !t->mig)) {
            *known = *known || t->index == index;
            continue;
        }
        *known = true;
        if (t->mig)
            memset(&t->pend, 0, sizeof t->pend);
        else
            t->pend = *s;
        whole = whole || !t->mig;
        t->have = true;
        c->n_have++;
        placed = true;
    }
    return placed;
}

/* One line of output; true when it completed a round (out is filled). */
static bool take_line(smi_ctx *c, char *line, gp_device_sample *out, gp_status *slot_status,
                      gp_error *slot_err)
{
    char copy[SMI_LINE_MAX];
    snprintf(copy, sizeof copy, "%s", line);
    unsigned index;
    gp_device_sample s;
    if (gp_smi_parse_sample(line, &index, &s) != GP_OK) {
        /* Not a row: a malformed one, or nvidia-smi telling us something
         * (kept for the message if it then exits). */
        char said[SMI_TEXT_MAX];
        summarize_text(copy, said, sizeof said);
        if (said[0]) {
            snprintf(c->last_text, sizeof c->last_text, "%s", said);
            c->malformed_lines++;
        }
        return false;
    }
    bool known;
    if (place_row(c, index, &s, &known)) {
        if (c->n_have < c->n_slots)
            return false;
        emit_round(c, out, slot_status, slot_err);
        return true;
    }
    if (!known)
        return false; /* a device we did not ask for */
    /* The device repeats before the others arrived: their rows are lost for
     * this round; the repeat opens the next one. */
    emit_round(c, out, slot_status, slot_err);
    place_row(c, index, &s, &known);
    return true;
}

/* Takes complete lines from the buffer until a round completes. */
static bool take_buffered(smi_ctx *c, gp_device_sample *out, gp_status *slot_status,
                          gp_error *slot_err)
{
    char *line;
    while ((line = gp_smi_lines_next(&c->lines)) != NULL)
        if (take_line(c, line, out, slot_status, slot_err))
            return true;
    return false;
}

/* The child's output ended: reap it and keep the reason for every later call. */
static gp_status producer_died(smi_ctx *c, gp_error *err)
{
    /* A last line without a newline is still nvidia-smi's last word. */
    const char *rest = gp_smi_lines_rest(&c->lines);
    if (rest)
        summarize_text(rest, c->last_text, sizeof c->last_text);
    uint64_t not_rows = c->malformed_lines + c->lines.overlong;
    gp_smi_lines_reset(&c->lines);
    gp_smi_child_finish(&c->child, SMI_EXIT_WAIT_NS);
    char how[96];
    gp_smi_child_describe_exit(&c->child, how, sizeof how);
    c->dead = true;
    c->dead_status = GP_ERR_BACKEND;
    char skipped[64] = "";
    if (not_rows > 1)
        snprintf(skipped, sizeof skipped, " (%llu lines were not rows)",
                 (unsigned long long)not_rows);
    snprintf(c->dead_msg, sizeof c->dead_msg, "smi: nvidia-smi stopped sampling with %s: %s%s", how,
             c->last_text[0] ? c->last_text : "(no output)", skipped);
    return gp_error_set(err, c->dead_status, "%s", c->dead_msg);
}

/* Reading the child's output failed: keep the reason for every later call. */
static gp_status read_failed(smi_ctx *c, int e, gp_error *err)
{
    c->dead = true;
    c->dead_status = GP_ERR_IO;
    snprintf(c->dead_msg, sizeof c->dead_msg, "smi: reading nvidia-smi's output failed: %s",
             strerror(e));
    return gp_error_set(err, c->dead_status, "%s", c->dead_msg);
}

static gp_status smi_wait_tick(void *ctx, gp_device_sample *out, gp_status *slot_status,
                               gp_error *slot_err, uint64_t deadline_mono_ns, gp_error *err)
{
    smi_ctx *c = ctx;
    if (!c || !c->started)
        return gp_error_set(err, GP_ERR_STATE, "smi: not sampling: call start first");
    if (c->dead)
        return gp_error_set(err, c->dead_status, "%s", c->dead_msg);
    for (;;) {
        if (take_buffered(c, out, slot_status, slot_err))
            return GP_OK;
        if (c->lines.eof)
            return producer_died(c, err);
        switch (gp_smi_lines_wait(&c->lines, c->child.fd, c->wake_rd, deadline_mono_ns)) {
        case SMI_WAIT_DATA:
            break;
        case SMI_WAIT_TIMEOUT:
            return gp_error_set(err, GP_ERR_TIMEOUT,
                                "smi: nvidia-smi sent no complete round before the deadline");
        case SMI_WAIT_WOKEN:
            drain_wake(c);
            return gp_error_set(err, GP_ERR_STATE, "smi: interrupted");
        case SMI_WAIT_POLL_FAILED:
            return gp_error_set(err, GP_ERR_IO, "smi: poll failed: %s", strerror(errno));
        case SMI_WAIT_READ_FAILED:
            return read_failed(c, errno, err);
        }
    }
}

static void smi_interrupt(void *ctx)
{
    smi_ctx *c = ctx;
    if (!c || c->wake_wr < 0)
        return;
    /* Sticky until the next wait_tick or start: an interrupt that lands
     * just before the wait still ends it.  A full pipe already wakes. */
    char one = 1;
    ssize_t w;
    do {
        w = write(c->wake_wr, &one, 1);
    } while (w < 0 && errno == EINTR);
}

static void smi_stop(void *ctx)
{
    smi_ctx *c = ctx;
    if (!c || !c->started)
        return;
    gp_smi_child_end(&c->child, true);
    free_run(c);
    c->started = false;
    gp_smi_lines_reset(&c->lines);
}

const gp_backend gp_backend_smi = {
    .name = "smi",
    .self_paced = 1,
    .open = smi_open,
    .close = smi_close,
    .device_count = smi_device_count,
    .device_info = smi_device_info,
    .driver_version = smi_driver_version,
    .start = smi_start,
    .read = NULL,
    .wait_tick = smi_wait_tick,
    .interrupt = smi_interrupt,
    .stop = smi_stop,
};
