/*
 * test_export_sqlite.c - `export --format sqlite` (src/report/
 * export_sqlite.c): the rich session of report_session.h and a session
 * generated here (hostile kernel names, PC / SASS / PM samples, range
 * profiler metrics, syncs with a CPU stack) exported, then queried with
 * SQL through libsqlite3 (dlopen, as the exporter loads it): exact row
 * counts per table, the report's hotspot table reproduced by one query
 * (names, counts, total / mean / min / max ns, order), names joined
 * through strings byte for byte; and through the command (GP_TEST_CLI):
 * -o missing or not a regular file is a usage error (125), an existing
 * FILE is replaced whole, and without SQLite FILE stays as it was with no
 * temporary file left.
 */
#include "check.h"
#include "reader/read.h"
#include "report/export.h"
#include "report/report.h"
#include "fl_log.h"
#include "report_session.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ SQLite */

static struct {
    int (*open_v2)(const char *, void **, int, const char *);
    int (*close)(void *);
    int (*prepare_v2)(void *, const char *, int, void **, const char **);
    int (*step)(void *);
    int (*finalize)(void *);
    int (*column_count)(void *);
    int (*column_type)(void *, int);
    int64_t (*column_int64)(void *, int);
    double (*column_double)(void *, int);
    const unsigned char *(*column_text)(void *, int);
    int (*column_bytes)(void *, int);
    const char *(*errmsg)(void *);
} sql;

static bool sql_load(void)
{
    void *h = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return false;
    const char *names[] = {"sqlite3_open_v2",     "sqlite3_close",        "sqlite3_prepare_v2",
                           "sqlite3_step",        "sqlite3_finalize",     "sqlite3_column_count",
                           "sqlite3_column_type", "sqlite3_column_int64", "sqlite3_column_double",
                           "sqlite3_column_text", "sqlite3_column_bytes", "sqlite3_errmsg"};
    void **slots = (void **)&sql;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(slots[i] = dlsym(h, names[i])))
            return false;
    return true;
}

static void *db_open(const char *path)
{
    void *db = NULL;
    CHECK_INT(sql.open_v2(path, &db, 1 /* SQLITE_OPEN_READONLY */, NULL), 0);
    return db;
}

static void *query(void *db, const char *q)
{
    void *st = NULL;
    if (sql.prepare_v2(db, q, -1, &st, NULL) != 0) {
        fprintf(stderr, "SQL %s: %s\n", q, sql.errmsg(db));
        CHECK(st != NULL);
    }
    return st;
}

/* The one integer a query gives; -1 when it gives none. */
static int64_t scalar(void *db, const char *q)
{
    void *st = query(db, q);
    int64_t v = -1;
    if (st && sql.step(st) == 100)
        v = sql.column_int64(st, 0);
    if (st)
        sql.finalize(st);
    return v;
}

/* The one text a query gives, into buf; "(none)" if none, "(null)" for NULL. */
static const char *text(void *db, const char *q, char *buf, size_t cap)
{
    void *st = query(db, q);
    snprintf(buf, cap, "(none)");
    if (st && sql.step(st) == 100) {
        const unsigned char *t = sql.column_text(st, 0);
        snprintf(buf, cap, "%.*s", t ? sql.column_bytes(st, 0) : 6, t ? (const char *)t : "(null)");
    }
    if (st)
        sql.finalize(st);
    return buf;
}

/* ------------------------------------------------------------ export */

/* path's session exported to db_path through the library's calls. */
static void export_to(const char *path, const char *db_path)
{
    unlink(db_path);
    FILE *f = fopen("/dev/null", "w");
    fl_export *e = fl_export_create((fl_export_format)fl_export_format_of("sqlite"), f);
    CHECK(e != NULL);
    CHECK(fl_export_writes_file((fl_export_format)fl_export_format_of("sqlite")));
    CHECK(!fl_export_writes_file((fl_export_format)fl_export_format_of("csv")));
    FILE *created = fopen(db_path, "w"); /* the caller's empty temporary file */
    if (created)
        fclose(created);
    CHECK_INT(fl_export_set_file(e, db_path), 0);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    fl_read_opts opts;
    fl_read_opts_init(&opts);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(path, &opts, &cb, &res, &err), GP_OK);
    CHECK_INT(fl_export_finish(e, &res), 0);
    if (fl_export_error(e))
        fprintf(stderr, "export: %s\n", fl_export_error(e));
    fl_export_destroy(e);
    fclose(f);
}

