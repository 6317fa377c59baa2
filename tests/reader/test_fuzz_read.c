/*
 * test_fuzz_read.c - runs the reader's fuzz target (tests/fuzz/
 * fuzz_read_line.c) without libFuzzer: a deterministic mutation loop
 * (byte flips, JSON-ish byte insertions, deletions, duplications,
 * splices of seed lines) over the fixture session's lines and hand-made
 * batch lines, for GP_FUZZ_SECONDS seconds (default 10).  Under the
 * ASan+UBSan and TSan builds a memory error fails the test.
 *
 * Besides not crashing, each single-line input is checked against jansson
 * (the oracle): a batch line jansson accepts is never a bad line for the
 * scanner, one the scanner delivers is valid JSON for jansson (bar the
 * documented differences: duplicate keys inside skipped values, numbers
 * beyond double, one more level of nesting), and every delivered cell
 * equals jansson's number bit for bit.  Runs of kernel_detail lines, each
 * a mutant of one before it, are read as one file's lines by the detail
 * callback and by jansson (the scanner's template).  Every 64th input is also written
 * as a session (device.log and a gzipped window) and read with
 * fl_read_session.
 */
#include "check.h"
#include "fl_log.h"

/* A kernel_detail read differently by the detail callback and by
 * jansson's record (fuzz_read_line.c): an oracle mismatch, not a trap. */
static void report(const char *what, const char *line, size_t len);
#define FUZZ_DETAIL_MISMATCH(line, len)                                                            \
    report("kernel_detail differs between the detail callback and jansson", line, len)
#include "fuzz/fuzz_read_line.c"

#include <glob.h>
#include <math.h>
#include <time.h>
#include <zlib.h>

#define FUZZ_MAX 65536

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static size_t rnd(size_t n)
{
    return n ? (size_t)(rng() % n) : 0;
}

typedef struct seed {
    char *p;
    size_t n;
} seed;
static seed seeds[512];
static size_t nseeds;

static void add_seed(const char *p, size_t n)
{
    if (nseeds == sizeof seeds / sizeof seeds[0] || n > FUZZ_MAX)
        return;
    seeds[nseeds].p = malloc(n + 1);
    if (!seeds[nseeds].p)
        return;
    memcpy(seeds[nseeds].p, p, n);
    seeds[nseeds].p[n] = '\0';
    seeds[nseeds].n = n;
    nseeds++;
}

