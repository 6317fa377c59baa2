/*
 * report/sqlite_api.c - libsqlite3 loaded with dlopen at the first SQLite
 * export (sqlite_api.h): once per process, its calls resolved all at once
 * or not at all.
 */
#include "sqlite_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static fl_sqlite_api api;
static bool loaded;
static char load_why[512];

static void load(void)
{
    const char *name = getenv("GPU_PROFILE_SQLITE_LIBRARY");
    if (!name || !*name)
        name = "libsqlite3.so.0";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_why, sizeof load_why,
                 "SQLite (%s) could not be loaded (%s): --format sqlite needs it; install it "
                 "(Debian/Ubuntu: apt-get install libsqlite3-0)",
                 name, e ? e : "not found");
        return;
    }
    static const char *const names[] = {
        "sqlite3_open_v2",    "sqlite3_close",       "sqlite3_exec",      "sqlite3_prepare_v2",
        "sqlite3_bind_int64", "sqlite3_bind_double", "sqlite3_bind_text", "sqlite3_bind_null",
        "sqlite3_step",       "sqlite3_reset",       "sqlite3_finalize",  "sqlite3_errmsg",
        "sqlite3_free"};
    void *fn[sizeof names / sizeof names[0]];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fn[i] = dlsym(h, names[i]);
        if (!fn[i]) {
            snprintf(load_why, sizeof load_why,
                     "SQLite (%s) has no %s: --format sqlite needs SQLite 3.7 or later "
                     "(Debian/Ubuntu: apt-get install libsqlite3-0)",
                     name, names[i]);
            dlclose(h);
            return;
        }
    }
    /* POSIX: a function pointer round-trips through void * (dlsym's own
     * contract); copied member by member in the order of names. */
    size_t i = 0;
#define TAKE(m) *(void **)&api.m = fn[i++]
    TAKE(open_v2);
    TAKE(close);
    TAKE(exec);
    TAKE(prepare_v2);
    TAKE(bind_int64);
    TAKE(bind_double);
    TAKE(bind_text);
    TAKE(bind_null);
    TAKE(step);
    TAKE(reset);
    TAKE(finalize);
    TAKE(errmsg);
    TAKE(free);
#undef TAKE
    loaded = true; /* the handle stays open for the process's life */
}

const fl_sqlite_api *fl_sqlite_load(char *why, size_t len)
{
    pthread_once(&load_once, load);
    if (!loaded && why && len)
        snprintf(why, len, "%s", load_why);
    return loaded ? &api : NULL;
}
