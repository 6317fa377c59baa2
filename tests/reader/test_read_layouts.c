/*
 * test_read_layouts.c - the reader (src/reader/layout.c, sidecar.c) on
 * every layout GPUFlight 1.3 writes, each built from the sessions its own
 * writer wrote (tests/gpufl13_layouts.h): uncompressed and gzipped
 * windows, a live or crashed session's .tmp/, the flat names with and
 * without window numbers; sidecars that do not match their payload or are
 * not valid; which file of a window is read; the reading order of
 * windows, the plain file and .tmp/; one warning per unknown record type;
 * the flat layout's window 0; channel files that cannot be opened; windows
 * GPUFlight marked lost in transport.
 */
#include "check.h"
#include "fl_log.h"
#include "gpufl13_layouts.h"
#include "reader/read.h"
#include "util/fs.h"

#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ collector */

typedef struct got {
    char recs[4096];    /* "channel:type " per record */
    char batches[2048]; /* "channel:type:batch_id " per batch */
    char warns[8192];   /* "file:line: msg\n" */
    int nwarn;
} got;

static void on_rec(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)t;
    (void)rec;
    got *g = user;
    size_t n = strlen(g->recs);
    snprintf(g->recs + n, sizeof g->recs - n, "%d:%s ", channel, type);
}

static void on_batch(void *user, const fl_batch *b)
{
    got *g = user;
    size_t n = strlen(g->batches);
    snprintf(g->batches + n, sizeof g->batches - n, "%d:%s:%llu ", b->channel, b->type,
             (unsigned long long)b->batch_id);
}

static void on_warn(void *user, const char *file, uint64_t line, const char *msg)
{
    got *g = user;
    size_t n = strlen(g->warns);
    snprintf(g->warns + n, sizeof g->warns - n, "%s:%llu: %s\n", file ? file : "?",
             (unsigned long long)line, msg);
    g->nwarn++;
}

static int read_at(const char *path, got *g, fl_read_result *res)
{
    memset(g, 0, sizeof *g);
    fl_read_cb cb = {.user = g, .record = on_rec, .batch = on_batch, .warning = on_warn};
    gp_error err;
    int rc = fl_read_session(path, NULL, &cb, res, &err);
    if (rc != GP_OK)
        fprintf(stderr, "fl_read_session(%s): %s\n", path, err.message);
    return rc;
}

static char tmp_root[256];

static const char *tmp_path(const char *rel)
{
    static char buf[8][1024];
    static int k;
    char *p = buf[k++ & 7];
    snprintf(p, 1024, "%s/%s", tmp_root, rel);
    return p;
}

static void put(const char *path, const char *text)
{
    gl_put(path, text, strlen(text), false);
}

/* ------------------------------------------------------------ layouts */

/* Every record of the fixture sessions, in the reader's order. */
static const char want_recs[] =
    "0:job_start 0:capture_capabilities 0:dictionary_update 0:kernel_detail 0:kernel_detail "
    "0:kernel_detail 0:kernel_detail 0:kernel_detail 0:kernel_detail 0:memset_event "
    "0:kernel_perf_metric_event 0:sass_config 0:shutdown 1:pm_sampling_config "
    "1:perf_metric_event 1:nvtx_marker_event 1:graph_launch_event 1:graph_node_definition "
    "1:deep_window_event 1:execution_signature 2:system_start 2:system_stop 3:cubin_disassembly ";
static const char want_batches[] =
    "0:kernel_event_batch:1 0:memcpy_event_batch:1 1:scope_event_batch:1 "
    "1:synchronization_event_batch:1 1:memory_alloc_event_batch:1 1:profile_sample_batch:1 "
    "1:pm_sample_batch:1 2:device_metric_batch:1 2:host_metric_batch:1 ";

