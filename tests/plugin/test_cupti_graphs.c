/*
 * test_cupti_graphs.c - CUDA graph nodes through the real plugin, over the
 * fake driver (tests/fakes/fake_libcuda.c) and the fake CUPTI calls
 * (tests/fakes/fake_cupti_api.c), graph tracking and CPU stacks on:
 *
 *  - a kernel node captured from a stream (inside its launch callback) and
 *    a memset node added explicitly, depending on it; the graph
 *    instantiated (its nodes cloned, the executable graph created): one
 *    graph_node_definition per node, GPUFlight's keys with its values
 *    (graph_exec_key "0x" and the handle in hex, node_index, node_type,
 *    dependency_count) then ours (graph_id, graph_node_id, kernel_name,
 *    stack_id into stack_dict, written before);
 *  - the graph launched from elsewhere: its kernel (whose record names the
 *    node's executable copy) is attributed to the stack that captured the
 *    node, not to the graph launch's, in kernel_detail and in
 *    `gpu-profile report` (text and JSON);
 *  - no driver call inside any of those callbacks;
 *  - past the 65536 nodes the plugin keeps, a node is counted, not
 *    written, and cuda_graphs is partial / graph_nodes_lost; a CUPTI
 *    that refuses the graph resource callbacks: partial /
 *    graph_nodes_refused, the launches still traced;
 *  - launches after the last drain keep their stacks at shutdown, and a
 *    launch racing a drain (made while it announces the stacks, its buffer
 *    completed before the drain takes the buffers) never has its row
 *    handed over before its stack.
 *
 * Built with -O0 so the stacks are this file's functions as written.
 * Skips (77) when the plugin has no stacks (no libunwind / libdw).
 */
#include "fl_log.h"
#include "abi/trace_abi.h"
#include "gpufl.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define AT(line) (line = __LINE__)

int fake_cuda_violations(void);
const char *fake_cuda_last_violation(void);
int fake_cupti_capture_launch(const char *name, uintptr_t graph, uintptr_t node);
int fake_cupti_launch(const char *name);
void fake_cupti_complete(void);
int fake_cupti_graph_resource(int cbid, uintptr_t graph, uintptr_t node, uintptr_t original,
                              int node_type, uintptr_t dependency, uintptr_t exec);
int fake_cupti_graph_launch_kernel(uintptr_t exec, uint32_t graph_id, const char *name,
                                   uint64_t node_id);

/* The fake's ids: a handle plus these (fake_cupti_api.c). */
#define NODE_ID(h) (1000000 + (h))
#define GRAPH_ID(h) (500 + (h))
#define GRAPH 7
#define EXEC_GRAPH 8 /* the executable graph's own copy */
#define EXEC 0xe0e0

static const char *g_core;
static int line_capture, line_launch, line_first, line_late, line_drained, line_late_call;
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

static void *core_sym(const char *name)
{
    void *h = dlopen(g_core, RTLD_NOW | RTLD_GLOBAL);
    return h ? dlsym(h, name) : NULL;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(none)";
}

NOINLINE static void capture_here(void)
{
    int r = (AT(line_capture), fake_cupti_capture_launch("_Z12graph_kernelPf", GRAPH, 11));
    CHECK_INT(r, 0);
    sink_++;
}

NOINLINE static void add_memset_here(void)
{
    int r = (fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, GRAPH, 12, 0,
                                       CU_GRAPH_NODE_TYPE_MEMSET, 0, 0));
    CHECK_INT(r, 0);
    sink_++;
}

NOINLINE static void launch_here(void)
{
    int r = (AT(line_launch), fake_cupti_graph_launch_kernel(EXEC, GRAPH_ID(EXEC_GRAPH),
                                                             "_Z12graph_kernelPf", NODE_ID(21)));
    CHECK_INT(r, 0);
    sink_++;
}