/* The JSON report of path (top 50). */
static json_t *report_json(const char *path)
{
    fl_report *rep = fl_report_create();
    fl_read_cb cb;
    fl_report_callbacks(rep, &cb);
    fl_read_opts o;
    fl_read_opts_init(&o);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(path, &o, &cb, &res, &err), GP_OK);
    fl_report_finish(rep, &res);
    fl_buf j = {0};
    fl_report_json(rep, 50, &j);
    json_error_t je;
    json_t *root = json_loads(j.p, 0, &je);
    CHECK(root != NULL);
    fl_buf_free(&j);
    fl_report_destroy(rep);
    return root;
}

/* The report's hotspot table, row by row, against one SQL query. */
static void check_hotspots(void *db, const char *path)
{
    json_t *root = report_json(path);
    json_t *ks = json_object_get(json_object_get(root, "hotspots"), "kernels");
    CHECK(json_array_size(ks) > 0);
    void *st = query(db, "SELECT s.value, COUNT(*), SUM(k.duration_ns), AVG(k.duration_ns),"
                         " MIN(k.duration_ns), MAX(k.duration_ns), k.kernel_id"
                         " FROM kernels k LEFT JOIN strings s ON s.id = k.name_id"
                         " GROUP BY k.kernel_id ORDER BY SUM(k.duration_ns) DESC, k.kernel_id");
    size_t i = 0;
    while (st && sql.step(st) == 100) {
        json_t *k = json_array_get(ks, i++);
        CHECK(k != NULL);
        if (!k)
            break;
        char name[512];
        snprintf(name, sizeof name, "%.*s", sql.column_bytes(st, 0),
                 (const char *)sql.column_text(st, 0));
        CHECK_STR(name, json_string_value(json_object_get(k, "name")));
        CHECK_INT(sql.column_int64(st, 1), json_integer_value(json_object_get(k, "count")));
        CHECK_INT(sql.column_int64(st, 2), json_integer_value(json_object_get(k, "total_ns")));
        CHECK_NEAR(sql.column_double(st, 3), json_number_value(json_object_get(k, "mean_ns")),
                   1e-6);
        CHECK_INT(sql.column_int64(st, 4), json_integer_value(json_object_get(k, "min_ns")));
        CHECK_INT(sql.column_int64(st, 5), json_integer_value(json_object_get(k, "max_ns")));
        CHECK_INT(sql.column_int64(st, 6), json_integer_value(json_object_get(k, "kernel_id")));
    }
    CHECK_INT(i, json_array_size(ks));
    if (st)
        sql.finalize(st);
    json_decref(root);
}

/* --------------------------------------------------------- the rich one */

