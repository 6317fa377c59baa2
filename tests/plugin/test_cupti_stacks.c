/*
 * test_cupti_stacks.c - CPU stacks at kernel launch (enable_stack_trace)
 * through a whole session: the fake plugin (tests/fakes/fake_cupti_plugin.c)
 * captures the stack of each fake launch with the real plugin/stacks.c,
 * the core's sink writes it in kernel_detail.stack_trace, and
 * `gpu-profile report` reads it back under the kernel's hotspot.  Built
 * with -O0 so the stacks are this file's functions as written.
 *
 * Launches 11 and 12 come from one call site (one stack, written twice),
 * 13 from another; 16 (delivered at shutdown, no launch callback) has
 * none ("").  The stream synchronization 15 was called from wait_here:
 * its synchronization_event_batch row's stack_id (ours) names that stack
 * in our stack_dict, and the report shows it as where the program waited
 * (text and JSON).  Skips (77) when the plugin is built without libunwind and
 * libdw, after checking capture_capabilities says why.
 */
#include "fl_log.h"
#include "abi/trace_abi.h"
#include "stacks.h"
#include "gpufl.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define AT(line) (line = __LINE__)

static char g_tmp[256];
static const char *g_plugin;
static int line_main, line_session, line_session_outer, line_step, line_outer, line_fake;
static int line_session_wait, line_wait, line_fake_sync;
static volatile int sink_;

static const char *env_or_die(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "%s is not set (run through ctest)\n", name);
        exit(2);
    }
    return v;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(none)";
}

/* What CUDA's launch callback does, for the fake plugin. */
NOINLINE static void fake_launch(uint32_t corr)
{
    void *h = dlopen(g_plugin, RTLD_NOW | RTLD_NOLOAD);
    void *f = h ? dlsym(h, "fake_cupti_launch") : NULL;
    void (*fn)(uint32_t);
    memcpy(&fn, &f, sizeof f);
    if (fn)
        (AT(line_fake), fn(corr));
    sink_++;
}

/* What CUDA's callback does at a synchronising call's entry. */
NOINLINE static void fake_sync(uint32_t corr)
{
    void *h = dlopen(g_plugin, RTLD_NOW | RTLD_NOLOAD);
    void *f = h ? dlsym(h, "fake_cupti_sync") : NULL;
    void (*fn)(uint32_t);
    memcpy(&fn, &f, sizeof f);
    if (fn)
        (AT(line_fake_sync), fn(corr));
    sink_++;
}

NOINLINE static void wait_here(void)
{
    (AT(line_wait), fake_sync(15));
    sink_++;
}

NOINLINE static void in_step(void)
{
    for (uint32_t corr = 11; corr <= 12; corr++)
        (AT(line_step), fake_launch(corr));
    sink_++;
}

NOINLINE static void outer(void)
{
    (AT(line_outer), fake_launch(13));
    sink_++;
}

/* One session; its directory in dir. */
NOINLINE static void session(char *dir, size_t cap)
{
    setenv("GPUFL_CUPTI_PLUGIN", g_plugin, 1);
    setenv("FAKE_CUPTI_SCENARIO", "ok", 1);
    char base[512];
    snprintf(base, sizeof base, "%s/s", g_tmp);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "stacks_test";
    o.log_path = base;
    o.backend = GPUFL_BACKEND_NONE;
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.enable_stack_trace = true;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    (AT(line_session_wait), wait_here());
    (AT(line_session_outer), outer());
    gpufl_scope sc = gpufl_scope_begin("step");
    (AT(line_session), in_step());
    gpufl_scope_end(&sc);
    gpufl_shutdown();
    CHECK_INT(fl_only_session(base, dir, cap), 0);
}

static json_t *last_of(const fl_log *log, const char *type)
{
    json_t *c = NULL;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), type) == 0)
            c = log->lines[i];
    return c;
}

static json_t *cap_of(json_t *caps, const char *feature)
{
    json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *c = json_array_get(list, i);
        if (strcmp(str(c, "feature"), feature) == 0)
            return c;
    }
    return NULL;
}

/* The stack_trace of the kernel_detail of corr. */
static const char *stack_of(const fl_log *dev, json_int_t corr)
{
    for (size_t i = 0; i < dev->n; i++) {
        json_t *d = dev->lines[i];
        if (strcmp(log_type(d), "kernel_detail") == 0 &&
            json_integer_value(json_object_get(d, "corr_id")) == corr)
            return str(d, "stack_trace");
    }
    return "(no detail)";
}

