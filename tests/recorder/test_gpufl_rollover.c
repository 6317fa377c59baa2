/*
 * test_gpufl_rollover.c - bounded long runs (issue 36 point 5), on the
 * fake NVML, sized so that nothing depends on time:
 *
 *  - when a window is due (fl_roll_due) with an injected clock: never
 *    empty, time before size, size past the limit only;
 *  - sizes as rotate_size / max_disk take them, and bad values refused
 *    with GPUFL_ERR_INVALID_ARG naming the field and where it came from
 *    (code, env), no session started;
 *  - a session through many size rotations: only <channel>.<N>.log.gz
 *    windows numbered 1..K left (no active file, no .part, no retired
 *    plain window), each with a sidecar whose payload_bytes and
 *    payload_crc32 match the .gz, each window at most rotate_size bytes
 *    unless it holds one line; every scope row arrives exactly once,
 *    through the windows read in order and through our reader (no bad
 *    window, no bad line, not crashed);
 *  - max_disk: detail (scope rows) counted once the files reach it - rows
 *    written + rows counted (shutdown's rows_lost, capture_capabilities
 *    scope_events partial "max_disk") = rows recorded, exactly - while
 *    telemetry (system phases, device samples taken after the limit) is
 *    still written.
 */
#include "fl_log.h"
#include "gpufl.h"
#include "reader/read.h"
#include "recorder/rotate.h"
#include "recorder/writer.h"
#include "util/text.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static char g_tmp[256];

static gpufl_init_options base_opts(const char *sub)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, sub);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "rollover";
    o.log_path = path;
    return o;
}

/* n scope pairs, recorded while the writer waits, then written. */
static void scopes(const char *name, int n)
{
    fl_session_hold_writer(true);
    for (int i = 0; i < n; i++) {
        gpufl_scope s = gpufl_scope_begin(name);
        gpufl_scope_end(&s);
    }
    fl_session_hold_writer(false);
    gpufl_flush();
}

/* ---------------------------------------------------------------- logic */

static void test_due(void)
{
    fl_roll r;
    memset(&r, 0, sizeof r);
    r.size_bytes = 1000;
    r.interval_ms = 500;
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 5000, 10), FL_ROLL_NO); /* empty: never */
    r.win_bytes[FL_CH_SCOPE] = 900;
    r.win_first_ms[FL_CH_SCOPE] = 10000;
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 100, 10000), FL_ROLL_NO);   /* exactly at the size */
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 101, 10000), FL_ROLL_SIZE); /* one byte past */
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 0, 10499), FL_ROLL_NO);
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 0, 10500), FL_ROLL_TIME);
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 5000, 10500), FL_ROLL_TIME); /* time first */
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 5000, 9000), FL_ROLL_SIZE);  /* clock behind: size */
    r.size_bytes = 0;
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 1 << 30, 10499), FL_ROLL_NO);
    r.interval_ms = 0;
    CHECK_INT(fl_roll_due(&r, FL_CH_SCOPE, 1 << 30, UINT64_MAX), FL_ROLL_NO);
}

