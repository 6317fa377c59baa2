/*
 * test_gpufl_symlink.c - a root-run recorder and an unprivileged user who
 * races it in a shared log directory (issue 16).  Needs root (skips, exit
 * 77, otherwise): the attacker is a child that drops to user nobody.
 *
 * log_path belongs to nobody (0755, so nobody may rename what we make in
 * it).  mkdir() and mkdirat() are interposed here: right after the
 * library has made its session directory, the attacker renames it away and
 * puts in its place either a symbolic link to a root-only directory, or a
 * directory of its own whose channel files are links to root-only 0600
 * files.  The recorder must never write through them: the root-only files
 * keep their exact contents and nothing appears beside them, and the
 * session goes to a directory the recorder made and owns (or init fails,
 * saying why, when every attempt is raced).  A log_path of another user
 * that its group may write (no sticky bit) is refused, naming it and the
 * fix.
 */
#include "fl_log.h"
#include "gpufl.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_tmp[256], g_base[300], g_secret[300];
static uid_t g_nobody_uid;
static gid_t g_nobody_gid;

enum { SWAP_NONE, SWAP_LINK, SWAP_OWN_DIR };
static _Atomic int g_swap_mode;
static _Atomic int g_swaps_left, g_swaps_done;

static const char *const chans[] = {"device", "scope", "system"};
static const char secret_text[] = "root only\n";

/* The attacker: as nobody, moves the directory just made (base/name) away
 * and puts its own thing in its place. */
static void attack(const char *name)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(g_nobody_gid) != 0 || setuid(g_nobody_uid) != 0)
            _exit(10);
        char path[700], moved[760];
        snprintf(path, sizeof path, "%s/%s", g_base, name);
        snprintf(moved, sizeof moved, "%s/moved-%s", g_base, name);
        if (rename(path, moved) != 0)
            _exit(11);
        if (atomic_load(&g_swap_mode) == SWAP_LINK) {
            if (symlink(g_secret, path) != 0)
                _exit(12);
            _exit(0);
        }
        if (mkdir(path, 0777) != 0)
            _exit(13);
        for (int c = 0; c < 3; c++) {
            char link[800], target[800];
            snprintf(link, sizeof link, "%s/%s.log", path, chans[c]);
            snprintf(target, sizeof target, "%s/%s.log", g_secret, chans[c]);
            if (symlink(target, link) != 0)
                _exit(14);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    atomic_fetch_add(&g_swaps_done, 1);
}

/* A session directory's name: a 36-character UUID. */
static bool is_uuid(const char *name)
{
    return strlen(name) == 36 && name[8] == '-' && name[13] == '-' && !strchr(name, '/');
}

static void maybe_attack(const char *name)
{
    if (atomic_load(&g_swap_mode) == SWAP_NONE || !is_uuid(name))
        return;
    if (atomic_fetch_sub(&g_swaps_left, 1) <= 0)
        return;
    attack(name);
}

/* The library's mkdir (by path) and mkdirat (under a descriptor) land
 * here: the directory is made, then raced. */
int mkdir(const char *path, mode_t mode)
{
    int r = (int)syscall(SYS_mkdir, path, mode);
    size_t n = strlen(g_base);
    if (r == 0 && n && strncmp(path, g_base, n) == 0 && path[n] == '/')
        maybe_attack(path + n + 1);
    return r;
}

int mkdirat(int dirfd, const char *name, mode_t mode)
{
    int r = (int)syscall(SYS_mkdirat, dirfd, name, mode);
    if (r == 0)
        maybe_attack(name);
    return r;
}

/* ------------------------------------------------------------- checks */

static void write_secret(void)
{
    CHECK_INT(mkdir(g_secret, 0700), 0);
    for (int c = 0; c < 3; c++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s.log", g_secret, chans[c]);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        CHECK(fd >= 0);
        CHECK_INT(write(fd, secret_text, sizeof secret_text - 1), sizeof secret_text - 1);
        close(fd);
    }
}

