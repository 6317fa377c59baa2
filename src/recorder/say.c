/*
 * recorder/say.c - the recorder's messages: whole lines, so that lines
 * from concurrent threads never interleave, through the user's log_fn or
 * stderr by design (the library never prints otherwise).
 */
#include "say.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fl_say(const fl_config *cfg, const char *fmt, ...)
{
    char line[1200];
    int k = snprintf(line, sizeof line, "[gpufl] ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
    va_end(ap);
    if (cfg->log_fn) {
        cfg->log_fn(line, cfg->log_user);
    } else {
        /* One fputs of the whole line so concurrent lines do not interleave. */
        size_t n = strlen(line);
        if (n + 1 < sizeof line) {
            line[n] = '\n';
            line[n + 1] = '\0';
        }
        fputs(line, stderr);
    }
}
