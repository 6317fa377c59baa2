/*
 * test_report_details.c - kernel_detail records read through the reader's
 * detail callback (src/reader/detail.c: its own scanner, jansson for the
 * lines it does not take) give the same report and exports as through
 * jansson's record callback, the path every kernel_detail took before.
 *
 * Many generated sessions (GP_DETAIL_SESSIONS, default 200): the writer's
 * kernel batches and details (one per launch, or fewer, before or after
 * their batch, or never), and odd details written by hand - keys in other
 * orders, missing, unknown or twice, nulls, values of the wrong type,
 * escapes in strings, numbers as reals, integers beyond int64 elsewhere in
 * the line, spaces, nested values, another session's, broken lines.  Each
 * is read both ways: the text and JSON reports, the CSV and Chrome trace
 * exports and the reader's counts must be byte-identical.  So must the
 * fixture sessions' (tests/fixtures: GPUFlight 1.3's, gzipped and plain,
 * and ours).  The direct path must have taken every line the writer wrote
 * and some, not all, of the odd ones (fl_read_result.details_direct).
 */
#include "check.h"
#include "fl_log.h"
#include "abi/trace_abi.h"
#include "reader/read.h"
#include "report/export.h"
#include "report/report.h"
#include "util/buf.h"
#include "wire/records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SID "d37a11ed-aaaa-4bbb-8ccc-0123456789ab"
#define T0 1760000000000000000ull

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static unsigned rnd(unsigned n)
{
    return n ? (unsigned)(rng() % n) : 0;
}
static const char *pick(const char *const *v, size_t n)
{
    return v[rnd((unsigned)n)];
}
#define PICK(v) pick(v, sizeof v / sizeof v[0])

/* ------------------------------------------------------ odd details */

/* One member: "key":value, the value as text. */
typedef struct member {
    char key[48];
    char val[160];
} member;

static void corr_text(char *out, size_t cap, uint32_t corr)
{
    switch (rnd(14)) {
    case 0:
        snprintf(out, cap, "%u.0", corr);
        return;
    case 1:
        snprintf(out, cap, "%ue0", corr);
        return;
    case 2:
        snprintf(out, cap, "\"%u\"", corr);
        return;
    case 3:
        snprintf(out, cap, "%s",
                 PICK(((const char *const[]){"null", "-1", "18446744073709551615", "1e300", "true",
                                             "[1]", "-0", "4294967296", "9223372036854775807"})));
        return;
    default:
        snprintf(out, cap, "%u", corr);
    }
}

static const char *const dims[] = {"\"(28,1,1)\"",
                                   "\"(128,1,1)\"",
                                   "\"(64,64,1)\"",
                                   "\"( 1,2,3)\"",
                                   "\"(+1,-0,4)\"",
                                   "\"(1,2)\"",
                                   "\"(01,2,3)\"",
                                   "\"(4294967296,1,1)\"",
                                   "\"(4294967295,1,1)\"",
                                   "\"\\u00281,2,3)\"",
                                   "\"(1,1,1) \"",
                                   "null",
                                   "[1,2,3]",
                                   "17",
                                   "\"(123456789012,1,1)\"",
                                   "\"(-1,1,1)\""};
static const char *const scopes[] = {"\"train|forward\"",
                                     "\"global\"",
                                     "\"\"",
                                     "null",
                                     "\"tr\\u0061in|forward\"",
                                     "\"a\\\"b|c\"",
                                     "\"\\u00e9t\\u00e9|\\ud83d\\ude00\"",
                                     "5",
                                     "[\"x\"]",
                                     "\"x|x|y\"",
                                     "\"train\"",
                                     "\"gl\\u006fbal\"",
                                     "\"train|backward\""};
static const char *const limits[] = {"\"warps\"", "\"registers\"", "\"w\\u0061rps\"", "null",
                                     "7",         "\"\"",          "\"shared_mem\""};
static const char *const occs[] = {"0.75",   "1",   "1.0",    "\"0.5\"", "null", "-0.0",
                                   "1e-320", "0.5", "2.5e-1", "true",    "1E0"};
static const char *const smems[] = {"0",    "8192",  "8192.0", "-3",
                                    "null", "\"1\"", "1.5e3",  "18446744073709551616.0"};

