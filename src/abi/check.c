/*
 * abi/check.c - the CUPTI plugin's two tables loaded and checked against
 * this build (plugin.h): the interface number first, then the size of
 * every struct the table exchanges, so a plugin built from other headers
 * is refused with a message naming the struct and both sizes instead of
 * being read with the wrong layout.
 */
#include "metrics_abi.h"
#include "plugin.h"
#include "trace_abi.h"

#include "../util/error.h"
#include "../util/fs.h"

#include <limits.h>

/* Every refusal of a table: the plugin can be neither used nor fixed from
 * here, so the fix is always the same install. */
#define FIX "install the plugin built with this library"

/* The first field whose size differs: its name and both sizes into err. */
#define CHECK_FIELD(field, type)                                                                   \
    if (theirs->field != ours.field)                                                               \
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,                                       \
                            "the CUPTI plugin %s was built with %s of %u bytes, this library "     \
                            "with %u: " FIX,                                                       \
                            fl_path_show(path).text, #type, (unsigned)theirs->field,               \
                            (unsigned)ours.field);

static gp_status trace_layout_ok(const fl_trace_layout *theirs, const char *path, gp_error *err)
{
    static const fl_trace_layout ours = FL_TRACE_LAYOUT;
    FL_TRACE_LAYOUT_FIELDS(CHECK_FIELD)
    return GP_OK;
}

static gp_status metrics_layout_ok(const gp_metrics_layout *theirs, const char *path, gp_error *err)
{
    static const gp_metrics_layout ours = GP_METRICS_LAYOUT;
    GP_METRICS_LAYOUT_FIELDS(CHECK_FIELD)
    return GP_OK;
}

/* The interface number, then a layout to compare; what differs into err. */
static gp_status abi_ok(unsigned theirs, unsigned ours, const void *layout, const char *what,
                        const char *path, gp_error *err)
{
    if (theirs != ours)
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                            "the CUPTI plugin %s speaks %sinterface %u, this library %u: " FIX,
                            fl_path_show(path).text, what, theirs, ours);
    if (!layout)
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                            "the CUPTI plugin %s gives no %sstruct sizes: " FIX,
                            fl_path_show(path).text, what);
    return GP_OK;
}

gp_status fl_trace_plugin_check(const fl_trace_plugin *p, const char *path, gp_error *err)
{
    gp_status st = abi_ok(p->abi, FL_TRACE_ABI, p->layout, "", path, err);
    return st != GP_OK ? st : trace_layout_ok(p->layout, path, err);
}

gp_status gp_metrics_plugin_check(const gp_metrics_plugin *p, const char *path, gp_error *err)
{
    gp_status st = abi_ok(p->abi, GP_METRICS_ABI, p->layout, "metrics ", path, err);
    return st != GP_OK ? st : metrics_layout_ok(p->layout, path, err);
}

const fl_trace_plugin *fl_trace_plugin_load(gp_error *err)
{
    char path[PATH_MAX];
    const fl_trace_plugin *p = fl_plugin_symbol(FL_TRACE_PLUGIN_SYMBOL, path, sizeof path, err);
    return p && fl_trace_plugin_check(p, path, err) == GP_OK ? p : NULL;
}

const gp_metrics_plugin *gp_metrics_plugin_load(gp_error *err)
{
    char path[PATH_MAX];
    const gp_metrics_plugin *p = fl_plugin_symbol(GP_METRICS_PLUGIN_SYMBOL, path, sizeof path, err);
    return p && gp_metrics_plugin_check(p, path, err) == GP_OK ? p : NULL;
}