static void test_sizes(void)
{
    static const struct {
        const char *text;
        uint64_t bytes;
    } good[] = {{"", 0},
                {"0", 0},
                {"4096", 4096},
                {"64K", 65536},
                {"64KiB", 65536},
                {"1M", 1048576},
                {"3MB", 3145728},
                {"2G", 2147483648ull},
                {"1TiB", 1099511627776ull},
                {"18446744073709551615", UINT64_MAX}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t b = 1;
        char why[256] = "";
        CHECK_INT(gp_parse_size(good[i].text, &b, why, sizeof why), 0);
        CHECK_U64(b, good[i].bytes);
    }
    static const char *const bad[] = {
        "abc",      "-1", "10X", "1.5M", " 64M", "64 M", "M", "64MM", "18446744073709551616",
        "16777216T"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t b = 1;
        char why[256] = "";
        CHECK_INT(gp_parse_size(bad[i], &b, why, sizeof why), -1);
        CHECK_CONTAINS(why, bad[i]);
        CHECK_CONTAINS(why, "64M");
    }
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void test_bad_values(void)
{
    gpufl_error err;
    gpufl_init_options o = base_opts("bad");
    o.rotate_size = "12Q";
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "rotate_size");
    CHECK_CONTAINS(err.message, "\"12Q\" is not a size");
    CHECK_CONTAINS(err.message, "(code)");
    CHECK(!gpufl_is_active());

    o = base_opts("bad");
    o.max_disk = "-5";
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "max_disk");
    CHECK_CONTAINS(err.message, "\"-5\"");

    o = base_opts("bad");
    o.rotate_interval_ms = -1;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "rotate_interval_ms = -1");

    o = base_opts("bad");
    setenv("GPUFL_LOG_ROTATE_BYTES", "lots", 1);
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "env GPUFL_LOG_ROTATE_BYTES");
    unsetenv("GPUFL_LOG_ROTATE_BYTES");
    setenv("GPUFL_MAX_DISK", "1.5G", 1);
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "env GPUFL_MAX_DISK");
    unsetenv("GPUFL_MAX_DISK");
    CHECK(!gpufl_is_active());
    char dir[600];
    snprintf(dir, sizeof dir, "%s/bad", g_tmp);
    CHECK_INT(count_entries(dir), 0); /* no session directory was made */
}

/* ------------------------------------------------------------- windows */

static bool exists(const char *dir, const char *name)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    return lstat(p, &st) == 0;
}

/* The whole file gunzipped (NULL: not a gzip that ends well). */
static char *gunzip(const char *path, size_t *len)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap + 1);
    int r;
    while (p && (r = gzread(g, p + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)r;
        if (n == cap)
            p = realloc(p, (cap *= 2) + 1);
    }
    int e = 0;
    gzerror(g, &e);
    gzclose(g);
    if (!p || e != Z_OK) {
        free(p);
        return NULL;
    }
    p[n] = '\0';
    *len = n;
    return p;
}

/* The sidecar of window n of channel ch checked against its payload. */
static void check_sidecar(const char *dir, const char *ch, unsigned n, const char *id)
{
    char path[1200], gz[64];
    snprintf(gz, sizeof gz, "%s.%u.log.gz", ch, n);
    snprintf(path, sizeof path, "%s/.gpufl-window.%s.%u.json", dir, ch, n);
    json_error_t e;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    CHECK(j != NULL);
    if (!j)
        return;
    CHECK_STR(json_string_value(json_object_get(j, "type")), "transport_window");
    CHECK_INT(json_integer_value(json_object_get(j, "schema_version")), 1);
    CHECK_STR(json_string_value(json_object_get(j, "channel")), ch);
    CHECK_STR(json_string_value(json_object_get(j, "session_id")), id);
    CHECK_STR(json_string_value(json_object_get(j, "payload_file")), gz);
    CHECK_INT(json_integer_value(json_object_get(j, "window_sequence")), n);
    CHECK_INT(strlen(json_string_value(json_object_get(j, "window_id"))), 36);
    CHECK(json_integer_value(json_object_get(j, "closed_mono_ms")) >=
          json_integer_value(json_object_get(j, "opened_mono_ms")));
    snprintf(path, sizeof path, "%s/%s", dir, gz);
    size_t len = 0;
    char *bytes = check_read_file(path, &len);
    CHECK(bytes != NULL);
    CHECK_U64((uint64_t)json_integer_value(json_object_get(j, "payload_bytes")), len);
    uLong crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)bytes, (uInt)len);
    CHECK_U64((uint64_t)json_integer_value(json_object_get(j, "payload_crc32")), crc);
    free(bytes);
    json_decref(j);
}

