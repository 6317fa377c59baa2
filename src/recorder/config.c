/*
 * recorder/config.c - the flight recorder's options, resolved (config.h).
 *
 * Promises:
 *  - gpufl_init_options_init() fills the seed's InitOptions defaults.
 *  - fl_config_resolve() merges, field by field and highest first: a value
 *    set in code (different from its default; NULL or "" strings are "left
 *    at default"), a GPUFL_* environment variable (an empty one is unset,
 *    config_env.c), the JSON config_file (an empty string there is unset
 *    too, config_file.c), the default.  GPUFL_DISABLED is looked at before
 *    anything else and enabled = false in code returns before any file is
 *    opened.
 *  - Every failure returns a status and a message that names the input
 *    (variable, file with line and column, key, field) and the fix; out is
 *    then left zeroed, and fl_config_free() on it is a no-op.
 *  - No message, warning or provenance line contains an API key's value
 *    (code's, GPUFL_API_KEY's or the file's, whatever the key's spelling):
 *    each is redacted on the way out.
 *  - Nothing is printed; the library never exits or aborts here.
 */
#include "config.h"
#include "capture.h"
#include "../abi/trace_abi.h"
#include "../util/buf.h"
#include "../util/env.h"
#include "../util/error.h"
#include "../util/text.h"
#include "config_env.h"
#include "config_fields.h"
#include "config_file.h"
#include "gpufl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Enum fields are copied through int with memcpy (code may pass any int). */
_Static_assert(sizeof(gpufl_backend_kind) == sizeof(int), "backend enum is int-sized");
_Static_assert(sizeof(gpufl_engine) == sizeof(int), "engine enum is int-sized");

static const char remote_upload_warning[] =
    "remote_upload is deprecated (GPUFlight v1.1, removed in v1.2) and has no effect: "
    "live upload was removed; upload a finished session's logs instead (gpufl_upload_logs() "
    "after gpufl_shutdown(), or gpu-profile upload)";

void gpufl_init_options_init(gpufl_init_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->app_name = "gpufl";
    opts->log_path = "";
    opts->backend_url = "";
    opts->api_key = "";
    opts->api_path = "";
    opts->remote_upload = false;
    opts->enable_stack_trace = false;
    opts->enable_source_collection = true;
    opts->enable_external_correlation = true;
    opts->enable_synchronization = true;
    opts->enable_memory_tracking = false;
    opts->enable_cuda_graphs_tracking = false;
    opts->system_sample_rate_ms = 0;
    opts->kernel_sample_rate_ms = 0;
    opts->continuous_system_sampling = false;
    opts->backend = GPUFL_BACKEND_AUTO;
    opts->profiling_engine = GPUFL_ENGINE_MONITOR;
    opts->config_file = "";
    opts->flush_logs_always = false;
    opts->enable_debug_output = false;
    opts->enabled = true;
    opts->log_fn = NULL;
    opts->log_user = NULL;
    opts->compact_kernel_details = false;
    opts->pc_sampling_period = 0;
    opts->pm_sampling_metrics = "";
    opts->pm_sampling_interval_us = 0;
    opts->pm_sampling_max_samples = 0;
    opts->metrics = "";
    opts->range_per_kernel = false;
    opts->sass_all_kernels = false;
    opts->capture_range = "";
    opts->capture_range_end = "";
    opts->capture_delay_ms = 0;
    opts->capture_duration_ms = 0;
    opts->rotate_size = "";
    opts->rotate_interval_ms = 0;
    opts->max_disk = "";
}

/* ------------------------------------------------------------ the checks */

static const char *src_text(const fl_fval *v, const fl_field *fd, const char *cfg_path, char *buf,
                            size_t cap)
{
    switch (v->src) {
    case SRC_CODE:
        return "code";
    case SRC_ENV:
        snprintf(buf, cap, "env %s", fd->env);
        return buf;
    case SRC_CONFIG:
        snprintf(buf, cap, "config %s", cfg_path);
        return buf;
    case SRC_DEFAULT:
        break;
    }
    return "default";
}

