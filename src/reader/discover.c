/*
 * reader/discover.c - which session a path means: a session directory (it
 * holds a channel file of reader/layout.c's names, itself or in its .tmp/),
 * a log directory (its subdirectories that are session directories: by
 * session_id, else the most recently modified), or the older flat layout
 * (<prefix>.<channel>[.<N>].log[.gz], given as the prefix, as one of its
 * files, or as the directory holding them).  An app filter keeps only sessions whose job_start
 * names that app (for a session directory only its files' first lines are read), and
 * fl_read_session_prefixed resolves GPUFlight's log_dir + log_prefix.
 *
 * When no session is found the error names the path and every place looked
 * at, so that a wrong path can be told from an empty session.
 */
#include "../util/buf.h"
#include "../util/error.h"
#include "../util/fs.h"
#include "read_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ first lines */

/* Pre-scans: the session ids of job_start records, or the first session_id
 * of any record. */
typedef struct idscan {
    sbuf key; /* fl_probe_type's scratch */
    const char *want;
    const char *app; /* a job_start of another app is passed over */
    bool found_want;
    bool first_any; /* stop at the first record with a session_id */
    char id[256];
    int lines_left;
} idscan;

/* The session_id of a batch line into s->id (the writer puts it right
 * after type, so no batch is parsed).  true: found. */
static bool batch_session_id(idscan *s, const char *line)
{
    scan sc = {0};
    const char *k = strstr(line, "\"session_id\"");
    if (!k)
        return false;
    k = skip_ws(k + 12);
    if (*k != ':')
        return false;
    k = skip_ws(k + 1);
    s->key.len = 0;
    if (*k == '"' && fl_scan_str(&sc, k, &s->key)) {
        snprintf(s->id, sizeof s->id, "%s", s->key.p);
        return true;
    }
    return false;
}

static bool on_id_line(void *ctx, int ev, char *line, size_t len, uint64_t lineno, const char *msg)
{
    (void)lineno;
    (void)msg;
    idscan *s = ctx;
    if (ev != EV_LINE)
        return false;
    char type[RD_TYPE_MAX];
    int tl = fl_probe_type(&s->key, line, type);
    bool js = tl > 0 && fl_type_of(type, (size_t)tl) == FL_T_JOB_START;
    if (s->first_any) {
        if (--s->lines_left < 0)
            return true;
        if (tl > 0 && fl_is_batch_name(type, (size_t)tl))
            return batch_session_id(s, line);
    } else if (!js) {
        return false;
    }
    if (fl_rd_too_many_values(line, len))
        return false; /* the read warns about it */
    json_t *j = json_loadb(line, len, JSON_DECODE_INT_AS_REAL, NULL);
    if (js && s->app) {
        const char *app = json_string_value(json_object_get(j, "app"));
        if (!app || strcmp(app, s->app) != 0) {
            json_decref(j);
            return false;
        }
    }
    const char *sid = json_string_value(json_object_get(j, "session_id"));
    bool stop = false;
    if (sid) {
        snprintf(s->id, sizeof s->id, "%s", sid);
        if (s->want && strcmp(sid, s->want) == 0)
            s->found_want = true;
        stop = s->first_any || s->found_want;
    }
    json_decref(j);
    return stop;
}

/* Scans the files of a session for job_start (first_any: the first record
 * with a session_id).  Stops at the first file that had one. */
static void scan_ids(idscan *s, const char *where, bool flat, lbuf *lb)
{
    rd_file *files = fl_rd_all_files(where, flat);
    for (size_t i = 0; files && files[i].path; i++) {
        s->lines_left = 64;
        fl_rd_read_lines(lb, files[i].path, files[i].gz, on_id_line, s, NULL, NULL);
        if (s->id[0] || s->found_want)
            break;
    }
    fl_rd_free_files(files);
    free(s->key.p);
    s->key = (sbuf){0};
}

/* The app of a session directory: its job_start's, which the writer puts
 * first in every channel file, so only first lines are read. */
typedef struct appscan {
    sbuf key; /* fl_probe_type's scratch */
    char app[256];
    bool found;
} appscan;

static bool on_app_line(void *ctx, int ev, char *line, size_t len, uint64_t lineno, const char *msg)
{
    (void)lineno;
    (void)msg;
    appscan *s = ctx;
    char type[RD_TYPE_MAX];
    int tl = ev == EV_LINE ? fl_probe_type(&s->key, line, type) : -1;
    if (tl > 0 && fl_type_of(type, (size_t)tl) == FL_T_JOB_START &&
        !fl_rd_too_many_values(line, len)) {
        json_t *j = json_loadb(line, len, JSON_DECODE_INT_AS_REAL, NULL);
        const char *app = json_string_value(json_object_get(j, "app"));
        if (app) {
            snprintf(s->app, sizeof s->app, "%s", app);
            s->found = true;
        }
        json_decref(j);
    }
    return true;
}

