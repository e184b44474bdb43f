/*
 * awake.c - the keep-awake thread (awake.h).
 *
 * The thread ("a2a-awake", SCHED_IDLE) spins with `pause` while a call is in the worker and
 * for linger_us after the last one left, then sleeps on busy's futex word until a call
 * enters. The enter/sleep race is Dekker's: awake_enter increments busy, then reads sleeping;
 * the thread sets sleeping, then futex_wait(&busy, 0) compares busy; with sequentially
 * consistent atomics one of them sees the other, so a call never finds it asleep for good.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "awake.h"
#include "common/log.h"

struct awake {
    atomic_int busy;     /* calls in the worker (the futex word), + 1 once stopping */
    atomic_int sleeping; /* the thread sleeps, or is about to, on busy */
    atomic_int stop;
    int64_t linger_ns;
    pthread_t thread;
};

static int64_t
now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void
futex_call(atomic_int *w, int op, int val)
{
    (void)syscall(SYS_futex, (int *)w, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static void *
awake_main(void *arg)
{
    awake *a = arg;
    struct sched_param sp = {.sched_priority = 0};
    int64_t last = now_ns();

    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
        log_warn("keep-awake: SCHED_IDLE refused: the thread spins at normal priority");
    while (!atomic_load(&a->stop)) {
        if (atomic_load(&a->busy) > 0) {
            last = now_ns();
        } else if (now_ns() - last >= a->linger_ns) {
            atomic_store(&a->sleeping, 1);
            if (atomic_load(&a->busy) == 0 && !atomic_load(&a->stop))
                futex_call(&a->busy, FUTEX_WAIT, 0);
            atomic_store(&a->sleeping, 0);
            last = now_ns();
            continue;
        }
        for (int i = 0; i < 64; i++)
            __builtin_ia32_pause();
    }
    return NULL;
}

int
awake_start(awake **out, int64_t linger_us)
{
    awake *a;

    *out = NULL;
    if (linger_us <= 0)
        return 0;
    if ((a = calloc(1, sizeof(*a))) == NULL)
        return -1;
    a->linger_ns = linger_us * 1000;
    if (pthread_create(&a->thread, NULL, awake_main, a) != 0) {
        free(a);
        return -1;
    }
    pthread_setname_np(a->thread, "a2a-awake");
    *out = a;
    return 0;
}

void
awake_enter(awake *a)
{
    if (a != NULL && atomic_fetch_add(&a->busy, 1) == 0 && atomic_load(&a->sleeping))
        futex_call(&a->busy, FUTEX_WAKE, 1);
}

void
awake_leave(awake *a)
{
    if (a != NULL)
        atomic_fetch_sub(&a->busy, 1);
}

void
awake_stop(awake *a)
{
    if (a == NULL)
        return;
    atomic_store(&a->stop, 1);
    atomic_fetch_add(&a->busy, 1); /* the futex word changes: a sleeping thread returns */
    futex_call(&a->busy, FUTEX_WAKE, 1);
    pthread_join(a->thread, NULL);
    free(a);
}
