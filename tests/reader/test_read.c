/*
 * test_read.c - the session-log reader (src/reader/read.c): the fixture
 * session, session discovery (session directory, log directory, flat
 * layout), gzipped windows, broken input of every kind, the batch
 * scanner's numbers and JSON shapes.
 */
#include "check.h"
#include "fl_log.h"
#include "reader/read.h"
#include "util/fs.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define FIX_ID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"
#define SA "aaaaaaaa-0000-4000-8000-000000000001"
#define SB "bbbbbbbb-0000-4000-8000-000000000002"

/* ------------------------------------------------------------ collector */

typedef struct got_batch {
    char type[64];
    int channel;
    uint64_t batch_id, base;
    size_t ncols, nrows;
    char cols[512]; /* names joined by ',' */
    char host[64];  /* "" when NULL */
    fl_cell *cells;
    uint64_t line;
} got_batch;

typedef struct got {
    char rec_types[4096]; /* "channel:type " per record */
    int nrec;
    got_batch b[64];
    int nb;
    char warns[8192]; /* "file:line: msg\n" */
    int nwarn;
    json_t *last_rec;
} got;

static void on_rec(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    got *g = user;
    /* The reader names the type by its vocabulary id too. */
    CHECK_INT(t, fl_type_of(type, strlen(type)));
    size_t n = strlen(g->rec_types);
    snprintf(g->rec_types + n, sizeof g->rec_types - n, "%d:%s ", channel, type);
    g->nrec++;
    json_decref(g->last_rec);
    g->last_rec = json_incref(rec);
}

static void on_batch(void *user, const fl_batch *b)
{
    got *g = user;
    if (g->nb == 64)
        return;
    got_batch *o = &g->b[g->nb++];
    snprintf(o->type, sizeof o->type, "%s", b->type);
    o->channel = b->channel;
    o->batch_id = b->batch_id;
    o->base = b->base_time_ns;
    o->ncols = b->ncols;
    o->nrows = b->nrows;
    o->line = b->line;
    o->cols[0] = '\0';
    for (size_t i = 0; i < b->ncols; i++) {
        size_t n = strlen(o->cols);
        snprintf(o->cols + n, sizeof o->cols - n, "%s%s", i ? "," : "", b->cols[i]);
    }
    snprintf(o->host, sizeof o->host, "%s", b->hostname ? b->hostname : "");
    o->cells = malloc((b->nrows * b->ncols + 1) * sizeof *o->cells);
    if (o->cells && b->nrows != 0 && b->ncols != 0)
        memcpy(o->cells, b->cells, b->nrows * b->ncols * sizeof *o->cells);
}

static void on_warn(void *user, const char *file, uint64_t line, const char *msg)
{
    got *g = user;
    size_t n = strlen(g->warns);
    snprintf(g->warns + n, sizeof g->warns - n, "%s:%llu: %s\n", file ? file : "?",
             (unsigned long long)line, msg);
    g->nwarn++;
}

static void got_reset(got *g)
{
    for (int i = 0; i < g->nb; i++)
        free(g->b[i].cells);
    json_decref(g->last_rec);
    memset(g, 0, sizeof *g);
}

static fl_read_cb cb_of(got *g)
{
    fl_read_cb cb = {.user = g, .record = on_rec, .batch = on_batch, .warning = on_warn};
    return cb;
}

static got_batch *find_batch(got *g, const char *type)
{
    for (int i = 0; i < g->nb; i++)
        if (strcmp(g->b[i].type, type) == 0)
            return &g->b[i];
    return NULL;
}

static const fl_cell *cell(const got_batch *b, size_t row, size_t col)
{
    static const fl_cell none = {.kind = FL_CELL_NULL};
    if (!b || row >= b->nrows || col >= b->ncols)
        return &none;
    return &b->cells[row * b->ncols + col];
}

#define CHECK_CELL_INT(c, v)                                                                       \
    do {                                                                                           \
        const fl_cell *c_ = (c);                                                                   \
        CHECK_INT(c_->kind, FL_CELL_INT);                                                          \
        CHECK_INT(c_->i, (v));                                                                     \
    } while (0)

/* ------------------------------------------------------------ files */

static char tmp_root[256];

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

static void put_gz(const char *path, const char *text)
{
    gzFile z = gzopen(path, "wb");
    CHECK(z != NULL);
    if (!z)
        return;
    CHECK(gzwrite(z, text, (unsigned)strlen(text)) == (int)strlen(text));
    gzclose(z);
}

static void mkdir_p(const char *path)
{
    CHECK(fl_make_dirs(path) == 0);
}

static void set_mtime(const char *path, time_t t)
{
    struct timeval tv[2] = {{t, 0}, {t, 0}};
    CHECK(utimes(path, tv) == 0);
}

static char *tmp_path(const char *rel)
{
    static char buf[8][1024];
    static int k;
    char *p = buf[k++ & 7];
    snprintf(p, 1024, "%s/%s", tmp_root, rel);
    return p;
}

static const char *job_start(const char *sid)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512,
             "{\"version\":1,\"type\":\"job_start\",\"pid\":1,\"app\":\"a\",\"session_id\":\"%s\","
             "\"ts_ns\":1760000000000000000}\n",
             sid);
    return p;
}

static const char *shutdown_line(const char *sid)
{
    static char buf[4][256];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 256,
             "{\"type\":\"shutdown\",\"pid\":1,\"app\":\"a\",\"session_id\":\"%s\",\"ts_ns\":"
             "1760000000009000000}\n",
             sid);
    return p;
}

static const char *kbatch(const char *sid, int id)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512,
             "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"%s\",\"batch_id\":%d,"
             "\"base_time_ns\":%d,\"columns\":[\"dt_ns\",\"duration_ns\"],\"rows\":[[0,%d],[5,6]]}"
             "\n",
             sid, id, 1000 * id, id);
    return p;
}

static char *cat(const char *a, const char *b, const char *c, const char *d)
{
    static char buf[4][4096];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 4096, "%s%s%s%s", a, b ? b : "", c ? c : "", d ? d : "");
    return p;
}

/* ------------------------------------------------------------ tests */

