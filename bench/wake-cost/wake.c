/* What one sleep and wake-up costs the task that sleeps (bench/wake-cost/run.sh).
 *
 * A writer thread on core 0 writes one byte to a pipe every GAP ns (it spins between,
 * so it never sleeps itself); the sleeper on core 1 waits in epoll_wait and reads it.
 * Printed: the sleeper's own CPU time (getrusage of its thread) per event, how many
 * events found it asleep (voluntary context switches), and the waker's time inside
 * write() (where the wake-up of a sleeping reader is sent). The same shape as a load engine
 * waiting for its next response while the server works on the other core. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];
static volatile int done;
static long events = 100000, gap_ns = 30000;

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static long write_ns;  /* the waker's time inside write(): the wake-up it sends */

static void *writer(void *arg) {
    (void)arg;
    pin(0);
    char c = 1;
    for (long i = 0; i < events; i++) {
        long until = now_ns() + gap_ns;
        while (now_ns() < until) {
        }
        long before = now_ns();
        if (write(pipe_fds[1], &c, 1) != 1) break;
        write_ns += now_ns() - before;
    }
    done = 1;
    if (write(pipe_fds[1], &c, 1) != 1) return NULL;  /* wake the sleeper a last time */
    return NULL;
}

static double cpu_us(const struct rusage *r) {
    return r->ru_utime.tv_sec * 1e6 + r->ru_utime.tv_usec + r->ru_stime.tv_sec * 1e6 + r->ru_stime.tv_usec;
}

int main(int argc, char **argv) {
    if (argc > 1) gap_ns = atol(argv[1]);
    if (pipe2(pipe_fds, O_NONBLOCK) != 0) return 1;
    pin(1);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
    epoll_ctl(ep, EPOLL_CTL_ADD, pipe_fds[0], &ev);
    pthread_t thread;
    struct rusage before, after;
    getrusage(RUSAGE_THREAD, &before);
    pthread_create(&thread, NULL, writer, NULL);
    char buf[4096];
    while (!done) {
        struct epoll_event got[8];
        if (epoll_wait(ep, got, 8, -1) > 0)
            while (read(pipe_fds[0], buf, sizeof buf) > 0) {
            }
    }
    getrusage(RUSAGE_THREAD, &after);
    pthread_join(thread, NULL);
    printf("gap %ld us: sleeper %.2f us of CPU per event, asleep at %.0f%% of them; waker %.2f us in write()\n",
           gap_ns / 1000, (cpu_us(&after) - cpu_us(&before)) / events,
           100.0 * (after.ru_nvcsw - before.ru_nvcsw) / events, write_ns / 1e3 / events);
    return 0;
}