/* Rates >= 0, the CUPTI pool's bounds, enums in range. */
static gpufl_status check_numbers(const fl_fval *v, const char *cfg_path, gpufl_error *err)
{
    char src[GPUFL_ERROR_MESSAGE_MAX];
    for (int i = 0; i < FL_NFIELDS; i++) {
        const fl_field *fd = &fl_config_fields[i];
        const fl_fval *x = &v[i];
        const char *from = src_text(x, fd, cfg_path, src, sizeof src);
        if (fd->type == FT_INT && strncmp(fd->name, "cupti_", 6) == 0) {
            int hi = strcmp(fd->name, "cupti_max_buffers") == 0 ? FL_CUPTI_MAX_BUFFERS
                                                                : FL_CUPTI_MAX_BUFFER_KIB;
            if (x->i < 0 || x->i > hi)
                return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                    "%s = %d (%s) is out of range: use 0 (the default) or a "
                                    "value up to %d",
                                    fd->name, x->i, from, hi);
            continue;
        }
        if (fd->type == FT_INT && strcmp(fd->name, "pc_sampling_period") == 0) {
            if (x->i != 0 && (x->i < (int)FL_PC_PERIOD_MIN || x->i > (int)FL_PC_PERIOD_MAX))
                return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                    "%s = %d (%s) is out of range: use 0 (the default, 2^%u "
                                    "cycles) or %u..%u (2^n cycles between samples)",
                                    fd->name, x->i, from, FL_PC_PERIOD_DEFAULT, FL_PC_PERIOD_MIN,
                                    FL_PC_PERIOD_MAX);
            continue;
        }
        if (fd->type == FT_INT && strncmp(fd->name, "pm_sampling_", 12) == 0) {
            bool iv = strcmp(fd->name, "pm_sampling_interval_us") == 0;
            int hi = iv ? (int)FL_PM_INTERVAL_MAX_US : (1 << 20);
            if (x->i < 0 || x->i > hi)
                return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                    "%s = %d (%s) is out of range: use 0 (the default, %u) or "
                                    "1..%d (%s)",
                                    fd->name, x->i, from,
                                    iv ? FL_PM_INTERVAL_DEFAULT_US : FL_PM_MAX_SAMPLES_DEFAULT, hi,
                                    iv ? "microseconds between samples"
                                       : "samples held per decode");
            continue;
        }
        if (fd->type == FT_INT && x->i < 0)
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                "%s = %d (%s) is negative: use 0 (off) or a period in "
                                "milliseconds",
                                fd->name, x->i, from);
        if (fd->type == FT_BACKEND && !gpufl_backend_name((gpufl_backend_kind)x->i))
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                "%s = %d (%s) is not a backend: use one of GPUFL_BACKEND_AUTO, "
                                "GPUFL_BACKEND_NVIDIA, GPUFL_BACKEND_AMD, GPUFL_BACKEND_NONE",
                                fd->name, x->i, from);
        if (fd->type == FT_ENGINE && !gpufl_engine_name((gpufl_engine)x->i))
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                "%s = %d (%s) is not an engine: use one of GPUFL_ENGINE_MONITOR, "
                                "GPUFL_ENGINE_TRACE, GPUFL_ENGINE_PC_SAMPLING, "
                                "GPUFL_ENGINE_SASS_METRICS, GPUFL_ENGINE_RANGE_PROFILER, "
                                "GPUFL_ENGINE_DEEP, GPUFL_ENGINE_PM_SAMPLING",
                                fd->name, x->i, from);
    }
    return GPUFL_OK;
}

/* app_name names the default log directory and appears in every record: a
 * '/' would make it a path, "." and ".." the current or parent directory
 * itself, a control character breaks lines and terminals. */
static gpufl_status check_app_name(const fl_fval *v, const char *cfg_path, gpufl_error *err)
{
    char src[GPUFL_ERROR_MESSAGE_MAX];
    int an = fl_config_field_index("app_name");
    const char *name = v[an].s;
    const char *from = src_text(&v[an], &fl_config_fields[an], cfg_path, src, sizeof src);
    if (strchr(name, '/'))
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "app_name \"%s\" (%s) contains '/': use a plain name and set "
                            "log_path for the directory",
                            name, from);
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "app_name \"%s\" (%s) names the %s directory, not an application: "
                            "use a plain name and set log_path for the directory",
                            name, from, name[1] ? "parent" : "current");
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                "app_name (%s) contains a control character (0x%02x): use "
                                "printable characters only",
                                from, *p);
    return GPUFL_OK;
}

/* The capture window's four fields make sense only together. */
static gpufl_status check_capture(const fl_fval *v, const char *cfg_path, gpufl_error *err)
{
    int r = fl_config_field_index("capture_range"), e = fl_config_field_index("capture_range_end");
    int d = fl_config_field_index("capture_delay_ms");
    int u = fl_config_field_index("capture_duration_ms");
    fl_capture_spec spec;
    char why[512], src[GPUFL_ERROR_MESSAGE_MAX];
    if (fl_capture_parse(v[r].s, v[e].s, v[d].i, v[u].i, &spec, why, sizeof why) == 0)
        return GPUFL_OK;
    const fl_fval *from = v[e].src != SRC_DEFAULT && strstr(why, "_end") ? &v[e] : &v[r];
    const fl_field *fd = from == &v[e] ? &fl_config_fields[e] : &fl_config_fields[r];
    return fl_error_set(err, GPUFL_ERR_INVALID_ARG, "%s (%s)", why,
                        src_text(from, fd, cfg_path, src, sizeof src));
}