static void test_fixture(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fixtures/gpufl-session/" FIX_ID, check_env("GP_TEST_SOURCE_DIR"));
    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(dir, NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(err.message, "");
    CHECK_INT(err.status, GP_OK);
    CHECK_STR(res.session_id, FIX_ID);
    CHECK_STR(res.session_dir, dir);
    CHECK(!res.flat);
    CHECK(!res.crashed);
    CHECK_U64(res.files, 3);
    CHECK_U64(res.lines, 8 + 5 + 6);
    CHECK_U64(res.bytes, 3530 + 2078 + 2428);
    CHECK_U64(res.bad_lines, 0);
    CHECK_U64(res.bad_records, 0);
    CHECK_U64(res.other_session, 0);
    CHECK_U64(res.unknown_types, 0);
    CHECK_U64(res.gz_errors, 0);
    CHECK_INT(g.nwarn, 0);
    /* Records in file order, the common ones once (from device). */
    CHECK_STR(g.rec_types, "0:job_start 0:dictionary_update 0:kernel_detail 0:kernel_detail "
                           "0:capture_capabilities 0:shutdown ");
    CHECK_INT(g.nb, 5);
    CHECK_STR(g.b[0].type, "kernel_event_batch");
    CHECK_STR(g.b[1].type, "memcpy_event_batch");
    CHECK_STR(g.b[2].type, "scope_event_batch");
    CHECK_STR(g.b[3].type, "device_metric_batch");
    CHECK_STR(g.b[4].type, "host_metric_batch");
    CHECK_INT(g.b[0].channel, FL_CH_DEVICE);
    CHECK_INT(g.b[2].channel, FL_CH_SCOPE);
    CHECK_INT(g.b[3].channel, FL_CH_SYSTEM);

    got_batch *k = find_batch(&g, "kernel_event_batch");
    CHECK(k != NULL);
    if (k) {
        CHECK_STR(k->cols, "dt_ns,kernel_id,stream_id,duration_ns,corr_id,dyn_shared,num_regs,"
                           "has_details,external_kind,external_id");
        CHECK_U64(k->batch_id, 1);
        CHECK_U64(k->base, 1760000000001000000ull);
        CHECK_INT(k->nrows, 3);
        CHECK_INT(k->ncols, 10);
        CHECK_U64(k->line, 3);
        static const int64_t want[3][10] = {{0, 1, 7, 20000, 11, 0, 16, 1, 0, 0},
                                            {50000, 2, 7, 900000, 12, 4096, 64, 1, 0, 0},
                                            {1000000, 3, 7, 80000, 13, 0, 32, 0, 0, 0}};
        for (size_t r = 0; r < 3; r++)
            for (size_t c = 0; c < 10; c++)
                CHECK_CELL_INT(cell(k, r, c), want[r][c]);
    }
    got_batch *m = find_batch(&g, "memcpy_event_batch");
    CHECK(m && m->nrows == 2 && m->ncols == 6);
    if (m) {
        CHECK_CELL_INT(cell(m, 1, 0), 1700000);
        CHECK_CELL_INT(cell(m, 1, 3), 4194304);
        CHECK_CELL_INT(cell(m, 1, 5), 14);
    }
    got_batch *s = find_batch(&g, "scope_event_batch");
    CHECK(s && s->nrows == 2 && s->ncols == 8);
    if (s)
        CHECK_CELL_INT(cell(s, 1, 7), 1760000000000900000ll);
    got_batch *d = find_batch(&g, "device_metric_batch");
    CHECK(d && d->nrows == 3 && d->ncols == 9);
    if (d) {
        CHECK_CELL_INT(cell(d, 2, 5), 150000);
        CHECK_CELL_INT(cell(d, 2, 8), 1755);
        CHECK_STR(d->host, "");
    }
    got_batch *h = find_batch(&g, "host_metric_batch");
    CHECK(h && h->nrows == 2 && h->ncols == 4);
    if (h) {
        CHECK_STR(h->host, "host0");
        CHECK_CELL_INT(cell(h, 1, 1), 8800);
        CHECK_U64(h->base, 1760000000000200000ull);
    }
    got_reset(&g);

    /* Without dedupe the common records come from every channel. */
    fl_read_opts o;
    fl_read_opts_init(&o);
    CHECK(o.dedupe_common);
    CHECK(o.session_id == NULL);
    o.dedupe_common = false;
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(dir, &o, &cb, &res, &err), GP_OK);
    CHECK_INT(g.nrec, 6 + 4 + 4);
    CHECK_INT(g.nb, 5);
    CHECK(!res.crashed);
    got_reset(&g);

    /* The fixture's parent is a log directory holding one session. */
    char parent[1024];
    snprintf(parent, sizeof parent, "%s/fixtures/gpufl-session", check_env("GP_TEST_SOURCE_DIR"));
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(parent, NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_dir, dir);
    CHECK_STR(res.session_id, FIX_ID);
    CHECK_INT(g.nb, 5);
    got_reset(&g);
}

static void test_log_dir(void)
{
    mkdir_p(tmp_path("logs/" SA));
    mkdir_p(tmp_path("logs/" SB));
    mkdir_p(tmp_path("logs/not-a-session"));
    put_file(tmp_path("logs/" SA "/device.log"), cat(job_start(SA), kbatch(SA, 1), NULL, NULL));
    put_file(tmp_path("logs/" SA "/system.log"), cat(job_start(SA), shutdown_line(SA), NULL, NULL));
    put_file(tmp_path("logs/" SB "/scope.log"), cat(job_start(SB), kbatch(SB, 7), NULL, NULL));
    put_file(tmp_path("logs/not-a-session/notes.txt"), "hello\n");
    /* A is the newer one. */
    set_mtime(tmp_path("logs/" SB "/scope.log"), 1700000000);
    set_mtime(tmp_path("logs/" SB), 1700000000);
    set_mtime(tmp_path("logs/" SA "/device.log"), 1700000100);
    set_mtime(tmp_path("logs/" SA "/system.log"), 1700000050);
    set_mtime(tmp_path("logs/" SA), 1700000000);
    set_mtime(tmp_path("logs/not-a-session"), 1800000000);

    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(tmp_path("logs"), NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_id, SA);
    CHECK_STR(res.session_dir, tmp_path("logs/" SA));
    CHECK_INT(g.nb, 1);
    CHECK_U64(g.b[0].batch_id, 1);
    CHECK_U64(res.files, 2);
    CHECK(!res.crashed);
    got_reset(&g);

    /* B made the newest: it is picked. */
    set_mtime(tmp_path("logs/" SB "/scope.log"), 1700000200);
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("logs/"), NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_id, SB);
    CHECK_INT(g.nb, 1);
    CHECK_U64(g.b[0].batch_id, 7);
    CHECK_INT(g.b[0].channel, FL_CH_SCOPE);
    CHECK(res.crashed);
    got_reset(&g);

    /* By id. */
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.session_id = SA;
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("logs"), &o, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_id, SA);
    CHECK_U64(g.b[0].batch_id, 1);
    got_reset(&g);

    /* An id that is not there. */
    o.session_id = "cccccccc-0000-4000-8000-000000000003";
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("logs"), &o, &cb, &res, &err), GP_ERR_IO);
    CHECK_INT(err.status, GP_ERR_IO);
    CHECK_CONTAINS(err.message, "cccccccc-0000-4000-8000-000000000003");
    CHECK_CONTAINS(err.message, tmp_path("logs"));
    CHECK_STR(res.session_id, "");
    CHECK_INT(g.nb + g.nrec, 0);
    got_reset(&g);

    /* A session directory asked for another id. */
    o.session_id = SB;
    CHECK_INT(fl_read_session(tmp_path("logs/" SA), &o, &cb, &res, &err), GP_ERR_IO);
    CHECK_CONTAINS(err.message, SA);
    CHECK_CONTAINS(err.message, SB);

    /* Nothing there at all. */
    mkdir_p(tmp_path("empty"));
    CHECK_INT(fl_read_session(tmp_path("empty"), NULL, &cb, &res, &err), GP_ERR_IO);
    CHECK_CONTAINS(err.message, tmp_path("empty"));
    CHECK_CONTAINS(err.message, "no <channel>.log, <channel>.<N>.log[.gz] or .tmp/<channel>.log");
    CHECK_INT(fl_read_session(tmp_path("nowhere"), NULL, &cb, &res, &err), GP_ERR_IO);
    CHECK_CONTAINS(err.message, tmp_path("nowhere"));
    CHECK_CONTAINS(err.message, "nowhere.device.log");
    CHECK_INT(fl_read_session(NULL, NULL, &cb, &res, &err), GP_ERR_INVALID_ARG);
    CHECK_INT(err.status, GP_ERR_INVALID_ARG);
    CHECK_STR(err.message, "no session path given");
    CHECK_INT(g.nwarn, 0);
    got_reset(&g);
}