static void test_layouts(void)
{
    for (int l = 0; l < GL_COUNT; l++) {
        char path[4096];
        fprintf(stderr, "layout %s\n", gl_names[l]);
        gl_build(l, tmp_path(gl_names[l]), path, sizeof path);
        got g;
        fl_read_result res;
        if (read_at(path, &g, &res) != GP_OK) {
            CHECK(!"read");
            continue;
        }
        bool gz = l == GL_GZ_WINDOWS || l == GL_BAD_CRC;
        bool live = l == GL_TMP_LIVE;
        bool flat = l == GL_FLAT_WINDOWS || l == GL_FLAT_GZ || l == GL_FLAT_PLAIN;
        CHECK_STR(res.session_id, gz ? GL_GZ_ID : GL_PLAIN_ID);
        CHECK_STR(res.session_dir, path);
        CHECK_INT(res.flat, flat);
        CHECK_U64(res.files, 4);
        CHECK_U64(res.tmp_files, live ? 4 : 0);
        CHECK_INT(res.crashed, live);
        CHECK_U64(res.lines, live ? 40 : 44);
        CHECK_U64(res.bad_lines + res.bad_records + res.gz_errors + res.unknown_types, 0);
        CHECK_U64(res.bad_windows, l == GL_BAD_SIZE || l == GL_BAD_CRC);
        if (live) {
            char want[sizeof want_recs];
            snprintf(want, sizeof want, "%s", want_recs);
            char *s = strstr(want, "0:shutdown ");
            if (s)
                memmove(s, s + 11, strlen(s + 11) + 1);
            CHECK_STR(g.recs, want);
        } else {
            CHECK_STR(g.recs, want_recs);
        }
        CHECK_STR(g.batches, want_batches);
        CHECK_INT(g.nwarn, l == GL_BAD_SIZE || l == GL_BAD_CRC);
        char want[4200];
        if (l == GL_BAD_SIZE) {
            snprintf(want, sizeof want,
                     "%s/.gpufl-window.scope.1.json:1: window sidecar does not match scope.1.log: "
                     "payload_bytes 6156, the file has 6155; the window is read all the same\n",
                     path);
            CHECK_STR(g.warns, want);
        }
        if (l == GL_BAD_CRC) {
            snprintf(want, sizeof want,
                     "%s/.gpufl-window.device.1.json:1: window sidecar does not match "
                     "device.1.log.gz: payload_crc32 3608752562, the file's is 3608752561; the "
                     "window is read all the same\n",
                     path);
            CHECK_STR(g.warns, want);
        }
    }
}

/* A session directory holding only .tmp/ is found in its log directory
 * too, and by its id. */
