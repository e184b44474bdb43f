/*
 * awake.h - a worker's keep-awake thread (the worker's keep_awake_us, README "Configuration").
 * While a call is in the worker, and for keep_awake_us after the last one left, one SCHED_IDLE
 * thread spins, so that the vCPU it runs on does not halt and the next hand-off to a thread
 * there is not a wake-up through the hypervisor (docs/PERFORMANCE.md, "Keeping a vCPU
 * awake"). SCHED_IDLE: it runs only where nothing else wants the CPU. Idle, it sleeps on a
 * futex and costs nothing. Worth it where the worker's host has cores to spare; where workers,
 * ranks and their threads outnumber the cores it costs time.
 */
#ifndef A2A_WORKER_AWAKE_H
#define A2A_WORKER_AWAKE_H

#include <stdint.h>

typedef struct awake awake;

/* awake_start starts the thread with a linger of linger_us microseconds; *out is NULL (and
 * nothing runs) when linger_us <= 0. 0, or -1 when the thread could not start. */
int awake_start(awake **out, int64_t linger_us);
/* awake_enter: a call came into the worker; awake_leave: it left. Both take NULL. */
void awake_enter(awake *a);
void awake_leave(awake *a);
/* awake_stop stops and frees the thread; takes NULL. */
void awake_stop(awake *a);

#endif