static void test_gz_windows(void)
{
    mkdir_p(tmp_path("gz/s"));
    put_gz(tmp_path("gz/s/device.1.log.gz"), cat(job_start(SA), kbatch(SA, 1), NULL, NULL));
    put_gz(tmp_path("gz/s/device.2.log.gz"), kbatch(SA, 2));
    put_gz(tmp_path("gz/s/device.10.log.gz"), kbatch(SA, 10));
    put_file(tmp_path("gz/s/device.log"), cat(kbatch(SA, 11), shutdown_line(SA), NULL, NULL));
    put_gz(tmp_path("gz/s/scope.1.log.gz"), kbatch(SA, 20));
    /* Not windows: ignored. */
    put_file(tmp_path("gz/s/device.x.log.gz"), "junk");
    put_file(tmp_path("gz/s/device.0.log.gz"), "junk");

    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(tmp_path("gz/s"), NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_id, SA);
    CHECK_INT(g.nb, 5);
    static const uint64_t order[] = {1, 2, 10, 11, 20};
    for (int i = 0; i < 5 && i < g.nb; i++)
        CHECK_U64(g.b[i].batch_id, order[i]);
    CHECK_INT(g.b[4].channel, FL_CH_SCOPE);
    CHECK_U64(res.files, 5);
    CHECK_U64(res.gz_errors, 0);
    CHECK_U64(res.lines, 7);
    CHECK(!res.crashed);
    CHECK_STR(g.rec_types, "0:job_start 0:shutdown ");
    CHECK_INT(g.nwarn, 0);
    got_reset(&g);

    /* A truncated window: what came before the cut is kept. */
    mkdir_p(tmp_path("gz/t"));
    char *text = malloc(400 * 512);
    CHECK(text != NULL);
    if (!text)
        return;
    text[0] = '\0';
    size_t n = 0;
    n += (size_t)snprintf(text + n, 512, "%s", job_start(SA));
    for (int i = 1; i <= 300; i++)
        n += (size_t)snprintf(text + n, 512, "%s", kbatch(SA, i * 7919 % 100003));
    put_gz(tmp_path("gz/t/device.1.log.gz"), text);
    free(text);
    struct stat st;
    CHECK(stat(tmp_path("gz/t/device.1.log.gz"), &st) == 0);
    CHECK(truncate(tmp_path("gz/t/device.1.log.gz"), st.st_size / 2) == 0);
    put_file(tmp_path("gz/t/device.log"), shutdown_line(SA));
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("gz/t"), NULL, &cb, &res, &err), GP_OK);
    CHECK_U64(res.gz_errors, 1);
    CHECK(g.nb > 10);
    CHECK(res.lines > 10 && res.lines < 301);
    CHECK_U64(res.bad_lines, 0);
    CHECK_INT(g.nwarn, 1);
    CHECK_CONTAINS(g.warns, tmp_path("gz/t/device.1.log.gz:"));
    CHECK_CONTAINS(g.warns, "gzip");
    /* The warning names the line where the stream broke: after the
     * window's complete lines (res.lines also counts device.log's one). */
    char want[64];
    snprintf(want, sizeof want, ".gz:%llu: ", (unsigned long long)res.lines);
    CHECK_CONTAINS(g.warns, want);
    CHECK(!res.crashed); /* the plain file after it was read */
    got_reset(&g);

    /* Not gzip at all behind a .gz name: zlib reads it as it is. */
    mkdir_p(tmp_path("gz/u"));
    put_file(tmp_path("gz/u/device.1.log.gz"), cat(job_start(SA), kbatch(SA, 3), NULL, NULL));
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("gz/u"), NULL, &cb, &res, &err), GP_OK);
    CHECK_INT(g.nb, 1);
    got_reset(&g);

    /* Garbage in a gzip stream (a corrupted member). */
    mkdir_p(tmp_path("gz/v"));
    put_gz(tmp_path("gz/v/device.1.log.gz"), cat(job_start(SA), kbatch(SA, 4), NULL, NULL));
    FILE *f = fopen(tmp_path("gz/v/device.1.log.gz"), "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 20, SEEK_SET);
        fputs("\xff\xff\xff\xff\xff\xff\xff\xff", f);
        fclose(f);
    }
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("gz/v"), NULL, &cb, &res, &err), GP_OK);
    CHECK_U64(res.gz_errors, 1);
    CHECK_CONTAINS(g.warns, "device.1.log.gz:");
    got_reset(&g);
}