/* A kernel_detail of corr as a list of members, then changed at random. */
static size_t odd_members(member *m, uint32_t corr, const char *sid)
{
    size_t n = 0;
#define ADD(k, ...)                                                                                \
    (snprintf(m[n].key, sizeof m[n].key, "%s", k),                                                 \
     snprintf(m[n].val, sizeof m[n].val, __VA_ARGS__), n++)
    ADD("version", "1");
    ADD("type", rnd(8) ? "\"kernel_detail\"" : "\"kernel\\u005fdetail\"");
    if (rnd(10)) {
        unsigned w = rnd(24);
        if (w == 0)
            ADD("session_id", "5"); /* not a string: a bad record */
        else
            ADD("session_id", "\"%s\"", w < 3 ? "other-session" : sid);
    }
    ADD("pid", "4242");
    ADD("app", "\"a%s\"", rnd(4) ? "" : "\\n\\u00e9");
    m[n].val[0] = '\0';
    snprintf(m[n].key, sizeof m[n].key, "corr_id");
    corr_text(m[n].val, sizeof m[n].val, corr);
    n++;
    ADD("grid", "%s", PICK(dims));
    ADD("block", "%s", PICK(dims));
    ADD("static_shared", "%s", PICK(smems));
    ADD("local_bytes", "%s", rnd(10) ? "0" : "12345678901234567890");
    ADD("const_bytes", "null");
    ADD("occupancy", "%s", PICK(occs));
    ADD("reg_occupancy", "1.0");
    ADD("limiting_resource", "%s", PICK(limits));
    ADD("max_active_blocks", "%s", rnd(10) ? "8" : "{\"a\":1,\"a\":2}");
    ADD("user_scope", "%s", PICK(scopes));
    ADD("stack_trace", "\"%s\"", rnd(3) ? "" : "f|g\\tx");
#undef ADD
    /* Missing, shuffled, unknown or repeated keys. */
    for (size_t i = 0; i < n; i++)
        if (rnd(12) == 0) {
            m[i] = m[n - 1];
            n--;
        }
    if (rnd(4) == 0)
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = rnd((unsigned)(i + 1));
            member t = m[i];
            m[i] = m[j];
            m[j] = t;
        }
    if (rnd(6) == 0) {
        snprintf(m[n].key, sizeof m[n].key, "x%u", rnd(3));
        snprintf(m[n].val, sizeof m[n].val, "%s", rnd(2) ? "true" : "false");
        n++;
    }
    if (rnd(20) == 0) {
        m[n] = m[rnd((unsigned)n)];
        n++;
    }
    return n;
}

/* The line of members m (spaces at random, broken at random). */
static void odd_line(fl_buf *b, const member *m, size_t n)
{
    bool sp = rnd(6) == 0;
    fl_buf_put(b, sp ? " { " : "{", sp ? 3 : 1);
    for (size_t i = 0; i < n; i++)
        fl_buf_printf(b, "%s\"%s\"%s%s", i ? (sp ? " , " : ",") : "", m[i].key, sp ? " : " : ":",
                      m[i].val);
    fl_buf_put(b, sp ? " }" : "}", sp ? 2 : 1);
    if (rnd(40) == 0 && b->len > 8)
        b->len -= 1 + rnd(8); /* torn: not JSON */
    fl_buf_put(b, "\n", 1);
}

/* ----------------------------------------------------------- sessions */

/* The kernel_detail lines written: the writer's, and odd ones. */
static uint64_t n_writer_details, n_odd_details;