/* Whether the session directory dir's job_start names app; have (optional)
 * gets the app it names ("" when no first line is a job_start). */
static bool dir_app_is(const char *dir, const char *app, lbuf *lb, char *have, size_t cap)
{
    appscan s;
    memset(&s, 0, sizeof s);
    rd_file *files = fl_rd_all_files(dir, false);
    for (size_t i = 0; files && files[i].path && !s.found; i++)
        fl_rd_read_lines(lb, files[i].path, files[i].gz, on_app_line, &s, NULL, NULL);
    fl_rd_free_files(files);
    free(s.key.p);
    if (have && cap)
        snprintf(have, cap, "%s", s.found ? s.app : "");
    return s.found && strcmp(s.app, app) == 0;
}

/* ------------------------------------------------------------ a directory */

/* The candidates of a directory, as pick_in_dir walks it (with app, only
 * the sessions and flat prefixes of that app). */
typedef struct dirpick {
    const char *dir, *want, *app;
    lbuf *lb;
    char *best; /* the newest session directory */
    int64_t best_t;
    char *best_flat; /* the newest flat prefix */
    int64_t best_flat_t;
    char *want_flat; /* the flat prefix holding session want */
    bool any_flat;
    size_t other_app; /* sessions and flat prefixes of another app */
} dirpick;

/* sub, a subdirectory: the newest session directory so far?  Takes sub. */
static void consider_subdir(dirpick *d, char *sub)
{
    int64_t mt;
    if (!fl_rd_session_dir(sub, &mt)) {
        free(sub);
        return;
    }
    if (d->app && !dir_app_is(sub, d->app, d->lb, NULL, 0)) {
        d->other_app++;
        free(sub);
        return;
    }
    if (!d->best || mt > d->best_t || (mt == d->best_t && strcmp(sub, d->best) > 0)) {
        free(d->best);
        d->best = sub;
        d->best_t = mt;
        return;
    }
    free(sub);
}

/* The flat prefix d->dir/prefix (considered once, at its first channel's
 * file): of the app?  holding session want?  the newest so far? */
static void consider_flat(dirpick *d, const char *prefix)
{
    char *pf = gp_concat3(d->dir, "/", prefix);
    if (pf && d->app) {
        idscan s;
        memset(&s, 0, sizeof s);
        s.app = d->app;
        scan_ids(&s, pf, true, d->lb);
        if (!s.id[0]) {
            d->other_app++;
            free(pf);
            return;
        }
    }
    d->any_flat = true;
    if (pf && d->want && !d->want_flat) {
        idscan s;
        memset(&s, 0, sizeof s);
        s.want = d->want;
        s.app = d->app;
        scan_ids(&s, pf, true, d->lb);
        if (s.found_want) {
            d->want_flat = pf;
            pf = NULL;
        }
    }
    int64_t mt;
    if (pf && fl_rd_flat_exists(pf, &mt) &&
        (!d->best_flat || mt > d->best_flat_t ||
         (mt == d->best_flat_t && strcmp(pf, d->best_flat) > 0))) {
        free(d->best_flat);
        d->best_flat = pf;
        d->best_flat_t = mt;
        pf = NULL;
    }
    free(pf);
}

/* The session the walk found into t: a session directory first, then the
 * flat prefix holding want, then the newest flat prefix.  GP_OK with
 * t->where NULL: nothing there. */
static gp_status choose(dirpick *d, target *t, gp_error *err)
{
    if (d->best) {
        if (d->want)
            return gp_error_set(err, GP_ERR_IO,
                                "no session %s in the log directory %s (looked for %s/%s/ holding "
                                "<channel>.log, <channel>.<N>.log[.gz] or .tmp/<channel>.log)",
                                d->want, fl_path_show(d->dir).text, fl_path_show(d->dir).text,
                                d->want);
        t->where = d->best;
        d->best = NULL;
        t->flat = false;
    } else if (d->want_flat) {
        t->where = d->want_flat;
        d->want_flat = NULL;
        t->flat = true;
        snprintf(t->id, sizeof t->id, "%s", d->want);
    } else if (d->any_flat && d->want) {
        return gp_error_set(err, GP_ERR_IO,
                            "no session %s in %s: no job_start of that session in its "
                            "<prefix>.<channel>[.<N>].log[.gz] files",
                            d->want, fl_path_show(d->dir).text);
    } else if (d->best_flat) {
        t->where = d->best_flat;
        d->best_flat = NULL;
        t->flat = true;
    } else if (d->other_app) {
        return gp_error_set(err, GP_ERR_IO,
                            "no session of app \"%s\" in %s: the job_start of none of its %zu "
                            "session%s names that app",
                            d->app, fl_path_show(d->dir).text, d->other_app,
                            d->other_app == 1 ? "" : "s");
    }
    return GP_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct flat prefixes among a directory's file names (each prefix
 * has files of several channels and windows): into *v, sorted. */