static void test_flat(void)
{
    mkdir_p(tmp_path("flat"));
    /* Two sessions appended to the same files: A, then B (crashed). */
    put_file(tmp_path("flat/app.device.log"),
             cat(cat(job_start(SA), kbatch(SA, 1), shutdown_line(SA), NULL), job_start(SB),
                 kbatch(SB, 2), NULL));
    put_file(tmp_path("flat/app.scope.log"),
             cat(job_start(SA), shutdown_line(SA), job_start(SB), NULL));
    set_mtime(tmp_path("flat/app.device.log"), 1700000100);
    set_mtime(tmp_path("flat/app.scope.log"), 1700000100);

    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(tmp_path("flat/app"), NULL, &cb, &res, &err), GP_OK);
    CHECK(res.flat);
    CHECK_STR(res.session_id, SB);
    CHECK_STR(res.session_dir, tmp_path("flat/app"));
    CHECK_INT(g.nb, 1);
    CHECK_U64(g.b[0].batch_id, 2);
    CHECK_STR(g.rec_types, "0:job_start ");
    /* A's job_start, batch and shutdown in device; A's job_start and
     * shutdown in scope are duplicates of device's. */
    CHECK_U64(res.other_session, 3);
    CHECK(res.crashed);
    CHECK_U64(res.files, 2);
    CHECK_INT(g.nwarn, 0);
    got_reset(&g);

    /* By id. */
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.session_id = SA;
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("flat/app"), &o, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_id, SA);
    CHECK_INT(g.nb, 1);
    CHECK_U64(g.b[0].batch_id, 1);
    CHECK(!res.crashed);
    CHECK_U64(res.other_session, 2);
    got_reset(&g);

    /* The directory, with a second, older prefix; one of the files. */
    put_file(tmp_path("flat/old.device.log"), cat(job_start(SA), kbatch(SA, 5), NULL, NULL));
    set_mtime(tmp_path("flat/old.device.log"), 1600000000);
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("flat"), NULL, &cb, &res, &err), GP_OK);
    CHECK(res.flat);
    CHECK_STR(res.session_dir, tmp_path("flat/app"));
    CHECK_STR(res.session_id, SB);
    got_reset(&g);
    set_mtime(tmp_path("flat/old.device.log"), 1800000000);
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("flat"), NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_dir, tmp_path("flat/old"));
    CHECK_INT(g.nb, 1);
    CHECK_U64(g.b[0].batch_id, 5);
    got_reset(&g);
    /* Several prefixes and an id: the prefix holding that session. */
    o.session_id = SB;
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("flat"), &o, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_dir, tmp_path("flat/app"));
    CHECK_STR(res.session_id, SB);
    got_reset(&g);
    o.session_id = "nope";
    CHECK_INT(fl_read_session(tmp_path("flat"), &o, &cb, &res, &err), GP_ERR_IO);
    CHECK_CONTAINS(err.message, "nope");
    CHECK_CONTAINS(err.message, tmp_path("flat"));
    CHECK_INT(fl_read_session(tmp_path("flat/app"), &o, &cb, &res, &err), GP_ERR_IO);
    CHECK_CONTAINS(err.message, "nope");
    cb = cb_of(&g);
    CHECK_INT(fl_read_session(tmp_path("flat/app.scope.log"), NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_dir, tmp_path("flat/app"));
    CHECK_STR(res.session_id, SB);
    got_reset(&g);
}

/* fl_read_session_prefixed's statuses (its cases are read through
 * gpufl_report_logs in test_gpufl_report_logs). */
static void test_prefixed(void)
{
    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    gp_error err;
    mkdir_p(tmp_path("pfx"));
    CHECK_INT(fl_read_session_prefixed(tmp_path("pfx"), "gamma", NULL, &cb, &res, &err), GP_ERR_IO);
    CHECK_INT(err.status, GP_ERR_IO);
    CHECK_CONTAINS(err.message, "no session for log_prefix \"gamma\" in ");
    CHECK_CONTAINS(err.message, tmp_path("pfx"));
    CHECK_INT(fl_read_session_prefixed("", "gamma", NULL, &cb, &res, &err), GP_ERR_INVALID_ARG);
    CHECK_STR(err.message, "no log directory given for log_prefix \"gamma\"");
    CHECK_INT(fl_read_session_prefixed(NULL, NULL, NULL, &cb, &res, &err), GP_ERR_INVALID_ARG);
    CHECK_STR(err.message, "no session path given");
    CHECK_INT(g.nb + g.nrec, 0);
    /* (a): the flat files of that prefix. */
    put_file(tmp_path("pfx/gamma.device.log"), cat(job_start(SA), kbatch(SA, 3), NULL, NULL));
    CHECK_INT(fl_read_session_prefixed(tmp_path("pfx"), "gamma", NULL, &cb, &res, &err), GP_OK);
    CHECK_INT(err.status, GP_OK);
    CHECK_STR(err.message, "");
    CHECK(res.flat);
    CHECK_STR(res.session_id, SA);
    CHECK_INT(g.nb, 1);
    got_reset(&g);
}

/* Every kind of broken input in one file; each gives one warning naming
 * the file and the line, and the rest is read. */
