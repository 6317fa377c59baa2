/*
 * upload/http.c - POSTs through libcurl's easy interface, loaded with
 * dlopen at the first upload (http.h).  The few option numbers and
 * prototypes used are libcurl's stable ABI (curl/curl.h, unchanged since
 * 7.x), spelled here so that building needs no libcurl headers.
 */
#include "http.h"
#include "../util/error.h"
#include "../util/fs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libcurl's ABI (curl/curl.h): option and info numbers, result codes. */
enum {
    UP_CURLOPT_WRITEDATA = 10001,
    UP_CURLOPT_URL = 10002,
    UP_CURLOPT_ERRORBUFFER = 10010,
    UP_CURLOPT_POSTFIELDS = 10015,
    UP_CURLOPT_HTTPHEADER = 10023,
    UP_CURLOPT_WRITEFUNCTION = 20011,
    UP_CURLOPT_POST = 47,
    UP_CURLOPT_FOLLOWLOCATION = 52,
    UP_CURLOPT_SSL_VERIFYPEER = 64,
    UP_CURLOPT_SSL_VERIFYHOST = 81,
    UP_CURLOPT_NOSIGNAL = 99,
    UP_CURLOPT_TIMEOUT_MS = 155,
    UP_CURLOPT_CONNECTTIMEOUT_MS = 156,
    UP_CURLOPT_PROTOCOLS = 181,
    UP_CURLOPT_REDIR_PROTOCOLS = 182,
    UP_CURLOPT_POSTFIELDSIZE_LARGE = 30120,
    UP_CURLINFO_RESPONSE_CODE = 0x200002,
    UP_CURLPROTO_HTTP_S = 3, /* CURLPROTO_HTTP | CURLPROTO_HTTPS */
    UP_CURL_GLOBAL_DEFAULT = 3,
    UP_CURL_ERROR_SIZE = 256,
    UP_CURLE_COULDNT_CONNECT = 7,
    UP_CURLE_PARTIAL_FILE = 18,
    UP_CURLE_OPERATION_TIMEDOUT = 28,
    UP_CURLE_SSL_CONNECT_ERROR = 35,
    UP_CURLE_GOT_NOTHING = 52,
    UP_CURLE_SEND_ERROR = 55,
    UP_CURLE_RECV_ERROR = 56,
    UP_CURLE_PEER_FAILED_VERIFICATION = 60,
    UP_CURLE_SSL_CACERT_BADFILE = 77,
};

struct up_slist;
static struct {
    int (*global_init)(long flags);
    void *(*easy_init)(void);
    int (*easy_setopt)(void *curl, int option, ...);
    int (*easy_perform)(void *curl);
    int (*easy_getinfo)(void *curl, int info, ...);
    void (*easy_cleanup)(void *curl);
    const char *(*easy_strerror)(int code);
    struct up_slist *(*slist_append)(struct up_slist *l, const char *s);
    void (*slist_free_all)(struct up_slist *l);
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_why[512];

/* GPUFL_CURL_LIBRARY names another file to load: the tests' way to see
 * the "libcurl absent" path on a machine that has it. */
static void load(void)
{
#define SYM(m) GP_DL_SYM("curl_", curl, m)
    const gp_dl_sym syms[] = {SYM(global_init),   SYM(easy_init),    SYM(easy_setopt),
                              SYM(easy_perform),  SYM(easy_getinfo), SYM(easy_cleanup),
                              SYM(easy_strerror), SYM(slist_append), SYM(slist_free_all)};
#undef SYM
    const char *name, *e, *missing;
    if (!gp_dl_load("GPUFL_CURL_LIBRARY", "libcurl.so.4", syms, sizeof syms / sizeof syms[0], &name,
                    &e, &missing)) {
        if (e)
            snprintf(load_why, sizeof load_why,
                     "libcurl (%s) could not be loaded (%s): uploading needs it; install it "
                     "(Debian/Ubuntu: apt-get install libcurl4)",
                     name, e);
        else
            snprintf(load_why, sizeof load_why,
                     "%s has no %s: it is not libcurl 7 or later; install libcurl4 "
                     "(Debian/Ubuntu: apt-get install libcurl4)",
                     name, missing);
        return;
    }
    /* Once, before any other call: curl_global_init is not thread-safe
     * in older libcurl; pthread_once makes this the only call. */
    if (curl.global_init(UP_CURL_GLOBAL_DEFAULT) != 0) {
        snprintf(load_why, sizeof load_why, "libcurl (%s) failed to initialise", name);
        return;
    }
    loaded = true;
}

gp_status up_http_load(gp_error *err)
{
    pthread_once(&load_once, load);
    return loaded ? GP_OK : gp_error_set(err, GP_ERR_NOT_SUPPORTED, "%s", load_why);
}

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    up_reply *r = user;
    size_t len = size * n;
    size_t room = sizeof r->body - 1 - r->body_len;
    size_t take = len < room ? len : room;
    memcpy(r->body + r->body_len, data, take);
    r->body_len += take;
    r->body[r->body_len] = '\0';
    return len; /* the rest is read and dropped: only the summary matters */
}

