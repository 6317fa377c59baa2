/*
 * tests/gpu/gpu_check.h - what the GPU checkers (check_pcsamp,
 * check_pmsamp, check_sass) share: PASS / FAIL lines counted in n_fail,
 * a dictionary's name for an id, and the one session of a log directory
 * with its last capture_capabilities and the status of its features.
 * Include after fl_log.h.
 */
#ifndef GP_TEST_GPU_CHECK_H
#define GP_TEST_GPU_CHECK_H

#include <stdarg.h>
#include <stdbool.h>

static int n_fail;

static void report(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s  ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    n_fail += !ok;
}

/* The name dictionary dict (e.g. "function_dict") gives id; "" if none. */
static inline const char *dict_name(const fl_log *log, const char *dict, json_int_t id)
{
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)id);
    for (size_t i = 0; i < log->n; i++) {
        json_t *v = json_object_get(json_object_get(log->lines[i], dict), key);
        if (v)
            return json_string_value(v);
    }
    return "";
}

/* The one session in log_dir: its device and scope channels, and the last
 * capture_capabilities (NULL: none) in *caps.  0, or 2 after a message
 * naming prog. */
static inline int gc_session(const char *prog, const char *log_dir, fl_log *dev, fl_log *scope,
                             json_t **caps)
{
    char dir[4096];
    if (fl_only_session(log_dir, dir, sizeof dir) != 0 || fl_log_read(dev, dir, "device") != 0 ||
        fl_log_read(scope, dir, "scope") != 0) {
        fprintf(stderr, "%s: cannot read the session in %s\n", prog, log_dir);
        return 2;
    }
    *caps = NULL;
    for (size_t i = 0; i < dev->n; i++)
        if (strcmp(log_type(dev->lines[i]), "capture_capabilities") == 0)
            *caps = dev->lines[i];
    return 0;
}

/* PASS for each of the NULL-terminated features whose status is collected
 * or partial (some records dropped), FAIL with CUPTI's message otherwise. */
static inline void gc_features(json_t *caps, const char *const *features)
{
    json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *c = json_array_get(list, i);
        const char *f = json_string_value(json_object_get(c, "feature"));
        const char *st = json_string_value(json_object_get(c, "status"));
        bool listed = false;
        for (const char *const *w = features; f && *w && !listed; w++)
            listed = strcmp(f, *w) == 0;
        if (listed)
            report(st && (!strcmp(st, "collected") || !strcmp(st, "partial")), "%s: %s (%s)", f,
                   st ? st : "?", json_string_value(json_object_get(c, "message")));
    }
}

#endif