static const char *const batch_seeds[] = {
    "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"s\",\"batch_id\":3,"
    "\"base_time_ns\":1760000000001000000,\"columns\":[\"dt_ns\",\"kernel_id\",\"duration_ns\"],"
    "\"rows\":[[0,1,20000],[50000,2,900000],[1000000,3,80000]]}",
    "{\"type\":\"memcpy_event_batch\",\"columns\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"],"
    "\"rows\":[[-5,1e3,1.5,18446744073709551615,9223372036854775808,null],"
    "[-9223372036854775808,-0,0.1,2.5E-3,123456789012345678901234,-1.25e+2]]}",
    " { \"rows\" : [ [ 1 , 2 ] ,\t[ 3,4 ] ] , \"extra\" : {\"k\":[true,false,null,\"s\\\"\"]},"
    " \"columns\" : [ \"d\\u0074_ns\" , \"x\\/y\" ] , \"type\" : \"host_metric_batch\" ,"
    " \"hostname\":\"h\\u00e9\", \"session_id\" : \"s\" , \"batch_id\" : 4 ,"
    " \"base_time_ns\" : 99 } ",
    "{\"type\":\"pm_sample_batch\",\"columns\":[\"v\"],\"rows\":[[0.000123],[1."
    "7976931348623157e308],"
    "[4.9e-324],[3.14159265358979323846],[1e22],[1e23],[9007199254740993],[0.30000000000000004]]}",
    "{\"type\":\"scope_event_batch\",\"columns\":[\"\\ud83d\\ude00\",\"\xc3\xa9\"],"
    "\"rows\":[[1,2],[null,null]],\"hostname\":null,\"x\":{\"a\":{\"b\":[[[]]]}}}",
    "{\"type\":\"a_batch\",\"columns\":[],\"rows\":[[]]}",
    "{\"rows\":[[1]],\"type\":\"b_batch\",\"columns\":[\"c\"],\"session_id\":\"s\"}",
    "{\"type\":\"mystery\",\"rows\":[[\"x\"]],\"session_id\":\"t\"}",
    "{\"type\":\"kernel_detail\",\"corr_id\":18446744073709551615,\"occupancy\":0.5}",
    /* kernel_detail as the writer writes it, and odd ones (the detail
     * callback's scanner against jansson). */
    "{\"version\":1,\"type\":\"kernel_detail\",\"session_id\":\"s\",\"pid\":4242,\"app\":\"a\","
    "\"corr_id\":1000000,\"grid\":\"(28,1,1)\",\"block\":\"(128,1,1)\",\"static_shared\":0,"
    "\"local_bytes\":0,\"const_bytes\":null,\"occupancy\":0.75,\"reg_occupancy\":1.0,"
    "\"smem_occupancy\":1e0,\"warp_occupancy\":null,\"block_occupancy\":null,"
    "\"limiting_resource\":\"warps\",\"max_active_blocks\":8,\"local_mem_total_bytes\":0,"
    "\"local_mem_per_thread_bytes\":0,\"cache_config_requested\":0,\"cache_config_executed\":0,"
    "\"shared_mem_executed_bytes\":0,\"user_scope\":\"train|forward\",\"stack_trace\":\"\"}",
    " { \"type\" : \"kernel_detail\" , \"user_scope\":\"a\\\"b\\u00e9\\ud83d\\ude00|c\\n\","
    "\"corr_id\":-0,\"grid\":\"( 1,2,3)\",\"block\":\"(+1,-0,4294967295)\",\"x\":[1,{\"y\":2}],"
    "\"static_shared\":1.5e3,\"occupancy\":12345678901234567890,\"limiting_resource\":7} ",
    "{\"type\":\"kernel_detail\",\"corr_id\":5,\"corr_id\":6,\"session_id\":\"s\"}",
    "{\"session_id\":\"t\",\"type\":\"kernel_detail\",\"corr_id\":9223372036854775807,"
    "\"grid\":\"(4294967296,1,1)\",\"occupancy\":-1e400,\"user_scope\":null,\"z\":true,"
    "\"w\":false,\"z2\":1,\"z3\":2}",
    "{\"type\":\"kernel_detail\",\"session_id\":5,\"corr_id\":\"12\",\"static_shared\":-3,"
    "\"occupancy\":\"0.5\",\"grid\":[1,2,3],\"user_scope\":\"\",\"ty\\u0070e\":1}",
    /* Lines that start as the one before (the scanner's template). */
    "{\"version\":1,\"type\":\"kernel_detail\",\"session_id\":\"s\",\"pid\":1,\"corr_id\":7,"
    "\"grid\":\"(2,1,1)\",\"occupancy\":0.5,\"user_scope\":\"a\",\"stack_trace\":\"\"}\n"
    "{\"version\":1,\"type\":\"kernel_detail\",\"session_id\":\"s\",\"pid\":1,\"corr_id\":8,"
    "\"grid\":\"(2,1,1)\",\"occupancy\":0.5,\"user_scope\":\"a\",\"stack_trace\":\"\"}\n"
    "{\"version\":1,\"type\":\"kernel_detail\",\"session_id\":\"s\",\"pid\":1,\"corr_id\":9,"
    "\"grid\":\"(2,1,1)\",\"occupancy\":0.5,\"corr_id\":7,\"stack_trace\":\"\"}\n"
    "{\"version\":1,\"type\":\"kernel_detail\",\"session_id\":\"t\",\"pid\":1,\"x\":9,"
    "\"grid\":\"(2,1,1)\",\"occupancy\":0.5,\"user_scope\":\"a\",\"stack_trace\":\"\"} \n"
    "{\"version\":1,\"type\":\"kernel_detail\",\"session_id\":\"s\",\"pid\":1,\"corr_id\":8,"
    "\"grid\":\"(2,1,1)\",\"occupancy\":0.5,\"user_scope\":\"a\",\"stack_trace\":\"\"}",
    "{\"type\":\"kernel_detail\",\"corr_id\":0.000000001e9,\"occupancy\":4.9e-324,"
    "\"static_shared\":18446744073709551616.0,\"grid\":\"(1,1,1) \",\"block\":\"(01,1,1)\"}",
};