/* The windows of channel ch, 1..K, checked; their lines parsed, in order,
 * into log; K. */
static unsigned read_windows(const char *dir, const char *ch, const char *id, size_t limit,
                             fl_log *log)
{
    memset(log, 0, sizeof *log);
    unsigned n = 1;
    for (;; n++) {
        char name[64], path[1200];
        snprintf(name, sizeof name, "%s.%u.log.gz", ch, n);
        if (!exists(dir, name))
            break;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        size_t len = 0;
        char *text = gunzip(path, &len);
        CHECK(text != NULL);
        if (!text)
            break;
        CHECK(len > 0 && text[len - 1] == '\n'); /* whole lines only */
        size_t lines = 0;
        char *save = NULL;
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            json_error_t e;
            json_t *j = json_loads(l, JSON_REJECT_DUPLICATES, &e);
            CHECK(j != NULL);
            if (!j)
                continue;
            log->lines = realloc(log->lines, (log->n + 1) * sizeof *log->lines);
            log->lines[log->n++] = j;
            lines++;
        }
        if (limit)
            CHECK(len <= limit || lines == 1); /* past the size only by one line */
        free(text);
        check_sidecar(dir, ch, n, id);
        snprintf(name, sizeof name, "%s.%u.log", ch, n);
        CHECK(!exists(dir, name)); /* the retired plain window was removed */
        snprintf(name, sizeof name, ".%s.%u.log.gz.part", ch, n);
        CHECK(!exists(dir, name));
    }
    return n - 1;
}

/* Each scope instance's begin and end rows, counted. */
typedef struct rows_seen {
    uint32_t *begins, *ends;
    size_t cap;
    uint64_t rows;
    uint64_t warnings;
} rows_seen;

static void seen_row(rows_seen *s, int64_t inst, int64_t type)
{
    s->rows++;
    if (inst <= 0 || (size_t)inst >= s->cap)
        return;
    if (type == 0)
        s->begins[inst]++;
    else if (type == 1)
        s->ends[inst]++;
}

static void on_batch(void *user, const fl_batch *b)
{
    if (b->type_id != FL_T_SCOPE_EVENT_BATCH)
        return;
    int ci = fl_batch_colid(b, FL_COL_SCOPE_SCOPE_INSTANCE_ID);
    int ct = fl_batch_colid(b, FL_COL_SCOPE_EVENT_TYPE);
    for (size_t r = 0; r < b->nrows; r++)
        seen_row(user, fl_cell_int(fl_batch_cell(b, r, ci), -1),
                 fl_cell_int(fl_batch_cell(b, r, ct), -1));
}

static void on_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    ((rows_seen *)user)->warnings++;
    fprintf(stderr, "reader warning: %s:%llu: %s\n", file, (unsigned long long)line, msg);
}

static void seen_init(rows_seen *s, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->cap = cap;
    s->begins = calloc(cap, sizeof *s->begins);
    s->ends = calloc(cap, sizeof *s->ends);
}

static void seen_free(rows_seen *s)
{
    free(s->begins);
    free(s->ends);
}

/* Every instance 1..n has exactly one begin and one end. */
static void check_once(const rows_seen *s, size_t n)
{
    size_t wrong = 0;
    for (size_t i = 1; i <= n && i < s->cap; i++)
        wrong += s->begins[i] != 1 || s->ends[i] != 1;
    CHECK_INT(wrong, 0);
    CHECK_U64(s->rows, 2 * (uint64_t)n);
}

enum { ROUNDS = 40, PER_ROUND = 150, PAIRS = ROUNDS * PER_ROUND };

