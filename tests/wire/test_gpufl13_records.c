/*
 * test_gpufl13_records.c - the records we write in GPUFlight 1.3's own
 * shapes (src/wire/records.c, issue 15): nvtx_marker_event,
 * graph_launch_event and graph_node_definition, byte for byte against
 * tests/golden/gpufl/<type>.ndjson (regenerate with GP_UPDATE_GOLDEN=1
 * ctest -R test_gpufl13_records and review the diff), and their keys in
 * the order GPUFlight 1.3's writer gives them (copied below from the
 * sessions its writer produced, the project's shared fixtures,
 * gpufl-1.3, scope.1.log of each session); kernel_detail's stack_trace
 * always a string, and its two parts (head and tail, for the per-launch
 * writer) making the whole line.
 */
#include "check.h"
#include "abi/trace_abi.h"
#include "util/buf.h"
#include "wire/records.h"

#include <jansson.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"
#define TS0 1760000000000000000ull

static const fl_ident ident = {4242, "sample_app", SID};

/* GPUFlight 1.3's key order (its fixtures' scope.1.log). */
static const char nvtx_keys[] =
    "type,pid,app,session_id,name,domain,start_ns,end_ns,duration_ns,marker_id";
static const char graph_keys[] = "type,pid,app,session_id,start_ns,end_ns,duration_ns,graph_id,"
                                 "device_id,stream_id,corr_id";

static const char *keys_of(const json_t *obj, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (void *it = json_object_iter((json_t *)obj); it;
         it = json_object_iter_next((json_t *)obj, it)) {
        int n = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", json_object_iter_key(it));
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
    return buf;
}

/* Every line of text parsed (duplicate keys rejected); each line's keys
 * must be want, or want then extra. */
static void check_keys(const char *text, const char *want, const char *extra)
{
    char with[512];
    snprintf(with, sizeof with, "%s,%s", want, extra ? extra : "");
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        CHECK(nl != NULL);
        if (!nl)
            return;
        json_error_t e;
        json_t *j = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, &e);
        CHECK(j != NULL);
        char k[512];
        const char *got = j ? keys_of(j, k, sizeof k) : "";
        if (!extra || strcmp(got, want) == 0)
            CHECK_STR(got, want);
        else
            CHECK_STR(got, with);
        json_decref(j);
        p = nl + 1;
    }
}

static void golden_nvtx(void)
{
    fl_buf b = {0};
    fl_nvtx_range r = {.name = "forward",
                       .domain = NULL,
                       .start_ns = TS0 + 1500,
                       .end_ns = TS0 + 850000,
                       .marker_id = 5};
    fl_rec_nvtx_marker(&b, &ident, &r);
    /* A named domain, a name that needs escaping, an end before the start
     * (a clock step): duration 0, not a wrapped number. */
    fl_nvtx_range q = {.name = "step \"7\"\n",
                       .domain = "trainer",
                       .start_ns = TS0 + 900,
                       .end_ns = TS0 + 800,
                       .marker_id = 4294967295u};
    fl_rec_nvtx_marker(&b, &ident, &q);
    /* Still open at shutdown: our key after GPUFlight's. */
    fl_nvtx_range o = {.name = NULL,
                       .start_ns = TS0,
                       .end_ns = TS0 + 3000000,
                       .marker_id = 9,
                       .open_at_shutdown = true};
    fl_rec_nvtx_marker(&b, &ident, &o);
    CHECK(!b.oom);
    check_keys(b.p, nvtx_keys, "open_at_shutdown");
    CHECK(strstr(b.p, "\"domain\":\"\",") != NULL);
    CHECK(strstr(b.p, "\"duration_ns\":0,") != NULL);
    check_golden("gpufl/nvtx_marker_event.ndjson", b.p, "test_gpufl13_records");
    fl_buf_free(&b);
}

static void golden_graph(void)
{
    fl_buf b = {0};
    fl_graph_row g = {.t_ns = TS0 + 600000,
                      .duration_ns = 60000,
                      .graph_id = 3,
                      .stream_id = 7,
                      .corr_id = 140,
                      .device_id = 1};
    fl_rec_graph_launch(&b, &ident, &g);
    fl_graph_row m = {.t_ns = UINT64_MAX - 10,
                      .duration_ns = 10,
                      .graph_id = UINT32_MAX,
                      .stream_id = UINT32_MAX,
                      .corr_id = UINT32_MAX,
                      .device_id = UINT32_MAX};
    fl_rec_graph_launch(&b, &ident, &m);
    CHECK(!b.oom);
    /* The second line's times do not fit jansson's int64: its keys are
     * checked on the first one. */
    const char *nl = strchr(b.p, '\n');
    char first[1024];
    snprintf(first, sizeof first, "%.*s", nl ? (int)(nl - b.p + 1) : 0, b.p);
    check_keys(first, graph_keys, NULL);
    check_golden("gpufl/graph_launch_event.ndjson", b.p, "test_gpufl13_records");
    /* With the launch callback's executable graph: GPUFlight's
     * graph_exec_key, last, as it writes it. */
    fl_buf k = {0};
    g.exec_key = 0x7f00c0de0000ull;
    fl_rec_graph_launch(&k, &ident, &g);
    CHECK(!k.oom);
    CHECK_CONTAINS(k.p, ",\"corr_id\":140,\"graph_exec_key\":\"0x7f00c0de0000\"}\n");
    fl_buf_free(&k);
    fl_buf_free(&b);
}

