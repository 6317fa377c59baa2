/*
 * check.h - the test suite's assertions.  Each test_*.c is one executable;
 * a failed check prints file:line and the values and the run continues, so
 * one run shows every failure.  main() ends with check_done(), which prints
 * "N passed, N failed" and returns the exit status.
 */
#ifndef GP_TEST_CHECK_H
#define GP_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed_;
static int check_failed_;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        if (va_ == vb_) {                                                                          \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b,  \
                    va_, vb_);                                                                     \
        }                                                                                          \
    } while (0)

#define CHECK_U64(a, b)                                                                            \
    do {                                                                                           \
        unsigned long long va_ = (unsigned long long)(a), vb_ = (unsigned long long)(b);           \
        if (va_ == vb_) {                                                                          \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: %s == %s failed: %llu != %llu\n", __FILE__, __LINE__, #a, #b,  \
                    va_, vb_);                                                                     \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double va_ = (double)(a), vb_ = (double)(b);                                               \
        if (va_ - vb_ <= (tol) && vb_ - va_ <= (tol)) {                                            \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: %s ~= %s failed: %.9g != %.9g\n", __FILE__, __LINE__, #a, #b,  \
                    va_, vb_);                                                                     \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *va_ = (a), *vb_ = (b);                                                         \
        if (va_ && vb_ && strcmp(va_, vb_) == 0) {                                                 \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: %s == %s failed:\n  got:  \"%s\"\n  want: \"%s\"\n", __FILE__, \
                    __LINE__, #a, #b, va_ ? va_ : "(null)", vb_ ? vb_ : "(null)");                 \
        }                                                                                          \
    } while (0)

/* Substring check, for messages that embed paths or system text. */
#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *vh_ = (hay), *vn_ = (needle);                                                  \
        if (vh_ && vn_ && strstr(vh_, vn_)) {                                                      \
            check_passed_++;                                                                       \
        } else {                                                                                   \
            check_failed_++;                                                                       \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,         \
                    vh_ ? vh_ : "(null)", vn_ ? vn_ : "(null)");                                   \
        }                                                                                          \
    } while (0)

static inline int check_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

/* Environment set by tests/CMakeLists.txt; exits 2 with a message if missing. */
static inline const char *check_env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "environment variable %s is not set: run the tests through ctest\n", name);
        exit(2);
    }
    return v;
}

/* Reads a whole file (tests only); NULL if it cannot be read. */
static inline char *check_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = (char *)malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

/* Compares got with the golden file tests/golden/<rel> byte for byte; on a
 * difference writes got next to the test binary as <basename>.actual and
 * says where.  GP_UPDATE_GOLDEN=1 rewrites the golden file instead (after a
 * deliberate change; then read the diff). */
static inline void check_golden(const char *rel, const char *got, const char *test)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/%s", check_env("GP_TEST_SOURCE_DIR"), rel);
    const char *update = getenv("GP_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (f) {
            fputs(got, f);
            fclose(f);
            printf("updated %s\n", path);
        }
        return;
    }
    size_t len = 0;
    char *want = check_read_file(path, &len);
    if (!want) {
        fprintf(stderr, "%s: cannot read; create it with GP_UPDATE_GOLDEN=1\n", path);
        CHECK(want != NULL);
        return;
    }
    if (len != strlen(got) || memcmp(want, got, len) != 0) {
        size_t i = 0;
        while (i < len && got[i] && want[i] == got[i])
            i++;
        const char *base = strrchr(rel, '/');
        char actual[1024];
        snprintf(actual, sizeof actual, "%s/%s.actual", check_env("GP_TEST_BINARY_DIR"),
                 base ? base + 1 : rel);
        FILE *f = fopen(actual, "wb");
        if (f) {
            fputs(got, f);
            fclose(f);
        }
        fprintf(stderr,
                "%s differs from the golden file at byte %zu; got written to %s\n"
                "(after a deliberate change: GP_UPDATE_GOLDEN=1 ctest -R %s)\n",
                rel, i, actual, test);
        CHECK(!"golden mismatch");
    } else {
        CHECK(1);
    }
    free(want);
}

#endif
