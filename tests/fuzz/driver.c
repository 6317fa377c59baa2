/*
 * driver.c - runs one fuzz target (LLVMFuzzerTestOneInput, one of
 * tests/fuzz/fuzz_*.c) without libFuzzer, so that CI fuzzes with gcc alone:
 *
 *   fuzz_<target> CORPUS_DIR|FILE ...
 *
 * Every file of the corpus (tests/fuzz/corpus/<target>/) is run first,
 * then deterministic mutations of them (bit flips, interesting bytes and
 * tokens, deletions, duplicated ranges, digit runs, splices of two seeds,
 * truncations; a mutant now and then kept as a seed) for GP_FUZZ_SECONDS
 * seconds (default 3; 0: the corpus alone).  GP_FUZZ_SEED changes the
 * sequence, GP_FUZZ_MAX_LEN caps an input (default 65536).  Each input is
 * given in a buffer of its exact size, so the ASan build sees any read
 * past it.  On a crash (a signal, or a sanitizer's report) the input is
 * written to crash-<target>-<n> in the working directory (or
 * GP_FUZZ_CRASH_DIR) and can be replayed: fuzz_<target> crash-....  Prints
 * the number of executions; exit status 0, or the crash's.
 *
 * docs/test-doubles.md, "Fuzzing".
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#include <sanitizer/common_interface_defs.h>
#define FUZZ_SANITIZER 1
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef FUZZ_TARGET
#define FUZZ_TARGET "target"
#endif

typedef struct seed {
    uint8_t *p;
    size_t n;
} seed;

static seed *seeds;
static size_t nseeds, capseeds;
static size_t max_len = 65536;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static size_t rnd(size_t n)
{
    return n ? (size_t)(rng() % n) : 0;
}

/* ------------------------------------------------------- crash records */

static const uint8_t *cur_p;
static size_t cur_n;
static uint64_t cur_exec;

