/*
 * fake_smi.c - a fake `nvidia-smi` that replays real captures
 * (the .txt files in tests/fixtures/nvidia-smi), for tests on machines without a GPU.
 *
 * It answers `--query-gpu=<fields> --format=csv[,noheader][,nounits]` with
 * the values of the captures' "load" / "idle" query-gpu rows (field names
 * and their aliases as the captured --help-query-gpu lists them), loops with
 * -l / -lms, selects GPUs with -i, and fails like the real one for an
 * unknown field or a missing GPU.  -L, -h, --help-query-gpu, --version and
 * the bare default table are replayed too.  Scenarios come from environment
 * variables (documented in docs/test-doubles.md, "Fake nvidia-smi"):
 *
 *   FAKE_SMI_CAPTURES  comma-separated capture paths, one per GPU (unset:
 *                      behave like a machine without the driver)
 *   FAKE_SMI_STATE     load (default) | idle | alternate
 *   FAKE_SMI_FAIL      driver | hang | hang_after=N | exit_after=N | garbage |
 *                      flood_after=N (from tick N on, no pause between
 *                      ticks: rows as fast as the pipe takes them)
 *   FAKE_SMI_DROP      a GPU index whose row is left out of every odd tick
 *   FAKE_SMI_LOG       file to which each invocation's arguments are appended
 *
 * Every line is flushed: the reader is a pipe and waits for whole lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DRIVER_MESSAGE                                                                             \
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "     \
    "that the latest NVIDIA driver is installed and running."
#define BAD_ARGS_MESSAGE                                                                           \
    "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."
#define MAX_CAPTURES 16
#define MAX_GPUS 64
#define MAX_FIELDS 256

/* Exit statuses of the real nvidia-smi (see its man page, RETURN VALUE). */
enum { EXIT_BAD_ARG = 2, EXIT_NOT_FOUND = 6, EXIT_NO_DRIVER = 9, EXIT_GPU_LOST = 15 };

typedef struct section {
    const char *title; /* "load :: query-gpu (csv, what the exporter parses)" */
    char **lines;
    size_t n;
} section;

typedef struct row {
    char **cells;
    size_t n;
} row;

typedef struct capture {
    const char *path;
    char *text;
    char **lines;
    size_t n_lines;
    section secs[64];
    size_t n_secs;
    row header;      /* query-gpu column names, "memory.used [MiB]" */
    row rows[2][16]; /* [0] load, [1] idle; one row per GPU of the capture */
    size_t n_rows[2];
    char **alias_lines; /* the --help-query-gpu lines that name fields */
    size_t n_alias_lines;
} capture;

typedef struct gpu {
    capture *cap;
    size_t row;
} gpu;

/* Globals keep everything reachable to the end, so LeakSanitizer (the
 * sanitizer builds inherit ASAN_OPTIONS) has nothing to report. */
static capture g_caps[MAX_CAPTURES];
static size_t g_n_caps;
static gpu g_gpus[MAX_GPUS];
static size_t g_n_gpus;

