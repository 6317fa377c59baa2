/*
 * upload/http.h - one HTTP POST through libcurl, loaded with dlopen
 * (http.c): the library never links libcurl, so it loads and works where
 * libcurl is absent, and only an upload needs it.  TLS verification is on
 * (peer and host); redirects are not followed (the Authorization header
 * would go along); only http and https are spoken.
 */
#ifndef UP_HTTP_H
#define UP_HTTP_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>

/* Loads libcurl once (later calls give the first answer).  GP_OK, or
 * GP_ERR_NOT_SUPPORTED with err saying what failed and how to install it. */
gp_status up_http_load(gp_error *err);

/* One request's outcome: status > 0 when an HTTP answer came (body: its
 * first bytes, NUL-terminated); else transport says why (curl's words),
 * and timed_out / tls / dropped what kind of failure it was. */
typedef struct up_reply {
    long status;
    char body[4096];
    size_t body_len;
    char transport[512];
    bool timed_out, tls, dropped, refused;
} up_reply;

/* POSTs body (len bytes; NULL: empty) to url with the headers ("Name:
 * value" each, n of them).  Timeouts in milliseconds.  Fills *r. */
void up_http_post(const char *url, const char *const *headers, size_t n, const void *body,
                  size_t len, long timeout_ms, long connect_timeout_ms, up_reply *r);

#endif /* UP_HTTP_H */
