/*
 * engine_session.h - what the profiling engines' session tests share
 * (test_cupti_pcsampling.c, test_cupti_sass_session.c, test_cupti_deep_session.c,
 * test_cupti_pmsampling.c, test_cupti_rangeprof_session.c): a session run
 * through a plugin with three fake launches (13 outside any scope, 11 and
 * 12 inside train > step), its debug lines, and readers of its records
 * (the last capture_capabilities, a feature's entry, a dictionary's text,
 * the profile_sample_batch rows in file order).
 */
#ifndef GP_TEST_ENGINE_SESSION_H
#define GP_TEST_ENGINE_SESSION_H

#include "fl_log.h"
#include "fakes/fake_cupti_driver.h"
#include "abi/trace_abi.h"
#include "gpufl.h"

#include <stdbool.h>

#include <dlfcn.h>
#include <unistd.h>

static char g_tmp[256];
static char g_debug[65536]; /* the session's debug lines */

static inline const char *env_or_die(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "%s is not set (run through ctest)\n", name);
        exit(2);
    }
    return v;
}

static inline void on_log(const char *line, void *user)
{
    (void)user;
    size_t n = strlen(g_debug);
    snprintf(g_debug + n, sizeof g_debug - n, "%s\n", line);
}

/* A session with engine: launch 13 outside any scope, 11 and 12 inside
 * train > step; its directory into dir. */
static inline void run_session(const char *plugin, gpufl_engine engine, char *dir, size_t cap)
{
    setenv("GPUFL_CUPTI_PLUGIN", plugin, 1);
    char base[512];
    snprintf(base, sizeof base, "%s/s%d", g_tmp, rand());
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "pcs_test";
    o.log_path = base;
    o.backend = GPUFL_BACKEND_NONE;
    o.profiling_engine = engine;
    o.enable_debug_output = true;
    o.log_fn = on_log;
    g_debug[0] = '\0';
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    fake_cupti_drive_launch(plugin, 13, false);
    gpufl_scope outer = gpufl_scope_begin("train");
    gpufl_scope sc = gpufl_scope_begin("step");
    fake_cupti_drive_launch(plugin, 11, false);
    fake_cupti_drive_launch(plugin, 12, false);
    gpufl_flush();
    gpufl_scope_end(&sc);
    gpufl_scope_end(&outer);
    gpufl_shutdown();
    CHECK_INT(fl_only_session(base, dir, cap), 0);
}

static inline json_t *last_caps(const fl_log *log)
{
    json_t *c = NULL;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), "capture_capabilities") == 0)
            c = log->lines[i];
    return c;
}

static inline json_t *cap_of(json_t *caps, const char *feature)
{
    json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *c = json_array_get(list, i);
        if (strcmp(json_string_value(json_object_get(c, "feature")), feature) == 0)
            return c;
    }
    return NULL;
}

static inline const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(none)";
}

/* The text of dictionary dict's entry id, and the line it is on. */
static inline const char *dict_text(const fl_log *log, const char *dict, const char *id,
                                    size_t *line)
{
    for (size_t i = 0; i < log->n; i++) {
        json_t *d = json_object_get(log->lines[i], dict);
        if (d && json_object_get(d, id)) {
            if (line)
                *line = i;
            return json_string_value(json_object_get(d, id));
        }
    }
    return "(none)";
}

/* The scope_name_dict id of name, as text. */
static inline json_int_t scope_id(const fl_log *log, const char *name)
{
    for (size_t i = 0; i < log->n; i++) {
        json_t *d = json_object_get(log->lines[i], "scope_name_dict");
        const char *k;
        json_t *v;
        json_object_foreach(d, k, v)
        {
            if (strcmp(json_string_value(v), name) == 0)
                return strtoll(k, NULL, 10);
        }
    }
    return -1;
}

/* Row r of the scope channel's profile_sample_batch rows, in file order. */
static inline json_t *sample_row(const fl_log *log, size_t r, json_t **batch)
{
    for (size_t i = 0; i < log->n; i++) {
        json_t *b = log->lines[i];
        if (strcmp(log_type(b), "profile_sample_batch") != 0)
            continue;
        json_t *rows = json_object_get(b, "rows");
        if (r < json_array_size(rows)) {
            *batch = b;
            return json_array_get(rows, r);
        }
        r -= json_array_size(rows);
    }
    return NULL;
}

static inline json_int_t cell(json_t *batch, json_t *row, const char *col)
{
    return json_integer_value(json_array_get(row, (size_t)fl_col(batch, col)));
}

#endif /* GP_TEST_ENGINE_SESSION_H */
