/*
 * sampler/backends/smi_proc.h - the nvidia-smi backend's child processes
 * (smi_proc.c), kept apart from what the backend asks them (smi.c).
 *
 * No call here blocks without a bound, and a child is only ever reaped by
 * its own pid, so a program's SIGCHLD handler or other children are left
 * alone.  Messages start with "smi: " like the rest of the backend's.
 */
#ifndef GP_SMI_PROC_H
#define GP_SMI_PROC_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The longest line the streaming reader keeps; a longer one is dropped. */
#define SMI_LINE_MAX 4096

/* One child process and the read end of its output pipe. */
typedef struct smi_child {
    pid_t pid;   /* 0: none */
    int fd;      /* -1: closed */
    bool reaped; /* waitpid has returned for pid (or it was reaped elsewhere) */
    bool status_known;
    int wstatus;
} smi_child;

/* Closes *fd if it is open and marks it closed. */
void gp_smi_close_fd(int *fd);

/*
 * Starts path with argv, stdin from /dev/null and stdout+stderr into a new
 * non-blocking pipe (ch->fd), with default dispositions for the signals
 * stop() sends and an empty signal mask.  An exec failure is an error here,
 * not a mysterious exit 127.
 */
gp_status gp_smi_child_spawn(const char *path, char *const argv[], smi_child *ch, gp_error *err);

/* Ends a child whatever state it is in: SIGTERM first when gently, then
 * SIGKILL; bounded by the grace and the kill wait. */
void gp_smi_child_end(smi_child *ch, bool gently);

/* For a child whose output ended: gives it wait_ns to exit, then ends it;
 * closes the pipe.  The exit status stays for gp_smi_child_describe_exit. */
void gp_smi_child_finish(smi_child *ch, uint64_t wait_ns);

/* "exit status N", "signal N", ... for messages. */
void gp_smi_child_describe_exit(const smi_child *ch, char *buf, size_t len);

/*
 * Runs path to completion within timeout_ns: *text_out (malloc'd,
 * NUL-terminated, at most 64 KiB kept) is everything it printed, and ch
 * holds its exit status.  A child that does not exit in time is killed and
 * the call fails with GP_ERR_TIMEOUT.
 */
gp_status gp_smi_run_once(const char *path, char *const argv[], uint64_t timeout_ns, smi_child *ch,
                          char **text_out, gp_error *err);

/* A streaming child's output, cut into lines. */
typedef struct smi_lines {
    char buf[SMI_LINE_MAX];
    size_t start, len; /* unconsumed bytes are buf[start, len) */
    bool discarding;   /* inside an over-long line */
    bool eof;
    uint64_t overlong; /* how many times an over-long line filled buf */
} smi_lines;

/* Empties the buffer and clears every flag and count. */
void gp_smi_lines_reset(smi_lines *l);

/* The next complete line, NUL-terminated in place (valid until the next
 * wait), or NULL when none is buffered.  The tail of an over-long line is
 * skipped here. */
char *gp_smi_lines_next(smi_lines *l);

/* The unfinished last line, NUL-terminated, or NULL (none, or the tail of
 * an over-long one). */
char *gp_smi_lines_rest(smi_lines *l);

typedef enum smi_wait {
    SMI_WAIT_DATA,        /* more output, or its end (l->eof), is in l */
    SMI_WAIT_TIMEOUT,     /* the deadline passed first */
    SMI_WAIT_WOKEN,       /* wake_fd became readable (not drained) */
    SMI_WAIT_POLL_FAILED, /* errno says why */
    SMI_WAIT_READ_FAILED  /* errno says why */
} smi_wait;

/* Waits until fd (non-blocking) has output, wake_fd is readable, or the
 * CLOCK_MONOTONIC deadline; reads what fd has into l. */
smi_wait gp_smi_lines_wait(smi_lines *l, int fd, int wake_fd, uint64_t deadline_mono_ns);

#endif /* GP_SMI_PROC_H */
