/*
 * report/sqlite_api.c - libsqlite3 loaded with dlopen at the first SQLite
 * export (sqlite_api.h): once per process, its calls resolved all at once
 * or not at all.
 */
#include "sqlite_api.h"
#include "../util/fs.h"

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
#define SYM(m) GP_DL_SYM("sqlite3_", api, m)
    const gp_dl_sym syms[] = {SYM(open_v2),    SYM(close),       SYM(exec),      SYM(prepare_v2),
                              SYM(bind_int64), SYM(bind_double), SYM(bind_text), SYM(bind_null),
                              SYM(step),       SYM(reset),       SYM(finalize),  SYM(errmsg),
                              SYM(free)};
#undef SYM
    const char *name, *e, *missing;
    if (gp_dl_load("GPU_PROFILE_SQLITE_LIBRARY", "libsqlite3.so.0", syms,
                   sizeof syms / sizeof syms[0], &name, &e, &missing))
        loaded = true; /* the handle stays open for the process's life */
    else if (e)
        snprintf(load_why, sizeof load_why,
                 "SQLite (%s) could not be loaded (%s): --format sqlite needs it; install it "
                 "(Debian/Ubuntu: apt-get install libsqlite3-0)",
                 name, e);
    else
        snprintf(load_why, sizeof load_why,
                 "SQLite (%s) has no %s: --format sqlite needs SQLite 3.7 or later "
                 "(Debian/Ubuntu: apt-get install libsqlite3-0)",
                 name, missing);
}

const fl_sqlite_api *fl_sqlite_load(char *why, size_t len)
{
    pthread_once(&load_once, load);
    if (!loaded && why && len)
        snprintf(why, len, "%s", load_why);
    return loaded ? &api : NULL;
}