/* A session (graph tracking on; CPU stacks with stacks) around work. */
static void session(const char *base, bool stacks, void (*work)(void))
{
    void *a = core_sym("gpufl_init_options_init"), *b = core_sym("gpufl_init"),
         *c = core_sym("gpufl_shutdown");
    CHECK(a && b && c);
    if (!a || !b || !c)
        exit(1);
    void (*opts_init)(gpufl_init_options *);
    gpufl_status (*init)(const gpufl_init_options *, gpufl_error *);
    void (*shutdown)(void);
    memcpy(&opts_init, &a, sizeof a);
    memcpy(&init, &b, sizeof b);
    memcpy(&shutdown, &c, sizeof c);
    gpufl_init_options o;
    opts_init(&o);
    o.app_name = "graph_nodes_test";
    o.log_path = base;
    o.backend = GPUFL_BACKEND_NONE;
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.enable_cuda_graphs_tracking = true;
    o.enable_stack_trace = stacks;
    gpufl_error err;
    CHECK_INT(init(&o, &err), GPUFL_OK);
    CHECK_INT(cuInit(0), 0);
    work();
    shutdown();
    if (fake_cuda_violations() != 0)
        fprintf(stderr, "fake driver: %s\n", fake_cuda_last_violation());
    CHECK_INT(fake_cuda_violations(), 0);
}

/* The graph built, instantiated and launched. */
static void build_and_launch(void)
{
    capture_here();
    add_memset_here();
    CHECK_INT(fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_DEPENDENCY_CREATED, GRAPH, 12,
                                        0, 0, 11, 0),
              0);
    /* cudaGraphInstantiate: the nodes copied into the executable graph,
     * then the executable graph made from GRAPH. */
    CHECK_INT(fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, EXEC_GRAPH, 21, 11,
                                        CU_GRAPH_NODE_TYPE_KERNEL, 0, 0),
              0);
    CHECK_INT(fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, EXEC_GRAPH, 22, 12,
                                        CU_GRAPH_NODE_TYPE_MEMSET, 0, 0),
              0);
    CHECK_INT(
        fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, GRAPH, 0, 0, 0, 0, EXEC),
        0);
    launch_here();
}

/* More nodes than the plugin keeps (65536): a graph of that many, never
 * instantiated, then one more node in another graph, instantiated. */
#define NODES_KEPT 65536
static void too_many_nodes(void)
{
    int bad = 0;
    for (uintptr_t i = 0; i < NODES_KEPT; i++)
        bad += fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 30, 100000 + i, 0,
                                         CU_GRAPH_NODE_TYPE_EMPTY, 0, 0) != 0;
    CHECK_INT(bad, 0);
    CHECK_INT(fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 31, 300000, 0,
                                        CU_GRAPH_NODE_TYPE_HOST, 0, 0),
              0);
    CHECK_INT(
        fake_cupti_graph_resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, 31, 0, 0, 0, 0, 0xb0b0),
        0);
}

static json_t *cap_of(const fl_log *log, const char *feature)
{
    json_t *caps = NULL;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), "capture_capabilities") == 0)
            caps = log->lines[i];
    json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++)
        if (strcmp(str(json_array_get(list, i), "feature"), feature) == 0)
            return json_array_get(list, i);
    return NULL;
}

/* stack_dict's text of id, written before line `before` of scope. */
static const char *dict_stack(const fl_log *scope, json_int_t id, size_t before)
{
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)id);
    for (size_t i = 0; i < before && i < scope->n; i++) {
        json_t *d = json_object_get(scope->lines[i], "stack_dict");
        if (d && json_object_get(d, key))
            return json_string_value(json_object_get(d, key));
    }
    return "(not in stack_dict before the definition)";
}

static void check_definitions(const fl_log *scope, char *capture, size_t cap)
{
    CHECK_INT((int)fl_count(scope, "graph_node_definition"), 2);
    char want[256];
    for (size_t i = 0, k = 0; i < scope->n; i++) {
        json_t *d = scope->lines[i];
        if (strcmp(log_type(d), "graph_node_definition") != 0)
            continue;
        CHECK_STR(str(d, "graph_exec_key"), "0xe0e0");
        CHECK(json_is_string(json_object_get(d, "session_id")));
        CHECK_INT((int)fl_int(d, "node_index"), (int)k);
        CHECK_INT((int)fl_int(d, "graph_id"), GRAPH_ID(GRAPH));
        CHECK_INT((int)fl_int(d, "graph_node_id"), NODE_ID(11 + (int)k));
        json_int_t sid = fl_int(d, "stack_id");
        CHECK(sid > 0);
        const char *text = dict_stack(scope, sid, i);
        if (k == 0) { /* the captured kernel: its launch's name and stack */
            CHECK_INT((int)fl_int(d, "node_type"), CU_GRAPH_NODE_TYPE_KERNEL);
            CHECK_INT((int)fl_int(d, "dependency_count"), 0);
            CHECK_STR(str(d, "kernel_name"), "graph_kernel(float*)"); /* demangled */
            snprintf(want, sizeof want, "capture_here (test_cupti_graphs.c:%d)", line_capture);
            snprintf(capture, cap, "%s", text);
        } else { /* the memset added after it, depending on it */
            CHECK_INT((int)fl_int(d, "node_type"), CU_GRAPH_NODE_TYPE_MEMSET);
            CHECK_INT((int)fl_int(d, "dependency_count"), 1);
            CHECK(json_is_null(json_object_get(d, "kernel_name")));
            snprintf(want, sizeof want, "add_memset_here (test_cupti_graphs.c:");
        }
        CHECK(strstr(text, want) != NULL);
        if (!strstr(text, want))
            fprintf(stderr, "node %zu: stack %s\nwant ...%s...\n", k, text, want);
        k++;
    }
}