/* rotate_size and max_disk are sizes (util/text.c's one parser). */
static gpufl_status check_sizes(const fl_fval *v, const char *cfg_path, gpufl_error *err)
{
    static const char *const names[] = {"rotate_size", "max_disk"};
    for (size_t k = 0; k < 2; k++) {
        int i = fl_config_field_index(names[k]);
        uint64_t bytes;
        char why[256], src[GPUFL_ERROR_MESSAGE_MAX];
        if (gp_parse_size(v[i].s, &bytes, why, sizeof why) != 0)
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG, "%s = %s (%s)", names[k], why,
                                src_text(&v[i], &fl_config_fields[i], cfg_path, src, sizeof src));
    }
    return GPUFL_OK;
}

static gpufl_status validate(const fl_fval *v, const char *cfg_path, gpufl_error *err)
{
    gpufl_status st = check_numbers(v, cfg_path, err);
    if (st == GPUFL_OK)
        st = check_capture(v, cfg_path, err);
    if (st == GPUFL_OK)
        st = check_sizes(v, cfg_path, err);
    return st != GPUFL_OK ? st : check_app_name(v, cfg_path, err);
}

/* ------------------------------------------------------------ the result */

void fl_config_free(fl_config *c)
{
    if (!c)
        return;
    free(c->app_name);
    free(c->log_path);
    free(c->backend_url);
    free(c->api_key);
    free(c->api_path);
    free(c->config_file);
    free(c->pm_sampling_metrics);
    free(c->metrics);
    free(c->capture_range);
    free(c->capture_range_end);
    free(c->rotate_size);
    free(c->max_disk);
    for (int i = 0; i < FL_MAX_WARNINGS; i++)
        free(c->warnings[i]);
    free(c->provenance);
    memset(c, 0, sizeof *c);
}

/* log_path: app_name when empty, then a trailing ".log" dropped (the seed's
 * default was "<app_name>.log", a file; here it is the base directory). */
static char *resolve_log_path(const char *log_path, const char *app_name)
{
    const char *base = log_path && *log_path ? log_path : app_name;
    size_t n = strlen(base);
    if (n > 4 && strcmp(base + n - 4, ".log") == 0)
        n -= 4;
    return strndup(base, n);
}

/* Each value into its field of out; strings copied (they were borrowed). */
static gpufl_status copy_values(const fl_fval *v, const char *cfg_path, fl_config *out)
{
    for (int i = 0; i < FL_NFIELDS; i++) {
        const fl_field *fd = &fl_config_fields[i];
        if (fd->out_off == NO_OUT)
            continue;
        char *base = (char *)out + fd->out_off;
        switch (fd->type) {
        case FT_STR: {
            char *s;
            if (strcmp(fd->name, "log_path") == 0)
                s = resolve_log_path(v[i].s, v[fl_config_field_index("app_name")].s);
            else if (strcmp(fd->name, "api_path") == 0 && !*v[i].s)
                s = strdup("/api/v1");
            else if (strcmp(fd->name, "config_file") == 0)
                s = strdup(cfg_path ? cfg_path : "");
            else
                s = strdup(v[i].s);
            if (!s)
                return GPUFL_ERR_NO_MEMORY;
            *(char **)(void *)base = s;
            break;
        }
        case FT_BOOL:
            *(bool *)(void *)base = v[i].b;
            break;
        case FT_INT:
            *(int *)(void *)base = v[i].i;
            break;
        case FT_BACKEND:
        case FT_ENGINE:
            memcpy(base, &v[i].i, sizeof v[i].i);
            break;
        }
    }
    return GPUFL_OK;
}

/* One line per option not at its default: its value (the API key only as
 * "<set>") and where it came from, for debug output. */
