/*
 * recorder/session.h - the session's own entry points beyond gpufl.h
 * (session.c), for the recorder's other modules and the tests.
 */
#ifndef GP_RECORDER_SESSION_H
#define GP_RECORDER_SESSION_H

#include <stdbool.h>
#include <stddef.h>

/* A random RFC 4122 version 4 UUID, lower-case, 36 characters + NUL. */
void fl_uuid4(char out[37]);

/* Tests only: while held, the writer thread writes nothing (so a ring can
 * be filled deterministically). */
void fl_session_hold_writer(bool hold);

/* Asks the writer thread to run a cycle soon (any thread; cheap). */
void fl_session_kick(void);

/* The directory of this process's session: the active one (flushed
 * first; *live true) or the last one shut down; false (and "") when
 * there was none. */
bool fl_session_report_dir(char *buf, size_t cap, bool *live);

#endif /* GP_RECORDER_SESSION_H */