static void test_tmp_in_log_dir(void)
{
    char path[4096];
    gl_build(GL_TMP_LIVE, tmp_path("logs/" GL_PLAIN_ID), path, sizeof path);
    got g;
    fl_read_result res;
    CHECK_INT(read_at(tmp_path("logs"), &g, &res), GP_OK);
    CHECK_STR(res.session_dir, tmp_path("logs/" GL_PLAIN_ID));
    CHECK_STR(res.session_id, GL_PLAIN_ID);
    CHECK_U64(res.tmp_files, 4);
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.session_id = GL_PLAIN_ID;
    fl_read_cb cb = {.user = &g, .record = on_rec, .batch = on_batch, .warning = on_warn};
    gp_error err;
    memset(&g, 0, sizeof g);
    CHECK_INT(fl_read_session(tmp_path("logs"), &o, &cb, &res, &err), GP_OK);
    CHECK_U64(res.files, 4);
    /* By the app (its job_start is in .tmp/). */
    o.session_id = NULL;
    o.app = GL_APP;
    memset(&g, 0, sizeof g);
    CHECK_INT(fl_read_session(tmp_path("logs"), &o, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_id, GL_PLAIN_ID);
}

/* The flat layouts through GPUFlight's log_dir + log_prefix, and as the
 * directory holding them. */
static void test_flat_prefixed(void)
{
    static const int flats[] = {GL_FLAT_WINDOWS, GL_FLAT_GZ, GL_FLAT_PLAIN};
    for (size_t i = 0; i < 3; i++) {
        char dir[1024], path[4096];
        snprintf(dir, sizeof dir, "%s/pfx-%s", tmp_root, gl_names[flats[i]]);
        gl_build(flats[i], dir, path, sizeof path);
        got g;
        memset(&g, 0, sizeof g);
        fl_read_cb cb = {.user = &g, .record = on_rec, .batch = on_batch, .warning = on_warn};
        fl_read_result res;
        gp_error err;
        CHECK_INT(fl_read_session_prefixed(dir, GL_APP, NULL, &cb, &res, &err), GP_OK);
        CHECK_STR(res.session_dir, path);
        CHECK(res.flat);
        CHECK_STR(g.recs, want_recs);
        CHECK_INT(read_at(dir, &g, &res), GP_OK);
        CHECK_STR(res.session_dir, path);
        CHECK_U64(res.files, 4);
        /* One of its files names the prefix too. */
        snprintf(path, sizeof path, "%s/" GL_APP ".scope%s", dir,
                 flats[i] == GL_FLAT_GZ      ? ".1.log.gz"
                 : flats[i] == GL_FLAT_PLAIN ? ".log"
                                             : ".1.log");
        CHECK_INT(read_at(path, &g, &res), GP_OK);
        CHECK_U64(res.files, 4);
    }
}

#define SID "cccccccc-0000-4000-8000-000000000003"
#define JS "{\"type\":\"job_start\",\"app\":\"a\",\"session_id\":\"" SID "\",\"ts_ns\":1}\n"
#define REC(n) "{\"type\":\"system_start\",\"session_id\":\"" SID "\",\"name\":\"" n "\"}\n"

/* Which file of a window is read, and in which order the windows, the
 * plain file and .tmp/'s files come. */
static void test_order(void)
{
    CHECK(fl_make_dirs(tmp_path("order/.tmp")) == 0);
    put(tmp_path("order/system.1.log"), JS REC("w1"));
    /* The same window gzipped: the uncompressed one is read. */
    gl_put(tmp_path("order/system.1.log.gz"), REC("w1gz"), strlen(REC("w1gz")), true);
    /* An empty husk: its gzipped twin is read. */
    put(tmp_path("order/system.2.log"), "");
    gl_put(tmp_path("order/system.2.log.gz"), REC("w2gz"), strlen(REC("w2gz")), true);
    put(tmp_path("order/system.10.log"), REC("w10"));
    /* Retired in .tmp/, not yet published; window 1 there: the root's. */
    put(tmp_path("order/.tmp/system.3.log"), REC("w3tmp"));
    put(tmp_path("order/.tmp/system.1.log"), REC("w1tmp"));
    put(tmp_path("order/system.log"), REC("plain"));
    put(tmp_path("order/.tmp/system.log"), REC("active"));
    /* Not channel files. */
    put(tmp_path("order/system.0.log"), REC("zero"));
    put(tmp_path("order/system.x.log"), REC("x"));
    put(tmp_path("order/system.1.log.gz.part"), REC("part"));
    put(tmp_path("order/other.1.log"), REC("other"));

    got g;
    fl_read_result res;
    CHECK_INT(read_at(tmp_path("order"), &g, &res), GP_OK);
    CHECK_U64(res.files, 6);
    CHECK_U64(res.tmp_files, 2);
    CHECK_INT(g.nwarn, 0);
    CHECK_STR(g.recs, "2:job_start 2:system_start 2:system_start 2:system_start 2:system_start "
                      "2:system_start 2:system_start ");
}

/* The names read, in order: a second collector that keeps system_start's
 * "name". */
static void on_name(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)channel;
    (void)type;
    if (t != FL_T_SYSTEM_START)
        return;
    char *s = user;
    size_t n = strlen(s);
    snprintf(s + n, 512 - n, "%s ", json_string_value(json_object_get(rec, "name")));
}