static void test_rich(const char *tmp)
{
    char base[4200], dir[4300], dbp[4300], buf[512];
    snprintf(base, sizeof base, "%s/rich", tmp);
    CHECK_INT(rs_write(base, false, dir, sizeof dir), 0);
    snprintf(dbp, sizeof dbp, "%s/rich.db", tmp);
    export_to(dir, dbp);
    void *db = db_open(dbp);
    static const struct {
        const char *table;
        int64_t rows;
    } counts[] = {{"kernels", 8},       {"memcpy", 5},          {"memset", 2},
                  {"scopes", 4},        {"device_samples", 6},  {"host_samples", 3},
                  {"syncs", 0},         {"profile_samples", 0}, {"pm_samples", 0},
                  {"perf_metrics", 0},  {"devices", 2},         {"processes", 1},
                  {"memory_allocs", 0}, {"graph_launches", 0}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        char q[128];
        snprintf(q, sizeof q, "SELECT COUNT(*) FROM %s", counts[i].table);
        if (scalar(db, q) != counts[i].rows)
            fprintf(stderr, "table %s\n", counts[i].table);
        CHECK_INT(scalar(db, q), counts[i].rows);
    }
    /* every text once */
    CHECK_INT(scalar(db, "SELECT COUNT(*) - COUNT(DISTINCT value) FROM strings"), 0);
    CHECK_STR(text(db, "SELECT value FROM meta WHERE key = 'session_id'", buf, sizeof buf), RS_SID);
    CHECK_INT(scalar(db, "SELECT value FROM meta WHERE key = 'schema_version'"), 1);
    CHECK_STR(text(db, "SELECT value FROM meta WHERE key = 'tool_version'", buf, sizeof buf),
              GP_VERSION_STRING);
    CHECK_STR(text(db, "SELECT s.value FROM processes p JOIN strings s ON s.id = p.app_id", buf,
                   sizeof buf),
              "rich_app");
    /* the odd kernel: a name with a comma and quotes, its external id */
    CHECK_STR(text(db,
                   "SELECT s.value || '|' || k.external_id || '|' || k.grid_x || '|' ||"
                   " k.registers FROM kernels k JOIN strings s ON s.id = k.name_id"
                   " WHERE k.kernel_id = 4",
                   buf, sizeof buf),
              "odd, \"quoted\" name|77|8|40");
    /* copy_kernel: no occupancy recorded is NULL, not 0 */
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM kernels WHERE kernel_id = 3 AND occupancy IS NULL"),
              1);
    CHECK_STR(text(db,
                   "SELECT group_concat(s.value || '=' || sc.duration_ns, ';') FROM"
                   " (SELECT * FROM scopes ORDER BY start_ns) sc JOIN strings s"
                   " ON s.id = sc.name_id",
                   buf, sizeof buf),
              "train=2000000;step=750000;load data=840000;step=900000");
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM scopes WHERE nvtx = 1"), 1);
    CHECK_INT(scalar(db, "SELECT SUM(bytes) FROM memset"), 4096 + RS_MIB);
    /* device 1 never reported util.gpu, and one power reading is missing: NULL */
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM device_samples WHERE device_id = 1 AND gpu_util"
                         " IS NULL"),
              3);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM device_samples WHERE power_mw IS NULL"), 1);
    CHECK_INT(scalar(db, "SELECT SUM(power_mw) FROM device_samples WHERE device_id = 0"), 600000);
    check_hotspots(db, dir);
    sql.close(db);
}

/* The crashed variant: the scope never ended is a row whose end is NULL,
 * the session's end unknown, the torn last line counted. */
static void test_crashed(const char *tmp)
{
    char base[4200], dir[4300], dbp[4300], buf[128];
    snprintf(base, sizeof base, "%s/crashed", tmp);
    CHECK_INT(rs_write(base, true, dir, sizeof dir), 0);
    snprintf(dbp, sizeof dbp, "%s/crashed.db", tmp);
    export_to(dir, dbp);
    void *db = db_open(dbp);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM scopes"), 5);
    CHECK_STR(text(db,
                   "SELECT s.value || '@' || (sc.start_ns - "
                   "1760000000000000000) FROM scopes sc"
                   " JOIN strings s ON s.id = sc.name_id WHERE sc.end_ns IS NULL"
                   " AND sc.duration_ns IS NULL",
                   buf, sizeof buf),
              "train@4000000");
    CHECK_INT(scalar(db, "SELECT value FROM meta WHERE key = 'crashed'"), 1);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM meta WHERE key = 'end_ns' AND value IS NULL"), 1);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM processes WHERE end_ns IS NULL"), 1);
    sql.close(db);
}

/* Batches without a device_id column: the only device job_start lists is
 * not assumed when it lists two (NULL, not 0). */
