/*
 * upload/upload_int.h - what upload.c (the requests) and session.c (the
 * sessions on disk: their files, their contents, the cursor) share.
 */
#ifndef UP_UPLOAD_INT_H
#define UP_UPLOAD_INT_H

#include "gpufl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The cursor file in each session directory. */
#define UP_CURSOR_NAME ".gpufl-upload-cursor.json"

/* One channel file of a session, in sending order. */
typedef struct up_file {
    char *name; /* relative to the session directory: "device.log", ".tmp/scope.log" */
    char *path;
    int channel;   /* FL_CH_* */
    long window;   /* <channel>.<N>.log[.gz]: N; the plain file: LONG_MAX - 1; .tmp: LONG_MAX */
    bool gz;       /* sent as it is */
    uint64_t size; /* bytes on disk */
} up_file;

typedef struct up_session {
    char *dir;
    char *base; /* the directory's name */
    up_file *files;
    size_t n_files;
    bool has_tmp; /* files in GPUFlight's .tmp/: live or crashed */
} up_session;

/* The sessions at log_path (a session directory, or a log directory: its
 * session subdirectories, by name); want: only that session id (NULL: all).
 * GPUFL_ERR_IO naming log_path when none. */
gpufl_status up_find_sessions(const char *log_path, const char *want, up_session **out, size_t *n,
                              gpufl_error *err);
void up_sessions_free(up_session *v, size_t n);

/* One file's contents: body is what is sent (gzip), text the NDJSON. */
typedef struct up_content {
    unsigned char *body;
    size_t body_len;
    uint64_t text_len;
    uint64_t lines;
    char session_id[128]; /* of its first line that has one; "" if none */
    char hostname[256];   /* of its first line that has one; "" if none */
    bool ends_with_shutdown;
} up_content;

gpufl_status up_content_load(const up_file *f, up_content *c, gpufl_error *err);
void up_content_free(up_content *c);

/* Progress in a session directory's cursor file, for one backend: the
 * file keeps one entry per backend (its URL and API path, no user:password@
 * and never the key), so that sending to A says nothing of B. */
typedef struct up_cursor {
    char **files;
    uint64_t *bytes;
    size_t n, cap;
    bool complete;
    void *others; /* the file's other backends' entries (a json_t array), kept as read */
} up_cursor;

/* backend's entry of dir's cursor.  A missing cursor, or one without an
 * entry for backend, is an empty one; one that cannot be parsed is taken
 * as empty too (then everything is sent again), and says so in *note. */
void up_cursor_read(const char *dir, const char *backend, up_cursor *c, char *note, size_t cap);
bool up_cursor_has(const up_cursor *c, const char *file, uint64_t bytes);
bool up_cursor_add(up_cursor *c, const char *file, uint64_t bytes);
/* Written whole (a temporary file renamed), the other backends' entries
 * kept: GPUFL_ERR_IO naming it. */
gpufl_status up_cursor_write(const char *dir, const char *backend, const up_cursor *c,
                             gpufl_error *err);
void up_cursor_free(up_cursor *c);

#endif /* UP_UPLOAD_INT_H */