static void test_order_names(void)
{
    char names[512] = "";
    fl_read_cb cb = {.user = names, .record = on_name};
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(tmp_path("order"), NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(names, "w1 w2gz w3tmp w10 plain active ");
}

/* Sidecars that are not valid: a warning each, naming it; the windows are
 * read. */
static void test_bad_sidecars(void)
{
    char d[1024];
    snprintf(d, sizeof d, "%s", tmp_path("side"));
    CHECK(fl_make_dirs(d) == 0);
    static const char *const sidecars[] = {
        /* 1 */ "not json",
        /* 2 */ "[1]",
        /* 3 */ "{\"type\":\"other\"}",
        /* 4 */ "{\"type\":\"transport_window\",\"channel\":\"scope\",\"window_sequence\":4}",
        /* 5 */ "{\"type\":\"transport_window\",\"channel\":\"system\",\"window_sequence\":4}",
        /* 6 */
        "{\"type\":\"transport_window\",\"channel\":\"system\",\"window_sequence\":6,"
        "\"session_id\":\"another\"}",
        /* 7 */
        "{\"type\":\"transport_window\",\"channel\":\"system\",\"window_sequence\":7,"
        "\"payload_file\":\"system.7.log\",\"payload_bytes\":-1,\"payload_crc32\":0}",
        /* 8 */
        "{\"type\":\"transport_window\",\"channel\":\"system\",\"window_sequence\":8,"
        "\"payload_file\":\"system.8.log.gz\",\"payload_bytes\":1,\"payload_crc32\":0}",
        /* 9: right (the CRC of REC("n")'s line, below) */
        NULL,
    };
    char path[1024], text[512];
    put(tmp_path("side/system.9.log"), JS);
    for (int i = 1; i <= 8; i++) {
        snprintf(path, sizeof path, "%s/system.%d.log", d, i);
        put(path, REC("n"));
        snprintf(path, sizeof path, "%s/.gpufl-window.system.%d.json", d, i);
        put(path, sidecars[i - 1]);
    }
    /* 9: a sidecar that matches (size and CRC of JS). */
    uLong crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)JS, (uInt)strlen(JS));
    snprintf(text, sizeof text,
             "{\"schema_version\":1,\"type\":\"transport_window\",\"session_id\":\"" SID
             "\",\"channel\":\"system\",\"window_sequence\":9,\"payload_file\":\"system.9.log\","
             "\"payload_bytes\":%zu,\"payload_crc32\":%lu}",
             strlen(JS), crc);
    put(tmp_path("side/.gpufl-window.system.9.json"), text);
    /* 10: a sidecar without a window: nothing to check. */
    put(tmp_path("side/.gpufl-window.system.10.json"), "junk");
    got g;
    fl_read_result res;
    CHECK_INT(read_at(d, &g, &res), GP_OK);
    CHECK_U64(res.files, 9);
    CHECK_U64(res.bad_windows, 8);
    CHECK_INT(g.nwarn, 8);
    static const char *const why[] = {
        "system.1.json:1: window sidecar is not valid: not JSON",
        "system.2.json:1: window sidecar is not valid: not a JSON object",
        "system.3.json:1: window sidecar is not valid: its \"type\" is not \"transport_window\"",
        "system.4.json:1: window sidecar is not valid: its \"channel\" is not \"system\"",
        "system.5.json:1: window sidecar is not valid: its \"window_sequence\" is not 5",
        "system.6.json:1: window sidecar is not valid: it describes session another, not " SID,
        "system.7.json:1: window sidecar is not valid: \"payload_bytes\" or \"payload_crc32\" "
        "is missing or not a non-negative integer",
        "system.8.json:1: window sidecar names payload system.8.log.gz, which is not in the "
        "session directory (read system.8.log)",
    };
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
        CHECK_CONTAINS(g.warns, why[i]);
    CHECK(!strstr(g.warns, "system.9.json"));
    CHECK(!strstr(g.warns, "system.10.json"));
    /* The window read is the session's 9 records nonetheless. */
    CHECK_STR(g.recs, "2:system_start 2:system_start 2:system_start 2:system_start "
                      "2:system_start 2:system_start 2:system_start 2:system_start 2:job_start ");
}

/* One warning per unknown record type, whatever its count; the count is
 * every record. */
static void test_unknown_types(void)
{
    CHECK(fl_make_dirs(tmp_path("unk")) == 0);
    put(tmp_path("unk/scope.log"),
        JS "{\"type\":\"mystery\",\"session_id\":\"" SID "\"}\n"
           "{\"type\":\"mystery\",\"session_id\":\"" SID "\"}\n"
           "{\"type\":\"mystery_batch\",\"session_id\":\"" SID "\",\"batch_id\":1,"
           "\"base_time_ns\":5,\"columns\":[\"dt_ns\"],\"rows\":[[1]]}\n"
           "{\"type\":\"mystery_batch\",\"session_id\":\"" SID "\",\"batch_id\":2,"
           "\"base_time_ns\":5,\"columns\":[\"dt_ns\"],\"rows\":[[1]]}\n"
           "{\"type\":\"enigma\",\"session_id\":\"" SID "\"}\n"
           "{\"type\":\"mystery\",\"session_id\":\"" SID "\"}\n");
    got g;
    fl_read_result res;
    CHECK_INT(read_at(tmp_path("unk"), &g, &res), GP_OK);
    CHECK_U64(res.unknown_types, 6);
    CHECK_INT(g.nwarn, 3);
    char want[2048];
    snprintf(want, sizeof want,
             "%s:2: record type \"mystery\" is not known to this reader: its records are "
             "counted, not read (one warning per type)\n"
             "%s:4: record type \"mystery_batch\" is not known to this reader: its records are "
             "counted, not read (one warning per type)\n"
             "%s:6: record type \"enigma\" is not known to this reader: its records are "
             "counted, not read (one warning per type)\n",
             tmp_path("unk/scope.log"), tmp_path("unk/scope.log"), tmp_path("unk/scope.log"));
    CHECK_STR(g.warns, want);
}

