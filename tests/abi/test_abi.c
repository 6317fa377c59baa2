/*
 * test_abi.c - the contracts with the CUPTI plugin (src/abi): a table is
 * accepted only with this build's interface number and struct sizes, and
 * every refusal names what differs and the fix.
 */
#include "abi/plugin.h"
#include "util/fs.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_trace_table(void)
{
    static const fl_trace_layout ours = FL_TRACE_LAYOUT;
    fl_trace_layout theirs = ours;
    fl_trace_plugin p = {.abi = FL_TRACE_ABI, .layout = &theirs};
    gp_error e = {0};
    const char *why = e.message;
    CHECK_INT(fl_trace_plugin_check(&p, "/x/libgpuprofile_cupti.so", &e), GP_OK);
    CHECK_STR(why, "");

    /* Every struct of the contract is compared. */
    CHECK_INT(ours.kernel_row, sizeof(fl_kernel_row));
    CHECK_INT(ours.marker_row, sizeof(fl_marker_row));
    CHECK_INT(ours.plugin_table, sizeof(fl_trace_plugin));
    CHECK_INT(ours.stats, sizeof(fl_trace_stats));
    CHECK_INT(ours.engine_stats, sizeof(fl_engine_stats));
    /* The error struct start() fills (FL_TRACE_ABI 14). */
    CHECK_INT(ours.error, sizeof(gp_error));
    CHECK_INT(ours.graph_node_row, sizeof(fl_graph_node_row)); /* FL_TRACE_ABI 17 */
    CHECK_INT(sizeof ours, 20 * sizeof(uint32_t));
    uint32_t *field = (uint32_t *)&theirs;
    for (size_t i = 0; i < sizeof theirs / sizeof *field; i++) {
        theirs = ours;
        field[i] += 8;
        e.message[0] = '\0';
        CHECK_INT(fl_trace_plugin_check(&p, "/x/p.so", &e), GP_ERR_BACKEND_UNAVAILABLE);
        CHECK_CONTAINS(why, i + 1 < sizeof theirs / sizeof *field
                                ? "the CUPTI plugin /x/p.so was built with fl_"
                                : "the CUPTI plugin /x/p.so was built with gp_error of ");
        CHECK_CONTAINS(why, ": install the plugin built with this library");
    }
    theirs = ours;
    theirs.memcpy_row = 3;
    CHECK_INT(fl_trace_plugin_check(&p, "/x/p.so", &e), GP_ERR_BACKEND_UNAVAILABLE);
    char want[256];
    snprintf(want, sizeof want,
             "the CUPTI plugin /x/p.so was built with fl_memcpy_row of 3 bytes, this library "
             "with %zu: install the plugin built with this library",
             sizeof(fl_memcpy_row));
    CHECK_STR(why, want);

    theirs = ours;
    p.abi = FL_TRACE_ABI + 1;
    CHECK_INT(fl_trace_plugin_check(&p, "/x/p.so", &e), GP_ERR_BACKEND_UNAVAILABLE);
    snprintf(want, sizeof want,
             "the CUPTI plugin /x/p.so speaks interface %u, this library %u: install the plugin "
             "built with this library",
             FL_TRACE_ABI + 1, FL_TRACE_ABI);
    CHECK_STR(why, want);
    p.abi = FL_TRACE_ABI;
    p.layout = NULL;
    CHECK_INT(fl_trace_plugin_check(&p, "/x/p.so", &e), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(why, "gives no struct sizes");
}

static void test_metrics_table(void)
{
    static const gp_metrics_layout ours = GP_METRICS_LAYOUT;
    CHECK_INT(ours.props, sizeof(gp_metrics_abi_props));
    CHECK_INT(ours.plugin_table, sizeof(gp_metrics_plugin));
    gp_metrics_layout theirs = ours;
    gp_metrics_plugin p = {.abi = GP_METRICS_ABI, .layout = &theirs};
    gp_error e = {0};
    const char *why = e.message;
    CHECK_INT(gp_metrics_plugin_check(&p, "/x/p.so", &e), GP_OK);
    theirs.props = 4;
    CHECK_INT(gp_metrics_plugin_check(&p, "/x/p.so", &e), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(why, "was built with gp_metrics_abi_props of 4 bytes");
    /* Every call fills a gp_error (GP_METRICS_ABI 5): its size is compared. */
    CHECK_INT(ours.error, sizeof(gp_error));
    theirs = ours;
    theirs.error = 16;
    CHECK_INT(gp_metrics_plugin_check(&p, "/x/p.so", &e), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(why, "was built with gp_error of 16 bytes");
    theirs = ours;
    p.abi = 1;
    CHECK_INT(gp_metrics_plugin_check(&p, "/x/p.so", &e), GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(why, "speaks metrics interface 1");
}

/* No plugin at the path: the loader says so, with its status, and how to
 * get one. */
static void test_missing_plugin(void)
{
    setenv("GPUFL_CUPTI_PLUGIN", "/nonexistent/libgpuprofile_cupti.so", 1);
    gp_error e = {0};
    CHECK(fl_trace_plugin_load(&e) == NULL);
    CHECK_INT(e.status, GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_STR(e.message,
              "the CUPTI plugin could not be loaded (/nonexistent/libgpuprofile_cupti.so: "
              "No such file or directory): build gpu-profile with a CUDA toolkit, or "
              "point GPUFL_CUPTI_PLUGIN at libgpuprofile_cupti.so");
    gp_error m = {0};
    CHECK(gp_metrics_plugin_load(&m) == NULL);
    CHECK_INT(m.status, GP_ERR_BACKEND_UNAVAILABLE);
    CHECK_STR(m.message, e.message);
    /* A NULL error is accepted. */
    CHECK(fl_trace_plugin_load(NULL) == NULL);
    unsetenv("GPUFL_CUPTI_PLUGIN");
}

/* A path far longer than a gp_error's message: shortened in the middle
 * (its head, "...", its file name), so the message still names the file
 * and ends with the fix, whole. */
static void test_long_path(void)
{
    char path[4096] = "/nonexistent";
    while (strlen(path) < 3000)
        strcat(path, "/a-directory-of-many-words");
    strcat(path, "/libgpuprofile_cupti.so");
    setenv("GPUFL_CUPTI_PLUGIN", path, 1);
    gp_error e = {0};
    CHECK(fl_trace_plugin_load(&e) == NULL);
    CHECK_INT(e.status, GP_ERR_BACKEND_UNAVAILABLE);
    CHECK(strlen(e.message) < sizeof e.message - 1); /* not cut off */
    CHECK_CONTAINS(e.message, "the CUPTI plugin could not be loaded (/nonexistent/a-directory-of");
    CHECK_CONTAINS(e.message, "...");
    CHECK_CONTAINS(e.message, "/libgpuprofile_cupti.so: No such file or directory)");
    const char *fix = ": build gpu-profile with a CUDA toolkit, or point GPUFL_CUPTI_PLUGIN at "
                      "libgpuprofile_cupti.so";
    size_t n = strlen(e.message), k = strlen(fix);
    CHECK(n > k && strcmp(e.message + n - k, fix) == 0);
    unsetenv("GPUFL_CUPTI_PLUGIN");

    /* A wrong-ABI table at such a path: the same shortening, status and fix. */
    static const fl_trace_layout ours = FL_TRACE_LAYOUT;
    fl_trace_plugin p = {.abi = FL_TRACE_ABI + 1, .layout = &ours};
    CHECK_INT(fl_trace_plugin_check(&p, path, &e), GP_ERR_BACKEND_UNAVAILABLE);
    fl_path_shown shown = fl_path_show(path);
    char want[GP_ERROR_MESSAGE_MAX];
    snprintf(want, sizeof want,
             "the CUPTI plugin %s speaks interface %u, this library %u: install the plugin "
             "built with this library",
             shown.text, FL_TRACE_ABI + 1, FL_TRACE_ABI);
    CHECK_STR(e.message, want);
}

/* The one shortening helper (util/fs.c): a path that fits is itself; a
 * longer one keeps its head and its file name in FL_PATH_SHOWN_MAX - 1
 * bytes; a file name longer than the room keeps its end. */
static void test_path_show(void)
{
    CHECK_STR(fl_path_show("/usr/lib/libgpuprofile_cupti.so").text,
              "/usr/lib/libgpuprofile_cupti.so");
    CHECK_STR(fl_path_show(NULL).text, "");
    char path[1200] = "/head";
    while (strlen(path) < 1000)
        strcat(path, "/middle");
    strcat(path, "/file.so");
    fl_path_shown s = fl_path_show(path);
    CHECK_INT(strlen(s.text), FL_PATH_SHOWN_MAX - 1);
    size_t head = FL_PATH_SHOWN_MAX - 1 - 3 - strlen("/file.so");
    CHECK(strncmp(s.text, path, head) == 0);
    CHECK_STR(s.text + head, ".../file.so");
    char name[1200] = "/d/";
    memset(name + 3, 'x', 1000);
    name[1003] = '\0';
    strcat(name, "END");
    s = fl_path_show(name);
    CHECK_INT(strlen(s.text), FL_PATH_SHOWN_MAX - 1);
    CHECK(strncmp(s.text, "/d/xxx", 6) == 0);
    CHECK_CONTAINS(s.text, "...");
    CHECK_STR(s.text + strlen(s.text) - 6, "xxxEND");
}

int main(void)
{
    test_trace_table();
    test_metrics_table();
    test_missing_plugin();
    test_long_path();
    test_path_show();
    return check_done("test_abi");
}
