/*
 * test_columns.c - gpufl_columns_read(): a session's batches as columns.
 * Exact values of a hand-written session: the union of two batches'
 * columns in first-seen order, ts_ns from base_time_ns + dt_ns (a null
 * dt_ns: the base), null and absent cells invalid (never a 0 taken for
 * known), a column with a real turned double, dictionaries with later
 * entries replacing earlier ones and each name interned once, the detail
 * each launch takes; the batch filter; what has no exact column form
 * (a dictionary key int() would read otherwise, an integer above
 * INT64_MAX, more than 1024 columns) marked not exact; GPUFlight's light read (one file per
 * channel); what the read skipped counted; bad
 * arguments, a missing session and a session of random bytes refused
 * with a message naming the path.
 */
#include "check.h"
#include "gpufl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SID "cccccccc-1111-4222-8333-444444444444"

static char g_root[256];

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

/* A session directory under g_root named name, its device.log text. */
static const char *session(const char *name, const char *device)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", g_root, name);
    CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST);
    write_file(dir, "device.log", device);
    return dir;
}

#define REC "\"version\":1,\"session_id\":\"" SID "\""
#define JOB "{\"type\":\"job_start\"," REC ",\"app\":\"cols\",\"pid\":7,\"ts_ns\":1000}\n"
#define DOWN "{\"type\":\"shutdown\",\"session_id\":\"" SID "\",\"ts_ns\":9000}\n"

static const char *const DEVICE =
    JOB "{\"type\":\"dictionary_update\"," REC
        ",\"kernel_dict\":{\"1\":\"k_a\",\"2\":\"k_b\"},\"scope_name_dict\":{\"1\":\"k_a\"}}\n"
        "{\"type\":\"kernel_event_batch\"," REC ",\"batch_id\":1,\"base_time_ns\":1000,"
        "\"columns\":[\"dt_ns\",\"kernel_id\",\"duration_ns\",\"corr_id\",\"has_details\"],"
        "\"rows\":[[0,1,100,21,1],[10,2,null,22,0],[20,1,300,23,0]]}\n"
        "{\"type\":\"kernel_detail\"," REC ",\"corr_id\":21,\"grid\":\"(8,1,1)\"}\n"
        "{\"type\":\"kernel_detail\"," REC ",\"corr_id\":24,\"grid\":\"(1,1,1)\"}\n"
        "{\"type\":\"dictionary_update\"," REC ",\"kernel_dict\":{\"2\":\"k_b2\"}}\n"
        "{\"type\":\"kernel_event_batch\"," REC ",\"batch_id\":2,\"base_time_ns\":2000,"
        "\"columns\":[\"dt_ns\",\"kernel_id\",\"duration_ns\",\"corr_id\",\"has_details\","
        "\"ext\"],\"rows\":[[5,2,2.5,24,1,7],[null,9,7,25,0,null]]}\n"
        "{\"type\":\"kernel_event_batch\"," REC ",\"batch_id\":3,\"base_time_ns\":3000,"
        "\"columns\":[\"dt_ns\",\"kernel_id\"],\"rows\":[[1,2,3]]}\n"
        "{\"type\":\"memcpy_event_batch\"," REC ",\"batch_id\":4,\"base_time_ns\":4000,"
        "\"columns\":[\"dt_ns\",\"bytes\"],\"rows\":[[1,4096]]}\n" DOWN
        "{\"type\":\"kernel_event_batch\",\"rows\":[[1,";

static const gpufl_column *col(const gpufl_column_set *s, const char *name)
{
    for (size_t i = 0; s && i < s->ncols; i++)
        if (strcmp(s->cols[i].name, name) == 0)
            return &s->cols[i];
    return NULL;
}

static int64_t i64(const gpufl_column *c, size_t r)
{
    return ((const int64_t *)c->data)[r];
}

