/*
 * test_plugin_path.c - the CUPTI plugin loader (src/abi/plugin.c) loads
 * only a file it has checked: a relative $GPUFL_CUPTI_PLUGIN is made
 * absolute first; a file writable by every user, one in a directory where
 * others can replace it, a file of another user or writable by another
 * group, and a directory are refused before dlopen.  The "plugin" is the
 * fake library (tests/fakes/fake_lib.c), whose constructor appends a line
 * to a marker file: a refused file must leave no marker.  The cases that
 * need another owner or group run only as root.
 */
#include "abi/plugin.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/gp-plugin-path-XXXXXX";
static char marker[PATH_MAX];

static void copy_lib(const char *to, mode_t mode)
{
    size_t len = 0;
    char *bytes = check_read_file(check_env("GP_TEST_FAKE_LIB"), &len);
    FILE *f = fopen(to, "wb");
    if (!bytes || !f || fwrite(bytes, 1, len, f) != len) {
        perror(to);
        exit(2);
    }
    fclose(f);
    free(bytes);
    CHECK_INT(chmod(to, mode), 0);
}

static int loaded(void)
{
    return access(marker, F_OK) == 0;
}

/* fl_plugin_symbol with GPUFL_CUPTI_PLUGIN=env: NULL expected with the
 * status `want`; returns the message. */
static const char *try_load(const char *env, char *path, size_t path_len, gp_status want)
{
    static gp_error e;
    setenv("GPUFL_CUPTI_PLUGIN", env, 1);
    e = (gp_error){0};
    const void *p = fl_plugin_symbol("gpufl_cupti_metrics_v1", path, path_len, &e);
    CHECK(p == NULL);
    CHECK_INT(e.status, want);
    printf("GPUFL_CUPTI_PLUGIN=%s: %s\n", env, e.message);
    return e.message;
}

static void refused(const char *env, const char *because)
{
    char path[PATH_MAX];
    const char *why = try_load(env, path, sizeof path, GP_ERR_INVALID_ARG);
    CHECK_CONTAINS(why, because);
    CHECK_CONTAINS(why, "not loaded");
    CHECK(!loaded());
}

static int rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(marker, sizeof marker, "%s/marker", dir);
    setenv("FAKE_LIB_MARKER", marker, 1);
    CHECK_INT(chdir(dir), 0);
    char real_dir[PATH_MAX];
    CHECK(realpath(dir, real_dir) != NULL);

    /* A relative name, world-writable: refused, its constructor never runs. */
    copy_lib("rogue.so", 0777);
    refused("rogue.so", "is writable by every user");
    refused("./rogue.so", "is writable by every user");

    /* Our file, in a directory every user can write (no sticky bit). */
    CHECK_INT(mkdir("open", 0755), 0);
    CHECK_INT(chmod("open", 0777), 0);
    copy_lib("open/ok.so", 0755);
    refused("open/ok.so", "where other users can replace it");

    /* Not a file. */
    refused(".", "is not a regular file");

    if (geteuid() == 0) {
        copy_lib("theirs.so", 0755);
        CHECK_INT(chown("theirs.so", 65534, 65534), 0);
        refused("theirs.so", "belongs to another user");
        copy_lib("group.so", 0775);
        CHECK_INT(chown("group.so", 0, getegid() == 65534 ? 65533 : 65534), 0);
        refused("group.so", "is writable by its group, which is not ours");
    } else {
        printf("not root: the other-owner and other-group cases are skipped\n");
    }

    /* A good file by a relative name: loaded by its absolute path (it is
     * no plugin, which is the error). */
    copy_lib("good.so", 0755);
    char path[PATH_MAX], want[PATH_MAX + 16];
    const char *why = try_load("./good.so", path, sizeof path, GP_ERR_BACKEND_UNAVAILABLE);
    snprintf(want, sizeof want, "%s/good.so", real_dir);
    CHECK_STR(path, want);
    char msg[PATH_MAX + 160];
    snprintf(msg, sizeof msg,
             "%s is not a gpu-profile CUPTI plugin (no gpufl_cupti_metrics_v1): point "
             "GPUFL_CUPTI_PLUGIN at libgpuprofile_cupti.so",
             want);
    CHECK_STR(why, msg);
    CHECK(loaded());

    CHECK_INT(chdir("/"), 0);
    nftw(dir, rm, 16, FTW_DEPTH | FTW_PHYS);
    return check_done("test_plugin_path");
}