/* Writes a session of nb batches into dir/SID/device.log. */
static int write_session(const char *dir, unsigned nb)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, SID);
    mkdir(dir, 0755);
    mkdir(path, 0755);
    fl_ident id = {4242, "a", SID};
    fl_buf b = {0};
    fl_device_static st[2] = {
        {0, "GPU A", "GPU-a", "NVIDIA", "Hopper", 9, 0, 52428800, 49152, 65536, 132, 32},
        {1, "GPU B", "GPU-b", "NVIDIA", "Hopper", 9, 0, 52428800, 49152, 65536, 132, 32}};
    fl_job_start js = {.log_path = "logs",
                       .ts_ns = T0,
                       .hostname = "h",
                       .gpu_static = st,
                       .n_gpu_static = 1 + rnd(2),
                       .session_kind = "trace",
                       .profiling_engine = "nvidia.trace"};
    fl_rec_job_start(&b, &id, &js);
    fl_dict_entry kd[] = {{1, "k1"}, {2, "k2"}, {3, "k3"}, {4, "k4"}, {5, "k5"}};
    fl_dict_entry sd[] = {{1, "train"}, {2, "forward"}};
    fl_rec_dictionary(&b, SID, FL_DICT_KERNEL, kd, 5);
    fl_rec_dictionary(&b, SID, FL_DICT_SCOPE_NAME, sd, 2);
    static const char *const wscopes[] = {"train|forward", "global", "train", NULL, ""};
    fl_occupancy occ = {0.75, 1.0, 0.75, 1.0, 1.0, 6, FL_LIMIT_REGISTERS};
    uint32_t corr = 1 + rnd(1000);
    uint64_t t = T0 + 1000;
    for (unsigned bi = 0; bi < nb; bi++) {
        fl_kernel_row rows[48];
        unsigned n = 1 + rnd(48);
        int when = (int)rnd(5); /* details: 0-2 before the batch, 3 after, 4 never */
        for (unsigned i = 0; i < n; i++) {
            fl_kernel_row *k = &rows[i];
            memset(k, 0, sizeof *k);
            k->t_ns = t += 1000 + rnd(100000);
            k->duration_ns = 1000 + rnd(100000);
            k->kernel_id = 1 + rnd(5);
            k->stream_id = rnd(3);
            k->corr_id = rnd(30) ? corr++ : corr - 1 - rnd(3); /* repeats, sometimes */
            k->grid[0] = 1 + rnd(100);
            k->grid[1] = k->grid[2] = 1;
            k->block[0] = 128;
            k->block[1] = k->block[2] = 1;
            k->num_regs = (uint16_t)(16 + rnd(64));
            k->static_smem_bytes = rnd(2) ? 0 : 8192;
            k->has_details = rnd(3) != 0;
        }
        fl_buf d = {0};
        uint64_t nw = 0, no = 0;
        for (unsigned i = 0; i < n; i++) {
            if (!rows[i].has_details && rnd(8))
                continue;
            if (rnd(3)) {
                fl_rec_kernel_detail(&d, &id, &rows[i], rnd(2) ? &occ : NULL,
                                     wscopes[rows[i].kernel_id % 5], rnd(4) ? "" : "f|g");
                nw++;
            } else {
                member m[40];
                size_t nm = odd_members(m, rows[i].corr_id, SID);
                odd_line(&d, m, nm);
                no++;
            }
        }
        if (when <= 2)
            fl_buf_put(&b, d.p ? d.p : "", d.len);
        fl_rec_kernel_batch(&b, SID, bi + 1, rows, n);
        if (when == 3)
            fl_buf_put(&b, d.p ? d.p : "", d.len);
        if (when <= 3) {
            n_writer_details += nw;
            n_odd_details += no;
        }
        fl_buf_free(&d);
        if (rnd(6) == 0) {
            fl_memset_row ms = {.t_ns = t, .duration_ns = 500, .bytes = 64};
            fl_rec_memset_event(&b, &id, &ms); /* another record: held rows go */
        }
    }
    fl_rec_shutdown(&b, &id, t + 1000000);
    snprintf(path, sizeof path, "%s/%s/device.log", dir, SID);
    FILE *f = fopen(path, "wb");
    int rc = f && !b.oom && fwrite(b.p, 1, b.len, f) == b.len ? 0 : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    fl_buf_free(&b);
    return rc;
}

/* ---------------------------------------------------------- the reads */

/* What one read gave: the report's text and JSON, or an export's bytes,
 * and the reader's counts. */
typedef struct output {
    fl_buf text;
    char *mem;
    size_t mem_len;
    fl_read_result res;
    uint64_t direct; /* res.details_direct (the report's: zeroed in res) */
} output;

static void output_free(output *o)
{
    fl_buf_free(&o->text);
    free(o->mem);
}

/* The report of the session at dir; fast: with the detail callback. */
static void read_report(const char *dir, const char *want, bool fast, output *o)
{
    memset(o, 0, sizeof *o);
    fl_report *r = fl_report_create();
    CHECK(r != NULL);
    if (!r)
        return;
    fl_read_cb cb;
    fl_report_callbacks(r, &cb);
    CHECK(cb.detail != NULL);
    if (!fast)
        cb.detail = NULL;
    fl_read_opts opts;
    fl_read_opts_init(&opts);
    opts.session_id = want;
    gp_error err;
    CHECK_INT(fl_read_session(dir, &opts, &cb, &o->res, &err), GP_OK);
    /* The one figure that differs by design: the JSON's read.details_direct. */
    o->direct = o->res.details_direct;
    o->res.details_direct = 0;
    fl_report_finish(r, &o->res);
    fl_report_text(r, 10, &o->text);
    fl_report_json(r, 10, &o->text);
    fl_report_destroy(r);
}

