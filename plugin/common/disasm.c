/*
 * disasm.c - the sass channel: the disassembly of every sampled function,
 * by the toolkit's disassembler (nvdisasm), as GPUFlight 1.3 writes it.
 *
 * Promises: runs on the core's writer thread only (after a collection,
 * with no lock of pcsamp.c held), never on the application's threads; one
 * run per cubin and collection, restricted to the functions sampled for
 * the first time (nvdisasm -c -fun <symbol indices>); each run bounded in
 * time (killed with its process group) and in output bytes; the child gets
 * /dev/null for stdin, default signal dispositions, its own process group
 * and our environment without our secrets (util/env.c); the cubin goes
 * through a private temporary file, removed after the run.  A failure is
 * counted with its reason and the fix; after FAIL_MAX failures the
 * disassembler is not run again (its functions counted as skipped).
 */
#include "disasm.h"
#include "cubins.h"

#include "../../src/util/env.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define FAIL_MAX 4u
#define FUNCTIONS_MAX 4096u       /* disassembled per session */
#define OUT_BYTES_MAX (64u << 20) /* one run's output */
#define RUN_MS_DEFAULT 30000u     /* one run's time */
#define ENTRIES_MAX (1u << 20)    /* instructions of one function */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char tool[4096];
    uint32_t run_ms;
    fl_trace_stats st; /* the disasm_* fields */
} D;

void fl_disasm_start(const char *tool, uint32_t run_ms)
{
    pthread_mutex_lock(&mu);
    memset(&D, 0, sizeof D);
    if (tool && tool[0] == '/' && strlen(tool) < sizeof D.tool)
        memcpy(D.tool, tool, strlen(tool) + 1);
    D.run_ms = run_ms ? run_ms : RUN_MS_DEFAULT;
    pthread_mutex_unlock(&mu);
}

void fl_disasm_stats(fl_trace_stats *out)
{
    pthread_mutex_lock(&mu);
    out->disasm_runs += D.st.disasm_runs;
    out->disasm_failed += D.st.disasm_failed;
    out->disasm_functions += D.st.disasm_functions;
    out->disasm_skipped += D.st.disasm_skipped;
    if (!out->disasm_msg[0])
        memcpy(out->disasm_msg, D.st.disasm_msg, sizeof out->disasm_msg);
    pthread_mutex_unlock(&mu);
}

static void failed(const char *fmt, const char *a, const char *b)
{
    pthread_mutex_lock(&mu);
    D.st.disasm_failed++;
    if (!D.st.disasm_msg[0])
        snprintf(D.st.disasm_msg, sizeof D.st.disasm_msg, fmt, a, b);
    pthread_mutex_unlock(&mu);
}

/* ---------------------------------------------------------------- parse */

/* The function a "\t.section\t.text.<name>,..." line opens, in place; NULL
 * for any other line. */
static char *section_function(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, ".section", 8) != 0 || (s[8] != ' ' && s[8] != '\t'))
        return NULL;
    s += 8;
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, ".text.", 6) != 0)
        return NULL;
    s += 6;
    char *end = strchr(s, ',');
    if (!end || end == s)
        return NULL;
    *end = '\0';
    return s;
}

/* An instruction line - the offset in hex between slash-star and
 * star-slash, then the text up to " ;" - as pc and text (in place); false
 * for anything else (labels, directives, line markers). */
static bool instruction(char *s, uint32_t *pc, const char **text)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (s[0] != '/' || s[1] != '*')
        return false;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s + 2, &end, 16);
    if (end == s + 2 || errno || v > UINT32_MAX || end[0] != '*' || end[1] != '/')
        return false;
    s = end + 2;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (n && s[n - 1] == ';')
        n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0 || s[0] == '.') /* data directives of non-code sections */
        return false;
    s[n] = '\0';
    *pc = (uint32_t)v;
    *text = s;
    return true;
}

int fl_disasm_parse(char *text, size_t len, fl_disasm_fn fn, void *user)
{
    size_t cap = 0, n = 0;
    fl_sass_entry *e = NULL;
    const char *name = NULL;
    int functions = 0;
    char *p = text, *stop = text + len;
    while (p < stop) {
        char *nl = memchr(p, '\n', (size_t)(stop - p));
        char *line = p;
        if (nl)
            *nl = '\0';
        p = nl ? nl + 1 : stop;
        char *f = section_function(line);
        if (f) {
            if (name && n)
                fn(user, name, e, n), functions++;
            name = f;
            n = 0;
            continue;
        }
        uint32_t pc;
        const char *ins;
        if (!name || !instruction(line, &pc, &ins) || n >= ENTRIES_MAX)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            fl_sass_entry *g = realloc(e, nc * sizeof *e);
            if (!g) {
                free(e);
                return -1;
            }
            e = g;
            cap = nc;
        }
        e[n++] = (fl_sass_entry){pc, ins};
    }
    if (name && n)
        fn(user, name, e, n), functions++;
    free(e);
    return functions;
}

