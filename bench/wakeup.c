/*
 * wakeup.c - what one thread hand-off costs on this machine: a one-byte
 * ping-pong over two pipes between two threads, and between two processes,
 * each on whatever CPUs the scheduler picks. Run it under `taskset -c 0`
 * to see the same hand-offs on one CPU. bench/wakeup.sh does both.
 *
 *   wakeup [ROUNDS]   prints "threads: X us" and "processes: Y us" per round trip
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long rounds = 20000;

static double
now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* echo: read a byte from ping, write it to pong, rounds times. */
static void *
echo(void *arg)
{
    char c;
    (void)arg;
    for (long i = 0; i < rounds; i++)
        if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
            break;
    return NULL;
}

/* serve: write a byte to ping and wait for it on pong, rounds times; us per round trip. */
static double
serve(void)
{
    char c = 1;
    double t0 = now_us();
    for (long i = 0; i < rounds; i++)
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
            return -1;
    return (now_us() - t0) / (double)rounds;
}

int
main(int argc, char **argv)
{
    pthread_t t;
    pid_t pid;
    double us;

    if (argc > 1 && (rounds = strtol(argv[1], NULL, 10)) <= 0) {
        fprintf(stderr, "usage: wakeup [ROUNDS]\n");
        return 2;
    }
    if (pipe(ping) != 0 || pipe(pong) != 0) {
        perror("pipe");
        return 1;
    }
    if (pthread_create(&t, NULL, echo, NULL) != 0) {
        fprintf(stderr, "cannot start a thread\n");
        return 1;
    }
    us = serve();
    pthread_join(t, NULL);
    printf("threads:   %8.2f us per round trip (two hand-offs)\n", us);
    if ((pid = fork()) < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        echo(NULL);
        _exit(0);
    }
    us = serve();
    waitpid(pid, NULL, 0);
    printf("processes: %8.2f us per round trip (two hand-offs)\n", us);
    return 0;
}