static void test_bad_input(void)
{
    mkdir_p(tmp_path("bad/s"));
    const char *lines[] = {
        /* 1 */ job_start(SA),
        /* 2 */ "this is not json\n",
        /* 3 */ "[1,2,3]\n",
        /* 4 */ "{\"a\":1,\"session_id\":\"" SA "\"}\n",
        /* 5 */ "{\"type\":\"mystery\",\"session_id\":\"" SA "\",\"x\":[1,{\"y\":null}]}\n",
        /* 6 */ "{\"type\":\"kernel_event_batch\",\"session_id\":\"" SA "\",\"rows\":[[1]]}\n",
        /* 7 */
        "{\"type\":\"kernel_event_batch\",\"session_id\":\"" SA
        "\",\"columns\":[\"a\",\"b\"],\"rows\":[[1,2],[3]]}\n",
        /* 8 */
        "{\"type\":\"kernel_event_batch\",\"session_id\":\"" SA
        "\",\"columns\":[\"a\",\"b\"],\"rows\":[[1,\"2\"]]}\n",
        /* 9: the numbers */
        "{\"version\":1,\"type\":\"memcpy_event_batch\",\"session_id\":\"" SA
        "\",\"batch_id\":18446744073709551615,\"base_time_ns\":1760000000000000000,"
        "\"columns\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"],"
        "\"rows\":[[-5,1e3,1.5,18446744073709551615,9223372036854775808,null],"
        "[-9223372036854775808,-0,0.1,2.5E-3,123456789012345678901234,-1.25e+2]]}\n",
        /* 10: whitespace, rows before columns, escapes, unknown keys */
        " { \"rows\" : [ [ 1 , 2 ] ,\t[ 3,4 ] ] , \"extra\" : {\"k\":[true,false,null,\"s\\\"\"]},"
        " \"columns\" : [ \"d\\u0074_ns\" , \"x\\/y\" ] , \"type\" : \"host_metric_batch\" ,"
        " \"hostname\":\"h\\u00e9\", \"session_id\" : \"" SA "\" , \"batch_id\" : 4 ,"
        " \"base_time_ns\" : 99 } \n",
        /* 11: broken JSON inside a batch */
        "{\"type\":\"kernel_event_batch\",\"columns\":[\"a\"],\"rows\":[[1,]]}\n",
        /* 12: another session's batch */
        "{\"type\":\"kernel_event_batch\",\"session_id\":\"" SB
        "\",\"columns\":[\"a\"],\"rows\":[[1]]}\n",
        /* 13: a uint64 in a plain record */
        "{\"type\":\"kernel_detail\",\"session_id\":\"" SA "\",\"corr_id\":18446744073709551615}\n",
        /* 14: an empty line */
        "\n",
        /* 15: duplicate key in a batch */
        "{\"type\":\"kernel_event_batch\",\"columns\":[\"a\"],\"columns\":[\"b\"],\"rows\":[]}\n",
        /* 16: the torn last line */
        "{\"type\":\"shutdown\",\"session_id\":\"" SA "\"",
    };
    char *text = calloc(1, 8192);
    CHECK(text != NULL);
    if (!text)
        return;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        strcat(text, lines[i]);
    put_file(tmp_path("bad/s/device.log"), text);
    free(text);

    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(tmp_path("bad/s"), NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_id, SA);
    CHECK(res.crashed);
    CHECK_U64(res.lines, 16);
    CHECK_U64(res.bad_lines, 7); /* 2, 3, 4, 11, 14, 15, 16 */
    CHECK_U64(res.bad_records, 3);
    CHECK_U64(res.unknown_types, 1);
    CHECK_U64(res.other_session, 1);
    CHECK_INT(g.nwarn, 11);
    const char *f = tmp_path("bad/s/device.log");
    char want[1200];
    static const int warned[] = {2, 3, 4, 5, 6, 7, 8, 11, 14, 15, 16};
    for (size_t i = 0; i < sizeof warned / sizeof warned[0]; i++) {
        snprintf(want, sizeof want, "%s:%d: ", f, warned[i]);
        CHECK_CONTAINS(g.warns, want);
    }
    CHECK_CONTAINS(g.warns, ":2: not JSON");
    CHECK_CONTAINS(g.warns, ":3: not a JSON object");
    CHECK_CONTAINS(g.warns, ":4: no string \"type\"");
    CHECK_CONTAINS(g.warns, ":5: record type \"mystery\" is not known to this reader: its "
                            "records are counted, not read (one warning per type)");
    CHECK_CONTAINS(g.warns, ":6: bad kernel_event_batch: no \"columns\"");
    CHECK_CONTAINS(g.warns, ":7: bad kernel_event_batch: row 2 has 1 values, expected 2");
    CHECK_CONTAINS(g.warns, ":8: bad kernel_event_batch: row 1, value 2 is not a number");
    CHECK_CONTAINS(g.warns, ":11: not JSON");
    CHECK_CONTAINS(g.warns, ":15: not JSON: duplicate key");
    CHECK_CONTAINS(g.warns, ":16: torn last line");
    CHECK_STR(g.rec_types, "0:job_start 0:mystery 0:kernel_detail ");
    if (g.last_rec)
        CHECK_NEAR(json_real_value(json_object_get(g.last_rec, "corr_id")), 18446744073709551615.0,
                   1e4);

    CHECK_INT(g.nb, 2);
    got_batch *m = find_batch(&g, "memcpy_event_batch");
    CHECK(m != NULL);
    if (m) {
        CHECK_U64(m->batch_id, 18446744073709551615ull);
        CHECK_U64(m->base, 1760000000000000000ull);
        CHECK_INT(m->nrows, 2);
        CHECK_INT(m->ncols, 6);
        CHECK_CELL_INT(cell(m, 0, 0), -5);
        CHECK_INT(cell(m, 0, 1)->kind, FL_CELL_REAL);
        CHECK(cell(m, 0, 1)->d == 1000.0);
        CHECK_INT(cell(m, 0, 2)->kind, FL_CELL_REAL);
        CHECK(cell(m, 0, 2)->d == 1.5);
        CHECK_INT(cell(m, 0, 3)->kind, FL_CELL_UINT);
        CHECK_U64(cell(m, 0, 3)->u, 18446744073709551615ull);
        CHECK_INT(cell(m, 0, 4)->kind, FL_CELL_UINT);
        CHECK_U64(cell(m, 0, 4)->u, 9223372036854775808ull);
        CHECK_INT(cell(m, 0, 5)->kind, FL_CELL_NULL);
        CHECK_CELL_INT(cell(m, 1, 0), INT64_MIN);
        CHECK_CELL_INT(cell(m, 1, 1), 0);
        CHECK(cell(m, 1, 2)->kind == FL_CELL_REAL && cell(m, 1, 2)->d == 0.1);
        CHECK(cell(m, 1, 3)->kind == FL_CELL_REAL && cell(m, 1, 3)->d == 2.5e-3);
        CHECK(cell(m, 1, 4)->kind == FL_CELL_REAL &&
              cell(m, 1, 4)->d == 123456789012345678901234.0);
        CHECK(cell(m, 1, 5)->kind == FL_CELL_REAL && cell(m, 1, 5)->d == -125.0);
        /* The accessors. */
        CHECK_INT(fl_cell_int(cell(m, 0, 0), 7), -5);
        CHECK_INT(fl_cell_int(cell(m, 0, 2), 7), 1);
        CHECK_INT(fl_cell_int(cell(m, 0, 3), 7), INT64_MAX);
        CHECK_INT(fl_cell_int(cell(m, 0, 5), 7), 7);
        CHECK_INT(fl_cell_int(cell(m, 1, 4), 7), INT64_MAX);
        CHECK_INT(fl_cell_int(cell(m, 1, 5), 7), -125);
        CHECK(fl_cell_real(cell(m, 0, 0)) == -5.0);
        CHECK(fl_cell_real(cell(m, 0, 3)) == 18446744073709551615.0);
        CHECK(isnan(fl_cell_real(cell(m, 0, 5))));
        CHECK(isnan(fl_cell_real(NULL)));
        CHECK_INT(fl_cell_int(NULL, 3), 3);
    }
    got_batch *h = find_batch(&g, "host_metric_batch");
    CHECK(h != NULL);
    if (h) {
        CHECK_STR(h->cols, "dt_ns,x/y");
        CHECK_STR(h->host, "h\xc3\xa9");
        CHECK_U64(h->batch_id, 4);
        CHECK_U64(h->base, 99);
        CHECK_INT(h->nrows, 2);
        CHECK_CELL_INT(cell(h, 0, 0), 1);
        CHECK_CELL_INT(cell(h, 1, 1), 4);
        CHECK_U64(h->line, 10);
    }
    got_reset(&g);
}

/* The rows the writer writes take the scanner's fast path (SSE2 masks);
 * its edges, each against the exact values or the error. */
