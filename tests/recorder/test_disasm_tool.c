/*
 * test_disasm_tool.c - which disassembler the PcSampling engine may run
 * (recorder/disasm_tool.c): $GPUFL_NVDISASM first (empty: none; a path that
 * is missing, relative to nothing executable, not executable or writable by
 * others: refused, with the fix, and flagged as the user's mistake), then
 * nvdisasm in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin and the
 * absolute directories of $PATH (a relative one never), with the path made
 * absolute.
 */
#include "check.h"
#include "recorder/disasm_tool.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[64];

static void make_tool(const char *path, mode_t mode)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("#!/bin/sh\nexit 0\n", f);
        fclose(f);
    }
    chmod(path, mode);
}

/* fl_disasm_tool_find, its message into why; found, or its status is
 * the one a refusal of its kind has (GP_ERR_INVALID_ARG for a bad
 * variable, GP_ERR_NOT_SUPPORTED for none). */
static bool find(char *path, char *why, bool *bad)
{
    gp_error e = {0};
    gp_status st = fl_disasm_tool_find(path, PATH_MAX, &e, bad);
    snprintf(why, 768, "%s", st == GP_OK ? "" : e.message);
    if (st != GP_OK)
        CHECK_INT(st, *bad ? GP_ERR_INVALID_ARG : GP_ERR_NOT_SUPPORTED);
    return st == GP_OK;
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_disasm_tool.XXXXXX");
    if (!mkdtemp(g_tmp))
        return 2;
    chmod(g_tmp, 0755);
    char home[128], bin[160], tool[192], other[160], other_tool[192], plain[192], open_[192];
    snprintf(home, sizeof home, "%s/cuda", g_tmp);
    snprintf(bin, sizeof bin, "%s/bin", home);
    snprintf(tool, sizeof tool, "%s/nvdisasm", bin);
    snprintf(other, sizeof other, "%s/other", g_tmp);
    snprintf(other_tool, sizeof other_tool, "%s/nvdisasm", other);
    snprintf(plain, sizeof plain, "%s/not_executable", g_tmp);
    snprintf(open_, sizeof open_, "%s/anyone_writes", g_tmp);
    mkdir(home, 0755);
    mkdir(bin, 0755);
    mkdir(other, 0755);
    make_tool(tool, 0755);
    make_tool(other_tool, 0755);
    make_tool(plain, 0644);
    make_tool(open_, 0777);

    char path[PATH_MAX], why[768];
    bool bad = true;
    const char *old_path = getenv("PATH");
    char *saved_path = strdup(old_path ? old_path : "/usr/bin:/bin");
    unsetenv("CUDA_HOME");
    unsetenv("CUDA_PATH");

    /* Empty: turned off, not a mistake. */
    setenv(FL_NVDISASM_ENV, "", 1);
    CHECK(!find(path, why, &bad));
    CHECK(!bad);
    CHECK_STR(why, "GPUFL_NVDISASM is set but empty: disassembly turned off");

    /* Named: used as it is, made absolute. */
    setenv(FL_NVDISASM_ENV, tool, 1);
    CHECK(find(path, why, &bad));
    CHECK_STR(path, tool);
    char cwd[PATH_MAX];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_INT(chdir(g_tmp), 0);
    setenv(FL_NVDISASM_ENV, "cuda/bin/nvdisasm", 1);
    CHECK(find(path, why, &bad));
    CHECK_STR(path, tool);
    CHECK_INT(chdir(cwd), 0);

    /* Named and unusable: refused, with the fix. */
    const char *bad_paths[] = {"/nonexistent/nvdisasm", plain, open_, bin};
    const char *reasons[] = {"No such file or directory", "is not executable",
                             "is writable by every user", "is not a regular file"};
    for (size_t i = 0; i < 4; i++) {
        setenv(FL_NVDISASM_ENV, bad_paths[i], 1);
        bad = false;
        CHECK(!find(path, why, &bad));
        CHECK(bad);
        CHECK_CONTAINS(why, "GPUFL_NVDISASM=");
        CHECK_CONTAINS(why, reasons[i]);
        CHECK_CONTAINS(why, "set it to nvdisasm's path");
    }

    /* Searched: $CUDA_HOME, then $CUDA_PATH, then PATH's absolute dirs. */
    unsetenv(FL_NVDISASM_ENV);
    setenv("CUDA_HOME", home, 1);
    setenv("CUDA_PATH", "/nonexistent", 1);
    CHECK(find(path, why, &bad));
    CHECK(!bad);
    CHECK_STR(path, tool);
    unsetenv("CUDA_HOME");
    setenv("CUDA_PATH", home, 1);
    CHECK(find(path, why, &bad));
    CHECK_STR(path, tool);
    unsetenv("CUDA_PATH");
    bool system_has = access("/usr/local/cuda/bin/nvdisasm", X_OK) == 0;
    char p[512];
    snprintf(p, sizeof p, "relative/dir::%s:/nonexistent", other);
    setenv("PATH", p, 1);
    CHECK(find(path, why, &bad));
    CHECK_STR(path, system_has ? "/usr/local/cuda/bin/nvdisasm" : other_tool);
    /* A relative PATH entry is never searched. */
    CHECK_INT(chdir(other), 0);
    setenv("PATH", ".:other", 1);
    bool found = find(path, why, &bad);
    CHECK_INT(chdir(cwd), 0);
    if (!system_has) {
        CHECK(!found);
        CHECK(!bad);
        CHECK_CONTAINS(why, "no nvdisasm in $GPUFL_NVDISASM, $CUDA_HOME/bin, $CUDA_PATH/bin, "
                            "/usr/local/cuda/bin or $PATH");
        CHECK_CONTAINS(why, "set GPUFL_NVDISASM to its path");
    }
    unsetenv("PATH");
    CHECK(system_has == find(path, why, &bad));

    setenv("PATH", saved_path, 1);
    free(saved_path);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_tmp);
    return check_done("test_disasm_tool");
}