static void test_nodev(const char *tmp)
{
    char base[4200], dir[4300], dbp[4300];
    snprintf(base, sizeof base, "%s/nodev", tmp);
    CHECK_INT(rs_write_nodev(base, dir, sizeof dir), 0);
    snprintf(dbp, sizeof dbp, "%s/nodev.db", tmp);
    export_to(dir, dbp);
    void *db = db_open(dbp);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM kernels"), 3);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM kernels WHERE device_id IS NULL"), 2);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM memcpy WHERE device_id IS NULL"), 1);
    check_hotspots(db, dir);
    sql.close(db);
}

/* ---------------------------------------------- a generated session */

#define GS_SID "5e551011-bbbb-4ccc-8ddd-0123456789ab"
#define GS_NAMES 6
#define GS_ROWS 20000

/* Hostile names: quotes, SQL, control bytes, UTF-8 - all NUL-free. */
static void gs_name(int i, char *out, size_t cap)
{
    switch (i) {
    case 0:
        snprintf(out, cap, "k'); DROP TABLE kernels; --");
        break;
    case 1:
        snprintf(out, cap, "q\"uote\\back\\\\slash");
        break;
    case 2: {
        size_t n = 0;
        for (int c = 1; c < 32 && n + 2 < cap; c++)
            out[n++] = (char)c;
        out[n++] = 0x7f; /* every control byte; bytes that are not UTF-8 no JSON line holds */
        out[n] = '\0';
        break;
    }
    case 3:
        snprintf(out, cap, "\xc2\xb5s \xe2\x88\x91 \xf0\x9f\x98\x80 caf\xc3\xa9");
        break;
    case 4:
        snprintf(out, cap, "void f<int, 'x'>(char const*)");
        break;
    default:
        snprintf(out, cap, "plain_%d", i);
        break;
    }
}

