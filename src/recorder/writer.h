/*
 * recorder/writer.h - the session's files and the writer thread, and the
 * queues that the sampler thread and the API fill for it (writer.c).
 *
 * Locking: the lock they share (g_mu) and its condition variables are
 * static in writer.c, and every critical section on them is one of the
 * functions below, so the whole of g_mu's use reads in one file.  g_mu is
 * always the inner lock: session.c calls these with its g_life held,
 * writer.c never calls back into session.c, and nothing called under g_mu
 * takes another of the recorder's locks.
 */
#ifndef GP_RECORDER_WRITER_H
#define GP_RECORDER_WRITER_H

#include "session_state.h"
#include "gpufl.h"

#include <stdbool.h>

/* Asks the writer thread to run a cycle soon (any thread; cheap). */
void fl_session_kick(void);

/* Tests only: while held, the writer thread writes nothing (so a ring can
 * be filled deterministically). */
void fl_session_hold_writer(bool hold);

/* A new session, before anything can fail: no file open yet, the
 * condition variables made (once per process, on the monotonic clock). */
void fl_writer_init(session *s);

/* Writes one of the session's channel buffers (b: &s->out[ch]) to its
 * file now and empties it: what the Trace engine's writer calls when a
 * drain has made a buffer large.  The thread that runs the cycle only
 * (the writer thread, or shutdown once it has stopped); user: the
 * session. */
void fl_writer_spill(void *user, fl_buf *b);

/* Writes every channel buffer to its file (what cannot be written is
 * counted in s->loss, files.h).  Only with the writer thread not running. */
void fl_writer_write_all(session *s);

/* Starts the sampler with the session's round hook (when the session
 * samples) and waits, briefly, for its first round. */
gpufl_status fl_writer_start_sampler(session *s, gpufl_error *err);

/* Copies the devices' failures (s->n_dev entries) into out. */
void fl_writer_failures(session *s, fl_device_failure *out);

/* The sampler's newest host reading. */
fl_host_sample fl_writer_host_latest(session *s);

/* Appends js to every channel buffer (and keeps its line for a file made
 * again, files.h); js->devices are the live samples that the sampler
 * thread updates. */
void fl_writer_put_job_start(session *s, const fl_job_start *js);

/* Opens the scope rings for the session and starts the writer thread. */
gpufl_status fl_writer_start(session *s, gpufl_error *err);

/* Stops the writer thread after one last cycle and closes the scope rings. */
void fl_writer_stop(session *s);

/* One cycle: everything recorded so far, formatted and written.  The
 * writer thread's, and shutdown's last one once that thread has stopped. */
void fl_writer_cycle(session *s);

/* Waits (2 s at most) for a writer cycle begun after this call. */
void fl_writer_flush(session *s);

/* Counts a system phase in or out of the sampling gate and queues its
 * system_start / system_stop line with the newest samples. */
void fl_writer_queue_phase(session *s, const char *name, bool start);

/* Queues a dictionary_update of one entry (id: name) for the device
 * channel, written before the next drain's kernel rows (any thread;
 * op_dict's names from gpufl_push_external_op). */
void fl_writer_queue_dict(session *s, fl_dict dict, uint64_t id, const char *name);
/* In a fork()'s child: a usable lock, no open phase. */
void fl_writer_after_fork_child(void);

/* Closes the files and frees the buffers and queues. */
void fl_writer_free(session *s);

#endif /* GP_RECORDER_WRITER_H */