/* ------------------------------------------------------------------ run */

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* The cubin in a private temporary file (path into out), or -1. */
static int temp_cubin(const void *cubin, size_t bytes, char *out, size_t cap)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || dir[0] != '/')
        dir = "/tmp";
    if (snprintf(out, cap, "%s/gpufl-cubin-XXXXXX", dir) >= (int)cap)
        return -1;
    int fd = mkostemp(out, O_CLOEXEC);
    if (fd < 0)
        return -1;
    const uint8_t *b = cubin;
    size_t done = 0;
    while (done < bytes) {
        ssize_t w = write(fd, b + done, bytes - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(out);
            return -1;
        }
        done += (size_t)w;
    }
    close(fd);
    return 0;
}

/* Our environment without our secrets (the caller frees the array only). */
static char **child_env(void)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = malloc((n + 1) * sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!gp_env_is_secret(environ[i]))
            env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

static pid_t spawn(const char *tool, char *const argv[], int out_fd, int err_fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    if (posix_spawnattr_init(&at) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETPGROUP);
    char **env = child_env();
    pid_t pid = -1;
    if (env && posix_spawn(&pid, tool, &fa, &at, argv, env) != 0)
        pid = -1;
    free(env);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

typedef struct run_out {
    char *p;
    size_t len, cap;
    char err[160];
    size_t err_len;
    bool over, late;
} run_out;

/* Reads the child's stdout (into o->p) and the start of its stderr until
 * both close or the time is up. */
static void collect(int out_fd, int err_fd, uint64_t deadline, run_out *o)
{
    struct pollfd pf[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int open_n = 2;
    while (open_n > 0) {
        uint64_t t = now_ms();
        if (t >= deadline) {
            o->late = true;
            return;
        }
        int r = poll(pf, 2, (int)(deadline - t));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char tmp[65536], *dst = tmp;
            size_t room = sizeof tmp;
            if (i == 0 && o->cap - o->len > 1) {
                dst = o->p + o->len;
                room = o->cap - o->len - 1;
            }
            ssize_t got = read(pf[i].fd, dst, room);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                pf[i].fd = -1;
                open_n--;
                continue;
            }
            if (i == 1) {
                size_t k = (size_t)got;
                if (k > sizeof o->err - 1 - o->err_len)
                    k = sizeof o->err - 1 - o->err_len;
                memcpy(o->err + o->err_len, tmp, k);
                o->err_len += k;
                continue;
            }
            if (dst == tmp) { /* no room left: the bound */
                o->over = true;
                return;
            }
            o->len += (size_t)got;
            if (o->len + 1 >= o->cap && o->cap < OUT_BYTES_MAX) {
                size_t nc = o->cap * 2 > OUT_BYTES_MAX ? OUT_BYTES_MAX : o->cap * 2;
                char *g = realloc(o->p, nc);
                if (g) {
                    o->p = g;
                    o->cap = nc;
                }
            }
        }
    }
}

/* The first line of what the child wrote on stderr, printable. */
static const char *first_line(run_out *o)
{
    o->err[o->err_len] = '\0';
    char *s = o->err;
    for (char *c = s; *c; c++)
        if (*c == '\n' || *c == '\r') {
            *c = '\0';
            break;
        } else if ((unsigned char)*c < 0x20) {
            *c = ' ';
        }
    return s[0] ? s : "(nothing on stderr)";
}