static void load_seeds(void)
{
    char pattern[1024];
    snprintf(pattern, sizeof pattern, "%s/fixtures/gpufl-session/*/*.log",
             check_env("GP_TEST_SOURCE_DIR"));
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            size_t len = 0;
            char *text = check_read_file(g.gl_pathv[i], &len);
            if (!text)
                continue;
            add_seed(text, len); /* the whole file: several lines */
            char *save = NULL;
            for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                add_seed(l, strlen(l));
            free(text);
        }
        globfree(&g);
    }
    for (size_t i = 0; i < sizeof batch_seeds / sizeof batch_seeds[0]; i++)
        add_seed(batch_seeds[i], strlen(batch_seeds[i]));
}

static const char interesting[] = "{}[]\",:0123456789-+.eE \t\\/unlltrufase\n\0\x80\xc3\xff";

/* Mutates buf (len *n, capacity FUZZ_MAX) once. */
static void mutate(char *buf, size_t *n)
{
    size_t len = *n;
    switch (rnd(9)) {
    case 0: /* flip a bit */
        if (len)
            buf[rnd(len)] ^= (char)(1u << rnd(8));
        break;
    case 1: /* overwrite with a JSON-ish byte */
        if (len)
            buf[rnd(len)] = interesting[rnd(sizeof interesting - 1)];
        break;
    case 2: /* insert a JSON-ish byte */
        if (len < FUZZ_MAX) {
            size_t at = rnd(len + 1);
            memmove(buf + at + 1, buf + at, len - at);
            buf[at] = interesting[rnd(sizeof interesting - 1)];
            len++;
        }
        break;
    case 3: /* delete a range */
        if (len) {
            size_t at = rnd(len), k = 1 + rnd(len - at < 16 ? len - at : 16);
            memmove(buf + at, buf + at + k, len - at - k);
            len -= k;
        }
        break;
    case 4: /* duplicate a range */
        if (len) {
            size_t at = rnd(len), k = 1 + rnd(len - at < 64 ? len - at : 64);
            if (len + k <= FUZZ_MAX) {
                size_t to = rnd(len + 1);
                char tmp[64];
                memcpy(tmp, buf + at, k);
                memmove(buf + to + k, buf + to, len - to);
                memcpy(buf + to, tmp, k);
                len += k;
            }
        }
        break;
    case 5: { /* splice: our prefix, another seed's suffix */
        const seed *s = &seeds[rnd(nseeds)];
        size_t cut = rnd(len + 1), from = rnd(s->n + 1);
        size_t k = s->n - from;
        if (cut + k > FUZZ_MAX)
            k = FUZZ_MAX - cut;
        memcpy(buf + cut, s->p + from, k);
        len = cut + k;
        break;
    }
    case 6: { /* append another line */
        const seed *s = &seeds[rnd(nseeds)];
        if (len + 1 + s->n <= FUZZ_MAX) {
            buf[len++] = '\n';
            memcpy(buf + len, s->p, s->n);
            len += s->n;
        }
        break;
    }
    case 7: /* truncate */
        len = rnd(len + 1);
        break;
    default: { /* a digit run: long numbers */
        if (len + 24 <= FUZZ_MAX) {
            size_t at = rnd(len + 1), k = 1 + rnd(24);
            memmove(buf + at + k, buf + at, len - at);
            for (size_t i = 0; i < k; i++)
                buf[at + i] = (char)('0' + rnd(10));
            len += k;
        }
        break;
    }
    }
    *n = len;
}

/* ------------------------------------------------------------ the oracle */

typedef struct seen {
    int batches;
    size_t nrows, ncols;
    fl_cell cells[4096];
    bool truncated;
} seen;