static char *provenance_text(const fl_fval *v, const char *cfg_path, const fl_config *out)
{
    fl_buf pb = {0};
    for (int i = 0; i < FL_NFIELDS; i++) {
        const fl_field *fd = &fl_config_fields[i];
        if (fd->out_off == NO_OUT || v[i].src == SRC_DEFAULT)
            continue;
        const char *base = (const char *)out + fd->out_off;
        fl_buf_printf(&pb, "  %s = ", fd->name);
        switch (fd->type) {
        case FT_STR:
            /* The key is a secret: its presence is all debug output gets. */
            fl_buf_printf(&pb, "%s",
                          strcmp(fd->name, "api_key") == 0 ? "<set>"
                                                           : *(char *const *)(const void *)base);
            break;
        case FT_BOOL:
            fl_buf_printf(&pb, "%s", v[i].b ? "true" : "false");
            break;
        case FT_INT:
            fl_buf_printf(&pb, "%d", v[i].i);
            break;
        case FT_BACKEND:
            fl_buf_printf(&pb, "%s", gpufl_backend_name((gpufl_backend_kind)v[i].i));
            break;
        case FT_ENGINE:
            fl_buf_printf(&pb, "%s", gpufl_engine_name((gpufl_engine)v[i].i));
            break;
        }
        if (v[i].src == SRC_CODE)
            fl_buf_printf(&pb, " (code)");
        else if (v[i].src == SRC_ENV)
            fl_buf_printf(&pb, " (env %s)", fd->env);
        else
            fl_buf_printf(&pb, " (config %s)", cfg_path);
        fl_buf_printf(&pb, "%s\n",
                      strcmp(fd->name, "kernel_sample_rate_ms") == 0 ? " - deprecated, no effect"
                                                                     : "");
    }
    return fl_buf_take(&pb);
}

static gpufl_status build_out(const fl_fval *v, const char *cfg_path, const gpufl_init_options *o,
                              fl_config *out)
{
    if (copy_values(v, cfg_path, out) != GPUFL_OK)
        return GPUFL_ERR_NO_MEMORY;
    out->log_fn = o->log_fn;
    out->log_user = o->log_user;

    if (out->remote_upload) {
        out->warnings[out->n_warnings] = strdup(remote_upload_warning);
        if (!out->warnings[out->n_warnings])
            return GPUFL_ERR_NO_MEMORY;
        out->n_warnings++;
    }
    out->provenance = provenance_text(v, cfg_path, out);
    if (!out->provenance)
        return GPUFL_ERR_NO_MEMORY;
    return GPUFL_OK;
}

/* ------------------------------------------------------------ the layers */

static void read_opt(const gpufl_init_options *o, const fl_field *f, fl_fval *v)
{
    const char *base = (const char *)o + f->opt_off;
    switch (f->type) {
    case FT_STR:
        v->s = *(const char *const *)(const void *)base;
        break;
    case FT_BOOL:
        v->b = *(const bool *)(const void *)base;
        break;
    case FT_INT:
        v->i = *(const int *)(const void *)base;
        break;
    case FT_BACKEND:
    case FT_ENGINE:
        memcpy(&v->i, base, sizeof v->i);
        break;
    }
}

/* "Set in code" means different from the default; a string that is NULL or
 * "" is left at default whatever the default is. */
static bool differs(const fl_field *f, const fl_fval *code, const fl_fval *def)
{
    switch (f->type) {
    case FT_STR:
        return code->s && code->s[0] && strcmp(code->s, def->s) != 0;
    case FT_BOOL:
        return code->b != def->b;
    default:
        return code->i != def->i;
    }
}

/* The defaults' and code's values of every field, with their sources. */
static void read_defaults_and_code(const gpufl_init_options *defaults, const gpufl_init_options *o,
                                   fl_fval *def, fl_fval *code)
{
    memset(def, 0, FL_NFIELDS * sizeof *def);
    memset(code, 0, FL_NFIELDS * sizeof *code);
    for (int i = 0; i < FL_NFIELDS; i++) {
        read_opt(defaults, &fl_config_fields[i], &def[i]);
        def[i].src = SRC_DEFAULT;
        read_opt(o, &fl_config_fields[i], &code[i]);
        code[i].src = SRC_CODE;
    }
}

/* The config file to apply: code's config_file, else GPUFL_CONFIG_FILE
 * (*from_env); NULL when neither names one. */
static const char *choose_config_file(const fl_fval *code, fl_fval *v, bool *from_env)
{
    int cf = fl_config_field_index("config_file");
    *from_env = false;
    if (differs(&fl_config_fields[cf], &code[cf], &v[cf])) {
        v[cf] = code[cf];
    } else if (fl_config_getenv("GPUFL_CONFIG_FILE")) {
        v[cf].s = fl_config_getenv("GPUFL_CONFIG_FILE");
        v[cf].src = SRC_ENV;
        *from_env = true;
    }
    return v[cf].src != SRC_DEFAULT ? v[cf].s : NULL;
}

