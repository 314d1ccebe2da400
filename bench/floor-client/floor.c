/* The floor: the least an HTTP/1.1 keep-alive client on epoll can spend per request.
 *
 * Not a load engine: one thread, one static URL, Content-Length framing only, no
 * statistics. It exists to answer one question with a measurement — how far below a
 * server's CPU per request can *any* client on this machine go? — so the engine's own
 * figures (bench/engine-vs-wrk, bench/static-headroom) can be read against what the
 * kernel leaves to a client, not only against wrk. Per request it makes the calls every
 * epoll client must: one send, one recv (a short read means drained: no EAGAIN read),
 * its share of epoll_wait; a body is discarded in the kernel (MSG_TRUNC) once past the
 * first read, as the engine does.
 *
 * Usage: floor -c CONNECTIONS -d SECONDS [-n MAX_REQUESTS] http://127.x.y.z:PORT/PATH
 * Prints one JSON line: {"requests_per_s", "requests": {"ok", "failed"}}.
 * Loopback only (127.0.0.0/8), bounded by -d and -n: this never loads another host. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd;
    int have;  /* bytes of a head (and what followed it) in buf */
    long rest; /* body bytes still to discard; 0: reading a head */
    int status_ok; /* the response being discarded was a 200 */
    char buf[16384];
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "floor: %s\n", what);
    exit(2);
}

static char req[512];
static int req_len;
static long ok, failed, max_requests;

/* A response ended: count it and ask again on the same connection (closed loop). */
static void answered(struct conn *c, int status_ok) {
    if (status_ok) ok++; else failed++;
    if (max_requests && ok + failed >= max_requests) return;
    if (send(c->fd, req, req_len, MSG_NOSIGNAL) != req_len) failed++;
}

/* Reads what is there; returns 0 when drained, -1 when the connection failed. */
static int readable(struct conn *c) {
    for (;;) {
        if (c->rest > 0) {
            ssize_t r = recv(c->fd, NULL, c->rest, MSG_TRUNC | MSG_DONTWAIT);
            if (r < 0 && errno == EAGAIN) return 0;
            if (r <= 0) return -1;
            c->rest -= r;
            if (c->rest == 0) answered(c, c->status_ok);
            continue;
        }
        ssize_t space = sizeof c->buf - c->have;
        ssize_t r = recv(c->fd, c->buf + c->have, space, MSG_DONTWAIT);
        if (r < 0 && errno == EAGAIN) return 0;
        if (r <= 0) return -1;
        c->have += r;
        for (;;) {
            char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
            if (!end) {
                if (c->have == sizeof c->buf) return -1; /* a head over 16 KB */
                break;
            }
            long head = end + 4 - c->buf, length = 0;
            char *cl = memmem(c->buf, head, "ontent-Length: ", 15);
            if (!cl) cl = memmem(c->buf, head, "ontent-length: ", 15);
            if (cl) length = atol(cl + 15);
            int status_ok = c->have > 12 && memcmp(c->buf + 9, "200", 3) == 0;
            long here = c->have - head < length ? c->have - head : length;
            memmove(c->buf, c->buf + head + here, c->have - head - here);
            c->have -= head + here;
            if (here < length) {
                c->rest = length - here;
                c->status_ok = status_ok;
                break;
            }
            answered(c, status_ok);
        }
        if (c->rest == 0 && r < space) return 0; /* a short read: the socket is drained */
    }
}

int main(int argc, char **argv) {
    int conns = 0;
    double secs = 0;
    const char *url = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c") && i + 1 < argc) conns = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc) secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) max_requests = atol(argv[++i]);
        else if (argv[i][0] != '-' && !url) url = argv[i];
        else die("usage: floor -c CONNECTIONS -d SECONDS [-n MAX] http://127.x.y.z:PORT/PATH");
    }
    char host[64], path[256];
    int port;
    if (!url || conns < 1 || secs <= 0 || secs > 3600) die("-c, -d (at most 3600 s) and a URL are required");
    if (sscanf(url, "http://%63[0-9.]:%d%255s", host, &port, path) != 3) die("the URL is http://IPV4:PORT/PATH");
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) die("bad address");
    if ((ntohl(addr.sin_addr.s_addr) >> 24) != 127) die("loopback (127.0.0.0/8) only");
    req_len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", path, host, port);

    int ep = epoll_create1(0);
    struct conn *cs = calloc(conns, sizeof *cs);
    if (ep < 0 || !cs) die("out of resources");
    for (int i = 0; i < conns; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) die("cannot connect");
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(fd, F_SETFL, O_NONBLOCK);
        cs[i].fd = fd;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = &cs[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        send(fd, req, req_len, MSG_NOSIGNAL);
    }
    struct epoll_event events[256];
    double start = now(), end = start + secs;
    while (now() < end && !(max_requests && ok + failed >= max_requests)) {
        int n = epoll_wait(ep, events, 256, 100);
        for (int k = 0; k < n; k++) {
            struct conn *c = events[k].data.ptr;
            if (c->fd >= 0 && readable(c) < 0) {
                failed++; /* closed or reset: that connection is done */
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
            }
        }
    }
    double elapsed = now() - start;
    printf("{\"requests_per_s\": %.1f, \"requests\": {\"ok\": %ld, \"failed\": %ld}}\n", ok / elapsed, ok, failed);
    return 0;
}