static void read_export(const char *dir, fl_export_format fmt, bool fast, output *o)
{
    memset(o, 0, sizeof *o);
    FILE *f = open_memstream(&o->mem, &o->mem_len);
    CHECK(f != NULL);
    if (!f)
        return;
    fl_export *e = fl_export_create(fmt, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    CHECK(cb.detail != NULL);
    if (!fast)
        cb.detail = NULL;
    gp_error err;
    CHECK_INT(fl_read_session(dir, NULL, &cb, &o->res, &err), GP_OK);
    CHECK_INT(fl_export_finish(e, &o->res), 0);
    fl_export_destroy(e);
    fclose(f);
}

static bool same(const output *a, const output *b)
{
    return a->text.len == b->text.len &&
           (!a->text.len || memcmp(a->text.p, b->text.p, a->text.len) == 0) &&
           a->mem_len == b->mem_len && (!a->mem_len || memcmp(a->mem, b->mem, a->mem_len) == 0) &&
           a->res.lines == b->res.lines && a->res.bad_lines == b->res.bad_lines &&
           a->res.bad_records == b->res.bad_records &&
           a->res.other_session == b->res.other_session &&
           a->res.unknown_types == b->res.unknown_types;
}

/* The report (text and JSON) and both exports of the session at dir,
 * read both ways; the differences (0: none).  *direct: the lines the
 * direct path took. */
static int compare_dir(const char *dir, const char *want, const char *label, uint64_t *direct)
{
    int bad = 0;
    output a, b;
    read_report(dir, want, true, &a);
    *direct += a.direct;
    read_report(dir, want, false, &b);
    if (!same(&a, &b)) {
        bad++;
        fprintf(stderr, "%s: the reports differ\n", label);
    }
    output_free(&a);
    output_free(&b);
    for (int f = 0; f < 2; f++) {
        fl_export_format fmt = f ? FL_EXPORT_CSV_KERNELS : FL_EXPORT_CHROME_TRACE;
        read_export(dir, fmt, true, &a);
        read_export(dir, fmt, false, &b);
        if (!same(&a, &b)) {
            bad++;
            fprintf(stderr, "%s: the %s exports differ\n", label, f ? "CSV" : "Chrome trace");
        }
        output_free(&a);
        output_free(&b);
    }
    return bad;
}

/* The sessions of tests/fixtures (GPUFlight 1.3's, gzipped and plain,
 * and ours): the same both ways; their kernel_details taken directly. */
static int compare_fixtures(void)
{
    static const char *const dirs[] = {
        "fixtures/gpufl-1.3/gzip-windows/11111111-2222-4333-8444-555555555555",
        "fixtures/gpufl-1.3/uncompressed-windows/aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
        "fixtures/gpufl-session/3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"};
    int bad = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", check_env("GP_TEST_SOURCE_DIR"), dirs[i]);
        uint64_t direct = 0;
        bad += compare_dir(dir, NULL, dirs[i], &direct);
        CHECK(direct > 0);
    }
    return bad;
}

int main(void)
{
    const char *env = getenv("GP_DETAIL_SESSIONS");
    unsigned sessions = env && *env ? (unsigned)atoi(env) : 200;
    const char *keep = getenv("GP_DETAIL_KEEP"); /* a directory: the sessions stay there */
    char root[] = "/tmp/gp_test_details.XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    int bad = compare_fixtures();
    uint64_t lines = 0, bad_lines = 0, bad_records = 0, other = 0, direct = 0;
    for (unsigned i = 0; i < sessions; i++) {
        char dir[1200];
        if (keep && *keep)
            snprintf(dir, sizeof dir, "%s/s%03u", keep, i);
        else
            snprintf(dir, sizeof dir, "%s/s%03u", root, i);
        CHECK_INT(write_session(dir, 1 + rnd(i % 4 == 3 ? 60 : 8)), 0);
        char label[64];
        snprintf(label, sizeof label, "session %u", i);
        bad += compare_dir(dir, (i & 1) ? SID : NULL, label, &direct);
        output o;
        read_report(dir, NULL, true, &o);
        lines += o.res.lines;
        bad_lines += o.res.bad_lines;
        bad_records += o.res.bad_records;
        other += o.res.other_session;
        output_free(&o);
    }
    printf("test_report_details: %u sessions, %llu lines (%llu bad lines, %llu bad records, "
           "%llu of another session); kernel_details: %llu the writer's, %llu odd, %llu taken "
           "directly: %d differences\n",
           sessions, (unsigned long long)lines, (unsigned long long)bad_lines,
           (unsigned long long)bad_records, (unsigned long long)other,
           (unsigned long long)n_writer_details, (unsigned long long)n_odd_details,
           (unsigned long long)direct, bad);
    CHECK_INT(bad, 0);
    /* The writer's lines all took the direct path, the odd ones both. */
    CHECK(direct >= n_writer_details);
    CHECK(direct > n_writer_details || n_odd_details == 0);
    CHECK(direct < n_writer_details + n_odd_details || n_odd_details == 0);
    /* The odd lines reached every kind of outcome. */
    CHECK(bad_lines > 0);
    CHECK(bad_records > 0);
    CHECK(other > 0);
    fl_rmtree(root);
    return check_done("test_report_details");
}