/* Code over everything else, field by field (config_file was taken
 * already; enabled is no value). */
static void apply_code(const fl_fval *code, const fl_fval *def, fl_fval *v)
{
    int cf = fl_config_field_index("config_file");
    for (int i = 0; i < FL_NFIELDS; i++) {
        if (i == cf || fl_config_fields[i].out_off == NO_OUT)
            continue;
        if (differs(&fl_config_fields[i], &code[i], &def[i]))
            v[i] = code[i];
    }
}

/* The layers, checks and result; file is the wrapper's (freed there). */
static gpufl_status resolve(const gpufl_init_options *opts, fl_config *out, fl_config_file *file,
                            gpufl_error *err)
{
    /* 1. The kill switch, before anything can fail or touch the disk. */
    gpufl_status st = fl_config_env_kill_switch(err);
    if (st != GPUFL_OK)
        return st;

    gpufl_init_options defaults;
    gpufl_init_options_init(&defaults);
    const gpufl_init_options *o = opts ? opts : &defaults;

    /* 2. Disabled in code: return before any file or variable is read. */
    if (!o->enabled)
        return fl_error_set(err, GPUFL_DISABLED,
                            "enabled = false in code: the recorder is off, nothing was started");

    fl_fval def[FL_NFIELDS], code[FL_NFIELDS], v[FL_NFIELDS];
    read_defaults_and_code(&defaults, o, def, code);
    memcpy(v, def, sizeof v);

    /* 3. The config file: code's config_file, else GPUFL_CONFIG_FILE. */
    bool cf_env;
    const char *cfg_path = choose_config_file(code, v, &cf_env);
    if (cfg_path) {
        file->path = cfg_path;
        file->hide_quotes = (o->api_key && *o->api_key) || fl_config_getenv(GP_API_KEY_ENV);
        st = fl_config_file_load(file, cf_env, v, err);
        if (st != GPUFL_OK)
            return st;
    }

    /* 4. Environment over config, code over environment. */
    st = fl_config_env_layer(v, err);
    if (st != GPUFL_OK)
        return st;
    bool no_tsc;
    st = fl_config_env_no_tsc(&no_tsc, err);
    if (st != GPUFL_OK)
        return st;
    apply_code(code, def, v);

    /* 5. */
    st = validate(v, cfg_path, err);
    if (st != GPUFL_OK)
        return st;

    /* Strings in v borrow from the parsed file: build_out copies them. */
    st = build_out(v, cfg_path, o, out);
    out->no_tsc = no_tsc;
    if (st == GPUFL_ERR_NO_MEMORY)
        fl_error_set(err, st, "out of memory resolving the options");
    else
        fl_error_set(err, GPUFL_OK, "%s", "");
    return st;
}

static void emit_buf(void *ctx, const char *p, size_t n)
{
    fl_buf_put(ctx, p, n);
}

/* No message and no debug text carries an API key's value, whichever
 * layer set it and however its key was spelt (the file's value is the
 * decoded one): the error's message, the warnings and the provenance are
 * redacted against every value given (code, GPUFL_API_KEY, the file). */
static void hide_api_keys(const gpufl_init_options *opts, const fl_config_file *file,
                          fl_config *out, gpufl_error *err)
{
    const char *keys[3] = {opts ? opts->api_key : NULL, fl_config_getenv(GP_API_KEY_ENV),
                           fl_config_file_api_key(file)};
    if (err)
        gp_redact_in_place(err->message, sizeof err->message, keys, 3);
    for (int i = 0; i < out->n_warnings; i++)
        if (out->warnings[i])
            gp_redact_in_place(out->warnings[i], strlen(out->warnings[i]) + 1, keys, 3);
    if (out->provenance) {
        fl_buf b = {0};
        gp_redact(out->provenance, keys, 3, emit_buf, &b);
        char *text = fl_buf_take(&b);
        free(out->provenance);
        out->provenance = text ? text : strdup("");
    }
}

gpufl_status fl_config_resolve(const gpufl_init_options *opts, fl_config *out, gpufl_error *err)
{
    if (!out)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG, "fl_config_resolve: out is NULL");
    memset(out, 0, sizeof *out);
    fl_config_file file = {0};
    gpufl_status st = resolve(opts, out, &file, err);
    hide_api_keys(opts, &file, out, err);
    fl_config_file_free(&file);
    if (st == GPUFL_OK && !out->provenance) {
        st = fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory resolving the options");
    }
    if (st != GPUFL_OK)
        fl_config_free(out);
    return st;
}
