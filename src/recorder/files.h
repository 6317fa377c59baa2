/*
 * recorder/files.h - the session's files (files.c): the directory made and
 * opened so that no other user can make us write through a link of
 * theirs, and writes that never tear a line and account for every line a
 * full disk, an I/O error or a removed file cost.
 */
#ifndef GP_RECORDER_FILES_H
#define GP_RECORDER_FILES_H

#include "session_state.h"
#include "gpufl.h"

#include <stddef.h>

/* Dictionary lines that a failed write lost are kept (at most this many
 * bytes per channel) and written first by the next write that succeeds. */
#define FL_REDO_MAX (1u << 20)

/* A random RFC 4122 version 4 UUID, lower-case, 36 characters + NUL. */
void fl_uuid4(char out[37]);

/* Before anything can fail: no file open yet. */
void fl_files_init(session *s);

/* Creates <log_path> (mkdir -p), refuses it when another user could
 * replace what we create in it, then makes <log_path>/<uuid>/ (a fresh
 * directory: a new uuid when one exists) and its channel files (new files,
 * never through a link), all kept above descriptor 2. */
gpufl_status fl_files_open(session *s, gpufl_error *err);

/* The sass channel's file too (the disassembler runs), from then on
 * written like the others. */
gpufl_status fl_files_open_sass(session *s, gpufl_error *err);

/* Writes b (whole lines) to channel ch's file and empties it.  A short
 * write is continued and a failed one tried once more; what still cannot
 * be written is lost whole lines only (a cut line is removed, or ended
 * before the next one), counted in s->loss by type and rows.  A file
 * removed since the last write is noticed: said once, made again in its
 * place with job_start and capture_capabilities, and later lines for it
 * are counted, not written (s->closing lets the closing records through). */
void fl_files_write(session *s, int ch, fl_buf *b);

/* Whether windows are published (rotate_size or rotate_interval_ms):
 * <channel>.<N>.log.gz with sidecars instead of one <channel>.log. */
bool fl_files_rotating(const session *s);

/* The windows open rotate_interval_ms published, the quiet channels'
 * too (the writer's every cycle). */
void fl_files_tick(session *s);

/* Closes every descriptor; after the closing records (s->closing) with
 * rotation on, every active window is published first. */
void fl_files_close(session *s);

#endif /* GP_RECORDER_FILES_H */