static void test_fast_rows(void)
{
    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    memset(&res, 0, sizeof res);
    /* 1..15 digits, 16+, a row longer than 64 bytes, an empty-looking
     * column count, zeros. */
    const char *l =
        "{\"type\":\"kernel_event_batch\",\"columns\":[\"a\",\"b\",\"c\"],\"rows\":["
        "[0,1,12],[123,1234,12345],[123456,1234567,12345678],[123456789,1234567890,12345678901],"
        "[123456789012,1234567890123,12345678901234],[123456789012345,1234567890123456,"
        "12345678901234567],[999999999999999,99999999,100000000],"
        "[1000000000000000000,18446744073709551615,9],"
        "[100000000000000,200000000000000,300000000000000],"
        "[10,20,3000000000000000000000000000000000000000000000000000000000000000]]}";
    CHECK_INT(fl_read_line(l, strlen(l), 0, NULL, &cb, &res, "f", 1), 0);
    CHECK_INT(g.nb, 1);
    got_batch *b = g.nb ? &g.b[0] : NULL;
    CHECK(b && b->nrows == 10 && b->ncols == 3);
    if (b && b->nrows == 10) {
        static const int64_t want[9][3] = {
            {0, 1, 12},
            {123, 1234, 12345},
            {123456, 1234567, 12345678},
            {123456789, 1234567890, 12345678901},
            {123456789012, 1234567890123, 12345678901234},
            {123456789012345, 1234567890123456, 12345678901234567},
            {999999999999999, 99999999, 100000000},
            {1000000000000000000, 0, 9},
            {100000000000000, 200000000000000, 300000000000000},
        };
        for (size_t r = 0; r < 9; r++)
            for (size_t c = 0; c < 3; c++)
                if (!(r == 7 && c == 1))
                    CHECK_CELL_INT(cell(b, r, c), want[r][c]);
        CHECK_INT(cell(b, 7, 1)->kind, FL_CELL_UINT);
        CHECK_U64(cell(b, 7, 1)->u, 18446744073709551615ull);
        CHECK_CELL_INT(cell(b, 9, 0), 10);
        CHECK_INT(cell(b, 9, 2)->kind, FL_CELL_REAL);
        CHECK(cell(b, 9, 2)->d == 3e63);
    }
    got_reset(&g);
    cb = cb_of(&g);
    /* Mixed rows: fast, slow (spaces, null, negative, real), fast again. */
    const char *m = "{\"type\":\"x_batch\",\"columns\":[\"a\",\"b\"],\"rows\":[[1,2],[ 3,4],"
                    "[null,5],[-6,7],[8.5,9],[10,11],[12,13]]}";
    CHECK_INT(fl_read_line(m, strlen(m), 0, NULL, &cb, &res, "f", 2), 0);
    CHECK(g.nb == 1 && g.b[0].nrows == 7);
    if (g.nb == 1 && g.b[0].nrows == 7) {
        CHECK_CELL_INT(cell(&g.b[0], 0, 1), 2);
        CHECK_CELL_INT(cell(&g.b[0], 1, 0), 3);
        CHECK_INT(cell(&g.b[0], 2, 0)->kind, FL_CELL_NULL);
        CHECK_CELL_INT(cell(&g.b[0], 3, 0), -6);
        CHECK(cell(&g.b[0], 4, 0)->d == 8.5);
        CHECK_CELL_INT(cell(&g.b[0], 6, 1), 13);
    }
    got_reset(&g);
    /* A long row (> 64 bytes) between short ones. */
    const char *w = "{\"type\":\"x_batch\",\"columns\":[\"a\",\"b\",\"c\",\"d\",\"e\"],"
                    "\"rows\":[[1,2,3,4,5],[111111111111111,222222222222222,333333333333333,"
                    "444444444444444,555555555555555],[6,7,8,9,10]]}";
    cb = cb_of(&g);
    CHECK_INT(fl_read_line(w, strlen(w), 0, NULL, &cb, &res, "f", 3), 0);
    CHECK(g.nb == 1 && g.b[0].nrows == 3);
    if (g.nb == 1 && g.b[0].nrows == 3) {
        CHECK_CELL_INT(cell(&g.b[0], 1, 4), 555555555555555);
        CHECK_CELL_INT(cell(&g.b[0], 2, 4), 10);
    }
    got_reset(&g);
    /* Errors found at the fast path's edges: bad lines (JSON) and bad
     * records (shape), never a wrong value. */
    static const char *const badjson[] = {
        "[1,01]", "[1,,2]", "[,1]", "[1,]", "[1,2]]", "[1,2],[", "[1,2],[3,4]x", "[1,2],,[3,4]",
    };
    for (size_t i = 0; i < sizeof badjson / sizeof badjson[0]; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"type\":\"x_batch\",\"columns\":[\"a\",\"b\"],\"rows\":[[5,6],%s]}",
                 badjson[i]);
        uint64_t before = res.bad_lines;
        CHECK_INT(fl_read_line(line, strlen(line), 0, NULL, &cb, &res, "e", i + 1), 1);
        CHECK_U64(res.bad_lines, before + 1);
    }
    static const char *const badshape[] = {"[1]", "[1,2,3]", "[]", "[1,2],[3]", "[1,\"2\"]"};
    for (size_t i = 0; i < sizeof badshape / sizeof badshape[0]; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"type\":\"x_batch\",\"columns\":[\"a\",\"b\"],\"rows\":[[5,6],%s]}",
                 badshape[i]);
        uint64_t before = res.bad_records;
        CHECK_INT(fl_read_line(line, strlen(line), 0, NULL, &cb, &res, "s", i + 1), 1);
        CHECK_U64(res.bad_records, before + 1);
    }
    CHECK_INT(g.nb, 0);
    got_reset(&g);
}

/* Rows of 64 to 128 bytes (the SSSE3 scanner's second mask word) and
 * random rows of every number length against strtoull, and the edges of
 * the fast paths around the 64th byte. */