static void die(int status, const char *msg)
{
    fputs(msg, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    exit(status);
}

static void put_line(const char *s)
{
    fputs(s, stdout);
    fputc('\n', stdout);
    if (fflush(stdout) != 0)
        exit(1); /* the reader is gone (SIGPIPE ignored) */
}

static void hang(void)
{
    /* Like nvidia-smi stuck in the driver: no output, deaf to SIGTERM, so
     * only SIGKILL ends it. */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    for (;;)
        pause();
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("fake nvidia-smi: out of memory\n", stderr);
        exit(99);
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static void log_invocation(int argc, char **argv)
{
    const char *path = getenv("FAKE_SMI_LOG");
    if (!path || !*path)
        return;
    size_t len = 2; /* the newline and the NUL (a bare `nvidia-smi` has no argument) */
    for (int i = 1; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *line = xmalloc(len);
    line[0] = '\0';
    for (int i = 1; i < argc; i++) {
        if (i > 1)
            strcat(line, " ");
        strcat(line, argv[i]);
    }
    strcat(line, "\n");
    /* One write with O_APPEND: concurrent invocations never interleave. */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, strlen(line));
        (void)w;
        close(fd);
    }
    free(line);
}

/* ------------------------------------------------------------- captures */

static bool is_rule(const char *line)
{
    size_t n = strlen(line);
    if (n < 40)
        return false;
    for (size_t i = 0; i < n; i++)
        if (line[i] != '#')
            return false;
    return true;
}

/* Splits at ", " (nvidia-smi's separator; no captured cell contains it). */
static row split_cells(const char *line)
{
    row r = {NULL, 0};
    size_t cap = 1;
    for (const char *p = line; (p = strstr(p, ", ")); p += 2)
        cap++;
    r.cells = xmalloc(cap * sizeof *r.cells);
    const char *p = line;
    for (;;) {
        const char *sep = strstr(p, ", ");
        size_t n = sep ? (size_t)(sep - p) : strlen(p);
        char *cell = xmalloc(n + 1);
        memcpy(cell, p, n);
        cell[n] = '\0';
        r.cells[r.n++] = cell;
        if (!sep)
            break;
        p = sep + 2;
    }
    return r;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap);
    size_t r;
    while ((r = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += r;
        if (cap - len < 2) {
            char *g = realloc(buf, cap * 2);
            if (!g)
                exit(99);
            buf = g;
            cap *= 2;
        }
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/*
 * A capture is a series of sections:
 *   ####...#
 *   # <state> :: <what>
 *   # $ <command>          (optional)
 *   ####...#
 *   <output until the next rule>
 */
static void load_capture(capture *c, const char *path)
{
    c->path = path;
    c->text = read_text(path);
    if (!c->text) {
        fprintf(stderr, "fake nvidia-smi: cannot read capture %s: %s\n", path, strerror(errno));
        exit(99);
    }
    size_t cap = 1024;
    c->lines = xmalloc(cap * sizeof *c->lines);
    for (char *p = c->text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        if (c->n_lines == cap) {
            char **g = realloc(c->lines, 2 * cap * sizeof *c->lines);
            if (!g)
                exit(99);
            c->lines = g;
            cap *= 2;
        }
        c->lines[c->n_lines++] = p;
        p = nl ? nl + 1 : NULL;
    }

    for (size_t i = 0; i + 1 < c->n_lines; i++) {
        if (!is_rule(c->lines[i]) || strncmp(c->lines[i + 1], "# ", 2) != 0 ||
            !strstr(c->lines[i + 1], " :: ") || c->n_secs == sizeof c->secs / sizeof c->secs[0])
            continue;
        section *s = &c->secs[c->n_secs++];
        s->title = c->lines[i + 1] + 2;
        size_t j = i + 2;
        while (j < c->n_lines && !is_rule(c->lines[j]))
            j++;
        size_t start = j + 1, end = start;
        while (end < c->n_lines && !is_rule(c->lines[end]))
            end++;
        while (end > start && c->lines[end - 1][0] == '\0')
            end--;
        s->lines = c->lines + start;
        s->n = start <= end ? end - start : 0;
        i = start > 0 ? start - 1 : i;
    }
}

static const section *find_section(const capture *c, const char *prefix)
{
    for (size_t i = 0; i < c->n_secs; i++)
        if (strncmp(c->secs[i].title, prefix, strlen(prefix)) == 0)
            return &c->secs[i];
    return NULL;
}

static void parse_query_rows(capture *c)
{
    static const char *const states[2] = {"load :: query-gpu", "idle :: query-gpu"};
    for (int s = 0; s < 2; s++) {
        const section *sec = find_section(c, states[s]);
        if (!sec || sec->n < 2)
            continue;
        if (c->header.n == 0)
            c->header = split_cells(sec->lines[0]);
        for (size_t i = 1; i < sec->n && c->n_rows[s] < 16; i++)
            c->rows[s][c->n_rows[s]++] = split_cells(sec->lines[i]);
    }
    if (c->header.n == 0 || c->n_rows[0] + c->n_rows[1] == 0) {
        fprintf(stderr, "fake nvidia-smi: %s has no query-gpu section\n", c->path);
        exit(99);
    }
    /* A capture with only one state serves it for both. */
    for (int s = 0; s < 2; s++) {
        if (c->n_rows[s] == 0) {
            memcpy(c->rows[s], c->rows[1 - s], sizeof c->rows[s]);
            c->n_rows[s] = c->n_rows[1 - s];
        }
    }
    const section *help = find_section(c, "capabilities :: help-query-gpu");
    if (help) {
        c->alias_lines = help->lines;
        c->n_alias_lines = help->n;
    }
}

/* "memory.used [MiB]" -> base "memory.used", unit "MiB". */
static bool header_is(const char *hdr, const char *name)
{
    size_t n = strlen(name);
    return strncmp(hdr, name, n) == 0 && (hdr[n] == '\0' || hdr[n] == ' ');
}

static const char *header_unit(const char *hdr, size_t *len)
{
    const char *b = strchr(hdr, '[');
    const char *e = b ? strchr(b, ']') : NULL;
    if (!b || !e)
        return NULL;
    *len = (size_t)(e - b - 1);
    return b + 1;
}

static long column_named(const capture *c, const char *name, size_t name_len)
{
    char tmp[256];
    if (name_len >= sizeof tmp)
        return -1;
    memcpy(tmp, name, name_len);
    tmp[name_len] = '\0';
    for (size_t i = 0; i < c->header.n; i++)
        if (header_is(c->header.cells[i], tmp))
            return (long)i;
    return -1;
}

/* Whether the help line `"a" or "b" ...` names field. */
static bool alias_line_names(const char *line, const char *field)
{
    size_t n = strlen(field);
    for (const char *p = line; (p = strchr(p, '"'));) {
        const char *e = strchr(p + 1, '"');
        if (!e)
            return false;
        if ((size_t)(e - p - 1) == n && strncmp(p + 1, field, n) == 0)
            return true;
        p = e + 1;
    }
    return false;
}

/* The column of a requested field, through the help text's aliases. */
static long resolve_field(const capture *c, const char *field)
{
    long col = column_named(c, field, strlen(field));
    if (col >= 0)
        return col;
    for (size_t i = 0; i < c->n_alias_lines; i++) {
        const char *line = c->alias_lines[i];
        if (line[0] != '"' || !strstr(line, "\" or \"") || !alias_line_names(line, field))
            continue;
        for (const char *p = line; (p = strchr(p, '"'));) {
            const char *e = strchr(p + 1, '"');
            if (!e)
                break;
            col = column_named(c, p + 1, (size_t)(e - p - 1));
            if (col >= 0)
                return col;
            p = e + 1;
        }
    }
    return -1;
}

/* ------------------------------------------------------------- output */

typedef struct query {
    char *fields[MAX_FIELDS];
    size_t n_fields;
    long col[MAX_CAPTURES][MAX_FIELDS];
    bool header;
    bool units;
} query;

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        while (*len + n + 1 > *cap)
            *cap *= 2;
        char *g = realloc(*buf, *cap);
        if (!g)
            exit(99);
        *buf = g;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
}

/* One GPU's row for the query; the caller frees it. */
static char *format_row(const query *q, size_t g, int state)
{
    const gpu *G = &g_gpus[g];
    const capture *c = G->cap;
    size_t ci = (size_t)(c - g_caps);
    const row *r = &c->rows[state][G->row < c->n_rows[state] ? G->row : 0];
    size_t cap = 256, len = 0;
    char *out = xmalloc(cap);
    out[0] = '\0';
    for (size_t f = 0; f < q->n_fields; f++) {
        if (f)
            append(&out, &len, &cap, ", ", 2);
        long col = q->col[ci][f];
        char tmp[128];
        const char *cell = "[N/A]";
        size_t n;
        if (col >= 0 && (size_t)col < r->n) {
            const char *hdr = c->header.cells[col];
            cell = r->cells[col];
            /* What differs between GPUs replaying the same capture. */
            if (header_is(hdr, "index")) {
                snprintf(tmp, sizeof tmp, "%zu", g);
                cell = tmp;
            } else if (header_is(hdr, "count")) {
                snprintf(tmp, sizeof tmp, "%zu", g_n_gpus);
                cell = tmp;
            } else if (header_is(hdr, "uuid") && strncmp(cell, "GPU-", 4) == 0 &&
                       strlen(cell) < sizeof tmp && strlen(cell) > 8) {
                snprintf(tmp, sizeof tmp, "%s", cell);
                snprintf(tmp + strlen(tmp) - 4, 5, "%04zx", g);
                cell = tmp;
            } else if (header_is(hdr, "timestamp")) {
                struct timespec ts;
                struct tm tm;
                clock_gettime(CLOCK_REALTIME, &ts);
                localtime_r(&ts.tv_sec, &tm);
                size_t k = strftime(tmp, sizeof tmp, "%Y/%m/%d %H:%M:%S", &tm);
                snprintf(tmp + k, sizeof tmp - k, ".%03ld", ts.tv_nsec / 1000000);
                cell = tmp;
            }
            size_t ulen;
            const char *unit = header_unit(hdr, &ulen);
            n = strlen(cell);
            if (!q->units && unit && n > ulen + 1 && cell[n - ulen - 1] == ' ' &&
                strncmp(cell + n - ulen, unit, ulen) == 0)
                n -= ulen + 1;
        } else {
            n = strlen(cell);
        }
        append(&out, &len, &cap, cell, n);
    }
    return out;
}

/* A malformed line of one of three kinds, made from a good row. */
static void put_garbage(const char *good, unsigned kind)
{
    char *bad = xstrdup(good);
    switch (kind % 3) {
    case 0:
        put_line("#!%& fake nvidia-smi garbage, not a row");
        break;
    case 1: { /* a field short */
        char *last = strrchr(bad, ',');
        if (last)
            *last = '\0';
        put_line(bad);
        break;
    }
    default: { /* a number that is not one */
        char *comma = strchr(bad, ',');
        size_t keep = comma ? (size_t)(comma - bad) + 2 : 0;
        char line[512];
        snprintf(line, sizeof line, "%.*s12x.5%s", (int)keep, bad,
                 comma && strchr(comma + 1, ',') ? strchr(comma + 1, ',') : "");
        put_line(line);
        break;
    }
    }
    free(bad);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void print_section(const char *title, int renumber)
{
    size_t g = 0;
    for (size_t ci = 0; ci < (renumber ? g_n_caps : 1); ci++) {
        const section *s = find_section(&g_caps[ci], title);
        if (!s)
            continue;
        for (size_t i = 0; i < s->n; i++) {
            unsigned n;
            int used = 0;
            /* -L: "GPU 0: <name> (UUID: ...)" numbered across captures. */
            if (renumber && sscanf(s->lines[i], "GPU %u:%n", &n, &used) == 1 && used > 0) {
                /* ... and the UUID made unique as in the query rows. */
                char line[512];
                snprintf(line, sizeof line, "GPU %zu:%s", g, s->lines[i] + used);
                char *uuid = strstr(line, "(UUID: GPU-");
                char *close = uuid ? strchr(uuid, ')') : NULL;
                if (close && close - uuid > 15) {
                    char hex[8];
                    snprintf(hex, sizeof hex, "%04zx", g);
                    memcpy(close - 4, hex, 4);
                }
                put_line(line);
                g++;
            } else {
                put_line(s->lines[i]);
            }
        }
    }
}

/* ------------------------------------------------------------- main */

static long parse_count(const char *spec, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(spec, name, n) != 0 || spec[n] != '=')
        return -1;
    char *end;
    long v = strtol(spec + n + 1, &end, 10);
    return *end == '\0' && v >= 0 ? v : -1;
}

int main(int argc, char **argv)
{
    log_invocation(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);

    const char *fail = getenv("FAKE_SMI_FAIL");
    fail = fail ? fail : "";
    const char *caps = getenv("FAKE_SMI_CAPTURES");
    if (strcmp(fail, "driver") == 0 || !caps || !*caps)
        die(EXIT_NO_DRIVER, DRIVER_MESSAGE);
    if (strcmp(fail, "hang") == 0)
        hang();
    long exit_after = parse_count(fail, "exit_after");
    long hang_after = parse_count(fail, "hang_after");
    long flood_after = parse_count(fail, "flood_after");
    bool garbage = strcmp(fail, "garbage") == 0;
    if (*fail && !garbage && exit_after < 0 && hang_after < 0 && flood_after < 0) {
        fprintf(stderr, "fake nvidia-smi: FAKE_SMI_FAIL=%s is not a scenario\n", fail);
        return 99;
    }

    const char *st = getenv("FAKE_SMI_STATE");
    int state = 0;
    bool alternate = false;
    if (st && *st) {
        if (strcmp(st, "idle") == 0)
            state = 1;
        else if (strcmp(st, "alternate") == 0)
            alternate = true;
        else if (strcmp(st, "load") != 0) {
            fprintf(stderr, "fake nvidia-smi: FAKE_SMI_STATE=%s is not load|idle|alternate\n", st);
            return 99;
        }
    }
    const char *drop_env = getenv("FAKE_SMI_DROP");
    long drop = drop_env && *drop_env ? strtol(drop_env, NULL, 10) : -1;

    char *cap_list = xstrdup(caps);
    for (char *save = NULL, *p = strtok_r(cap_list, ",", &save); p && g_n_caps < MAX_CAPTURES;
         p = strtok_r(NULL, ",", &save)) {
        capture *c = &g_caps[g_n_caps++];
        load_capture(c, p);
        parse_query_rows(c);
        size_t rows = c->n_rows[0] > c->n_rows[1] ? c->n_rows[0] : c->n_rows[1];
        for (size_t r = 0; r < rows && g_n_gpus < MAX_GPUS; r++)
            g_gpus[g_n_gpus++] = (gpu){c, r};
    }

    const char *query_spec = NULL, *format = NULL, *ids = NULL;
    long loop_ms = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_section("capabilities :: help (-h)", 0);
            return 0;
        } else if (strcmp(a, "--help-query-gpu") == 0) {
            print_section("capabilities :: help-query-gpu", 0);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            print_section("capabilities :: version", 0);
            return 0;
        } else if (strcmp(a, "-L") == 0 || strcmp(a, "--list-gpus") == 0) {
            print_section("capabilities :: list (-L)", 1);
            return 0;
        } else if (strncmp(a, "--query-gpu=", 12) == 0) {
            query_spec = a + 12;
        } else if (strcmp(a, "--query-gpu") == 0 && next) {
            query_spec = next;
            i++;
        } else if (strncmp(a, "--format=", 9) == 0) {
            format = a + 9;
        } else if (strncmp(a, "--id=", 5) == 0) {
            ids = a + 5;
        } else if (strcmp(a, "-i") == 0 && next) {
            ids = next;
            i++;
        } else if ((strcmp(a, "-lms") == 0 || strcmp(a, "-l") == 0) && next) {
            char *end;
            long v = strtol(next, &end, 10);
            if (*end || v <= 0)
                die(EXIT_BAD_ARG, BAD_ARGS_MESSAGE);
            loop_ms = strcmp(a, "-l") == 0 ? v * 1000 : v;
            i++;
        } else if (strncmp(a, "--loop-ms=", 10) == 0 || strncmp(a, "--loop=", 7) == 0) {
            bool ms = a[6] == '-';
            char *end;
            long v = strtol(strchr(a, '=') + 1, &end, 10);
            if (*end || v <= 0)
                die(EXIT_BAD_ARG, BAD_ARGS_MESSAGE);
            loop_ms = ms ? v : v * 1000;
        } else {
            die(EXIT_BAD_ARG, BAD_ARGS_MESSAGE);
        }
    }

    /* Which GPUs, in the order asked. */
    size_t sel[MAX_GPUS], n_sel = 0;
    if (ids) {
        char *list = xstrdup(ids);
        for (char *save = NULL, *p = strtok_r(list, ",", &save); p;
             p = strtok_r(NULL, ",", &save)) {
            char *end;
            long v = strtol(p, &end, 10);
            /* nvidia-smi takes a non-number as a UUID or PCI id; none match. */
            if (*end || end == p || v < 0 || (size_t)v >= g_n_gpus || n_sel == MAX_GPUS)
                die(EXIT_NOT_FOUND, "No devices were found");
            sel[n_sel++] = (size_t)v;
        }
        free(list);
    } else {
        for (size_t g = 0; g < g_n_gpus; g++)
            sel[n_sel++] = g;
    }

    if (!query_spec) {
        char title[64];
        snprintf(title, sizeof title, "%s :: nvidia-smi (default table)", state ? "idle" : "load");
        print_section(title, 0);
        return 0;
    }

    static query q;
    q.header = true;
    q.units = true;
    if (!format) {
        die(EXIT_BAD_ARG, "Missing --format: it is mandatory with --query-gpu. Please run "
                          "'nvidia-smi -h' for help.");
    } else {
        bool csv = false;
        char *f = xstrdup(format);
        for (char *save = NULL, *p = strtok_r(f, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            if (strcmp(p, "csv") == 0)
                csv = true;
            else if (strcmp(p, "noheader") == 0)
                q.header = false;
            else if (strcmp(p, "nounits") == 0)
                q.units = false;
            else {
                printf("\"%s\" is not a valid format option.\n\n", p);
                fflush(stdout);
                return EXIT_BAD_ARG;
            }
        }
        free(f);
        if (!csv)
            die(EXIT_BAD_ARG, "\"csv\" must be one of the --format options. Please run "
                              "'nvidia-smi -h' for help.");
    }
    char *fields = xstrdup(query_spec);
    for (char *save = NULL, *p = strtok_r(fields, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (q.n_fields == MAX_FIELDS)
            die(EXIT_BAD_ARG, BAD_ARGS_MESSAGE);
        size_t f = q.n_fields++;
        q.fields[f] = p;
        bool known = false;
        for (size_t ci = 0; ci < g_n_caps; ci++) {
            q.col[ci][f] = resolve_field(&g_caps[ci], p);
            known = known || q.col[ci][f] >= 0;
        }
        if (!known) {
            /* The real one's words and status, blank line included. */
            printf("Field \"%s\" is not a valid field to query.\n\n", p);
            fflush(stdout);
            return EXIT_BAD_ARG;
        }
    }
    if (q.n_fields == 0)
        die(EXIT_BAD_ARG, BAD_ARGS_MESSAGE);

    if (q.header) {
        size_t cap = 256, len = 0;
        char *h = xmalloc(cap);
        h[0] = '\0';
        for (size_t f = 0; f < q.n_fields; f++) {
            const char *name = q.fields[f];
            for (size_t ci = 0; ci < g_n_caps; ci++) {
                if (q.col[ci][f] >= 0) {
                    name = g_caps[ci].header.cells[q.col[ci][f]];
                    break;
                }
            }
            if (f)
                append(&h, &len, &cap, ", ", 2);
            append(&h, &len, &cap, name, strlen(name));
        }
        put_line(h);
        free(h);
    }

    bool loop = loop_ms > 0;
    for (unsigned long tick = 0;; tick++) {
        if (loop && exit_after >= 0 && tick == (unsigned long)exit_after) {
            /* What nvidia-smi says when a GPU falls off the bus mid-loop. */
            long col = resolve_field(g_gpus[sel[0]].cap, "pci.bus_id");
            const row *r = &g_gpus[sel[0]].cap->rows[0][g_gpus[sel[0]].row];
            char msg[256];
            snprintf(msg, sizeof msg,
                     "Unable to determine the device handle for GPU %s: GPU is lost.  Reboot the "
                     "system to recover this GPU",
                     col >= 0 && (size_t)col < r->n ? r->cells[col] : "00000000:00:00.0");
            die(EXIT_GPU_LOST, msg);
        }
        if (loop && hang_after >= 0 && tick == (unsigned long)hang_after)
            hang();
        int s = alternate ? (int)(tick % 2) : state;
        for (size_t k = 0; k < n_sel; k++) {
            if (drop >= 0 && sel[k] == (size_t)drop && tick % 2 == 1)
                continue;
            char *line = format_row(&q, sel[k], s);
            if (loop && garbage)
                put_garbage(line, (unsigned)(tick * n_sel + k));
            put_line(line);
            free(line);
        }
        if (!loop)
            break;
        if (flood_after < 0 || tick + 1 < (unsigned long)flood_after)
            sleep_ms(loop_ms);
    }
    free(fields);
    free(cap_list);
    return 0;
}