/* graph_node_definition: GPUFlight 1.3's keys in its writer's order
 * (graph_node_definition_model.cpp), ours after them; a kernel name that
 * needs escaping; no stack and no name are null, never 0 or "". */
static const char node_keys[] =
    "type,session_id,graph_exec_key,node_index,node_type,dependency_count";

static void golden_graph_node(void)
{
    fl_buf b = {0};
    fl_graph_node_row n = {.exec_key = 0xfeedbeefull,
                           .node_id = 1000011,
                           .graph_id = 507,
                           .node_index = 7,
                           .node_type = 0,
                           .dependency_count = 3,
                           .stack_id = 2,
                           .kernel_name = "void k<\"a\">(float*)"};
    fl_rec_graph_node(&b, SID, &n);
    fl_graph_node_row m = {.exec_key = UINT64_MAX,
                           .node_id = UINT64_MAX,
                           .graph_id = UINT32_MAX,
                           .node_index = UINT32_MAX,
                           .node_type = 2,
                           .dependency_count = 0};
    fl_rec_graph_node(&b, SID, &m);
    CHECK(!b.oom);
    const char *nl = strchr(b.p, '\n');
    char first[1024];
    snprintf(first, sizeof first, "%.*s", nl ? (int)(nl - b.p + 1) : 0, b.p);
    check_keys(first, node_keys, "graph_id,graph_node_id,kernel_name,stack_id");
    CHECK_STR(first, "{\"type\":\"graph_node_definition\",\"session_id\":\"" SID
                     "\",\"graph_exec_key\":\"0xfeedbeef\",\"node_index\":7,\"node_type\":0,"
                     "\"dependency_count\":3,\"graph_id\":507,\"graph_node_id\":1000011,"
                     "\"kernel_name\":\"void k<\\\"a\\\">(float*)\",\"stack_id\":2}\n");
    CHECK_CONTAINS(nl ? nl + 1 : "", "\"graph_exec_key\":\"0xffffffffffffffff\",");
    CHECK_CONTAINS(nl ? nl + 1 : "", ",\"kernel_name\":null,\"stack_id\":null}\n");
    check_golden("gpufl/graph_node_definition.ndjson", b.p, "test_gpufl13_records");
    fl_buf_free(&b);
}

/* kernel_detail: stack_trace always a string ("" without a stack),
 * const_bytes null; head + corr_id + tail is the whole line. */
static void check_kernel_detail(void)
{
    fl_kernel_row k;
    memset(&k, 0, sizeof k);
    k.corr_id = 4711;
    k.grid[0] = k.grid[1] = k.grid[2] = 2;
    k.block[0] = 128;
    k.block[1] = k.block[2] = 1;
    fl_occupancy occ = {0.5, 0.75, 0.5, 1.0, 2.0 / 3.0, 8, FL_LIMIT_REGISTERS};
    fl_buf whole = {0}, parts = {0};
    fl_rec_kernel_detail(&whole, &ident, &k, &occ, "train|step", NULL);
    CHECK(strstr(whole.p, ",\"stack_trace\":\"\"}\n") != NULL);
    CHECK(strstr(whole.p, ",\"const_bytes\":null,") != NULL);
    fl_rec_kernel_detail_head(&parts, &ident);
    CHECK(parts.len > 9 && strcmp(parts.p + parts.len - 10, "\"corr_id\":") == 0);
    fl_buf_u64(&parts, 4711);
    fl_rec_kernel_detail_tail(&parts, &k, &occ, "train|step", NULL);
    CHECK_STR(parts.p, whole.p);
    fl_buf_reset(&whole);
    fl_rec_kernel_detail(&whole, &ident, &k, NULL, NULL, "a|b");
    CHECK(strstr(whole.p, ",\"user_scope\":null,\"stack_trace\":\"a|b\"}\n") != NULL);
    fl_buf_free(&whole);
    fl_buf_free(&parts);
}

int main(void)
{
    golden_nvtx();
    golden_graph();
    golden_graph_node();
    check_kernel_detail();
    return check_done("test_gpufl13_records");
}