static void add_prefix(char ***v, size_t *n, size_t *cap, const char *prefix)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i], prefix) == 0)
            return;
    char *p = strdup(prefix);
    if (!p || fl_grow((void **)v, cap, *n + 1, sizeof **v) != 0) {
        free(p);
        return;
    }
    (*v)[(*n)++] = p;
}

/* In a directory: a log directory's session, or the flat layout's chosen
 * prefix, into t (GP_OK with t->where NULL: nothing there). */
static gp_status pick_in_dir(const char *dir, const char *want, const char *app, target *t,
                             lbuf *lb, gp_error *err)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return gp_error_set(err, GP_ERR_IO, "%s: cannot open the directory: %s",
                            fl_path_show(dir).text, strerror(errno));
    dirpick d = {.dir = dir, .want = want, .app = app, .lb = lb};
    d.best_t = d.best_flat_t = INT64_MIN;
    char **prefixes = NULL;
    size_t n_pf = 0, cap_pf = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.')
            continue;
        char *sub = gp_concat3(dir, "/", e->d_name);
        if (!sub)
            continue;
        struct stat st;
        char prefix[1024];
        bool ok = stat(sub, &st) == 0;
        if (ok && S_ISDIR(st.st_mode)) {
            consider_subdir(&d, sub);
            continue;
        }
        /* A flat file that is a link leading nowhere still names its
         * prefix: the read then says why it cannot open it. */
        bool file = ok ? S_ISREG(st.st_mode) : lstat(sub, &st) == 0 && S_ISLNK(st.st_mode);
        if (file && fl_rd_flat_name(e->d_name, prefix, sizeof prefix, NULL))
            add_prefix(&prefixes, &n_pf, &cap_pf, prefix);
        free(sub);
    }
    closedir(dp);
    if (n_pf > 1)
        qsort(prefixes, n_pf, sizeof *prefixes, cmp_str);
    for (size_t i = 0; i < n_pf; i++) {
        consider_flat(&d, prefixes[i]);
        free(prefixes[i]);
    }
    free(prefixes);
    gp_status st = choose(&d, t, err);
    free(d.best);
    free(d.best_flat);
    free(d.want_flat);
    return st;
}

/* ------------------------------------------------------------ a path */

/* path, a directory: a session directory (want's under it first), else
 * what pick_in_dir finds there.  t->where may become path itself. */
static gp_status locate_in_dir(char *path, const char *want, const char *app, target *t, lbuf *lb,
                               gp_error *err)
{
    char *sub = want ? gp_concat3(path, "/", want) : NULL;
    gp_status st = GP_OK;
    if (sub && fl_rd_session_dir(sub, NULL)) {
        t->where = sub;
        sub = NULL;
    } else if (fl_rd_session_dir(path, NULL)) {
        t->where = path;
    } else {
        st = pick_in_dir(path, want, app, t, lb, err);
        if (st == GP_OK && !t->where)
            st = gp_error_set(err, GP_ERR_IO,
                              "no session in %s: no <channel>.log, <channel>.<N>.log[.gz] or "
                              ".tmp/<channel>.log there (a session directory; channels device, "
                              "scope, system, sass), no subdirectory holding them (a log "
                              "directory), no <prefix>.<channel>[.<N>].log[.gz] files (the flat "
                              "layout)",
                              path);
    }
    free(sub);
    return st;
}

/* The session directory of a channel file's path: its directory, or the
 * parent of a .tmp/ one (malloc'd; NULL when out of memory). */
static char *session_of_channel_file(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    size_t n = (size_t)(slash - path);
    if (n >= 4 && strncmp(slash - 4, ".tmp", 4) == 0 && (n == 4 || slash[-5] == '/'))
        n = n == 4 ? 0 : n - 5;
    char *dir = n ? strndup(path, n) : strdup(slash == path ? "/" : ".");
    return dir;
}

/* Where path (path_in without its trailing '/') has a session: t->where
 * (which may be path itself) and t->flat. */
