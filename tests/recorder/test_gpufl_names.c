/*
 * test_gpufl_names.c - the scope names a process keeps are bounded (issue
 * 16): FL_SCOPE_NAMES_MAX distinct names (the last kept for
 * FL_SCOPE_OVERFLOW_NAME) and FL_SCOPE_NAME_BYTES_MAX bytes of text.  A
 * scope named beyond them is recorded under the overflow name, counted,
 * and reported in capture_capabilities (scope_events partial,
 * name_limit); the names already kept go on working, in this session and
 * the next; a million distinct names cost the heap a bounded amount.  Its
 * own executable: the names are the process's.
 */
#include "recorder/scope.h"
#include "fl_log.h"
#include "gpufl.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_tmp[256];

static gpufl_init_options base_opts(const char *sub)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, sub);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "names";
    o.log_path = path;
    return o;
}

/* n scope pairs named prefix0 .. prefix<n-1>, flushed every 4000 so that
 * no ring fills. */
static void distinct_scopes(const char *prefix, size_t first, size_t n)
{
    char name[64];
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s%zu", prefix, first + i);
        gpufl_scope s = gpufl_scope_begin(name);
        gpufl_scope_end(&s);
        if (i % 4000 == 3999)
            gpufl_flush();
    }
}

typedef struct tally {
    size_t dict;          /* scope_name_dict entries */
    size_t rows;          /* scope rows */
    size_t overflow_rows; /* rows under the overflow name */
    json_int_t overflow_id;
} tally;

static tally count_scope_log(const char *dir)
{
    tally t = {0, 0, 0, -1};
    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "scope"), 0);
    CHECK_INT(log.bad, 0);
    for (size_t i = 0; i < log.n; i++) {
        json_t *r = log.lines[i];
        if (strcmp(log_type(r), "dictionary_update") == 0) {
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(r, "scope_name_dict"), k, v)
            {
                t.dict++;
                if (strcmp(json_string_value(v), FL_SCOPE_OVERFLOW_NAME) == 0)
                    t.overflow_id = atoi(k);
            }
        }
        if (strcmp(log_type(r), "scope_event_batch") != 0)
            continue;
        size_t ri;
        json_t *row;
        json_array_foreach(json_object_get(r, "rows"), ri, row)
        {
            t.rows++;
            t.overflow_rows += json_integer_value(json_array_get(row, 2)) == t.overflow_id;
        }
    }
    fl_log_free(&log);
    return t;
}

static json_t *scope_cap(const fl_log *log)
{
    json_t *caps = NULL;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), "capture_capabilities") == 0)
            caps = log->lines[i];
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(caps, "capabilities"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "feature")), "scope_events") == 0)
            return c;
    }
    return NULL;
}

static void check_cap(const char *dir, const char *status, const char *reason, const char *msg)
{
    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "system"), 0);
    json_t *c = scope_cap(&log);
    CHECK(c != NULL);
    if (c) {
        CHECK_STR(json_string_value(json_object_get(c, "status")), status);
        CHECK_STR(json_string_value(json_object_get(c, "reason_code")), reason);
        if (msg)
            CHECK_CONTAINS(json_string_value(json_object_get(c, "message")), msg);
    }
    fl_log_free(&log);
}

/* 70000 distinct names: 65535 kept, 4465 scopes under the overflow name;
 * then a second session: a kept name still has its own id, a new one
 * overflows at once. */
static void test_count_limit(void)
{
    gpufl_init_options o = base_opts("count");
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    distinct_scopes("name-", 0, 70000);
    distinct_scopes("name-", 100, 3); /* kept names, again */
    gpufl_shutdown();
    tally t = count_scope_log(dir);
    CHECK_U64(t.dict, FL_SCOPE_NAMES_MAX);
    CHECK(t.overflow_id > 0);
    CHECK_U64(t.rows, 2 * 70003);
    CHECK_U64(t.overflow_rows, 2 * (70000 - (FL_SCOPE_NAMES_MAX - 1)));
    check_cap(dir, "partial", "name_limit",
              "4465 scopes recorded under the name \"(other scope names)\": the process had "
              "65536 distinct scope names");

    o = base_opts("count2");
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    gpufl_session_dir(dir, sizeof dir);
    distinct_scopes("name-", 7, 1);     /* kept */
    distinct_scopes("fresh-", 0, 2);    /* beyond */
    distinct_scopes("name-", 65534, 1); /* the last kept one */
    gpufl_shutdown();
    t = count_scope_log(dir);
    CHECK_U64(t.dict, 3); /* name-7, the overflow name, name-65534 */
    CHECK_U64(t.rows, 8);
    CHECK_U64(t.overflow_rows, 4);
    check_cap(dir, "partial", "name_limit", "2 scopes recorded under");
}

/* In a child (a process of its own, no name kept yet): four names of 1 MiB
 * (NUL included) fill the 4 MiB of text exactly; the fifth and sixth are
 * beyond. */
static void test_bytes_limit(void)
{
    char base[400];
    snprintf(base, sizeof base, "%s/bytes", g_tmp);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        gpufl_init_options o;
        gpufl_init_options_init(&o);
        o.log_path = base;
        if (gpufl_init(&o, NULL) != GPUFL_OK)
            _exit(3);
        size_t len = 1u << 20;
        char *name = malloc(len);
        for (int k = 0; k < 6; k++) {
            memset(name, 'a' + k, len - 1);
            name[len - 1] = '\0';
            gpufl_scope s = gpufl_scope_begin(name);
            gpufl_scope_end(&s);
        }
        free(name);
        gpufl_shutdown();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char dir[600];
    CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
    tally t = count_scope_log(dir);
    CHECK_U64(t.dict, 5); /* four names of 1 MiB, the overflow name */
    CHECK_U64(t.rows, 12);
    CHECK_U64(t.overflow_rows, 4);
    check_cap(dir, "partial", "name_limit", "2 scopes recorded under");
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/* What malloc has handed out: the arena's chunks in use and the large
 * blocks it mapped on their own. */
static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}
#endif

/* A million distinct names (the 128 MiB), in a child that starts
 * with no name kept: the heap grows by the limits' worth at most. */
static void test_memory_bound(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("test_memory_bound: skipped under a sanitizer (its allocator counts otherwise)\n");
#else
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        gpufl_init_options o = base_opts("million");
        if (gpufl_init(&o, NULL) != GPUFL_OK)
            _exit(3);
        gpufl_flush();
        size_t before = heap_in_use();
        distinct_scopes("million-", 0, 1000000);
        gpufl_flush();
        size_t grown = heap_in_use() - before;
        gpufl_shutdown();
        printf("heap grown by %.1f MiB for 1 M distinct scope names\n", grown / 1048576.0);
        fflush(stdout);
        _exit(grown < (16u << 20) ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#endif
}

int main(void)
{
    unsetenv("GPUFL_CONFIG_FILE");
    unsetenv("GPUFL_DISABLED");
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gpufl_names_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    /* The children first: each must start with no name kept. */
    test_bytes_limit();
    test_memory_bound();
    test_count_limit();
    fl_rmtree(g_tmp);
    return check_done("test_gpufl_names");
}