/* The stdout of `gpu-profile report dir` into out. */
static void report_of(const char *dir, char *out, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' report '%s' 2>&1", env_or_die("GP_TEST_CLI"), dir);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, cap - 1, p) : 0;
    out[n] = '\0';
    if (p)
        CHECK_INT(pclose(p), 0);
}

/* The stdout of `gpu-profile report --format json dir`, parsed. */
static json_t *report_json(const char *dir)
{
    static char out[1 << 17];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' report --format json '%s' 2>&1", env_or_die("GP_TEST_CLI"),
             dir);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    if (p)
        CHECK_INT(pclose(p), 0);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    if (!j)
        fprintf(stderr, "report json: %s\n%s\n", e.text, out);
    return j;
}

/* Synchronization 15 (2 us, from wait_here): its row's stack_id (ours,
 * the batch's last column) names its stack in our stack_dict, written
 * before the batch; the report shows where the program waited. */
static void check_sync(const char *dir, const fl_log *scope)
{
    char want[1024], out[1024];
    snprintf(want, sizeof want,
             "test_stacks (test_cupti_stacks.c:%d)|session (test_cupti_stacks.c:%d)|wait_here "
             "(test_cupti_stacks.c:%d)|fake_sync (test_cupti_stacks.c:%d)",
             line_main, line_session_wait, line_wait, line_fake_sync);
    json_int_t stack_id = -1;
    const char *text = "(no stack_dict)";
    bool dict_first = false;
    for (size_t i = 0; i < scope->n; i++) {
        json_t *l = scope->lines[i];
        const char *type = log_type(l);
        json_t *dict = json_object_get(l, "stack_dict");
        if (strcmp(type, "dictionary_update") == 0 && dict && stack_id < 0) {
            const char *k;
            json_t *v;
            json_object_foreach(dict, k, v)
            {
                text = json_string_value(v);
                stack_id = strtoll(k, NULL, 10);
            }
            dict_first = true;
        }
        if (strcmp(type, "synchronization_event_batch") != 0)
            continue;
        json_t *cols = json_object_get(l, "columns"),
               *row = json_array_get(json_object_get(l, "rows"), 0);
        size_t nc = json_array_size(cols);
        CHECK_STR(json_string_value(json_array_get(cols, nc - 1)), "stack_id");
        CHECK_STR(json_string_value(json_array_get(cols, nc - 2)), "function_id");
        CHECK(dict_first); /* the dictionary before the batch */
        CHECK(json_integer_value(json_array_get(row, nc - 1)) == stack_id);
        CHECK(json_integer_value(json_array_get(row, nc - 3)) == 15); /* corr_id */
    }
    CHECK(stack_id > 0);
    CHECK(text && strncmp(text, "main (test_cupti_stacks.c:", 26) == 0);
    const char *tail = text ? strchr(text, '|') : NULL;
    CHECK_STR(tail ? tail + 1 : "(none)", want);

    static char rep[1 << 16];
    report_of(dir, rep, sizeof rep);
    snprintf(out, sizeof out,
             "\n  waited at         2.000 us in 1 sync: fake_sync (test_cupti_stacks.c:%d) <- "
             "wait_here (test_cupti_stacks.c:%d) <- session (test_cupti_stacks.c:%d) <- "
             "test_stacks (test_cupti_stacks.c:%d) <- ... (1 more)\n",
             line_fake_sync, line_wait, line_session_wait, line_main);
    CHECK_CONTAINS(rep, out);
    json_t *j = report_json(dir);
    json_t *top = json_object_get(json_object_get(j, "summary"), "synchronization_stacks");
    CHECK_INT((int)json_array_size(top), 1);
    json_t *s0 = json_array_get(top, 0);
    CHECK_STR(str(s0, "stack_trace"), text ? text : "");
    CHECK(json_integer_value(json_object_get(s0, "synchronizations")) == 1);
    CHECK(json_integer_value(json_object_get(s0, "time_ns")) == 2000);
    json_decref(j);
}