static void test_values(void)
{
    const char *dir = session("values", DEVICE);
    gpufl_columns *c = NULL;
    gpufl_error err;
    CHECK_INT(gpufl_columns_read(dir, NULL, &c, &err), GPUFL_OK);
    CHECK(c != NULL);
    if (!c)
        return;
    const gpufl_columns_counts *n = gpufl_columns_counts_of(c);
    CHECK_STR(n->session_id, SID);
    CHECK_U64(n->bad_lines, 1);   /* the torn last line */
    CHECK_U64(n->bad_records, 1); /* batch 3: three values, two columns */
    CHECK_U64(n->files, 1);

    const gpufl_column_set *k = gpufl_columns_find(c, "kernel_event_batch");
    CHECK(k != NULL);
    if (!k)
        goto out;
    CHECK(k->exact);
    CHECK_U64(k->nrows, 5);
    static const char *const names[] = {"ts_ns",       "kernel_id", "duration_ns",       "corr_id",
                                        "has_details", "ext",       GPUFL_COLUMNS_DETAIL};
    CHECK_U64(k->ncols, 7);
    for (size_t i = 0; i < 7 && i < k->ncols; i++)
        CHECK_STR(k->cols[i].name, names[i]);
    const gpufl_column *ts = col(k, "ts_ns");
    static const int64_t want_ts[] = {1000, 1010, 1020, 2005, 2000};
    CHECK_INT(ts->kind, GPUFL_COLUMN_INT64);
    for (size_t r = 0; r < 5; r++) {
        CHECK_INT(i64(ts, r), want_ts[r]);
        CHECK_INT(ts->valid[r], 1);
    }
    /* A real in batch 2: the whole column double; the null unknown. */
    const gpufl_column *dur = col(k, "duration_ns");
    CHECK_INT(dur->kind, GPUFL_COLUMN_DOUBLE);
    static const double want_dur[] = {100, 0, 300, 2.5, 7};
    static const uint8_t dur_valid[] = {1, 0, 1, 1, 1};
    for (size_t r = 0; r < 5; r++) {
        CHECK_NEAR(((const double *)dur->data)[r], want_dur[r], 0);
        CHECK_INT(dur->valid[r], dur_valid[r]);
    }
    /* Absent from batch 1, null in batch 2's second row: unknown there. */
    const gpufl_column *ext = col(k, "ext");
    CHECK_INT(ext->kind, GPUFL_COLUMN_INT64);
    static const uint8_t ext_valid[] = {0, 0, 0, 1, 0};
    for (size_t r = 0; r < 5; r++)
        CHECK_INT(ext->valid[r], ext_valid[r]);
    CHECK_INT(i64(ext, 3), 7);
    /* k_a's detail (corr 21) stays in force for its later launch; k_b
     * has none until its launch with corr 24; kernel 9 none. */
    const gpufl_column *det = col(k, GPUFL_COLUMNS_DETAIL);
    CHECK_INT(det->kind, GPUFL_COLUMN_CODES);
    CHECK_U64(det->nstrings, 2);
    static const uint8_t det_valid[] = {1, 0, 1, 1, 0};
    const int32_t *code = det->data;
    for (size_t r = 0; r < 5; r++)
        CHECK_INT(det->valid[r], det_valid[r]);
    CHECK_INT(code[0], code[2]);
    CHECK(code[0] != code[3]);
    if (det->nstrings == 2) {
        CHECK_STR(det->strings[code[0]], "{\"grid\":\"(8,1,1)\",\"session_id\":\"" SID
                                         "\",\"type\":\"kernel_detail\",\"version\":1}");
        CHECK(strstr(det->strings[code[3]], "\"(1,1,1)\"") != NULL);
        CHECK(strstr(det->strings[code[3]], "corr_id") == NULL);
    }

    /* The dictionary: id 2 renamed by the later update; names once each. */
    const gpufl_column_set *d = gpufl_columns_find(c, "kernel_dict");
    CHECK(d != NULL && d->exact && d->nrows == 2 && d->ncols == 2);
    if (d && d->nrows == 2 && d->ncols == 2) {
        CHECK_STR(d->cols[0].name, "id");
        CHECK_STR(d->cols[1].name, "name");
        CHECK_INT(d->cols[1].kind, GPUFL_COLUMN_CODES);
        const int32_t *nc = d->cols[1].data;
        CHECK_INT(i64(&d->cols[0], 0), 1);
        CHECK_STR(d->cols[1].strings[nc[0]], "k_a");
        CHECK_INT(i64(&d->cols[0], 1), 2);
        CHECK_STR(d->cols[1].strings[nc[1]], "k_b2");
        CHECK_U64(d->cols[1].nstrings, 3); /* k_a, k_b, k_b2 */
    }
    CHECK(gpufl_columns_find(c, "scope_name_dict") != NULL);
    const gpufl_column_set *m = gpufl_columns_find(c, "memcpy_event_batch");
    CHECK(m != NULL && m->nrows == 1);
    CHECK_U64(gpufl_columns_count(c), 4); /* kernel_dict, scope_name_dict, two batches */
    CHECK(gpufl_columns_at(c, 4) == NULL);
    CHECK(gpufl_columns_find(c, "pm_sample_batch") == NULL);
out:
    gpufl_columns_free(c);
}

