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
#include "../util/fs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* path checked and made absolute into out; why when it is unusable. */
static bool usable(const char *path, char *out, size_t cap, char *why, size_t why_len)
{
    char real[PATH_MAX];
    gp_error err;
    if (fl_library_check(path, real, sizeof real, &err) != GP_OK) {
        snprintf(why, why_len, "%s", err.message);
        return false;
    }
    if (access(real, X_OK) != 0) {
        snprintf(why, why_len, "%s is not executable", real);
        return false;
    }
    if (strlen(real) >= cap) {
        snprintf(why, why_len, "%s: path too long", real);
        return false;
    }
    memcpy(out, real, strlen(real) + 1);
    return true;
}

/* dir/nvdisasm, when dir is absolute and holds a usable one. */
static bool in_dir(const char *dir, size_t dir_len, char *out, size_t cap)
{
    char cand[PATH_MAX], why[256];
    if (dir_len == 0 || dir[0] != '/' || dir_len + sizeof "/nvdisasm" > sizeof cand)
        return false;
    snprintf(cand, sizeof cand, "%.*s/nvdisasm", (int)dir_len, dir);
    return access(cand, F_OK) == 0 && usable(cand, out, cap, why, sizeof why);
}

bool fl_disasm_tool_find(char *path, size_t cap, char *why, size_t why_len, bool *bad_env)
{
    *bad_env = false;
    const char *env = getenv(FL_NVDISASM_ENV);
    if (env && !env[0]) {
        snprintf(why, why_len, "%s is set but empty: disassembly turned off", FL_NVDISASM_ENV);
        return false;
    }
    if (env) {
        char reason[512];
        if (usable(env, path, cap, reason, sizeof reason))
            return true;
        *bad_env = true;
        snprintf(why, why_len,
                 "%s=%s cannot be used (%s): set it to nvdisasm's path (e.g. "
                 "/usr/local/cuda/bin/nvdisasm), or to an empty value for no disassembly",
                 FL_NVDISASM_ENV, env, reason);
        return false;
    }
    const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++) {
        char bin[PATH_MAX];
        if (homes[i] && homes[i][0] == '/' &&
            snprintf(bin, sizeof bin, "%s/bin", homes[i]) < (int)sizeof bin &&
            in_dir(bin, strlen(bin), path, cap))
            return true;
    }
    for (const char *p = getenv("PATH"); p && *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (in_dir(p, n, path, cap))
            return true;
        p = colon ? colon + 1 : p + n;
    }
    snprintf(why, why_len,
             "no nvdisasm in $%s, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin or $PATH: "
             "install the CUDA toolkit's nvdisasm, or set %s to its path",
             FL_NVDISASM_ENV, FL_NVDISASM_ENV);
    return false;
}