/* GPUFlight 1.3's Python writer names the flat layout's first window 0
 * (<prefix>.<channel>.0.log): read as a session, by its prefix, its
 * directory, one of its files and log_prefix; window 0 comes after the
 * numbered windows and before the plain file, as GPUFlight's analyzer
 * reads them. */
static void test_flat_window0(void)
{
    char dir[1024], pfx[1024], file[1200];
    snprintf(dir, sizeof dir, "%s", tmp_path("flat0"));
    CHECK(fl_make_dirs(dir) == 0);
    gl_rewrite(dir, GL_APP ".%s.0.log", false, false);
    snprintf(pfx, sizeof pfx, "%s/" GL_APP, dir);
    snprintf(file, sizeof file, "%s/" GL_APP ".scope.0.log", dir);
    const char *const paths[] = {pfx, dir, file};
    for (size_t i = 0; i < 3; i++) {
        got g;
        fl_read_result res;
        CHECK_INT(read_at(paths[i], &g, &res), GP_OK);
        CHECK_STR(res.session_dir, pfx);
        CHECK(res.flat);
        CHECK_STR(res.session_id, GL_PLAIN_ID);
        CHECK_U64(res.files, 4);
        CHECK_U64(res.lines, 44);
        CHECK_INT(g.nwarn, 0);
        CHECK_STR(g.recs, want_recs);
        CHECK_STR(g.batches, want_batches);
    }
    got g;
    memset(&g, 0, sizeof g);
    fl_read_cb cb = {.user = &g, .record = on_rec, .batch = on_batch, .warning = on_warn};
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session_prefixed(dir, GL_APP, NULL, &cb, &res, &err), GP_OK);
    CHECK_STR(res.session_dir, pfx);
    CHECK_STR(g.recs, want_recs);

    /* The order: windows 1, 2, then 0, then the plain file; "00" is no
     * window, and neither is a session directory's system.0.log
     * (test_order). */
    CHECK(fl_make_dirs(tmp_path("flat0order")) == 0);
    put(tmp_path("flat0order/p.system.2.log"), REC("w2"));
    put(tmp_path("flat0order/p.system.0.log"), JS REC("w0"));
    put(tmp_path("flat0order/p.system.1.log"), REC("w1"));
    put(tmp_path("flat0order/p.system.log"), REC("plain"));
    put(tmp_path("flat0order/p.system.00.log"), REC("double zero"));
    char names[512] = "";
    fl_read_cb cbn = {.user = names, .record = on_name};
    CHECK_INT(fl_read_session(tmp_path("flat0order/p"), NULL, &cbn, &res, &err), GP_OK);
    CHECK_U64(res.files, 4);
    CHECK_STR(names, "w1 w2 w0 plain ");
}

/* A channel file that exists but cannot be opened - a dangling symlink, a
 * symlink loop, a directory - is a warning naming it and why, and counted;
 * the rest of the session is read.  As the only file, the error names it. */