static void test_filter_and_exact(void)
{
    const char *dir = session("filter", DEVICE);
    gpufl_columns_options o;
    gpufl_columns_options_init(&o);
    o.batches = "memcpy_event_batch,pm_sample_batch";
    o.session_id = SID;
    gpufl_columns *c = NULL;
    gpufl_error err;
    CHECK_INT(gpufl_columns_read(dir, &o, &c, &err), GPUFL_OK);
    CHECK(gpufl_columns_find(c, "kernel_event_batch") == NULL);
    CHECK(gpufl_columns_find(c, "memcpy_event_batch") != NULL);
    CHECK(gpufl_columns_find(c, "kernel_dict") != NULL);
    gpufl_columns_free(c);

    /* Another session's id: refused, naming both. */
    o.session_id = "dddddddd-1111-4222-8333-444444444444";
    c = NULL;
    CHECK_INT(gpufl_columns_read(dir, &o, &c, &err), GPUFL_ERR_IO);
    CHECK(c == NULL);
    CHECK_CONTAINS(err.message, "holds session " SID ", not dddddddd-");

    dir = session("inexact",
                  JOB "{\"type\":\"dictionary_update\"," REC ",\"kernel_dict\":{\" 1\":\"k\"}}\n"
                      "{\"type\":\"memcpy_event_batch\"," REC ",\"base_time_ns\":1,"
                      "\"columns\":[\"dt_ns\",\"bytes\"],"
                      "\"rows\":[[0,18446744073709551615]]}\n"
                      "{\"type\":\"kernel_event_batch\"," REC ",\"base_time_ns\":1,"
                      "\"columns\":[\"dt_ns\",\"kernel_id\"],\"rows\":[[0,1]]}\n" DOWN);
    c = NULL;
    CHECK_INT(gpufl_columns_read(dir, NULL, &c, &err), GPUFL_OK);
    const gpufl_column_set *s = gpufl_columns_find(c, "kernel_dict");
    CHECK(s != NULL && !s->exact && s->nrows == 0);
    s = gpufl_columns_find(c, "memcpy_event_batch");
    CHECK(s != NULL && !s->exact);
    if (s && col(s, "bytes"))
        CHECK_INT(col(s, "bytes")->valid[0], 0); /* never a 0 taken for known */
    s = gpufl_columns_find(c, "kernel_event_batch");
    CHECK(s != NULL && s->exact);
    gpufl_columns_free(c);

    /* 1100 columns, generated: the first 1024 kept, the set not exact. */
    size_t cap = 64 << 10, len = 0;
    char *text = malloc(cap);
    CHECK(text != NULL);
    if (!text)
        return;
    len += (size_t)snprintf(text + len, cap - len,
                            JOB "{\"type\":\"memcpy_event_batch\"," REC
                                ",\"base_time_ns\":1,\"columns\":[\"dt_ns\"");
    for (int i = 0; i < 1100; i++)
        len += (size_t)snprintf(text + len, cap - len, ",\"c%d\"", i);
    len += (size_t)snprintf(text + len, cap - len, "],\"rows\":[[0");
    for (int i = 0; i < 1100; i++)
        len += (size_t)snprintf(text + len, cap - len, ",%d", i);
    snprintf(text + len, cap - len, "]]}\n" DOWN);
    dir = session("wide", text);
    free(text);
    c = NULL;
    CHECK_INT(gpufl_columns_read(dir, NULL, &c, &err), GPUFL_OK);
    s = gpufl_columns_find(c, "memcpy_event_batch");
    CHECK(s != NULL && !s->exact && s->ncols == 1024 && s->nrows == 1);
    if (s && s->ncols == 1024) {
        CHECK_STR(s->cols[1023].name, "c1022"); /* ts_ns first */
        CHECK_INT(i64(&s->cols[1023], 0), 1022);
    }
    gpufl_columns_free(c);
}

