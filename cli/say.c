/*
 * say.c - the command's own messages: one line each on stderr (or the
 * report's stream), "gpu-profile: " first, written with one write.  Text
 * the message quotes - nvidia-smi's words inside a library message, a
 * path, CMD, a session's contents - reaches a terminal only as printable
 * text: every control character (bytes below 0x20, and 0x7F) is shown as
 * '?', so no escape sequence of another program is ever sent on by us.
 * Bytes from 0x80 (UTF-8) pass unchanged.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cli_clean_text(char *s)
{
    for (unsigned char *p = (unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            *p = '?';
}

static void vsay(FILE *f, const char *fmt, va_list ap)
{
    static const char prefix[] = "gpu-profile: ";
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return;
    size_t p = sizeof prefix - 1;
    char *line = malloc(p + (size_t)n + 2);
    if (!line) {
        fputs("gpu-profile: out of memory\n", f);
        return;
    }
    memcpy(line, prefix, p);
    vsnprintf(line + p, (size_t)n + 1, fmt, ap);
    cli_clean_text(line + p);
    line[p + (size_t)n] = '\n';
    fwrite(line, 1, p + (size_t)n + 1, f);
    fflush(f);
    free(line);
}

void cli_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(stderr, fmt, ap);
    va_end(ap);
}

void cli_fsay(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(f, fmt, ap);
    va_end(ap);
}

int cli_stdout_failed(const char *cmd)
{
    /* A reader that stopped reading (`| head`) is no error to report: the
     * end `cat` has when SIGPIPE is ignored, without its message. */
    if (errno != EPIPE)
        cli_say("%s: cannot write to stdout: %s", cmd, strerror(errno ? errno : EIO));
    return CLI_EXIT_FAIL;
}

void cli_pipe_default(void)
{
    /* The subcommands write to stdout for a pipe: a closed one ends them
     * as it ends cat, by SIGPIPE's default action (the shell's 141),
     * whatever disposition or mask the process was started with. */
    signal(SIGPIPE, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
}