/* The graph's kernel: one row, attributed to the capture's stack. */
static void check_kernel(const fl_log *dev, const char *capture)
{
    const char *got = "(no kernel_detail)";
    for (size_t i = 0; i < dev->n; i++)
        if (strcmp(log_type(dev->lines[i]), "kernel_detail") == 0)
            got = str(dev->lines[i], "stack_trace");
    CHECK_STR(got, capture);
    char other[128];
    snprintf(other, sizeof other, "launch_here (test_cupti_graphs.c:%d)", line_launch);
    CHECK(strstr(got, other) == NULL);
}

static void check_report(const char *dir, const char *capture)
{
    static char out[1 << 17];
    char cmd[2048], want[512];
    snprintf(cmd, sizeof cmd, "'%s' report '%s' 2>&1", env_or_die("GP_TEST_CLI"), dir);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && pclose(p) == 0);
    const char *at = strstr(out, "launched from ");
    snprintf(want, sizeof want, "capture_here (test_cupti_graphs.c:%d)", line_capture);
    const char *eol = at ? strchr(at, '\n') : NULL;
    CHECK(at && eol && strstr(at, want) && strstr(at, want) < eol);
    if (!at || !strstr(at, want))
        fprintf(stderr, "report:\n%s\n", out);

    snprintf(cmd, sizeof cmd, "'%s' report --format json '%s' 2>&1", env_or_die("GP_TEST_CLI"),
             dir);
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && pclose(p) == 0);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    CHECK(j != NULL);
    json_t *k0 = json_array_get(json_object_get(json_object_get(j, "hotspots"), "kernels"), 0);
    CHECK_STR(str(k0, "stack_trace"), capture);
    json_decref(j);
}

/* In a child (the fake driver initialises once per process): the node
 * past the bound is counted, never written wrong, and the feature says so. */
