/*
 * fake_lib.c - a shared library that does its work in its constructor, as
 * a rogue library put where a plugin path points would: loading it at all
 * is what the tests look for (built as libfake_lib.so, never a plugin:
 * it exports no symbol of ours).  Environment:
 *
 *   FAKE_LIB_MARKER    file to which "loaded PID" is appended on load
 *   FAKE_LIB_SLEEP_MS  then sleeps this long (a slow load: the process is
 *                      busy in dlopen while a test sends it a signal)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((constructor)) static void fake_lib_load(void)
{
    const char *marker = getenv("FAKE_LIB_MARKER");
    if (marker && *marker) {
        int fd = open(marker, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            char line[64];
            int n = snprintf(line, sizeof line, "loaded %ld\n", (long)getpid());
            ssize_t w = write(fd, line, (size_t)n);
            (void)w;
            close(fd);
        }
    }
    const char *ms = getenv("FAKE_LIB_SLEEP_MS");
    long v = ms ? strtol(ms, NULL, 10) : 0;
    struct timespec t = {v / 1000, (v % 1000) * 1000000L};
    while (v > 0 && nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}
