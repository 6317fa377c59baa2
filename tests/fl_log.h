/*
 * fl_log.h - the tests' reader of session logs: every line of a channel
 * parsed with jansson (a line that is not JSON is a test failure), and
 * small helpers over the records.  Test code only.
 */
#ifndef GP_TEST_FL_LOG_H
#define GP_TEST_FL_LOG_H

#include "check.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fl_log {
    json_t **lines;
    size_t n;
    size_t bad;       /* lines that did not parse */
    int last_partial; /* the file did not end with '\n' */
} fl_log;

static inline int fl_log_read(fl_log *log, const char *dir, const char *channel)
{
    memset(log, 0, sizeof *log);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.log", dir, channel);
    size_t len = 0;
    char *text = check_read_file(path, &len);
    if (!text)
        return -1;
    log->last_partial = len > 0 && text[len - 1] != '\n';
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t e;
        json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, &e);
        if (!j) {
            log->bad++;
            fprintf(stderr, "not JSON in %s: %s (%s)\n", path, line, e.text);
            continue;
        }
        json_t **p = realloc(log->lines, (log->n + 1) * sizeof *p);
        if (!p)
            break;
        log->lines = p;
        log->lines[log->n++] = j;
    }
    free(text);
    return 0;
}

static inline void fl_log_free(fl_log *log)
{
    for (size_t i = 0; i < log->n; i++)
        json_decref(log->lines[i]);
    free(log->lines);
    memset(log, 0, sizeof *log);
}

static inline const char *log_type(const json_t *rec)
{
    const char *t = json_string_value(json_object_get(rec, "type"));
    return t ? t : "";
}

static inline size_t fl_count(const fl_log *log, const char *type)
{
    size_t k = 0;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), type) == 0)
            k++;
    return k;
}

static inline json_t *fl_first(const fl_log *log, const char *type)
{
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), type) == 0)
            return log->lines[i];
    return NULL;
}

static inline json_int_t fl_int(const json_t *obj, const char *key)
{
    return json_integer_value(json_object_get(obj, key));
}

/* The column index of name in a batch, -1 if absent. */
static inline int fl_col(const json_t *batch, const char *name)
{
    const json_t *cols = json_object_get(batch, "columns");
    for (size_t i = 0; i < json_array_size(cols); i++)
        if (strcmp(json_string_value(json_array_get(cols, i)), name) == 0)
            return (int)i;
    return -1;
}

/* The only subdirectory of base (a session), into out; 0 if exactly one. */
static inline int fl_only_session(const char *base, char *out, size_t cap)
{
    DIR *d = opendir(base);
    if (!d)
        return -1;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(out, cap, "%s/%s", base, e->d_name);
        found++;
    }
    closedir(d);
    return found == 1 ? 0 : -1;
}

/* rm -rf for the tests' temporary directories. */
static inline void fl_rmtree(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", path);
}

#endif /* GP_TEST_FL_LOG_H */
