/*
 * test_thread.c - util/thread.h: a thread started by gp_thread_start
 * blocks every signal the program may send (so none of the program's
 * reaches it), whatever the starting thread's mask, which is left as it
 * was.
 */
#include "check.h"
#include "util/thread.h"

#include <signal.h>

static void *read_mask(void *arg)
{
    pthread_sigmask(SIG_BLOCK, NULL, (sigset_t *)arg);
    return NULL;
}

int main(void)
{
    sigset_t none, mine, seen;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    pthread_t th;
    sigemptyset(&seen);
    CHECK_INT(gp_thread_start(&th, read_mask, &seen), 0);
    CHECK_INT(pthread_join(th, NULL), 0);
    static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGUSR1, SIGUSR2,
                               SIGCHLD, SIGALRM, SIGPIPE, SIGWINCH};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        CHECK_INT(sigismember(&seen, sigs[i]), 1);
    CHECK_INT(sigismember(&seen, SIGRTMIN), 1);
    pthread_sigmask(SIG_BLOCK, NULL, &mine);
    CHECK_INT(sigismember(&mine, SIGINT), 0);
    CHECK_INT(sigismember(&mine, SIGUSR1), 0);
    return check_done("test_thread");
}