static void test_bound(void)
{
    char base[256], dir[1024];
    snprintf(base, sizeof base, "/tmp/gp_cupti_graphs_bound_%d", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        check_passed_ = check_failed_ = 0;
        session(base, false, too_many_nodes);
        fl_log dev, scope;
        CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
        CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
        CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
        CHECK_INT((int)fl_count(&scope, "graph_node_definition"), 0);
        json_t *g = cap_of(&dev, "cuda_graphs");
        CHECK_STR(str(g, "status"), "partial");
        CHECK_STR(str(g, "reason_code"), "graph_nodes_lost");
        CHECK_CONTAINS(str(g, "message"), "1 graph nodes not kept");
        fl_log_free(&dev);
        fl_log_free(&scope);
        int rc = check_done("test_cupti_graphs (bound)") == 0 ? 0 : 1;
        fflush(stdout);
        _exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fl_rmtree(base);
}

/* In a child: a CUPTI that refuses the graph resource callbacks leaves
 * the launches traced (their scopes and stacks too), writes no
 * definition, and says why. */
static void test_refused(void)
{
    char base[256], dir[1024];
    snprintf(base, sizeof base, "/tmp/gp_cupti_graphs_refused_%d", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        check_passed_ = check_failed_ = 0;
        setenv("FAKE_CUPTI_REFUSE_GRAPH_NODES", "1", 1);
        session(base, true, build_and_launch);
        fl_log dev, scope;
        CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
        CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
        CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
        CHECK_INT((int)fl_count(&scope, "graph_node_definition"), 0);
        CHECK_INT((int)fl_count(&scope, "graph_launch_event"), 1);
        json_t *g = cap_of(&dev, "cuda_graphs");
        CHECK_STR(str(g, "status"), "partial");
        CHECK_STR(str(g, "reason_code"), "graph_nodes_refused");
        CHECK_STR(str(g, "message"), "graph launches traced, no graph_node_definition: graph "
                                     "resource callbacks failed: CUPTI_ERROR_NOT_SUPPORTED (27)");
        CHECK_STR(str(cap_of(&dev, "user_scope"), "status"), "collected");
        fl_log_free(&dev);
        fl_log_free(&scope);
        int rc = check_done("test_cupti_graphs (refused)") == 0 ? 0 : 1;
        fflush(stdout);
        _exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fl_rmtree(base);
}

/* Launches after the last periodic drain: one launched and drained (its
 * buffer completed, then a writer cycle: gpufl_flush), two more from
 * another call site left in CUPTI's open buffer until shutdown forces it
 * out (stop(): cuptiActivityFlushAll(FORCED)).  Every kernel_detail has
 * its launch's stack: the last drain announces the late stacks before
 * decoding their records. */
NOINLINE static void first_here(void)
{
    CHECK_INT((AT(line_first), fake_cupti_launch("_Z5firstPf")), 0);
    sink_++;
}

NOINLINE static void late_here(void)
{
    for (int i = 0; i < 2; i++)
        CHECK_INT((AT(line_late), fake_cupti_launch("_Z4latePf")), 0);
    sink_++;
}

static void launch_drain_launch(void)
{
    void *f = core_sym("gpufl_flush");
    CHECK(f != NULL);
    void (*flush)(void);
    memcpy(&flush, &f, sizeof f);
    (AT(line_drained), first_here());
    fake_cupti_complete();
    if (flush)
        flush();
    (AT(line_late_call), late_here());
}

/* The stack_trace of the kernel_detail of corr. */
static const char *stack_of(const fl_log *dev, json_int_t corr)
{
    for (size_t i = 0; i < dev->n; i++) {
        json_t *d = dev->lines[i];
        if (strcmp(log_type(d), "kernel_detail") == 0 && fl_int(d, "corr_id") == corr)
            return str(d, "stack_trace");
    }
    return "(no kernel_detail)";
}

static void test_late_launches(void)
{
    char base[256], dir[1024];
    snprintf(base, sizeof base, "/tmp/gp_cupti_graphs_late_%d", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        check_passed_ = check_failed_ = 0;
        session(base, true, launch_drain_launch);
        fl_log dev;
        CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
        CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
        /* The fake's correlation ids: 1 (drained), 2 and 3 (at shutdown). */
        char want[256];
        snprintf(want, sizeof want,
                 "|launch_drain_launch (test_cupti_graphs.c:%d)|first_here "
                 "(test_cupti_graphs.c:%d)|fake_cupti_launch (",
                 line_drained, line_first);
        CHECK_CONTAINS(stack_of(&dev, 1), want);
        snprintf(want, sizeof want,
                 "|launch_drain_launch (test_cupti_graphs.c:%d)|late_here "
                 "(test_cupti_graphs.c:%d)|fake_cupti_launch (",
                 line_late_call, line_late);
        CHECK_CONTAINS(stack_of(&dev, 2), want);
        CHECK_CONTAINS(stack_of(&dev, 3), want);
        CHECK_INT((int)fl_count(&dev, "kernel_detail"), 3);
        fl_log_free(&dev);
        int rc = check_done("test_cupti_graphs (late launches)") == 0 ? 0 : 1;
        fflush(stdout);
        _exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fl_rmtree(base);
}

/* A launch made while the plugin's drain announces the stacks (another
 * thread's, racing the writer), whose buffer completes before the drain
 * takes the completed buffers: its row must not come out before its stack
 * (the recorder would write "" and keep it for that configuration).  The
 * real plugin driven through its ABI with this file's sink: the launch is
 * made from inside the stacks callback, the one point inside that window
 * a test can reach. */
static struct {
    bool announced[64];
    int rows, rows_unannounced, racing;
    uint32_t late_stack;
} race;

static void no_names(void *u, const uint32_t *ids, const char *const *names, size_t n)
{
    (void)u, (void)ids, (void)names, (void)n;
}

static void no_device(void *u, const fl_gpu_limits *lim)
{
    (void)u, (void)lim;
}

#define NO_ROWS(fn, type)                                                                          \
    static void fn(void *u, type *rows, size_t n)                                                  \
    {                                                                                              \
        (void)u, (void)rows, (void)n;                                                              \
    }
NO_ROWS(no_memcpys, fl_memcpy_row)
NO_ROWS(no_memsets, fl_memset_row)
NO_ROWS(no_syncs, fl_sync_row)
NO_ROWS(no_allocs, fl_alloc_row)
NO_ROWS(no_graphs, fl_graph_row)
NO_ROWS(no_markers, fl_marker_row)
NO_ROWS(no_samples, fl_sample_row)
NO_ROWS(no_pm, fl_pm_row)

static void no_sample_names(void *u, int dict, const uint32_t *ids, const char *const *names,
                            size_t n)
{
    (void)u, (void)dict, (void)ids, (void)names, (void)n;
}

NOINLINE static void racing_launch(void)
{
    CHECK_INT(fake_cupti_launch("_Z6racingPf"), 0);
    fake_cupti_complete();
    sink_++;
}

static void race_stacks(void *u, const uint32_t *ids, const char *const *texts, size_t n)
{
    (void)u, (void)texts;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 64)
            race.announced[ids[i]] = true;
    if (race.racing == 1) {
        race.racing = 2;
        racing_launch();
    }
}

static void race_kernels(void *u, fl_kernel_row *rows, size_t n)
{
    (void)u;
    for (size_t i = 0; i < n; i++) {
        race.rows++;
        if (!rows[i].stack_id || rows[i].stack_id >= 64 || !race.announced[rows[i].stack_id]) {
            race.rows_unannounced++;
            fprintf(stderr, "kernel corr %u: stack %u not announced before its row\n",
                    rows[i].corr_id, rows[i].stack_id);
        }
    }
}

static void test_stack_race(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        check_passed_ = check_failed_ = 0;
        void *h = dlopen(env_or_die("GP_TEST_PLUGIN"), RTLD_NOW | RTLD_LOCAL);
        const fl_trace_plugin *p = h ? dlsym(h, "gpufl_cupti_plugin_v1") : NULL;
        CHECK(p != NULL);
        if (!p)
            _exit(1);
        fl_trace_options o = {.stack_trace = true, .max_stacks = 16};
        gp_error err = {0};
        CHECK_INT(p->start(&o, &err), GP_OK);
        CHECK_INT(cuInit(0), 0);
        fl_trace_sink sink = {.kernel_names = no_names,
                              .device = no_device,
                              .kernels = race_kernels,
                              .memcpys = no_memcpys,
                              .memsets = no_memsets,
                              .syncs = no_syncs,
                              .allocs = no_allocs,
                              .graphs = no_graphs,
                              .markers = no_markers,
                              .stacks = race_stacks,
                              .sample_names = no_sample_names,
                              .samples = no_samples,
                              .pm_samples = no_pm};
        CHECK_INT(fake_cupti_launch("_Z5firstPf"), 0);
        fake_cupti_complete();
        race.racing = 1;
        p->drain(&sink); /* the racing launch made inside it */
        CHECK_INT(race.racing, 2);
        p->stop();
        p->drain(&sink);
        p->release();
        CHECK_INT(race.rows, 2);
        CHECK_INT(race.rows_unannounced, 0);
        int rc = check_done("test_cupti_graphs (stack race)") == 0 ? 0 : 1;
        fflush(stdout);
        _exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    g_core = env_or_die("GP_TEST_CORE");
    unsetenv("CUDA_INJECTION64_PATH");
    char base[256], dir[1024];
    snprintf(base, sizeof base, "/tmp/gp_cupti_graphs_%d", (int)getpid());
    test_bound();
    test_refused();
    test_late_launches();
    test_stack_race();
    session(base, true, build_and_launch);
    CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    json_t *st = cap_of(&dev, "stack_trace");
    if (strcmp(str(st, "status"), "fallback") == 0) {
        printf("SKIP: %s\n", str(st, "message"));
        fl_rmtree(base);
        return 77;
    }
    CHECK_STR(str(cap_of(&dev, "cuda_graphs"), "status"), "collected");
    char capture[2048] = "";
    check_definitions(&scope, capture, sizeof capture);
    check_kernel(&dev, capture);
    check_report(dir, capture);
    fl_log_free(&dev);
    fl_log_free(&scope);
    fl_rmtree(base);
    return check_done("test_cupti_graphs");
}
