/*
 * util/thread.c - a thread of ours starts with every signal blocked, so
 * that the program's signals reach only its own threads (a handler of
 * theirs never runs on ours, a sigwait of theirs never loses one to us).
 */
#include "thread.h"

#include <signal.h>

int gp_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
    /* The new thread inherits the mask it is created under. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(th, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