static void test_long_rows(void)
{
    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    memset(&res, 0, sizeof res);
    /* Rows whose ']' is the 40th..140th byte after the '[': k numbers of
     * 15 digits, then one of 1..15 (numbers across the 64th byte), between
     * two short rows. */
    for (int end = 40; end <= 140; end++) {
        int k = (end - 2) / 16, last = end - 16 * k;
        if (last > 15)
            continue;
        char line[1024];
        size_t n = (size_t)sprintf(line, "{\"type\":\"x_batch\",\"columns\":[");
        for (int c = 0; c <= k; c++)
            n += (size_t)sprintf(line + n, "%s\"c%d\"", c ? "," : "", c);
        n += (size_t)sprintf(line + n, "],\"rows\":[[");
        for (int c = 0; c <= k; c++)
            n += (size_t)sprintf(line + n, "%s%d", c ? "," : "", c);
        n += (size_t)sprintf(line + n, "],[");
        for (int c = 0; c < k; c++)
            n += (size_t)sprintf(line + n, "%d%014d,", c + 1, c);
        for (int d = 0; d < last; d++)
            line[n++] = (char)('1' + d % 9);
        n += (size_t)sprintf(line + n, "],[");
        for (int c = 0; c <= k; c++)
            n += (size_t)sprintf(line + n, "%s%d", c ? "," : "", 9 - c);
        n += (size_t)sprintf(line + n, "]]}");
        got_reset(&g);
        cb = cb_of(&g);
        CHECK_INT(fl_read_line(line, n, 0, NULL, &cb, &res, "l", (uint64_t)end), 0);
        CHECK(g.nb == 1 && g.b[0].nrows == 3 && g.b[0].ncols == (size_t)k + 1);
        if (!(g.nb == 1 && g.b[0].nrows == 3 && g.b[0].ncols == (size_t)k + 1))
            continue;
        int64_t lastv = 0;
        for (int d = 0; d < last; d++)
            lastv = lastv * 10 + 1 + d % 9;
        for (int c = 0; c < k; c++)
            CHECK_CELL_INT(cell(&g.b[0], 1, (size_t)c), (c + 1) * 100000000000000ll + c);
        CHECK_CELL_INT(cell(&g.b[0], 1, (size_t)k), lastv);
        CHECK_CELL_INT(cell(&g.b[0], 0, (size_t)k), k);
        CHECK_CELL_INT(cell(&g.b[0], 2, (size_t)k), 9 - k);
    }
    got_reset(&g);
    /* The same rows under string columns, values checked. */
    uint64_t seed = 12345;
    for (int iter = 0; iter < 3000; iter++) {
        size_t ncol = 1 + (size_t)((seed >> 33) % 40);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t nrow = 1 + (size_t)((seed >> 33) % 6);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int maxd = 1 + (int)((seed >> 33) % 17); /* some rows hold 16-17 digits */
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        char *line = malloc(64 + ncol * 8 + nrow * ncol * 20);
        uint64_t *want = malloc(nrow * ncol * sizeof *want);
        if (!line || !want) {
            free(line);
            free(want);
            CHECK(0);
            break;
        }
        size_t n = (size_t)sprintf(line, "{\"type\":\"x_batch\",\"columns\":[");
        for (size_t c = 0; c < ncol; c++)
            n += (size_t)sprintf(line + n, "%s\"c%zu\"", c ? "," : "", c);
        n += (size_t)sprintf(line + n, "],\"rows\":[");
        bool bad = false; /* a leading zero: not JSON */
        for (size_t r = 0; r < nrow; r++) {
            line[n++] = r ? ',' : '[';
            if (r)
                line[n++] = '[';
            for (size_t c = 0; c < ncol; c++) {
                if (c)
                    line[n++] = ',';
                int nd = 1 + (int)((seed >> 33) % (uint64_t)maxd);
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t v = 0;
                for (int d = 0; d < nd; d++) {
                    int dig = (int)((seed >> 40) % 10);
                    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                    if (d == 0 && nd > 1 && dig == 0 && (seed >> 60) != 0)
                        dig = 1; /* a leading zero now and then */
                    if (d == 0 && nd > 1 && dig == 0)
                        bad = true;
                    line[n++] = (char)('0' + dig);
                    v = v * 10 + (uint64_t)dig;
                }
                want[r * ncol + c] = v;
            }
            line[n++] = ']';
        }
        n += (size_t)sprintf(line + n, "]}");
        got_reset(&g);
        cb = cb_of(&g);
        int rc = fl_read_line(line, n, 0, NULL, &cb, &res, "rnd", (uint64_t)iter);
        if (bad) {
            CHECK_INT(rc, 1);
        } else {
            CHECK_INT(rc, 0);
            CHECK(g.nb == 1 && g.b[0].nrows == nrow && g.b[0].ncols == ncol);
            if (g.nb == 1 && g.b[0].nrows == nrow && g.b[0].ncols == ncol)
                for (size_t i = 0; i < nrow * ncol; i++) {
                    const fl_cell *x = &g.b[0].cells[i];
                    if (!(x->kind == FL_CELL_INT && x->u == want[i])) {
                        CHECK_U64(x->u, want[i]);
                        break;
                    }
                }
        }
        free(line);
        free(want);
    }
    got_reset(&g);
    /* Shape errors past the 64th byte: bad lines and bad records. */
    static const char *const badjson[] = {
        /* a leading zero, ",,", a trailing ',' at bytes 64..70 */
        "[1111111,2222222,3333333,4444444,5555555,6666666,7777777,88888888,0123]",
        "[1111111,2222222,3333333,4444444,5555555,6666666,7777777,888888888,,12]",
        "[1111111,2222222,3333333,4444444,5555555,6666666,7777777,88888888,123,]",
        "[1111111,2222222,3333333,4444444,5555555,6666666,7777777,88888888,12 x]",
    };
    static const char *const badshape[] = {
        /* 8 and 10 values for 9 columns, a row past 128 bytes with 9 */
        "[1111111,2222222,3333333,4444444,5555555,6666666,7777777,888888888888]",
        "[1111111,2222222,3333333,4444444,5555555,6666666,7777777,88888888,1,2]",
    };
    for (size_t i = 0; i < sizeof badjson / sizeof badjson[0]; i++) {
        char line[512];
        snprintf(line, sizeof line,
                 "{\"type\":\"x_batch\",\"columns\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\","
                 "\"h\",\"i\"],\"rows\":[[1,2,3,4,5,6,7,8,9],%s]}",
                 badjson[i]);
        uint64_t before = res.bad_lines;
        CHECK_INT(fl_read_line(line, strlen(line), 0, NULL, &cb, &res, "e", i + 1), 1);
        CHECK_U64(res.bad_lines, before + 1);
    }
    for (size_t i = 0; i < sizeof badshape / sizeof badshape[0]; i++) {
        char line[512];
        snprintf(line, sizeof line,
                 "{\"type\":\"x_batch\",\"columns\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\","
                 "\"h\",\"i\"],\"rows\":[[1,2,3,4,5,6,7,8,9],%s]}",
                 badshape[i]);
        uint64_t before = res.bad_records;
        CHECK_INT(fl_read_line(line, strlen(line), 0, NULL, &cb, &res, "s", i + 1), 1);
        CHECK_U64(res.bad_records, before + 1);
    }
    /* 9 numbers, 64 digits and commas before a 130-byte row's ']' (the byte
     * path), and one of exactly 128 bytes. */
    const char *big =
        "{\"type\":\"x_batch\",\"columns\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\","
        "\"h\",\"i\"],\"rows\":[[1,2,3,4,5,6,7,8,9],"
        "[111111111111111,222222222222222,333333333333333,444444444444444,"
        "555555555555555,666666666666666,777777777777777,888888888888888,1234567],"
        "[111111111111111,222222222222222,333333333333333,444444444444444,"
        "555555555555555,666666666666666,777777777777777,888888888888888,12345]]}";
    got_reset(&g);
    cb = cb_of(&g);
    CHECK_INT(fl_read_line(big, strlen(big), 0, NULL, &cb, &res, "big", 1), 0);
    CHECK(g.nb == 1 && g.b[0].nrows == 3);
    if (g.nb == 1 && g.b[0].nrows == 3) {
        CHECK_CELL_INT(cell(&g.b[0], 1, 7), 888888888888888);
        CHECK_CELL_INT(cell(&g.b[0], 1, 8), 1234567);
        CHECK_CELL_INT(cell(&g.b[0], 2, 0), 111111111111111);
        CHECK_CELL_INT(cell(&g.b[0], 2, 8), 12345);
    }
    got_reset(&g);
}

static void on_batch_accessors(void *user, const fl_batch *b)
{
    int *ok = user;
    *ok = fl_batch_col(b, "b") == 1 && fl_batch_col(b, "zz") == -1 &&
          fl_batch_cell(b, 1, 1)->i == 4 && fl_batch_cell(b, 0, -1)->kind == FL_CELL_NULL &&
          fl_batch_cell(b, 5, 0)->kind == FL_CELL_NULL &&
          fl_batch_cell(b, 0, 2)->kind == FL_CELL_NULL && fl_batch_col(NULL, "a") == -1;
}