/* GPUFlight's light read: the plain file of each channel, else its lowest
 * window; every file without it. */
static void test_light_read(void)
{
    const char *dir = session("light", JOB DOWN);
    const char *mb = "{\"type\":\"memcpy_event_batch\"," REC ",\"base_time_ns\":%d,"
                     "\"columns\":[\"dt_ns\",\"bytes\"],\"rows\":[[0,%d]]}\n";
    char line[512];
    static const char *const files[] = {"scope.2.log", "scope.3.log", "system.1.log", "system.log"};
    for (int i = 0; i < 4; i++) {
        snprintf(line, sizeof line, mb, 100 + i, i);
        write_file(dir, files[i], line);
    }
    gpufl_columns_options o;
    gpufl_columns_options_init(&o);
    for (int light = 0; light < 2; light++) {
        o.one_file_per_channel = light;
        gpufl_columns *c = NULL;
        gpufl_error err;
        CHECK_INT(gpufl_columns_read(dir, &o, &c, &err), GPUFL_OK);
        const gpufl_column_set *s = gpufl_columns_find(c, "memcpy_event_batch");
        const gpufl_column *b = col(s, "bytes");
        CHECK(b != NULL);
        if (b && light) {
            /* scope.2.log (the lowest window), system.log (the plain file) */
            CHECK_U64(s->nrows, 2);
            CHECK_INT(i64(b, 0), 0);
            CHECK_INT(i64(b, 1), 3);
            CHECK_U64(gpufl_columns_counts_of(c)->files, 3);
        } else if (b) {
            CHECK_U64(s->nrows, 4);
            for (size_t r = 0; r < 4 && r < s->nrows; r++)
                CHECK_INT(i64(b, r), (int64_t)r);
            CHECK_U64(gpufl_columns_counts_of(c)->files, 5);
        }
        gpufl_columns_free(c);
    }
}

static void test_errors(void)
{
    gpufl_columns *c = (gpufl_columns *)&c;
    gpufl_error err;
    CHECK_INT(gpufl_columns_read(NULL, NULL, &c, &err), GPUFL_ERR_INVALID_ARG);
    CHECK(c == NULL);
    CHECK_CONTAINS(err.message, "path is NULL");
    CHECK_INT(gpufl_columns_read("", NULL, &c, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_INT(gpufl_columns_read(g_root, NULL, NULL, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "out is NULL");

    char missing[512];
    snprintf(missing, sizeof missing, "%s/not-there", g_root);
    CHECK_INT(gpufl_columns_read(missing, NULL, &c, &err), GPUFL_ERR_IO);
    CHECK(c == NULL);
    CHECK_CONTAINS(err.message, "not-there");

    /* Random bytes where a channel file should be: no record at all. */
    char junk[4096];
    unsigned x = 12345;
    for (size_t i = 0; i + 1 < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (char)(1 + (x >> 16) % 255);
    }
    junk[sizeof junk - 1] = 0;
    const char *dir = session("junk", junk);
    CHECK_INT(gpufl_columns_read(dir, NULL, &c, &err), GPUFL_ERR_IO);
    CHECK(c == NULL);
    CHECK_CONTAINS(err.message, "junk");
    gpufl_columns_free(NULL);
    CHECK(gpufl_columns_find(NULL, "kernel_dict") == NULL);
    CHECK_U64(gpufl_columns_count(NULL), 0);
}

int main(void)
{
    snprintf(g_root, sizeof g_root, "%s/gp-columns-XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_values();
    test_filter_and_exact();
    test_light_read();
    test_errors();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_root);
    return check_done("test_columns");
}