static void gs_write(const char *dir)
{
    mkdir(dir, 0755);
    fl_ident id = {4242, "gen_app", GS_SID};
    fl_job_start js = {.log_path = "logs", .ts_ns = RS_T0, .hostname = "gen-host"};
    fl_buf dev = {0}, sc = {0};
    char names[GS_NAMES][64];
    fl_dict_entry kd[GS_NAMES];
    for (int i = 0; i < GS_NAMES; i++) {
        gs_name(i, names[i], sizeof names[i]);
        kd[i] = (fl_dict_entry){(uint64_t)i + 1, names[i]};
    }
    fl_dict_entry fd[] = {{1, "_Z4gemmPf@gemm.cu"}, {2, "_Z4reluPf@relu.cu"}};
    fl_dict_entry md[] = {{1, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
                          {2, "smsp__sass_inst_executed"},
                          {3, "sm__throughput.avg.pct_of_peak_sustained_elapsed"}};
    fl_dict_entry sfd[] = {{1, "gemm.cu"}};
    fl_dict_entry scd[] = {{1, "train"}};
    fl_dict_entry std_[] = {{1, "main (app.c:10)|wait (app.c:20)"}};
    fl_buf *chans[2] = {&dev, &sc};
    for (int c = 0; c < 2; c++) {
        fl_rec_job_start(chans[c], &id, &js);
        fl_rec_dictionary(chans[c], GS_SID, FL_DICT_KERNEL, kd, GS_NAMES);
        fl_rec_dictionary(chans[c], GS_SID, FL_DICT_FUNCTION, fd, 2);
        fl_rec_dictionary(chans[c], GS_SID, FL_DICT_METRIC, md, 3);
        fl_rec_dictionary(chans[c], GS_SID, FL_DICT_SOURCE_FILE, sfd, 1);
        fl_rec_dictionary(chans[c], GS_SID, FL_DICT_SCOPE_NAME, scd, 1);
        fl_rec_dictionary(chans[c], GS_SID, FL_DICT_STACK, std_, 1);
    }
    fl_kernel_row rows[1000];
    for (int b = 0; b < GS_ROWS / 1000; b++) {
        for (int r = 0; r < 1000; r++) {
            int n = b * 1000 + r;
            rows[r] = rs_kernel(10 + (uint64_t)n, 1 + (uint64_t)(n % 7),
                                1 + (uint32_t)(n % GS_NAMES), 7, 1000 + (uint32_t)n, 4, 32, 0);
        }
        fl_rec_kernel_batch(&dev, GS_SID, (uint64_t)b + 1, rows, 1000);
    }
    fl_buf_puts(&sc, "{\"version\":1,\"type\":\"profile_sample_batch\",\"session_id\":\"" GS_SID
                     "\",\"batch_id\":1,\"base_time_ns\":1760000000001000000,\"columns\":"
                     "[\"dt_ns\",\"corr_id\",\"device_id\",\"function_id\",\"pc_offset\","
                     "\"metric_id\",\"metric_value\",\"stall_reason\",\"sample_kind\","
                     "\"scope_name_id\",\"source_file_id\",\"source_line\"],\"rows\":"
                     "[[0,1000,0,1,16,1,40,0,0,1,1,12],[0,1000,0,1,32,1,2,0,0,1,1,13],"
                     "[5,1001,0,2,48,2,900,0,1,1,1,30]]}\n");
    fl_buf_puts(&sc, "{\"version\":1,\"type\":\"pm_sample_batch\",\"session_id\":\"" GS_SID
                     "\",\"batch_id\":1,\"base_time_ns\":1760000000002000000,\"columns\":"
                     "[\"sample_index\",\"dt_ns\",\"device_id\",\"metric_id\",\"value\","
                     "\"scope_name_id\"],\"rows\":[[0,0,0,3,12.5,1],[1,1000,0,3,80.25,1]]}\n");
    fl_buf_puts(&sc,
                "{\"version\":1,\"type\":\"synchronization_event_batch\",\"session_id\":\"" GS_SID
                "\",\"batch_id\":1,\"base_time_ns\":1760000000003000000,\"columns\":"
                "[\"dt_ns\",\"duration_ns\",\"sync_type\",\"stream_id\",\"event_id\","
                "\"context_id\",\"corr_id\",\"function_id\",\"stack_id\"],\"rows\":"
                "[[0,2000,3,7,0,1,15,0,1],[100,500,1,7,0,1,16,0,0]]}\n");
    fl_buf_puts(&sc, "{\"type\":\"perf_metric_event\",\"session_id\":\"" GS_SID
                     "\",\"name\":\"train\",\"user_scope\":\"train\",\"scope_depth\":0,"
                     "\"start_ns\":1760000000004000000,\"end_ns\":1760000000004500000,"
                     "\"sm_throughput_pct\":93.75,\"l1_hit_rate_pct\":-1,\"l2_hit_rate_pct\":50,"
                     "\"dram_read_bytes\":1024,\"dram_write_bytes\":2048,"
                     "\"tensor_active_pct\":-1}\n");
    fl_rec_shutdown(&dev, &id, RS_US(50000));
    fl_rec_shutdown(&sc, &id, RS_US(50000));
    CHECK_INT(rs_put(dir, "device.log", &dev, NULL), 0);
    CHECK_INT(rs_put(dir, "scope.log", &sc, NULL), 0);
    fl_buf_free(&dev);
    fl_buf_free(&sc);
}

static void test_generated(const char *tmp)
{
    char dir[4300], dbp[4300], buf[512], q[256];
    snprintf(dir, sizeof dir, "%s/%s", tmp, GS_SID);
    gs_write(dir);
    snprintf(dbp, sizeof dbp, "%s/gen.db", tmp);
    export_to(dir, dbp);
    void *db = db_open(dbp);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM kernels"), GS_ROWS);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM kernels WHERE name_id IS NULL"), 0);
    /* each hostile name round-trips, byte for byte, and names its launches */
    for (int i = 0; i < GS_NAMES; i++) {
        char want[64];
        gs_name(i, want, sizeof want);
        snprintf(q, sizeof q,
                 "SELECT s.value FROM kernels k JOIN strings s ON s.id = k.name_id"
                 " WHERE k.kernel_id = %d LIMIT 1",
                 i + 1);
        CHECK_STR(text(db, q, buf, sizeof buf), want);
        snprintf(q, sizeof q, "SELECT COUNT(*) FROM kernels WHERE kernel_id = %d", i + 1);
        CHECK_INT(scalar(db, q), GS_ROWS / GS_NAMES + (i < GS_ROWS % GS_NAMES));
    }
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM pc_samples"), 2);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM sass_metrics"), 1);
    CHECK_STR(text(db,
                   "SELECT f.value || '|' || m.value || '|' || p.metric_value || '|' ||"
                   " src.value || ':' || p.source_line || '|' || sc.value"
                   " FROM pc_samples p JOIN strings f ON f.id = p.function_id"
                   " JOIN strings m ON m.id = p.metric_id JOIN strings src"
                   " ON src.id = p.source_file_id JOIN strings sc ON sc.id = p.scope_name_id"
                   " ORDER BY p.pc_offset LIMIT 1",
                   buf, sizeof buf),
              "_Z4gemmPf@gemm.cu|smsp__pcsamp_warps_issue_stalled_long_scoreboard|40|gemm.cu:12|"
              "train");
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM pm_samples"), 2);
    CHECK_STR(text(db, "SELECT SUM(value) FROM pm_samples", buf, sizeof buf), "92.75");
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM syncs"), 2);
    CHECK_STR(text(db,
                   "SELECT s.value FROM syncs y JOIN strings s ON s.id = y.stack_id"
                   " WHERE y.corr_id = 15",
                   buf, sizeof buf),
              "main (app.c:10)|wait (app.c:20)");
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM syncs WHERE corr_id = 16 AND stack_id IS NULL"), 1);
    CHECK_INT(scalar(db, "SELECT end_ns - start_ns FROM syncs WHERE corr_id = 15"), 2000);
    /* the range profiler: the four metrics the range held (-1: none) */
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM perf_metrics"), 4);
    CHECK_STR(text(db,
                   "SELECT p.value || '|' || p.duration_ns || '|' || r.value FROM perf_metrics p"
                   " JOIN strings m ON m.id = p.metric_name_id JOIN strings r"
                   " ON r.id = p.range_name_id WHERE m.value = 'sm_throughput_pct'",
                   buf, sizeof buf),
              "93.75|500000|train");
    CHECK_INT(scalar(db, "SELECT COUNT(*) - COUNT(DISTINCT value) FROM strings"), 0);
    check_hotspots(db, dir);
    sql.close(db);
}