static void oracle_batch(void *user, const fl_batch *b)
{
    seen *s = user;
    s->batches++;
    s->nrows = b->nrows;
    s->ncols = b->ncols;
    size_t n = b->nrows * b->ncols;
    s->truncated = n > 4096;
    memcpy(s->cells, b->cells, (n > 4096 ? 4096 : n) * sizeof *b->cells);
}

static int mismatches;

static void report(const char *what, const char *line, size_t len)
{
    if (mismatches++ < 5)
        fprintf(stderr, "oracle: %s: %.*s\n", what, (int)(len > 300 ? 300 : len), line);
}

static bool ends_batch(const char *t)
{
    size_t n = t ? strlen(t) : 0;
    return n >= 6 && strcmp(t + n - 6, "_batch") == 0;
}

static void oracle(const char *line, size_t len)
{
    /* A NUL is not JSON, but jansson's json_loadb lets one through inside
     * a number (the reader, like Python's json, rejects it): no oracle for
     * such a line. */
    if (memchr(line, '\n', len) || memchr(line, '\0', len))
        return;
    seen *s = calloc(1, sizeof *s);
    if (!s)
        return;
    fl_read_cb cb = {.user = s, .batch = oracle_batch};
    fl_read_result res;
    memset(&res, 0, sizeof res);
    fl_read_line(line, len, 0, NULL, &cb, &res, "oracle", 1);
    json_error_t e;
    json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &e);
    const char *type = json_string_value(json_object_get(j, "type"));
    bool batch = json_is_object(j) && ends_batch(type);
    if (j && batch && res.bad_lines)
        report("valid JSON batch called a bad line", line, len);
    if (!j && s->batches) {
        enum json_error_code c = json_error_code(&e);
        if (c != json_error_duplicate_key && c != json_error_numeric_overflow &&
            c != json_error_stack_overflow)
            report("invalid JSON delivered as a batch", line, len);
    }
    if (j && batch && s->batches && !s->truncated) {
        json_t *rows = json_object_get(j, "rows");
        if (json_array_size(rows) != s->nrows)
            report("row count differs from jansson's", line, len);
        for (size_t r = 0; r < s->nrows && r < json_array_size(rows); r++) {
            json_t *row = json_array_get(rows, r);
            for (size_t c = 0; c < s->ncols; c++) {
                json_t *v = json_array_get(row, c);
                const fl_cell *cell = &s->cells[r * s->ncols + c];
                if (json_is_null(v)) {
                    if (cell->kind != FL_CELL_NULL)
                        report("null cell differs", line, len);
                } else if (!json_is_number(v) || fl_cell_real(cell) != json_number_value(v)) {
                    report("cell value differs from jansson's", line, len);
                }
            }
        }
    }
    json_decref(j);
    free(s);
}

/* ------------------------------------------------- lines after lines */

/* A run of kernel_detail lines, each a copy of one before it (mostly the
 * one just before) with none to three mutations: the lines the detail
 * scanner reads against a template (the members the same as a line
 * before), read as one file's lines both ways (fuzz_lines_check). */
static void template_round(char *buf)
{
    static size_t nd, idx[sizeof seeds / sizeof seeds[0]], looked; /* seeds only grow */
    for (; looked < nseeds; looked++)
        if (!memchr(seeds[looked].p, '\n', seeds[looked].n) &&
            strstr(seeds[looked].p, "kernel_detail"))
            idx[nd++] = looked;
    if (!nd)
        return;
    enum { LINES = 12 };
    size_t start[LINES], len[LINES], total = 0;
    const seed *b = &seeds[idx[rnd(nd)]];
    size_t nl = 2 + rnd(LINES - 1);
    for (size_t l = 0; l < nl; l++) {
        char line[FUZZ_MAX];
        size_t n;
        if (l == 0) {
            n = b->n < 4096 ? b->n : 4096;
            memcpy(line, b->p, n);
        } else {
            size_t from = rnd(3) ? l - 1 : rnd(l);
            n = len[from];
            memcpy(line, buf + start[from], n);
        }
        for (size_t k = rnd(4); k > 0; k--)
            mutate(line, &n);
        if (n > 8192 || total + n + 1 > FUZZ_MAX)
            break;
        start[l] = total;
        len[l] = n;
        memcpy(buf + total, line, n);
        total += n;
        buf[total++] = '\n';
    }
    char *in = malloc(total ? total : 1); /* exactly: a sanitizer sees a read past it */
    if (!in)
        return;
    memcpy(in, buf, total);
    fuzz_lines_check(in, total);
    free(in);
}