/* The root-only files hold exactly what they held; nothing was added. */
static void check_secret_untouched(void)
{
    for (int c = 0; c < 3; c++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s.log", g_secret, chans[c]);
        char *text = check_read_file(path, NULL);
        CHECK_STR(text, secret_text);
        free(text);
    }
    int entries = 0;
    DIR *d = opendir(g_secret);
    struct dirent *e;
    while (d && (e = readdir(d)))
        entries += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK_INT(entries, 3);
}

/* The session went to a directory of ours, whole. */
static void check_session(const char *dir)
{
    struct stat st;
    CHECK_INT(lstat(dir, &st), 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK_INT(st.st_uid, geteuid());
    for (int c = 0; c < 3; c++) {
        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, chans[c]), 0);
        CHECK_INT(log.bad, 0);
        CHECK(log.n >= 3);
        CHECK_INT(fl_count(&log, "shutdown"), 1);
        fl_log_free(&log);
    }
}

static void raced_session(int mode, int swaps)
{
    atomic_store(&g_swap_mode, mode);
    atomic_store(&g_swaps_left, swaps);
    atomic_store(&g_swaps_done, 0);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.log_path = g_base;
    gpufl_error err;
    gpufl_status st = gpufl_init(&o, &err);
    atomic_store(&g_swap_mode, SWAP_NONE);
    if (swaps < 4) {
        CHECK_INT(st, GPUFL_OK);
        CHECK_INT(atomic_load(&g_swaps_done), swaps);
        char dir[600];
        gpufl_session_dir(dir, sizeof dir);
        GPUFL_SCOPE("work") {}
        gpufl_shutdown();
        check_session(dir);
    } else {
        CHECK_INT(st, GPUFL_ERR_IO);
        CHECK_CONTAINS(err.message, g_base);
        CHECK_CONTAINS(err.message, "replaced before they could be opened");
    }
    check_secret_untouched();
}

static void test_group_writable_base(void)
{
    char base[400];
    snprintf(base, sizeof base, "%s/team", g_tmp);
    CHECK_INT(mkdir(base, 0775), 0);
    CHECK_INT(chmod(base, 0775), 0);
    CHECK_INT(chown(base, g_nobody_uid, g_nobody_gid), 0);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.log_path = base;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_IO);
    CHECK_CONTAINS(err.message, base);
    CHECK_CONTAINS(err.message, "is writable by its group, without the sticky bit");
    CHECK_CONTAINS(err.message, "chmod +t");
    CHECK(!gpufl_is_active());
    /* Only its owner may write it: the recorder's own checks suffice. */
    CHECK_INT(chmod(base, 0755), 0);
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    gpufl_shutdown();
}

int main(void)
{
    if (geteuid() != 0) {
        printf("test_gpufl_symlink: skipped: needs root, to race the recorder as user nobody\n");
        return 77;
    }
    unsetenv("GPUFL_CONFIG_FILE");
    unsetenv("GPUFL_DISABLED");
    struct passwd *pw = getpwnam("nobody");
    g_nobody_uid = pw ? pw->pw_uid : 65534;
    g_nobody_gid = pw ? pw->pw_gid : 65534;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gpufl_symlink_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    CHECK_INT(chmod(g_tmp, 0755), 0); /* nobody must reach log_path */
    snprintf(g_secret, sizeof g_secret, "%s/secret", g_tmp);
    snprintf(g_base, sizeof g_base, "%s/logs", g_tmp);
    write_secret();
    CHECK_INT(mkdir(g_base, 0755), 0);
    CHECK_INT(chown(g_base, g_nobody_uid, g_nobody_gid), 0);

    raced_session(SWAP_LINK, 1);    /* a link to a root-only directory */
    raced_session(SWAP_OWN_DIR, 1); /* nobody's directory of links to root-only files */
    raced_session(SWAP_LINK, 4);    /* every attempt raced: init fails */
    test_group_writable_base();
    fl_rmtree(g_tmp);
    return check_done("test_gpufl_symlink");
}
