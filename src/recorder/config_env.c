/*
 * recorder/config_env.c - the GPUFL_* environment, read at init only (the
 * variables of a running session never change it); parsed as strictly as
 * the config file, so a typo fails init instead of silently doing nothing.
 */
#include "config_env.h"
#include "../util/error.h"
#include "../util/text.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char *fl_config_getenv(const char *name)
{
    const char *s = getenv(name);
    return s && *s ? s : NULL;
}

/* A boolean variable that only the environment sets: *on 1 or 0, -1
 * unset; an error naming it and what each answer does when it is not a
 * boolean. */
static gpufl_status env_switch(const char *name, const char *on_does, const char *off_does, int *on,
                               const char **text, gpufl_error *err)
{
    *on = -1;
    *text = fl_config_getenv(name);
    if (!*text)
        return GPUFL_OK;
    int b = fl_parse_bool(*text);
    if (b < 0)
        return fl_error_set(err, GPUFL_ERR_ENV,
                            "%s=\"%s\" is not a boolean: use 1, true, yes or on to %s, 0, false, "
                            "no or off (or unset it) to %s (any case)",
                            name, *text, on_does, off_does);
    *on = b == 1;
    return GPUFL_OK;
}

gpufl_status fl_config_env_kill_switch(gpufl_error *err)
{
    int on;
    const char *dis;
    gpufl_status st =
        env_switch("GPUFL_DISABLED", "disable the recorder", "keep it on", &on, &dis, err);
    if (st == GPUFL_OK && on == 1)
        return fl_error_set(err, GPUFL_DISABLED,
                            "GPUFL_DISABLED=%s: the recorder is off, nothing was started", dis);
    return st;
}

gpufl_status fl_config_env_no_tsc(bool *no_tsc, gpufl_error *err)
{
    int on;
    const char *s;
    gpufl_status st = env_switch("GPUFL_NO_TSC", "time scopes with CLOCK_REALTIME",
                                 "let them use the TSC", &on, &s, err);
    *no_tsc = on == 1;
    return st;
}

static gpufl_status apply_env(const fl_field *fd, fl_fval *dst, gpufl_error *err)
{
    const char *s = fl_config_getenv(fd->env);
    if (!s)
        return GPUFL_OK;
    switch (fd->type) {
    case FT_STR:
        dst->s = s;
        break;
    case FT_BOOL: {
        int b = fl_parse_bool(s);
        if (b < 0)
            return fl_error_set(err, GPUFL_ERR_ENV,
                                "%s=\"%s\" is not a boolean: use one of 1, true, yes, on, 0, "
                                "false, no, off (any case)",
                                fd->env, s);
        dst->b = b == 1;
        break;
    }
    case FT_ENGINE: {
        gpufl_engine e = GPUFL_ENGINE_MONITOR;
        if (gpufl_engine_parse(s, &e) != GPUFL_OK)
            return fl_error_set(err, GPUFL_ERR_ENV, "%s=\"%s\" is not an engine: use one of %s",
                                fd->env, s, fl_config_engine_list);
        dst->i = (int)e;
        break;
    }
    case FT_INT: {
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || *end)
            return fl_error_set(err, GPUFL_ERR_ENV, "%s=\"%s\" is not a whole number", fd->env, s);
        /* A number, but not one an int holds: as the config file says it. */
        if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
            return fl_error_set(err, GPUFL_ERR_ENV,
                                "%s=\"%s\" is out of range: use a whole number in 0..%d", fd->env,
                                s, INT_MAX);
        dst->i = (int)v;
        break;
    }
    case FT_BACKEND:
        /* No environment variable of this type exists. */
        return GPUFL_OK;
    }
    dst->src = SRC_ENV;
    return GPUFL_OK;
}

gpufl_status fl_config_env_layer(fl_fval v[FL_NFIELDS], gpufl_error *err)
{
    int cf = fl_config_field_index("config_file");
    for (int i = 0; i < FL_NFIELDS; i++) {
        if (!fl_config_fields[i].env || i == cf)
            continue;
        gpufl_status st = apply_env(&fl_config_fields[i], &v[i], err);
        if (st != GPUFL_OK)
            return st;
    }
    return GPUFL_OK;
}
