/*
 * tests/report/report_json.h - the report tests' look-ups in a JSON report:
 * the value at a path of keys and [indices] ("summary.gpu_busy[0].busy_ns")
 * and its integer, number, string or null, each saying on stderr what was
 * not there (a failed CHECK then names the path).
 */
#ifndef GP_TESTS_REPORT_JSON_H
#define GP_TESTS_REPORT_JSON_H

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline json_t *jpath(json_t *j, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok && j; tok = strtok_r(NULL, ".", &save)) {
        char *br = strchr(tok, '[');
        if (br)
            *br = '\0';
        if (*tok)
            j = json_object_get(j, tok);
        while (br && j) {
            j = json_array_get(j, strtoul(br + 1, NULL, 10));
            br = strchr(br + 1, '[');
        }
    }
    if (!j)
        fprintf(stderr, "no %s in the report JSON\n", path);
    return j;
}

static inline long long jint(json_t *j, const char *path)
{
    json_t *v = jpath(j, path);
    if (!json_is_integer(v)) {
        fprintf(stderr, "%s is not an integer\n", path);
        return -999999;
    }
    return (long long)json_integer_value(v);
}

static inline double jnum(json_t *j, const char *path)
{
    json_t *v = jpath(j, path);
    if (!json_is_number(v)) {
        fprintf(stderr, "%s is not a number\n", path);
        return NAN;
    }
    return json_number_value(v);
}

static inline const char *jstr(json_t *j, const char *path)
{
    return json_string_value(jpath(j, path));
}

static inline bool jnull(json_t *j, const char *path)
{
    return json_is_null(jpath(j, path));
}

#endif /* GP_TESTS_REPORT_JSON_H */
