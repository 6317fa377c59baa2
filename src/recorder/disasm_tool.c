/*
 * recorder/disasm_tool.c - finding the disassembler for the sass channel.
 *
 * Promises: a candidate is used only when it is an executable regular file
 * that passes the checks of a library we load (util/fs.c: ours or root's,
 * not writable by others, in a directory others cannot replace it in),
 * since the plugin runs it; relative directories of $PATH are skipped (the
 * working directory is not a place to find programs in); no file is run
 * here.
 */
#include "disasm_tool.h"
#include "../util/error.h"
#include "../util/fs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* path checked and made absolute into out; err when it is unusable. */
static gp_status usable(const char *path, char *out, size_t cap, gp_error *err)
{
    char real[PATH_MAX];
    gp_status st = fl_library_check(path, real, sizeof real, err);
    if (st != GP_OK)
        return st;
    if (access(real, X_OK) != 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "%s is not executable",
                            fl_path_show(real).text);
    if (strlen(real) >= cap)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "%s: path too long", fl_path_show(real).text);
    memcpy(out, real, strlen(real) + 1);
    return GP_OK;
}

/* dir/nvdisasm, when dir is absolute and holds a usable one. */
static bool in_dir(const char *dir, size_t dir_len, char *out, size_t cap)
{
    char cand[PATH_MAX];
    gp_error ignored;
    if (dir_len == 0 || dir[0] != '/' || dir_len + sizeof "/nvdisasm" > sizeof cand)
        return false;
    snprintf(cand, sizeof cand, "%.*s/nvdisasm", (int)dir_len, dir);
    return access(cand, F_OK) == 0 && usable(cand, out, cap, &ignored) == GP_OK;
}

gp_status fl_disasm_tool_find(char *path, size_t cap, gp_error *err, bool *bad_env)
{
    *bad_env = false;
    const char *env = getenv(FL_NVDISASM_ENV);
    if (env && !env[0])
        return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                            "%s is set but empty: disassembly turned off", FL_NVDISASM_ENV);
    if (env) {
        gp_error reason;
        if (usable(env, path, cap, &reason) == GP_OK)
            return GP_OK;
        *bad_env = true;
        /* The reason cut, if need be, before the fix is. */
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "%s=%s cannot be used (%.480s): set it to nvdisasm's path (e.g. "
                            "/usr/local/cuda/bin/nvdisasm), or to an empty value for no "
                            "disassembly",
                            FL_NVDISASM_ENV, fl_path_show(env).text, reason.message);
    }
    const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++) {
        char bin[PATH_MAX];
        if (homes[i] && homes[i][0] == '/' &&
            snprintf(bin, sizeof bin, "%s/bin", homes[i]) < (int)sizeof bin &&
            in_dir(bin, strlen(bin), path, cap))
            return GP_OK;
    }
    for (const char *p = getenv("PATH"); p && *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (in_dir(p, n, path, cap))
            return GP_OK;
        p = colon ? colon + 1 : p + n;
    }
    return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                        "no nvdisasm in $%s, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin "
                        "or $PATH: install the CUDA toolkit's nvdisasm, or set %s to its path",
                        FL_NVDISASM_ENV, FL_NVDISASM_ENV);
}
