/*
 * recorder/say.h - the recorder's messages to the user (say.c): the one
 * way the library speaks, so warnings and debug lines all go through the
 * user's log_fn when one is set.
 */
#ifndef GP_RECORDER_SAY_H
#define GP_RECORDER_SAY_H

#include "config.h"

/* One "[gpufl] " line to cfg->log_fn, else to stderr in one fputs. */
void fl_say(const fl_config *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* fl_say, only when the session's options ask for debug output. */
#define FL_DEBUG(s, ...)                                                                           \
    do {                                                                                           \
        if ((s)->cfg.enable_debug_output)                                                          \
            fl_say(&(s)->cfg, __VA_ARGS__);                                                        \
    } while (0)

#endif /* GP_RECORDER_SAY_H */
