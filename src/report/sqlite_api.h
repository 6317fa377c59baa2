/*
 * report/sqlite_api.h - the few SQLite C calls the SQLite export makes,
 * through Debian's libsqlite3.so.0 loaded with dlopen at the first SQLite
 * export (export_sqlite.c): no other command pays for loading it, and
 * building needs no SQLite headers.  The prototypes and codes are
 * SQLite 3's stable ABI (sqlite3.h).  Not exported; nothing here prints.
 */
#ifndef FL_SQLITE_API_H
#define FL_SQLITE_API_H

#include <stddef.h>
#include <stdint.h>

enum {
    FL_SQLITE_OK = 0,
    FL_SQLITE_ROW = 100,
    FL_SQLITE_DONE = 101,
    FL_SQLITE_OPEN_READWRITE = 0x2,
    FL_SQLITE_OPEN_CREATE = 0x4,
    FL_SQLITE_OPEN_NOMUTEX = 0x8000,
};
/* sqlite3_bind_text's destructor: SQLITE_TRANSIENT, "copy it now". */
#define FL_SQLITE_TRANSIENT ((void (*)(void *)) - 1)

typedef struct fl_sqlite_api {
    int (*open_v2)(const char *path, void **db, int flags, const char *vfs);
    int (*close)(void *db);
    int (*exec)(void *db, const char *sql, void *cb, void *arg, char **err);
    int (*prepare_v2)(void *db, const char *sql, int n, void **stmt, const char **tail);
    int (*bind_int64)(void *stmt, int i, int64_t v);
    int (*bind_double)(void *stmt, int i, double v);
    int (*bind_text)(void *stmt, int i, const char *s, int n, void (*dtor)(void *));
    int (*bind_null)(void *stmt, int i);
    int (*step)(void *stmt);
    int (*reset)(void *stmt);
    int (*finalize)(void *stmt);
    const char *(*errmsg)(void *db);
    void (*free)(void *p);
} fl_sqlite_api;

/* The library's calls, loaded once (GPU_PROFILE_SQLITE_LIBRARY names
 * another file: the tests' way to see the "absent" path); NULL with why
 * filled (what is missing and the package to install). */
const fl_sqlite_api *fl_sqlite_load(char *why, size_t len);

#endif /* FL_SQLITE_API_H */