/* ----------------------------------------------------------- command */

/* The command with args (NULL-terminated); its exit status, stderr into err. */
static long fsize_limit; /* > 0: run_cli's child may write files of this many bytes at most */

static int run_cli(const char *const *args, const char *env, char *err, size_t cap)
{
    const char *cli = getenv("GP_TEST_CLI");
    char errpath[] = "/tmp/gp_sqlite_err.XXXXXX";
    int efd = mkstemp(errpath);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(efd, 2);
        if (env)
            putenv((char *)env);
        if (fsize_limit > 0) { /* a disk that fills: writes fail with EFBIG */
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {(rlim_t)fsize_limit, (rlim_t)fsize_limit};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        const char *argv[16] = {cli};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(cli, (char *const *)argv);
        _exit(126);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ssize_t n = pread(efd, err, cap - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(efd);
    unlink(errpath);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static size_t leftovers(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += strstr(de->d_name, ".gpu-profile-") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_cli(const char *tmp)
{
    if (!getenv("GP_TEST_CLI") || !*getenv("GP_TEST_CLI")) {
        fprintf(stderr, "GP_TEST_CLI unset: the command's cases skipped\n");
        return;
    }
    char base[4200], dir[4300], out[4300], err[2048];
    snprintf(base, sizeof base, "%s/cli", tmp);
    CHECK_INT(rs_write(base, false, dir, sizeof dir), 0);
    snprintf(out, sizeof out, "%s/out.db", tmp);

    const char *no_o[] = {"export", "--format", "sqlite", dir, NULL};
    CHECK_INT(run_cli(no_o, NULL, err, sizeof err), 125);
    CHECK_CONTAINS(err, "--format sqlite writes a database file, not a stream: give it -o FILE");
    const char *devnull[] = {"export", "--format", "sqlite", "-o", "/dev/null", dir, NULL};
    CHECK_INT(run_cli(devnull, NULL, err, sizeof err), 125);
    CHECK_CONTAINS(err, "-o '/dev/null' is not a regular file");

    /* an existing FILE: kept as it was when SQLite cannot be loaded */
    FILE *f = fopen(out, "w");
    fputs("precious", f);
    fclose(f);
    const char *ok[] = {"export", "--format", "sqlite", "-o", out, dir, NULL};
    CHECK_INT(
        run_cli(ok, "GPU_PROFILE_SQLITE_LIBRARY=/nonexistent/libsqlite3.so.0", err, sizeof err), 1);
    CHECK_CONTAINS(err, "cannot write '");
    CHECK_CONTAINS(err, "SQLite (/nonexistent/libsqlite3.so.0) could not be loaded");
    CHECK_CONTAINS(err, "apt-get install libsqlite3-0");
    size_t len = 0;
    char *kept = check_read_file(out, &len);
    CHECK_STR(kept ? kept : "", "precious");
    free(kept);
    CHECK_INT(leftovers(tmp), 0);

    /* a session that cannot be read, and a disk that fills: FILE kept */
    char nothing[4400], gen[4400];
    snprintf(nothing, sizeof nothing, "%s/no-such-session", tmp);
    const char *unread[] = {"export", "--format", "sqlite", "-o", out, nothing, NULL};
    CHECK(run_cli(unread, NULL, err, sizeof err) != 0);
    snprintf(gen, sizeof gen, "%s/%s", tmp, GS_SID);
    const char *big[] = {"export", "--format", "sqlite", "-o", out, gen, NULL};
    fsize_limit = 256 * 1024;
    CHECK_INT(run_cli(big, NULL, err, sizeof err), 1);
    fsize_limit = 0;
    CHECK_CONTAINS(err, "export: cannot write '");
    CHECK_CONTAINS(err, "SQLite: ");
    kept = check_read_file(out, &len);
    CHECK_STR(kept ? kept : "", "precious");
    free(kept);
    CHECK_INT(leftovers(tmp), 0);

    /* then replaced whole */
    CHECK_INT(run_cli(ok, NULL, err, sizeof err), 0);
    void *db = db_open(out);
    CHECK_INT(scalar(db, "SELECT COUNT(*) FROM kernels"), 8);
    sql.close(db);
    CHECK_INT(leftovers(tmp), 0);
    char tmpl[4400];
    snprintf(tmpl, sizeof tmpl, "%s/missing-dir/out.db", tmp);
    const char *bad_dir[] = {"export", "--format", "sqlite", "-o", tmpl, dir, NULL};
    CHECK_INT(run_cli(bad_dir, NULL, err, sizeof err), 1);
    CHECK_CONTAINS(err, "cannot create '");
}

int main(void)
{
    if (!sql_load()) {
        fprintf(stderr, "libsqlite3.so.0 not found: skipped (scripts/install-deps.sh)\n");
        return 77;
    }
    char tmp[4096];
    CHECK_INT(rs_tmpdir(tmp, sizeof tmp, "sqlite"), 0);
    test_rich(tmp);
    test_crashed(tmp);
    test_nodev(tmp);
    test_generated(tmp);
    test_cli(tmp);
    if (check_failed_ == 0)
        fl_rmtree(tmp);
    return check_done("test_export_sqlite");
}