static gp_status locate(const char *path_in, char *path, const char *want, const char *app,
                        target *t, lbuf *lb, gp_error *err)
{
    size_t n = strlen(path);
    struct stat st;
    memset(&st, 0, sizeof st); /* a path that is not there is no file */
    char prefix[4096];
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return locate_in_dir(path, want, app, t, lb, err);
    struct stat lst;
    bool link = !S_ISREG(st.st_mode) && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    if ((S_ISREG(st.st_mode) || link) && fl_rd_channel_file_name(path)) {
        /* One channel file of a session directory (SESSION/device.log, or a
         * live one's SESSION/.tmp/scope.log): the session it belongs to
         * (a link that leads nowhere too: the read then says so). */
        char *dir = session_of_channel_file(path);
        if (!dir)
            return gp_error_set(err, GP_ERR_NO_MEMORY, "%s: out of memory",
                                fl_path_show(path).text);
        if (fl_rd_session_dir(dir, NULL)) {
            t->where = dir;
            return GP_OK;
        }
        free(dir);
    }
    if (fl_rd_flat_exists(path, NULL)) {
        t->where = path;
        t->flat = true;
        return GP_OK;
    }
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
        fl_rd_flat_name(path, prefix, sizeof prefix, NULL) && fl_rd_flat_exists(prefix, NULL)) {
        t->where = strdup(prefix);
        t->flat = true;
        return t->where ? GP_OK
                        : gp_error_set(err, GP_ERR_NO_MEMORY, "%s: out of memory",
                                       fl_path_show(path).text);
    }
    if (fl_rd_ends_with(path, ".log") && n > 4) {
        /* A trailing ".log" on a log path is dropped (the spec). */
        path[n - 4] = '\0';
        gp_status rc = fl_rd_find_session(path, want, app, t, lb, err);
        if (rc != GP_OK) {
            fl_path_shown in = fl_path_show(path_in);
            gp_error_set(err, rc,
                         "no session at %s: not a directory, no %s.device.log, %s.scope.log or "
                         "%s.system.log (the flat layout), and %s has none either",
                         in.text, in.text, in.text, in.text, fl_path_show(path).text);
        }
        return rc;
    }
    fl_path_shown at = fl_path_show(path);
    return gp_error_set(err, GP_ERR_IO,
                        "no session at %s: %s, and no %s.device.log, %s.scope.log or "
                        "%s.system.log (the flat layout)",
                        at.text, stat(path, &st) == 0 ? "not a directory" : "no such directory",
                        at.text, at.text, at.text);
}

/* With app, a session directory must be of that app (a flat prefix was
 * chosen by its job_start already). */
static gp_status check_app(const target *t, const char *app, lbuf *lb, gp_error *err)
{
    char have[256];
    if (!app || t->flat || dir_app_is(t->where, app, lb, have, sizeof have))
        return GP_OK;
    if (have[0])
        return gp_error_set(err, GP_ERR_IO,
                            "the session directory %s is of app \"%s\" (its job_start), not \"%s\"",
                            fl_path_show(t->where).text, have, app);
    return gp_error_set(err, GP_ERR_IO,
                        "the session directory %s has no job_start saying its app (looked for "
                        "app \"%s\")",
                        fl_path_show(t->where).text, app);
}

/* The session's id into t->id: the one asked for, the flat layout's last
 * job_start (of app, with one), or the first session_id in a session
 * directory (else the directory's name). */
static gp_status find_id(target *t, const char *want, const char *app, lbuf *lb, gp_error *err)
{
    idscan s;
    memset(&s, 0, sizeof s);
    s.first_any = !t->flat;
    s.want = want;
    s.app = t->flat ? app : NULL;
    scan_ids(&s, t->where, t->flat, lb);
    if (app && t->flat && !s.id[0])
        return gp_error_set(err, GP_ERR_IO, "no job_start of app \"%s\" in %s.<channel>.log", app,
                            t->where);
    if (want) {
        if (!t->flat && s.id[0] && strcmp(s.id, want) != 0)
            return gp_error_set(err, GP_ERR_IO, "the session directory %s holds session %s, not %s",
                                fl_path_show(t->where).text, s.id, want);
        if (t->flat && !s.found_want)
            return gp_error_set(err, GP_ERR_IO,
                                "no session %s in %s.<channel>.log: no job_start of that session",
                                want, t->where);
        snprintf(t->id, sizeof t->id, "%s", want);
    } else if (s.id[0]) {
        snprintf(t->id, sizeof t->id, "%s", s.id);
    } else if (!t->flat) {
        const char *base = strrchr(t->where, '/');
        snprintf(t->id, sizeof t->id, "%s", base ? base + 1 : t->where);
    }
    return GP_OK;
}

gp_status fl_rd_find_session(const char *path_in, const char *want, const char *app, target *t,
                             lbuf *lb, gp_error *err)
{
    memset(t, 0, sizeof *t);
    char *path = strdup(path_in);
    if (!path)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "%s: out of memory", fl_path_show(path_in).text);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    gp_status st = locate(path_in, path, want, app, t, lb, err);
    if (t->where != path)
        free(path);
    if (st == GP_OK)
        st = check_app(t, app, lb, err);
    if (st == GP_OK && !t->id[0])
        st = find_id(t, want, app, lb, err);
    if (st != GP_OK) {
        free(t->where);
        t->where = NULL;
    }
    return st;
}