/* ------------------------------------------------------------ sessions */

static char tmp_root[256];

static void session_round(const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/device.log", tmp_root);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(data, 1, len, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/scope.1.log.gz", tmp_root);
    gzFile z = gzopen(path, "wb1");
    if (z) {
        gzwrite(z, data, (unsigned)len);
        gzclose(z);
    }
    if (len > 64 && rnd(2)) {
        /* A truncated window. */
        if (truncate(path, (off_t)rnd(len / 2)) != 0)
            fprintf(stderr, "truncate %s failed\n", path);
    }
    fuzz_sink sink = {0};
    fl_read_cb cb = {
        .user = &sink, .record = fuzz_record, .batch = fuzz_batch, .warning = fuzz_warning};
    fl_read_result res;
    gp_error err;
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.dedupe_common = rnd(2);
    o.session_id = rnd(4) ? NULL : "s";
    fl_read_session(tmp_root, &o, &cb, &res, &err);
}

int main(void)
{
    const char *env = getenv("GP_FUZZ_SECONDS");
    double seconds = env && *env ? atof(env) : 10.0;
    const char *seed_env = getenv("GP_FUZZ_SEED");
    if (seed_env && *seed_env)
        rng_state = strtoull(seed_env, NULL, 0) | 1;
    load_seeds();
    CHECK(nseeds > 20);
    if (!nseeds)
        return check_done("test_fuzz_read");
    snprintf(tmp_root, sizeof tmp_root, "/tmp/gp_test_fuzz_read.XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }

    /* The seeds themselves first. */
    for (size_t i = 0; i < nseeds; i++) {
        LLVMFuzzerTestOneInput((const uint8_t *)seeds[i].p, seeds[i].n);
        oracle(seeds[i].p, seeds[i].n);
    }
    CHECK_INT(mismatches, 0);

    char *buf = malloc(FUZZ_MAX + 1);
    CHECK(buf != NULL);
    if (!buf)
        return check_done("test_fuzz_read");
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t execs = 0;
    for (;;) {
        if ((execs & 63) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
                break;
        }
        const seed *s = &seeds[rnd(nseeds)];
        size_t n = s->n;
        memcpy(buf, s->p, n);
        int k = 1 + (int)rnd(rnd(4) ? 4 : 16);
        for (int i = 0; i < k; i++)
            mutate(buf, &n);
        /* Exactly n bytes: a sanitizer sees a read past them. */
        char *in = malloc(n ? n : 1);
        if (!in)
            continue;
        memcpy(in, buf, n);
        LLVMFuzzerTestOneInput((const uint8_t *)in, n);
        oracle(in, n);
        template_round(buf);
        if ((execs & 63) == 0)
            session_round(in, n);
        /* Keep some mutants as seeds (a crude corpus). */
        if (rnd(64) == 0 && nseeds < sizeof seeds / sizeof seeds[0])
            add_seed(in, n);
        free(in);
        execs++;
    }
    free(buf);
    uint64_t direct = fuzz_details_direct;
    printf("test_fuzz_read: %llu executions in %.0f s (GP_FUZZ_SECONDS), %zu seeds, %llu "
           "kernel_details read by the direct path\n",
           (unsigned long long)execs, seconds, nseeds, (unsigned long long)direct);
    CHECK_INT(mismatches, 0);
    CHECK(direct > 0); /* the kernel_detail scanner was exercised */
    CHECK(execs > 0);
    fl_rmtree(tmp_root);
    for (size_t i = 0; i < nseeds; i++)
        free(seeds[i].p);
    return check_done("test_fuzz_read");
}
