/* What a timed sleep costs the task that sleeps (bench/wake-cost/run.sh).
 *
 * The other way a client can wait without being woken by its server: sleep on a timer,
 * then look at its sockets without blocking (as a NIC's interrupt moderation would
 * batch arrivals). On a VM each sleep programs the vCPU's timer and takes its
 * interrupt; this measures what that costs here. Pinned to core 1 by run.sh, timer
 * slack 1 ns (the default 50 µs would let every sleep run up to 50 µs longer). Printed
 * per asked sleep (5, 20 and 40 µs): the time one actually took, and the CPU it cost
 * (getrusage). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#define SLEEPS 20000

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double cpu_us(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 + r.ru_utime.tv_usec + r.ru_stime.tv_usec;
}

int main(void) {
    static const long asked_us[] = {5, 20, 40};
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
    for (unsigned i = 0; i < sizeof asked_us / sizeof asked_us[0]; i++) {
        struct timespec d = {0, asked_us[i] * 1000};
        double wall0 = now_us(), cpu0 = cpu_us();
        for (int k = 0; k < SLEEPS; k++) nanosleep(&d, NULL);
        printf("  sleep %2ld us: took %5.1f us, cost %5.2f us of CPU\n", asked_us[i],
               (now_us() - wall0) / SLEEPS, (cpu_us() - cpu0) / SLEEPS);
    }
    return 0;
}