static int test_stacks(void)
{
    char dir[1024];
    (AT(line_main), session(dir, sizeof dir));
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    json_t *st = cap_of(last_of(&dev, "capture_capabilities"), "stack_trace");
    if (strcmp(str(st, "status"), "fallback") == 0) {
        CHECK_STR(str(st, "reason_code"), "stacks_unavailable");
        CHECK_CONTAINS(str(st, "message"), "built without libunwind and libdw");
        printf("SKIP: %s\n", str(st, "message"));
        fl_log_free(&dev);
        fl_log_free(&scope);
        return 77;
    }
    CHECK_STR(str(st, "status"), "collected");
    CHECK_STR(str(st, "message"), "4 launches and synchronizations with a CPU stack (libunwind), "
                                  "3 distinct stacks symbolised (libdw), at most 4096");

    /* This file's frames, outermost first; the fake plugin's own frame
     * (fake_cupti_launch) and the C library's are not there. */
    char step[1024], out[1024];
    snprintf(step, sizeof step,
             "test_stacks (test_cupti_stacks.c:%d)|session (test_cupti_stacks.c:%d)|in_step "
             "(test_cupti_stacks.c:%d)|fake_launch (test_cupti_stacks.c:%d)",
             line_main, line_session, line_step, line_fake);
    const char *s11 = stack_of(&dev, 11);
    CHECK(strncmp(s11, "main (test_cupti_stacks.c:", 26) == 0);
    const char *tail = strchr(s11, '|');
    CHECK_STR(tail ? tail + 1 : s11, step);
    CHECK_STR(stack_of(&dev, 12), s11); /* the same call site */
    snprintf(out, sizeof out,
             "|session (test_cupti_stacks.c:%d)|outer (test_cupti_stacks.c:%d)|fake_launch "
             "(test_cupti_stacks.c:%d)",
             line_session_outer, line_outer, line_fake);
    const char *s13 = stack_of(&dev, 13);
    CHECK(strstr(s13, out) != NULL);
    if (!strstr(s13, out))
        fprintf(stderr, "got  %s\nwant ...%s\n", s13, out);
    CHECK_STR(stack_of(&dev, 16), ""); /* no launch callback saw it */

    /* The report shows each hotspot's stack, innermost first. */
    static char rep[1 << 16];
    report_of(dir, rep, sizeof rep);
    snprintf(out, sizeof out,
             "      launched from fake_launch (test_cupti_stacks.c:%d) <- in_step "
             "(test_cupti_stacks.c:%d) <- session (test_cupti_stacks.c:%d) <- test_stacks "
             "(test_cupti_stacks.c:%d) <- ... (1 more)\n",
             line_fake, line_step, line_session, line_main);
    CHECK_CONTAINS(rep, out);
    snprintf(out, sizeof out,
             "      launched from fake_launch (test_cupti_stacks.c:%d) <- outer "
             "(test_cupti_stacks.c:%d) <- session (test_cupti_stacks.c:%d)",
             line_fake, line_outer, line_session_outer);
    CHECK_CONTAINS(rep, out);
    check_sync(dir, &scope);
    fl_log_free(&dev);
    fl_log_free(&scope);
    return 0;
}

/* Which frames end a stack's outer side (plugin/stacks.c): glibc's start
 * by name, and unnamed frames of a libc without symbols - an H200
 * machine's gave "libc.so.6+0x2a1ca|main (...)" until they counted. */
static void test_start_frames(void)
{
    CHECK(fl_stacks_start_frame("__libc_start_call_main", "/lib/x86_64-linux-gnu/libc.so.6"));
    CHECK(fl_stacks_start_frame("__libc_start_main@@GLIBC_2.34", NULL));
    CHECK(fl_stacks_start_frame("_start", "/usr/bin/python3.12"));
    CHECK(fl_stacks_start_frame("start_thread", NULL));
    CHECK(fl_stacks_start_frame(NULL, "/usr/lib/x86_64-linux-gnu/libc.so.6"));
    CHECK(fl_stacks_start_frame(NULL, "libc.so.6"));
    CHECK(fl_stacks_start_frame(NULL, "/lib64/libc-2.17.so"));
    CHECK(!fl_stacks_start_frame("main", "/tmp/stack_workload"));
    CHECK(!fl_stacks_start_frame("__libc_start_mainx", NULL));
    CHECK(!fl_stacks_start_frame(NULL, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
    CHECK(!fl_stacks_start_frame(NULL, "/opt/lib/libcublas.so.13"));
    CHECK(!fl_stacks_start_frame(NULL, NULL));
}

int main(void)
{
    test_start_frames();
    g_plugin = env_or_die("GP_TEST_FAKE_PLUGIN");
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_cupti_stacks_%d", (int)getpid());
    int rc = test_stacks();
    fl_rmtree(g_tmp);
    return rc == 77 ? 77 : check_done("test_cupti_stacks");
}
