/*
 * inject.c - what `--engine` above Monitor does around CMD: find the CUPTI
 * plugin (libgpuprofile_cupti.so), build CMD's environment (the profiler's
 * own is never changed: CUDA_INJECTION64_PATH and the GPUFL_* contract
 * are set in a copy that only the exec sees), list the session
 * directories of the log directory before and after the run, and remove
 * the private temporary one afterwards.  No printing here.
 */
#include "cli.h"

#include <errno.h>
#include <dirent.h>
#include <signal.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#define PLUGIN_NAME "libgpuprofile_cupti.so"

#ifndef GP_INSTALL_LIBDIR
#define GP_INSTALL_LIBDIR "lib"
#endif

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void append(char *msg, size_t len, const char *text)
{
    size_t used = strlen(msg);
    if (used < len)
        snprintf(msg + used, len - used, "%s%s", used ? ", " : "", text);
}

int cli_find_plugin(char *path, size_t len, char *msg, size_t msg_len)
{
    msg[0] = '\0';
    const char *env = getenv("GPUFL_CUPTI_PLUGIN");
    if (env && env[0]) {
        /* Made absolute and checked before anything loads it: a relative
         * name would be looked up again from CMD's directories, and a file
         * others can write is their code in CMD and in us. */
        char real[PATH_MAX];
        gp_error err;
        if (fl_library_check(env, real, sizeof real, &err) != GP_OK) {
            const char *why = err.message;
            /* why names the file; once is enough when that is env itself. */
            size_t k = strlen(env);
            int same = strncmp(why, env, k) == 0 && (why[k] == ':' || why[k] == ' ');
            snprintf(msg, msg_len,
                     "GPUFL_CUPTI_PLUGIN=%s%s%s: point it at libgpuprofile_cupti.so, or unset it "
                     "to use the one installed with gpu-profile",
                     same ? "" : env, same ? "" : ": ", why);
            return -1;
        }
        if (strlen(real) >= len) {
            snprintf(msg, msg_len, "GPUFL_CUPTI_PLUGIN=%s: %s", env, strerror(ENAMETOOLONG));
            return -1;
        }
        snprintf(path, len, "%s", real);
        return 1;
    }

    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(msg, msg_len, "GPUFL_CUPTI_PLUGIN is not set and /proc/self/exe cannot be read");
        return 0;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    char cand[3][PATH_MAX + 64];
    size_t nc = 0;
    snprintf(cand[nc++], sizeof cand[0], "%s/" PLUGIN_NAME, exe);
    snprintf(cand[nc++], sizeof cand[0], "%s/../lib/" PLUGIN_NAME, exe);
    if (GP_INSTALL_LIBDIR[0] == '/')
        snprintf(cand[nc++], sizeof cand[0], "%s/" PLUGIN_NAME, GP_INSTALL_LIBDIR);
    else if (strcmp(GP_INSTALL_LIBDIR, "lib") != 0)
        snprintf(cand[nc++], sizeof cand[0], "%s/../%s/" PLUGIN_NAME, exe, GP_INSTALL_LIBDIR);
    for (size_t i = 0; i < nc; i++) {
        char real[PATH_MAX];
        gp_error err;
        if (!is_file(cand[i]))
            continue;
        if (fl_library_check(cand[i], real, sizeof real, &err) != GP_OK) {
            snprintf(msg, msg_len, "%s", err.message); /* found, and not safe to load */
            return -1;
        }
        snprintf(path, len, "%s", real);
        return 1;
    }
    char where[3 * (PATH_MAX + 64)] = "";
    for (size_t i = 0; i < nc; i++)
        append(where, sizeof where, cand[i]);
    snprintf(msg, msg_len,
             "the CUPTI plugin was not found (GPUFL_CUPTI_PLUGIN is not set; looked "
             "for %s)",
             where);
    return 0;
}

/* The variables the injection owns. */
static const char *const owned[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
                                    "GPUFL_CUPTI_PLUGIN",    "GPUFL_PROFILING_ENGINE",
                                    "GPUFL_LOG_PATH",        "GPUFL_APP_NAME"};
#define N_OWNED (sizeof owned / sizeof owned[0])

static int is_owned(const char *entry)
{
    for (size_t i = 0; i < N_OWNED; i++) {
        size_t k = strlen(owned[i]);
        if (strncmp(entry, owned[i], k) == 0 && entry[k] == '=')
            return 1;
    }
    return 0;
}

static char *pair(const char *name, const char *value)
{
    return gp_concat3(name, "=", value);
}

void cli_env_free(char **env)
{
    if (!env)
        return;
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    free(env);
}

char **cli_child_env(const char *plugin, const char *engine, const char *log_path, const char *app)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + N_OWNED + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_owned(environ[i]))
            continue;
        if (!(env[k++] = strdup(environ[i])))
            goto oom;
    }
    const char *values[N_OWNED] = {plugin, plugin, plugin, engine, log_path, app};
    for (size_t i = 0; i < N_OWNED; i++)
        if (!(env[k++] = pair(owned[i], values[i])))
            goto oom;
    env[k] = NULL;
    return env;
oom:
    cli_env_free(env);
    return NULL;
}

/* ------------------------------------------------------------ the run */

int cli_run_id_setup(void)
{
    const char *have = getenv("GPUFL_RUN_ID");
    if (have) {
        if (fl_run_id_ok(have))
            return 0; /* a launcher above us (another host's, the user's) named the run */
        cli_say("GPUFL_RUN_ID=\"%.80s\" is not a run id: use 1 to 64 of A-Z a-z 0-9 . _ : - "
                "(the same value on every host of a job, e.g. $SLURM_JOB_ID, makes one run of "
                "them), or unset it for a fresh one",
                have);
        return -1;
    }
    char id[40];
    fl_run_id_new(id);
    /* In our own environment: our session reads it, and every child
     * inherits it (torchrun's workers, mpirun's ranks). */
    if (setenv("GPUFL_RUN_ID", id, 1) != 0) {
        cli_say("out of memory");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------ session listing */

void cli_names_list(const char *dir, cli_names *out)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
            continue;
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 16;
            char **v = realloc(out->v, cap * sizeof *v);
            if (!v)
                break;
            out->v = v;
            out->cap = cap;
        }
        if (!(out->v[out->n] = strdup(e->d_name)))
            break;
        out->n++;
    }
    closedir(d);
}

int cli_names_has(const cli_names *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], name) == 0)
            return 1;
    return 0;
}

void cli_names_free(cli_names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    int r = flag == FTW_DP ? rmdir(path) : unlink(path);
    return r == 0 || errno == ENOENT ? 0 : -1;
}

int cli_remove_tree(const char *path)
{
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

void cli_trace_dirs_clean(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (!d)
        return;
    const size_t plen = strlen(CLI_TRACE_DIR_PREFIX);
    uid_t me = geteuid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, CLI_TRACE_DIR_PREFIX, plen) != 0)
            continue;
        char *end = NULL;
        long pid = strtol(e->d_name + plen, &end, 10);
        if (end == e->d_name + plen || *end != '-' || pid <= 0)
            continue; /* not a name we give */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* its run may still be going */
        char path[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", tmp, e->d_name) >= (int)sizeof path ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != me)
            continue;
        cli_remove_tree(path);
    }
    closedir(d);
}
