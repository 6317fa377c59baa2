/*
 * recorder/session.h - what the session offers the other subsystems
 * beyond gpufl.h (session.c): the report finds this process's session
 * through it.  The writer's own calls (the kick, the tests' hold) are in
 * writer.h.
 */
#ifndef GP_RECORDER_SESSION_H
#define GP_RECORDER_SESSION_H

#include <stdbool.h>
#include <stddef.h>

/* The directory of this process's session: the active one (flushed
 * first; *live true) or the last one shut down; false (and "") when
 * there was none. */
bool fl_session_report_dir(char *buf, size_t cap, bool *live);

#endif /* GP_RECORDER_SESSION_H */