static void save_crash(void)
{
    static int saved;
    if (saved++ || !cur_p)
        return;
    char path[512];
    const char *dir = getenv("GP_FUZZ_CRASH_DIR");
    snprintf(path, sizeof path, "%s%scrash-%s-%llu", dir && *dir ? dir : "", dir && *dir ? "/" : "",
             FUZZ_TARGET, (unsigned long long)cur_exec);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    size_t done = 0;
    while (done < cur_n) {
        ssize_t w = write(fd, cur_p + done, cur_n - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    static const char m[] = "fuzz driver: the crashing input is saved as crash-" FUZZ_TARGET
                            "-<n> (replay: pass it as the argument)\n";
    if (write(2, m, sizeof m - 1) < 0)
        return;
}

static void on_signal(int sig)
{
    save_crash();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ------------------------------------------------------------- seeds */

static void add_seed(const uint8_t *p, size_t n)
{
    if (n > max_len)
        n = max_len;
    if (nseeds == capseeds) {
        size_t c = capseeds ? capseeds * 2 : 64;
        seed *s = realloc(seeds, c * sizeof *s);
        if (!s)
            return;
        seeds = s;
        capseeds = c;
    }
    uint8_t *q = malloc(n ? n : 1);
    if (!q)
        return;
    if (n)
        memcpy(q, p, n);
    seeds[nseeds++] = (seed){q, n};
}

static void load_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    uint8_t *buf = malloc(max_len);
    size_t n = buf ? fread(buf, 1, max_len, f) : 0;
    fclose(f);
    if (buf)
        add_seed(buf, n);
    free(buf);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's files in name order (the run does not depend on readdir). */
static void load_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz driver: %s: no such file or directory\n", path);
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        load_file(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **q = realloc(names, cap * sizeof *q);
            if (!q)
                break;
            names = q;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        load_file(full);
        free(names[i]);
    }
    free(names);
}

/* ---------------------------------------------------------- mutations */

static const char interesting[] = "{}[]\",:0123456789-+.eE \t\r\n\\/\f\x00\x01\x7f\x80\xc3\xff";
static const char *const tokens[] = {
    "null",
    "true",
    "false",
    "-1",
    "0",
    "18446744073709551615",
    "9223372036854775808",
    "1e308",
    "NaN",
    "[N/A]",
    "0x",
    "\"type\":",
    "\"rows\":[[",
    "\"columns\":[",
    "_batch",
    "kernel_event_batch",
    "job_start",
    "dictionary_update",
    "kernel_detail",
    "scope_event_batch",
    "\\u0000",
    "\\ud800",
    "MiB",
    " W",
    " %",
    "\x1f\x8b\x08\x00",
};

/* Mutates buf (*n bytes, capacity max_len) once. */
static void mutate(uint8_t *buf, size_t *n)
{
    size_t len = *n;
    switch (rnd(10)) {
    case 0:
        if (len)
            buf[rnd(len)] ^= (uint8_t)(1u << rnd(8));
        break;
    case 1:
        if (len)
            buf[rnd(len)] = (uint8_t)interesting[rnd(sizeof interesting - 1)];
        break;
    case 2: /* insert a byte */
        if (len < max_len) {
            size_t at = rnd(len + 1);
            memmove(buf + at + 1, buf + at, len - at);
            buf[at] = (uint8_t)interesting[rnd(sizeof interesting - 1)];
            len++;
        }
        break;
    case 3: /* delete a range */
        if (len) {
            size_t at = rnd(len), k = 1 + rnd(len - at < 32 ? len - at : 32);
            memmove(buf + at, buf + at + k, len - at - k);
            len -= k;
        }
        break;
    case 4: { /* duplicate a range */
        if (!len)
            break;
        size_t at = rnd(len), k = 1 + rnd(len - at < 128 ? len - at : 128);
        if (len + k > max_len)
            break;
        uint8_t tmp[128];
        memcpy(tmp, buf + at, k);
        size_t to = rnd(len + 1);
        memmove(buf + to + k, buf + to, len - to);
        memcpy(buf + to, tmp, k);
        len += k;
        break;
    }
    case 5: { /* splice: our prefix, another seed's suffix */
        const seed *s = &seeds[rnd(nseeds)];
        size_t cut = rnd(len + 1), from = rnd(s->n + 1), k = s->n - from;
        if (cut + k > max_len)
            k = max_len - cut;
        memcpy(buf + cut, s->p + from, k);
        len = cut + k;
        break;
    }
    case 6: /* truncate */
        len = rnd(len + 1);
        break;
    case 7: { /* insert a token */
        const char *t = tokens[rnd(sizeof tokens / sizeof tokens[0])];
        size_t k = strlen(t), at = rnd(len + 1);
        if (len + k > max_len)
            break;
        memmove(buf + at + k, buf + at, len - at);
        memcpy(buf + at, t, k);
        len += k;
        break;
    }
    case 8: { /* overwrite a run with one byte */
        if (!len)
            break;
        size_t at = rnd(len), k = 1 + rnd(len - at < 16 ? len - at : 16);
        memset(buf + at, interesting[rnd(sizeof interesting - 1)], k);
        break;
    }
    default: { /* a digit run */
        size_t k = 1 + rnd(24), at = rnd(len + 1);
        if (len + k > max_len)
            break;
        memmove(buf + at + k, buf + at, len - at);
        for (size_t i = 0; i < k; i++)
            buf[at + i] = (uint8_t)('0' + rnd(10));
        len += k;
        break;
    }
    }
    *n = len;
}

/* ------------------------------------------------------------------ run */

static void run_one(const uint8_t *p, size_t n)
{
    /* Exactly n bytes: a read past them is a sanitizer's report. */
    uint8_t *in = malloc(n ? n : 1);
    if (!in)
        return;
    if (n)
        memcpy(in, p, n);
    cur_p = in;
    cur_n = n;
    LLVMFuzzerTestOneInput(in, n);
    cur_p = NULL;
    free(in);
    cur_exec++;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *e = getenv("GP_FUZZ_SECONDS");
    double seconds = e && *e ? atof(e) : 3.0;
    if ((e = getenv("GP_FUZZ_SEED")) && *e)
        rng_state = strtoull(e, NULL, 0) | 1;
    if ((e = getenv("GP_FUZZ_MAX_LEN")) && *e && atol(e) > 0)
        max_len = (size_t)atol(e);
    signal(SIGSEGV, on_signal);
    signal(SIGBUS, on_signal);
    signal(SIGFPE, on_signal);
    signal(SIGABRT, on_signal);
    signal(SIGILL, on_signal);
#ifdef FUZZ_SANITIZER
    __sanitizer_set_death_callback(save_crash);
#endif
    for (int i = 1; i < argc; i++)
        load_path(argv[i]);
    if (!nseeds) {
        fprintf(stderr, "fuzz_%s: no input: give a corpus directory or files\n", FUZZ_TARGET);
        return 2;
    }
    for (size_t i = 0; i < nseeds; i++)
        run_one(seeds[i].p, seeds[i].n);
    size_t corpus = nseeds;
    uint8_t *buf = malloc(max_len);
    if (!buf)
        return 2;
    double t0 = now_s();
    while (seconds > 0) {
        if ((cur_exec & 15) == 0 && now_s() - t0 >= seconds)
            break;
        const seed *s = &seeds[rnd(nseeds)];
        size_t n = s->n;
        memcpy(buf, s->p, n);
        size_t k = 1 + rnd(rnd(4) ? 4 : 16);
        for (size_t i = 0; i < k; i++)
            mutate(buf, &n);
        run_one(buf, n);
        if (rnd(64) == 0 && nseeds < 4096)
            add_seed(buf, n);
    }
    printf("fuzz_%s: %llu executions in %.1f s (GP_FUZZ_SECONDS %.1f), %zu corpus files\n",
           FUZZ_TARGET, (unsigned long long)cur_exec, now_s() - t0, seconds, corpus);
    free(buf);
    for (size_t i = 0; i < nseeds; i++)
        free(seeds[i].p);
    free(seeds);
    return 0;
}
