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

#include <limits.h>
#include <stdio.h>

/* The first field whose size differs: its name and both sizes into why;
 * false when all agree. */
#define CHECK_FIELD(field, type)                                                                   \
    if (theirs->field != ours.field) {                                                             \
        snprintf(why, len,                                                                         \
                 "the CUPTI plugin %s was built with %s of %u bytes, this library with %u: "       \
                 "install the plugin built with this library",                                     \
                 path, #type, (unsigned)theirs->field, (unsigned)ours.field);                      \
        return false;                                                                              \
    }

static bool trace_layout_ok(const fl_trace_layout *theirs, const char *path, char *why, size_t len)
{
    static const fl_trace_layout ours = FL_TRACE_LAYOUT;
    FL_TRACE_LAYOUT_FIELDS(CHECK_FIELD)
    return true;
}

static bool metrics_layout_ok(const gp_metrics_layout *theirs, const char *path, char *why,
                              size_t len)
{
    static const gp_metrics_layout ours = GP_METRICS_LAYOUT;
    GP_METRICS_LAYOUT_FIELDS(CHECK_FIELD)
    return true;
}

bool fl_trace_plugin_check(const fl_trace_plugin *p, const char *path, char *why, size_t len)
{
    if (p->abi != FL_TRACE_ABI) {
        snprintf(why, len,
                 "the CUPTI plugin %s speaks interface %u, this library %u: install the plugin "
                 "built with this library",
                 path, p->abi, FL_TRACE_ABI);
        return false;
    }
    if (!p->layout) {
        snprintf(why, len,
                 "the CUPTI plugin %s gives no struct sizes: install the plugin built with this "
                 "library",
                 path);
        return false;
    }
    return trace_layout_ok(p->layout, path, why, len);
}

bool gp_metrics_plugin_check(const gp_metrics_plugin *p, const char *path, char *why, size_t len)
{
    if (p->abi != GP_METRICS_ABI) {
        snprintf(why, len,
                 "the CUPTI plugin %s speaks metrics interface %u, this library %u: install the "
                 "plugin built with this library",
                 path, p->abi, GP_METRICS_ABI);
        return false;
    }
    if (!p->layout) {
        snprintf(why, len,
                 "the CUPTI plugin %s gives no metrics struct sizes: install the plugin built "
                 "with this library",
                 path);
        return false;
    }
    return metrics_layout_ok(p->layout, path, why, len);
}

const fl_trace_plugin *fl_trace_plugin_load(char *why, size_t len)
{
    char path[PATH_MAX];
    const fl_trace_plugin *p =
        fl_plugin_symbol(FL_TRACE_PLUGIN_SYMBOL, path, sizeof path, why, len);
    return p && fl_trace_plugin_check(p, path, why, len) ? p : NULL;
}

const gp_metrics_plugin *gp_metrics_plugin_load(char *why, size_t len)
{
    char path[PATH_MAX];
    const gp_metrics_plugin *p =
        fl_plugin_symbol(GP_METRICS_PLUGIN_SYMBOL, path, sizeof path, why, len);
    return p && gp_metrics_plugin_check(p, path, why, len) ? p : NULL;
}