static void test_many_rotations(void)
{
    gpufl_init_options o = base_opts("rot");
    o.rotate_size = "4K";
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[1024], id[64];
    gpufl_session_dir(dir, sizeof dir);
    gpufl_session_id(id, sizeof id);
    for (int r = 0; r < ROUNDS; r++)
        scopes("step", PER_ROUND);
    gpufl_shutdown();

    for (int c = 0; c < 3; c++) {
        static const char *const chans[] = {"device", "scope", "system"};
        char name[32];
        snprintf(name, sizeof name, "%s.log", chans[c]);
        CHECK(!exists(dir, name)); /* a closed session has only windows */
        fl_log log;
        unsigned k = read_windows(dir, chans[c], id, 4096, &log);
        CHECK(k >= 1);
        CHECK_INT(fl_count(&log, "job_start"), 1);
        CHECK_INT(fl_count(&log, "shutdown"), 1);
        CHECK_STR(log_type(log.lines[0]), "job_start");
        CHECK_STR(log_type(log.lines[log.n - 1]), "shutdown");
        if (c == 1) {
            CHECK(k >= 10); /* many rotations */
            rows_seen s;
            seen_init(&s, PAIRS + 16);
            for (size_t i = 0; i < log.n; i++) {
                if (strcmp(log_type(log.lines[i]), "scope_event_batch") != 0)
                    continue;
                size_t ri;
                json_t *row;
                json_array_foreach(json_object_get(log.lines[i], "rows"), ri, row)
                {
                    seen_row(&s, json_integer_value(json_array_get(row, 1)),
                             json_integer_value(json_array_get(row, 3)));
                }
            }
            check_once(&s, PAIRS);
            seen_free(&s);
        }
        fl_log_free(&log);
    }

    /* Our reader: every window, in order, each row once, nothing bad. */
    rows_seen s;
    seen_init(&s, PAIRS + 16);
    fl_read_opts ro;
    fl_read_opts_init(&ro);
    fl_read_cb cb = {.user = &s, .batch = on_batch, .warning = on_warning};
    fl_read_result res;
    gp_error gerr;
    CHECK_INT(fl_read_session(dir, &ro, &cb, &res, &gerr), GP_OK);
    check_once(&s, PAIRS);
    CHECK_U64(s.warnings, 0);
    CHECK_U64(res.bad_windows, 0);
    CHECK_U64(res.bad_lines, 0);
    CHECK_U64(res.gz_errors, 0);
    CHECK(!res.crashed);
    seen_free(&s);
}

/* rotate_interval_ms: windows by time and size together; whatever the
 * machine's speed every row arrives once (the count of windows is the
 * clock's, so only at least one is asserted). */
static void test_interval(void)
{
    gpufl_init_options o = base_opts("interval");
    o.rotate_interval_ms = 1;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[1024], id[64];
    gpufl_session_dir(dir, sizeof dir);
    gpufl_session_id(id, sizeof id);
    for (int r = 0; r < 10; r++)
        scopes("tick", 20);
    gpufl_shutdown();
    fl_log log;
    CHECK(read_windows(dir, "scope", id, 0, &log) >= 1);
    CHECK(!exists(dir, "scope.log"));
    rows_seen s;
    seen_init(&s, 256);
    fl_read_opts ro;
    fl_read_opts_init(&ro);
    fl_read_cb cb = {.user = &s, .batch = on_batch, .warning = on_warning};
    fl_read_result res;
    gp_error gerr;
    CHECK_INT(fl_read_session(dir, &ro, &cb, &res, &gerr), GP_OK);
    check_once(&s, 200);
    CHECK_U64(res.bad_windows, 0);
    seen_free(&s);
    fl_log_free(&log);
}

/* ------------------------------------------------------------ max_disk */

static json_t *find_cap(const fl_log *log, const char *feature)
{
    json_t *last = NULL, *c;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), "capture_capabilities") == 0)
            last = log->lines[i];
    size_t i;
    json_array_foreach(json_object_get(last, "capabilities"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "feature")), feature) == 0)
            return c;
    }
    return NULL;
}

/* Device rows in system.log stamped after t_ns (the session still runs:
 * its active file is read as it is). */