char *fl_disasm_run(const char *tool, const void *cubin, size_t bytes, const uint32_t *symbols,
                    size_t n_symbols, size_t *len)
{
    *len = 0;
    char path[4096], list[4096];
    size_t at = 0;
    for (size_t i = 0; i < n_symbols && at < sizeof list - 16; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%u", i ? "," : "", symbols[i]);
    if (temp_cubin(cubin, bytes, path, sizeof path) != 0) {
        failed("cannot write the cubin to a temporary file (%s%s): set TMPDIR to a writable "
               "directory",
               strerror(errno), "");
        return NULL;
    }
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        unlink(path);
        failed("pipe: %s%s", strerror(errno), "");
        return NULL;
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]), close(out[1]);
        unlink(path);
        failed("pipe: %s%s", strerror(errno), "");
        return NULL;
    }
    char *argv[] = {(char *)tool, "-c", "-fun", list, path, NULL};
    pid_t pid = spawn(tool, argv, out[1], err[1]);
    close(out[1]);
    close(err[1]);
    run_out o = {.p = malloc(1 << 16), .cap = 1 << 16};
    pthread_mutex_lock(&mu);
    uint64_t run_ms = D.run_ms;
    pthread_mutex_unlock(&mu);
    if (pid > 0 && o.p)
        collect(out[0], err[0], now_ms() + run_ms, &o);
    close(out[0]);
    close(err[0]);
    int status = 0;
    if (pid > 0) {
        if (o.late || o.over || !o.p)
            kill(-pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    unlink(path);
    const char *why = NULL;
    char code[32] = "";
    if (pid <= 0)
        why = "could not be started";
    else if (!o.p)
        why = "out of memory for its output";
    else if (o.late)
        why = "ran past its time limit and was stopped";
    else if (o.over)
        why = "wrote more than 64 MiB and was stopped";
    else if (WIFSIGNALED(status))
        snprintf(code, sizeof code, "killed by signal %d", WTERMSIG(status)), why = code;
    else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        snprintf(code, sizeof code, "exit status %d", WEXITSTATUS(status)), why = code;
    if (why) {
        char msg[320];
        snprintf(msg, sizeof msg, "%s %s: %s", tool, why, first_line(&o));
        failed("%s%s; set GPUFL_NVDISASM to a working nvdisasm, or to an empty value to skip "
               "disassembly (the samples keep their PC offsets and source lines)",
               msg, "");
        free(o.p);
        return NULL;
    }
    o.p[o.len] = '\0';
    *len = o.len;
    return o.p;
}

/* ------------------------------------------------------------ functions */

typedef struct emit_ctx {
    const fl_trace_sink *sink;
    uint64_t crc;
    const fl_agg_fn *fns;
    size_t n;
    uint32_t handed;
} emit_ctx;

static void emit(void *user, const char *name, const fl_sass_entry *e, size_t n)
{
    emit_ctx *c = user;
    for (size_t i = 0; i < c->n; i++)
        if (c->fns[i].crc == c->crc && strcmp(c->fns[i].name, name) == 0) {
            if (c->sink && c->sink->disassembly)
                c->sink->disassembly(c->sink->user, c->crc, c->fns[i].function_id, name, e, n);
            c->handed++;
            return;
        }
}

static bool gave_up(void)
{
    pthread_mutex_lock(&mu);
    bool g = !D.tool[0] || D.st.disasm_failed >= FAIL_MAX || D.st.disasm_functions >= FUNCTIONS_MAX;
    pthread_mutex_unlock(&mu);
    return g;
}

/* The functions of cubin crc among fns[from..n): one run. */
static void one_cubin(const fl_trace_sink *sink, fl_agg_fn *fns, size_t n, size_t from)
{
    uint64_t crc = fns[from].crc;
    size_t bytes = 0;
    const void *cubin = fl_cubin_bytes(crc, &bytes);
    uint32_t sym[256];
    size_t n_sym = 0, wanted = 0;
    for (size_t i = from; i < n; i++) {
        if (fns[i].crc != crc || fns[i].done)
            continue;
        fns[i].done = true;
        wanted++;
        if (cubin && n_sym < 256 && fl_cubin_symbol(cubin, bytes, fns[i].name, &sym[n_sym]))
            n_sym++;
    }
    uint32_t handed = 0;
    if (n_sym && !gave_up()) {
        pthread_mutex_lock(&mu);
        D.st.disasm_runs++;
        char tool[sizeof D.tool];
        memcpy(tool, D.tool, sizeof tool);
        pthread_mutex_unlock(&mu);
        size_t len = 0;
        char *text = fl_disasm_run(tool, cubin, bytes, sym, n_sym, &len);
        if (text) {
            emit_ctx c = {sink, crc, fns + from, n - from, 0};
            if (fl_disasm_parse(text, len, emit, &c) < 0)
                failed("out of memory parsing %s's output%s", tool, "");
            handed = c.handed;
            free(text);
        }
    }
    pthread_mutex_lock(&mu);
    D.st.disasm_functions += handed;
    D.st.disasm_skipped += (uint32_t)(wanted - handed);
    pthread_mutex_unlock(&mu);
}

void fl_disasm_functions(const fl_trace_sink *sink, fl_agg_fn *fns, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!fns[i].done)
            one_cubin(sink, fns, n, i);
}