static void test_unreadable(void)
{
    char dir[1024], path[4096];
    snprintf(dir, sizeof dir, "%s", tmp_path("unreadable"));
    gl_build(GL_PLAIN_WINDOWS, dir, path, sizeof path);
    char dangling[1200], loop[1200], sub[1200];
    snprintf(dangling, sizeof dangling, "%s/system.log", dir);
    snprintf(loop, sizeof loop, "%s/scope.2.log", dir);
    snprintf(sub, sizeof sub, "%s/sass.log", dir);
    CHECK(symlink("not-there.log", dangling) == 0);
    CHECK(symlink("scope.2.log", loop) == 0);
    CHECK(mkdir(sub, 0755) == 0);
    got g;
    fl_read_result res;
    CHECK_INT(read_at(dir, &g, &res), GP_OK);
    CHECK_U64(res.files, 4);
    CHECK_U64(res.unreadable_files, 3);
    CHECK_INT(g.nwarn, 3);
    CHECK_STR(g.recs, want_recs);
    char want[4096];
    snprintf(want, sizeof want,
             "%s:0: cannot open %s: Too many levels of symbolic links; its events are not "
             "read\n"
             "%s:0: cannot open %s: No such file or directory (a symbolic link to a file that "
             "is not there); its events are not read\n"
             "%s:0: cannot read %s: it is a directory, not a regular file (the reader reads "
             "regular files only: copy the session's files, or name the session directory)\n",
             loop, loop, dangling, dangling, sub, sub);
    CHECK_STR(g.warns, want);
    /* Named by the dangling file itself: its session, read the same. */
    CHECK_INT(read_at(dangling, &g, &res), GP_OK);
    CHECK_STR(res.session_dir, dir);
    CHECK_U64(res.unreadable_files, 3);

    /* The only file: no session could be read, and the error says why. */
    snprintf(dir, sizeof dir, "%s", tmp_path("unreadable-only"));
    CHECK(fl_make_dirs(dir) == 0);
    snprintf(dangling, sizeof dangling, "%s/device.log", dir);
    CHECK(symlink("/nonexistent/device.log", dangling) == 0);
    fl_read_cb cb = {.user = &g, .record = on_rec, .batch = on_batch, .warning = on_warn};
    gp_error err;
    memset(&g, 0, sizeof g);
    CHECK_INT(fl_read_session(dir, NULL, &cb, &res, &err), GP_ERR_IO);
    snprintf(want, sizeof want,
             "%s: no channel file could be read: cannot open %s: No such file or directory (a "
             "symbolic link to a file that is not there); its events are not read",
             dir, dangling);
    CHECK_STR(err.message, want);
    CHECK_U64(res.unreadable_files, 1);

    /* The flat layout's dangling file names its prefix all the same. */
    snprintf(dir, sizeof dir, "%s", tmp_path("unreadable-flat"));
    CHECK(fl_make_dirs(dir) == 0);
    gl_rewrite(dir, GL_APP ".%s.log", false, false);
    snprintf(dangling, sizeof dangling, "%s/" GL_APP ".device.1.log", dir);
    CHECK(symlink("gone", dangling) == 0);
    memset(&g, 0, sizeof g);
    CHECK_INT(fl_read_session(dir, NULL, &cb, &res, &err), GP_OK);
    CHECK_U64(res.files, 4);
    CHECK_U64(res.unreadable_files, 1);
    CHECK_INT(g.nwarn, 1);
}

/* Windows GPUFlight lost in transport: each marker a warning (by channel,
 * then window) naming it, the channel and the window, with its reason when
 * it gives one; counted.  What is not a marker is not one. */
static void test_lost_windows(void)
{
    CHECK(fl_make_dirs(tmp_path("lost/.gpufl-transport-loss.scope.7.json")) == 0);
    put(tmp_path("lost/system.1.log"), JS REC("w1"));
    put(tmp_path("lost/system.3.log"), REC("w3"));
    put(tmp_path("lost/.gpufl-transport-loss.system.2.json"),
        "{\"schema_version\":1,\"type\":\"transport_window_loss\",\"channel\":\"system\","
        "\"window_index\":2,\"reason\":\"empty_gzip_no_raw\"}\n");
    put(tmp_path("lost/.gpufl-transport-loss.device.9.json"), "{}");
    put(tmp_path("lost/.gpufl-transport-loss.odd.json"), "not json");
    put(tmp_path("lost/.gpufl-transport-loss.system.4.json.part.1.0"), "{}");
    got g;
    fl_read_result res;
    CHECK_INT(read_at(tmp_path("lost"), &g, &res), GP_OK);
    CHECK_U64(res.files, 2);
    CHECK_U64(res.lost_windows, 3);
    CHECK_INT(g.nwarn, 3);
    char want[4096];
    snprintf(want, sizeof want,
             "%s:1: window 9 of channel device was lost in transport (GPUFlight's marker): its "
             "events are missing from this session\n"
             "%s:1: window 2 of channel system was lost in transport (GPUFlight's marker; "
             "reason \"empty_gzip_no_raw\"): its events are missing from this session\n"
             "%s:1: a window was lost in transport (GPUFlight's marker): its events are "
             "missing from this session\n",
             tmp_path("lost/.gpufl-transport-loss.device.9.json"),
             tmp_path("lost/.gpufl-transport-loss.system.2.json"),
             tmp_path("lost/.gpufl-transport-loss.odd.json"));
    CHECK_STR(g.warns, want);
    CHECK_STR(g.recs, "2:job_start 2:system_start 2:system_start ");
}

int main(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/gp_test_layouts.XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_layouts();
    test_tmp_in_log_dir();
    test_flat_prefixed();
    test_order();
    test_order_names();
    test_bad_sidecars();
    test_unknown_types();
    test_flat_window0();
    test_unreadable();
    test_lost_windows();
    fl_rmtree(tmp_root);
    return check_done("test_read_layouts");
}
