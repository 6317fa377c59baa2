/*
 * serve_http.h - what the tests of `gpu-profile serve` share: a loopback
 * HTTP client (a request, the whole answer until the server closes, its
 * status), the port serve announced on stderr, and the exposition's lines
 * by metric and label prefix (exact value, or none at all).
 */
#ifndef GP_TEST_SERVE_HTTP_H
#define GP_TEST_SERVE_HTTP_H

#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

/* A connection to 127.0.0.1:port, or -1. */
static inline int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Sends req and reads the answer until the server closes (at most
 * limit_ms): its status (0: none), the whole answer into out. */
static inline int exchange(int port, const char *req, size_t req_len, char *out, size_t cap,
                           int limit_ms)
{
    out[0] = '\0';
    int fd = dial(port);
    if (fd < 0)
        return 0;
    size_t sent = 0;
    while (sent < req_len) {
        ssize_t w = send(fd, req + sent, req_len - sent, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        sent += (size_t)w;
    }
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got + 1 < cap && poll(&p, 1, limit_ms) > 0) {
        ssize_t r = recv(fd, out + got, cap - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    out[got] = '\0';
    close(fd);
    int status = 0;
    if (sscanf(out, "HTTP/1.%*d %d", &status) != 1)
        status = 0;
    return status;
}

static inline int get(int port, const char *method, const char *path, char *out, size_t cap)
{
    char req[256];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     method, path);
    return exchange(port, req, (size_t)n, out, cap, 5000);
}

static inline const char *body_of(const char *answer)
{
    const char *b = strstr(answer, "\r\n\r\n");
    return b ? b + 4 : "";
}

static inline int read_port(const void *err_path)
{
    FILE *f = fopen(err_path, "r");
    if (!f)
        return 0;
    char line[512];
    int port = 0;
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "http://127.0.0.1:");
        if (at)
            port = atoi(at + strlen("http://127.0.0.1:"));
    }
    fclose(f);
    return port;
}

static inline int cond_port(const void *err_path)
{
    return read_port(err_path) > 0;
}

static inline void expect(const char *body, const char *metric, const char *lbl, const char *value)
{
    char want[512];
    snprintf(want, sizeof want, "%s%s", metric, lbl);
    const char *at = strstr(body, want);
    CHECK(at != NULL);
    if (!at) {
        fprintf(stderr, "  missing: %s ... %s\n", want, value);
        return;
    }
    const char *end = strchr(at, '\n');
    const char *sp = end ? end : at + strlen(at);
    while (sp > at && sp[-1] != ' ')
        sp--;
    char v[64];
    snprintf(v, sizeof v, "%.*s", (int)((end ? end : sp + strlen(sp)) - sp), sp);
    CHECK_STR(v, value);
}

static inline void absent(const char *body, const char *metric, const char *lbl)
{
    char want[512];
    snprintf(want, sizeof want, "%s%s", metric, lbl);
    CHECK(strstr(body, want) == NULL);
}

#endif /* GP_TEST_SERVE_HTTP_H */
