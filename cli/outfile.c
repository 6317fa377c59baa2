/*
 * outfile.c - `-o FILE` of `report` and `export`: FILE appears whole or not
 * at all.
 *
 * Promises: the output goes to a temporary file beside FILE
 * (FILE.gpu-profile-XXXXXX, in FILE's directory, so the rename stays on
 * one file system), renamed over FILE once complete, with FILE's mode when
 * it existed, else 0666 less the umask like any new file; a FILE that is
 * a symbolic link is replaced through it (the link stays).  A failure
 * leaves FILE as it was and removes the temporary file; so does SIGINT,
 * SIGTERM, SIGHUP or SIGQUIT meanwhile: a handler removes the temporary
 * file, then the signal ends the process by its default action, as it
 * would have without us (a signal ignored when the command started stays
 * ignored).  A FILE that exists and is not a regular file (/dev/stdout, a
 * FIFO, /dev/full) is written directly.  No printing here.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t g_armed;
static char g_tmp[CLI_OUTFILE_PATH_MAX + 32];
static const int g_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void on_signal(int sig)
{
    if (g_armed)
        unlink(g_tmp);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig); /* blocked in the handler: delivered, by default, as it returns */
}

static void install_handlers(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(g_sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigfillset(&sa.sa_mask);
        sigaction(g_sigs[i], &sa, NULL);
        sigaddset(set, g_sigs[i]);
    }
}

static mode_t new_file_mode(void)
{
    mode_t m = umask(0);
    umask(m);
    return 0666 & ~m;
}

int cli_outfile_open(cli_outfile *o, const char *path, char *msg, size_t msg_len)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        o->direct = 1;
        o->f = fopen(path, "we");
        if (!o->f)
            snprintf(msg, msg_len, "cannot open '%s': %s", path, strerror(errno));
        return o->f ? 0 : -1;
    }
    /* Through a symbolic link: the file it names is replaced, not the link. */
    char real[PATH_MAX];
    const char *target = exists && realpath(path, real) ? real : path;
    if (strlen(target) > CLI_OUTFILE_PATH_MAX) {
        snprintf(msg, msg_len, "cannot create '%s': %s", path, strerror(ENAMETOOLONG));
        return -1;
    }
    snprintf(o->target, sizeof o->target, "%s", target);
    sigset_t sigs, old;
    install_handlers(&sigs);
    /* Armed with the name before the file exists, so no signal can leave
     * it behind. */
    sigprocmask(SIG_BLOCK, &sigs, &old);
    snprintf(g_tmp, sizeof g_tmp, "%s.gpu-profile-XXXXXX", o->target);
    int fd = mkostemp(g_tmp, O_CLOEXEC);
    int e = errno;
    if (fd >= 0) {
        g_armed = 1;
        fchmod(fd, exists ? (st.st_mode & 07777) : new_file_mode());
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        snprintf(msg, msg_len, "cannot create '%s': %s", path, strerror(e));
        return -1;
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        snprintf(msg, msg_len, "cannot create '%s': %s", path, strerror(errno));
        cli_outfile_abort(o);
        close(fd);
        return -1;
    }
    return 0;
}

void cli_outfile_abort(cli_outfile *o)
{
    if (o->f) {
        fclose(o->f);
        o->f = NULL;
    }
    if (!o->direct && g_armed) {
        unlink(g_tmp);
        g_armed = 0;
    }
}

const char *cli_outfile_tmp(const cli_outfile *o)
{
    return o->direct || !g_armed ? NULL : g_tmp;
}

int cli_outfile_commit(cli_outfile *o, char *msg, size_t msg_len)
{
    errno = 0;
    int bad = !o->f || fflush(o->f) != 0 || ferror(o->f);
    int e = errno;
    if (o->f && fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (!bad && !o->direct && rename(g_tmp, o->target) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        snprintf(msg, msg_len, "cannot write '%s': %s", o->path, strerror(e ? e : EIO));
        cli_outfile_abort(o);
        return -1;
    }
    g_armed = 0;
    return 0;
}
