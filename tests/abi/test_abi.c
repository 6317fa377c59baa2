/*
 * test_abi.c - the contracts with the CUPTI plugin (src/abi): a table is
 * accepted only with this build's interface number and struct sizes, and
 * every refusal names what differs and the fix.
 */
#include "abi/plugin.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static void test_trace_table(void)
{
    static const fl_trace_layout ours = FL_TRACE_LAYOUT;
    fl_trace_layout theirs = ours;
    fl_trace_plugin p = {.abi = FL_TRACE_ABI, .layout = &theirs};
    char why[512] = "";
    CHECK(fl_trace_plugin_check(&p, "/x/libgpuprofile_cupti.so", why, sizeof why));
    CHECK_STR(why, "");

    /* Every struct of the contract is compared. */
    CHECK_INT(ours.kernel_row, sizeof(fl_kernel_row));
    CHECK_INT(ours.marker_row, sizeof(fl_marker_row));
    CHECK_INT(ours.plugin_table, sizeof(fl_trace_plugin));
    CHECK_INT(ours.stats, sizeof(fl_trace_stats));
    CHECK_INT(ours.engine_stats, sizeof(fl_engine_stats));
    /* The error struct start() fills (FL_TRACE_ABI 14). */
    CHECK_INT(ours.error, sizeof(gp_error));
    CHECK_INT(sizeof ours, 19 * sizeof(uint32_t));
    uint32_t *field = (uint32_t *)&theirs;
    for (size_t i = 0; i < sizeof theirs / sizeof *field; i++) {
        theirs = ours;
        field[i] += 8;
        why[0] = '\0';
        CHECK(!fl_trace_plugin_check(&p, "/x/p.so", why, sizeof why));
        CHECK_CONTAINS(why, i + 1 < sizeof theirs / sizeof *field
                                ? "the CUPTI plugin /x/p.so was built with fl_"
                                : "the CUPTI plugin /x/p.so was built with gp_error of ");
        CHECK_CONTAINS(why, ": install the plugin built with this library");
    }
    theirs = ours;
    theirs.memcpy_row = 3;
    CHECK(!fl_trace_plugin_check(&p, "/x/p.so", why, sizeof why));
    char want[256];
    snprintf(want, sizeof want,
             "the CUPTI plugin /x/p.so was built with fl_memcpy_row of 3 bytes, this library "
             "with %zu: install the plugin built with this library",
             sizeof(fl_memcpy_row));
    CHECK_STR(why, want);

    theirs = ours;
    p.abi = FL_TRACE_ABI + 1;
    CHECK(!fl_trace_plugin_check(&p, "/x/p.so", why, sizeof why));
    snprintf(want, sizeof want,
             "the CUPTI plugin /x/p.so speaks interface %u, this library %u: install the plugin "
             "built with this library",
             FL_TRACE_ABI + 1, FL_TRACE_ABI);
    CHECK_STR(why, want);
    p.abi = FL_TRACE_ABI;
    p.layout = NULL;
    CHECK(!fl_trace_plugin_check(&p, "/x/p.so", why, sizeof why));
    CHECK_CONTAINS(why, "gives no struct sizes");
}

static void test_metrics_table(void)
{
    static const gp_metrics_layout ours = GP_METRICS_LAYOUT;
    CHECK_INT(ours.props, sizeof(gp_metrics_abi_props));
    CHECK_INT(ours.plugin_table, sizeof(gp_metrics_plugin));
    gp_metrics_layout theirs = ours;
    gp_metrics_plugin p = {.abi = GP_METRICS_ABI, .layout = &theirs};
    char why[512] = "";
    CHECK(gp_metrics_plugin_check(&p, "/x/p.so", why, sizeof why));
    theirs.props = 4;
    CHECK(!gp_metrics_plugin_check(&p, "/x/p.so", why, sizeof why));
    CHECK_CONTAINS(why, "was built with gp_metrics_abi_props of 4 bytes");
    /* Every call fills a gp_error (GP_METRICS_ABI 5): its size is compared. */
    CHECK_INT(ours.error, sizeof(gp_error));
    theirs = ours;
    theirs.error = 16;
    CHECK(!gp_metrics_plugin_check(&p, "/x/p.so", why, sizeof why));
    CHECK_CONTAINS(why, "was built with gp_error of 16 bytes");
    theirs = ours;
    p.abi = 1;
    CHECK(!gp_metrics_plugin_check(&p, "/x/p.so", why, sizeof why));
    CHECK_CONTAINS(why, "speaks metrics interface 1");
}

/* No plugin at the path: the loader says so and how to get one. */
static void test_missing_plugin(void)
{
    setenv("GPUFL_CUPTI_PLUGIN", "/nonexistent/libgpuprofile_cupti.so", 1);
    char why[1024] = "";
    CHECK(fl_trace_plugin_load(why, sizeof why) == NULL);
    CHECK_CONTAINS(why, "the CUPTI plugin could not be loaded");
    CHECK_CONTAINS(why, "point GPUFL_CUPTI_PLUGIN at libgpuprofile_cupti.so");
    why[0] = '\0';
    CHECK(gp_metrics_plugin_load(why, sizeof why) == NULL);
    CHECK_CONTAINS(why, "the CUPTI plugin could not be loaded");
    unsetenv("GPUFL_CUPTI_PLUGIN");
}

int main(void)
{
    test_trace_table();
    test_metrics_table();
    test_missing_plugin();
    return check_done("test_abi");
}