static void classify(up_reply *r, int code, const char *ebuf)
{
    snprintf(r->transport, sizeof r->transport, "%s%s%s", curl.easy_strerror(code),
             *ebuf ? ": " : "", ebuf);
    r->timed_out = code == UP_CURLE_OPERATION_TIMEDOUT;
    r->tls = code == UP_CURLE_PEER_FAILED_VERIFICATION || code == UP_CURLE_SSL_CONNECT_ERROR ||
             code == UP_CURLE_SSL_CACERT_BADFILE;
    r->dropped = code == UP_CURLE_GOT_NOTHING || code == UP_CURLE_SEND_ERROR ||
                 code == UP_CURLE_RECV_ERROR || code == UP_CURLE_PARTIAL_FILE;
    r->refused = code == UP_CURLE_COULDNT_CONNECT;
}

void up_http_post(const char *url, const char *const *headers, size_t n, const void *body,
                  size_t len, long timeout_ms, long connect_timeout_ms, up_reply *r)
{
    memset(r, 0, sizeof *r);
    void *c = curl.easy_init();
    if (!c) {
        snprintf(r->transport, sizeof r->transport, "libcurl could not start a request");
        return;
    }
    struct up_slist *hl = NULL;
    for (size_t i = 0; i < n; i++) {
        struct up_slist *t = curl.slist_append(hl, headers[i]);
        if (!t) {
            snprintf(r->transport, sizeof r->transport, "out of memory for the headers");
            curl.slist_free_all(hl);
            curl.easy_cleanup(c);
            return;
        }
        hl = t;
    }
    char ebuf[UP_CURL_ERROR_SIZE] = "";
    long long size = (long long)len;
    curl.easy_setopt(c, UP_CURLOPT_URL, url);
    curl.easy_setopt(c, UP_CURLOPT_ERRORBUFFER, ebuf);
    curl.easy_setopt(c, UP_CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(c, UP_CURLOPT_PROTOCOLS, (long)UP_CURLPROTO_HTTP_S);
    curl.easy_setopt(c, UP_CURLOPT_REDIR_PROTOCOLS, (long)UP_CURLPROTO_HTTP_S);
    curl.easy_setopt(c, UP_CURLOPT_FOLLOWLOCATION, 0L);
    curl.easy_setopt(c, UP_CURLOPT_SSL_VERIFYPEER, 1L);
    curl.easy_setopt(c, UP_CURLOPT_SSL_VERIFYHOST, 2L);
    curl.easy_setopt(c, UP_CURLOPT_TIMEOUT_MS, timeout_ms);
    curl.easy_setopt(c, UP_CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    curl.easy_setopt(c, UP_CURLOPT_POST, 1L);
    curl.easy_setopt(c, UP_CURLOPT_POSTFIELDS, body ? (const char *)body : "");
    curl.easy_setopt(c, UP_CURLOPT_POSTFIELDSIZE_LARGE, size);
    curl.easy_setopt(c, UP_CURLOPT_HTTPHEADER, hl);
    curl.easy_setopt(c, UP_CURLOPT_WRITEFUNCTION, on_body);
    curl.easy_setopt(c, UP_CURLOPT_WRITEDATA, r);
    int code = curl.easy_perform(c);
    if (code == 0) {
        long st = 0;
        curl.easy_getinfo(c, UP_CURLINFO_RESPONSE_CODE, &st);
        r->status = st;
    } else {
        classify(r, code, ebuf);
    }
    curl.slist_free_all(hl);
    curl.easy_cleanup(c);
}
