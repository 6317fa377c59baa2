/* util/thread.h - the start of the library's own threads (thread.c): each
 * takes none of the program's signals, whichever thread starts it. */
#ifndef GP_UTIL_THREAD_H
#define GP_UTIL_THREAD_H

#include <pthread.h>

/* pthread_create(th, NULL, fn, arg) with every signal blocked in the new
 * thread (the caller's mask is as it was on return): pthread_create's
 * status. */
int gp_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

#endif /* GP_UTIL_THREAD_H */