static void test_read_line(void)
{
    got g = {0};
    fl_read_cb cb = cb_of(&g);
    fl_read_result res;
    memset(&res, 0, sizeof res);
    const char *l1 = "{\"type\":\"a_batch\",\"columns\":[\"a\",\"b\"],\"rows\":[[1,2],[3,4]]}";
    CHECK_INT(fl_read_line(l1, strlen(l1), FL_CH_SCOPE, NULL, &cb, &res, "x.log", 9), 0);
    CHECK_INT(g.nb, 1);
    CHECK_INT(g.b[0].channel, FL_CH_SCOPE);
    CHECK_U64(g.b[0].line, 9);
    CHECK_U64(res.unknown_types, 1);
    CHECK_U64(res.lines, 1);
    /* Not NUL-terminated: only len bytes count. */
    char buf[128];
    memcpy(buf, l1, strlen(l1));
    memcpy(buf + strlen(l1), "garbage", 8);
    CHECK_INT(fl_read_line(buf, strlen(l1), 0, NULL, &cb, &res, "x.log", 10), 0);
    CHECK_INT(fl_read_line(buf, strlen(l1) + 3, 0, NULL, &cb, &res, "x.log", 11), 1);
    CHECK_U64(res.bad_lines, 1);
    CHECK_CONTAINS(g.warns, "x.log:11: not JSON");
    /* A NUL inside. */
    CHECK_INT(fl_read_line("{\"type\":\"a_batch\"\0}", 19, 0, NULL, &cb, &res, "x", 1), 1);
    CHECK_INT(fl_read_line("{\"type\":\"job_start\"\0}", 21, 0, NULL, &cb, &res, "x", 1), 1);
    CHECK_INT(fl_read_line("", 0, 0, NULL, &cb, &res, "x", 1), 1);
    CHECK_INT(fl_read_line(NULL, 0, 0, NULL, NULL, NULL, NULL, 0), 1);
    /* Session filter. */
    const char *l2 = "{\"type\":\"shutdown\",\"session_id\":\"s1\"}";
    CHECK_INT(fl_read_line(l2, strlen(l2), 0, "s2", &cb, &res, "x", 1), 1);
    CHECK_U64(res.other_session, 1);
    CHECK_INT(fl_read_line(l2, strlen(l2), 0, "s1", &cb, &res, "x", 1), 0);
    CHECK_INT(fl_read_line(l2, strlen(l2), 0, "", &cb, &res, "x", 1), 0);
    /* Scanner corner cases: each must be a bad line. */
    static const char *const bad[] = {
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[01]]}",
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[1.]]}",
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[-]]}",
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[1e]]}",
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[nul]]}",
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[1]]",
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[1]]}}",
        "{\"type\":\"a_batch\",\"columns\":[\"\\x\"],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"columns\":[\"\\ud800\"],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"columns\":[\"\\u0000\"],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"columns\":[\"\xc3\"],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"columns\":[\"a\tb\"],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"x\":[1,2,],\"columns\":[],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"x\":{\"a\" 1},\"columns\":[],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"x\":tru,\"columns\":[],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[],}",
    };
    uint64_t before = res.bad_lines;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(fl_read_line(bad[i], strlen(bad[i]), 0, NULL, &cb, &res, "b", i + 1), 1);
    CHECK_U64(res.bad_lines - before, sizeof bad / sizeof bad[0]);
    /* Valid, but not usable batches: bad records. */
    static const char *const badrec[] = {
        "{\"type\":\"a_batch\",\"columns\":[1],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"columns\":[\"a\"],\"rows\":[1]}",
        "{\"type\":\"a_batch\",\"columns\":[\"a\"],\"rows\":{}}",
        "{\"type\":\"a_batch\",\"columns\":[\"a\"],\"rows\":[[[1]]]}",
        "{\"type\":\"a_batch\",\"columns\":[\"a\"],\"rows\":[[1e999]]}",
        "{\"type\":\"a_batch\",\"columns\":[\"a\"],\"batch_id\":-1,\"rows\":[[1]]}",
        "{\"type\":\"a_batch\",\"columns\":[\"a\"],\"base_time_ns\":1.5,\"rows\":[[1]]}",
        "{\"type\":\"a_batch\",\"session_id\":5,\"columns\":[\"a\"],\"rows\":[[1]]}",
        "{\"rows\":[[1,2],[3,4]],\"type\":\"a_batch\",\"columns\":[\"a\"]}",
        "{\"type\":\"a_batch\",\"columns\":[\"a\"]}",
    };
    before = res.bad_records;
    for (size_t i = 0; i < sizeof badrec / sizeof badrec[0]; i++)
        CHECK_INT(fl_read_line(badrec[i], strlen(badrec[i]), 0, NULL, &cb, &res, "r", i + 1), 1);
    CHECK_U64(res.bad_records - before, sizeof badrec / sizeof badrec[0]);
    /* Valid odd shapes. */
    static const char *const good[] = {
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[]}",
        "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[]]}",
        "{\"t\\u0079pe\":\"a_batch\",\"columns\":[\"a\"],\"rows\":[[1]]}",
        "{\"type\":\"a\\u005fbatch\",\"columns\":[\"a\"],\"rows\":[[1]]}",
        "{\"type\":\"a_batch\",\"columns\":[\"\\ud83d\\ude00\"],\"rows\":[[ -0.0 ]],"
        "\"hostname\":null}",
        "\t{\"x\":[[[[]]]],\"type\":\"a_batch\",\"columns\":[\"a\"],\"rows\":[[1E+2]]}\r",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK_INT(fl_read_line(good[i], strlen(good[i]), 0, NULL, &cb, &res, "g", i + 1), 0);
    int ok = 0;
    fl_read_cb cb2 = {.user = &ok, .batch = on_batch_accessors};
    CHECK_INT(fl_read_line(l1, strlen(l1), 0, NULL, &cb2, NULL, NULL, 0), 0);
    CHECK(ok);
    /* Deep nesting: no crash, an answer either way. */
    size_t deep = 100000;
    char *d = malloc(deep * 2 + 64);
    CHECK(d != NULL);
    if (d) {
        size_t n = (size_t)sprintf(d, "{\"type\":\"a_batch\",\"x\":");
        for (size_t i = 0; i < deep; i++)
            d[n++] = '[';
        for (size_t i = 0; i < deep; i++)
            d[n++] = ']';
        n += (size_t)sprintf(d + n, ",\"columns\":[],\"rows\":[]}");
        CHECK_INT(fl_read_line(d, n, 0, NULL, &cb, &res, "deep", 1), 1);
        free(d);
    }
    got_reset(&g);
}

/* The row tests again with the scanner capped (GP_READ_SIMD: the SSSE3
 * rows, the SSE2 rows, none): a child process each, the level being read
 * once. */
static void test_levels(const char *self)
{
    static const char *const levels[] = {"ssse3", "sse2", "off"};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            setenv("GP_READ_SIMD", levels[i], 1);
            execl(self, self, "--rows", (char *)NULL);
            _exit(127);
        }
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--rows") == 0) {
        test_fast_rows();
        test_long_rows();
        return check_done(getenv("GP_READ_SIMD") ? getenv("GP_READ_SIMD") : "rows");
    }
    snprintf(tmp_root, sizeof tmp_root, "/tmp/gp_test_read.XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_fixture();
    test_log_dir();
    test_gz_windows();
    test_flat();
    test_prefixed();
    test_bad_input();
    test_read_line();
    test_fast_rows();
    test_long_rows();
    test_levels("/proc/self/exe");
    fl_rmtree(tmp_root);
    return check_done("test_read");
}