static bool device_rows_after(const char *dir, uint64_t t_ns)
{
    fl_log log;
    if (fl_log_read(&log, dir, "system") != 0)
        return false;
    bool found = false;
    for (size_t i = 0; i < log.n && !found; i++)
        found = strcmp(log_type(log.lines[i]), "device_metric_batch") == 0 &&
                (uint64_t)json_integer_value(json_object_get(log.lines[i], "base_time_ns")) > t_ns;
    fl_log_free(&log);
    return found;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_max_disk(void)
{
    gpufl_init_options o = base_opts("disk");
    o.max_disk = "64K";
    o.system_sample_rate_ms = 5;
    o.continuous_system_sampling = true;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[1024];
    gpufl_session_dir(dir, sizeof dir);
    /* Far past 64K of scope rows: the limit is reached. */
    for (int r = 0; r < 20; r++)
        scopes("work", 100);
    uint64_t t_full = wall_ns();
    gpufl_system_start("after");
    /* Telemetry goes on: device samples taken after the limit are written
     * (a generous bound; the sampler runs every 5 ms). */
    bool telemetry = false;
    for (int i = 0; i < 3000 && !telemetry; i++) {
        gpufl_flush();
        telemetry = device_rows_after(dir, t_full);
        if (!telemetry)
            usleep(10000);
    }
    CHECK(telemetry);
    scopes("more", 100);
    gpufl_system_stop("after");
    gpufl_shutdown();

    fl_log scope, sys;
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    uint64_t written = 0;
    for (size_t i = 0; i < scope.n; i++)
        if (strcmp(log_type(scope.lines[i]), "scope_event_batch") == 0)
            written += json_array_size(json_object_get(scope.lines[i], "rows"));
    json_t *sd = NULL;
    for (size_t i = 0; i < scope.n; i++)
        if (strcmp(log_type(scope.lines[i]), "shutdown") == 0)
            sd = scope.lines[i];
    CHECK(sd != NULL);
    uint64_t lost = sd ? (uint64_t)json_integer_value(json_object_get(sd, "rows_lost")) : 0;
    CHECK(written > 0);
    CHECK(lost > 0);
    CHECK_U64(written + lost, 2u * 2100u); /* every row: written or counted */
    json_t *cap = find_cap(&scope, "scope_events");
    CHECK(cap != NULL);
    CHECK_STR(json_string_value(json_object_get(cap, "status")), "partial");
    CHECK_STR(json_string_value(json_object_get(cap, "reason_code")), "max_disk");
    char want[64];
    snprintf(want, sizeof want, "%llu rows in", (unsigned long long)lost);
    CHECK_CONTAINS(json_string_value(json_object_get(cap, "message")), want);
    CHECK_CONTAINS(json_string_value(json_object_get(cap, "message")), "max_disk (65536 bytes)");
    json_t *dev = find_cap(&scope, "device_metrics");
    CHECK(dev != NULL);
    const char *rc = json_string_value(json_object_get(dev, "reason_code"));
    CHECK(!rc || strcmp(rc, "max_disk") != 0);
    /* The phase's records, telemetry, are all there. */
    CHECK_INT(fl_count(&sys, "system_start"), 1);
    CHECK_INT(fl_count(&sys, "system_stop"), 1);
    fl_log_free(&scope);
    fl_log_free(&sys);
}

int main(void)
{
    unsetenv("GPUFL_CONFIG_FILE");
    unsetenv("GPUFL_DISABLED");
    unsetenv("GPUFL_LOG_ROTATE_BYTES");
    unsetenv("GPUFL_LOG_ROTATE_AFTER_MS");
    unsetenv("GPUFL_MAX_DISK");
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gpufl_rollover_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_due();
    test_sizes();
    test_bad_values();
    test_many_rotations();
    test_interval();
    test_max_disk();
    fl_rmtree(g_tmp);
    return check_done("test_gpufl_rollover");
}
