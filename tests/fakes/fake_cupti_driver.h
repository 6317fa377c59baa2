/*
 * fake_cupti_driver.h - what CUDA's callbacks would do, for the fake CUPTI
 * plugin (fake_cupti_plugin.c): its hooks (fake_cupti_launch, _profiler,
 * _nvtx) looked up in the plugin already loaded from `path` (RTLD_NOLOAD:
 * never loads it) and called.  A hook the plugin lacks is a no-op where
 * the caller says the real plugin may be there (it has none), else a
 * message naming the hook and exit FAKE_CUPTI_MISSING_EXIT (2 unless the
 * includer defines it).  cupti_launch / cupti_profiler / cupti_nvtx drive
 * the plugin at fake_cupti_path (the includer sets it), which must be the
 * fake.  Test code only.
 */
#ifndef GP_TEST_FAKE_CUPTI_DRIVER_H
#define GP_TEST_FAKE_CUPTI_DRIVER_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_CUPTI_MISSING_EXIT
#define FAKE_CUPTI_MISSING_EXIT 2
#endif

static const char *fake_cupti_path;

static inline void *fake_cupti_hook(const char *path, const char *name, bool required)
{
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *f = h ? dlsym(h, name) : NULL;
    if (!f && required) {
        fprintf(stderr, "%s: the fake CUPTI plugin has no %s\n", path ? path : "(no plugin)", name);
        exit(FAKE_CUPTI_MISSING_EXIT);
    }
    return f;
}

/* A kernel launch with correlation id corr. */
static inline void fake_cupti_drive_launch(const char *path, uint32_t corr, bool required)
{
    void (*fn)(uint32_t) = NULL;
    void *f = fake_cupti_hook(path, "fake_cupti_launch", required);
    memcpy(&fn, &f, sizeof f);
    if (fn)
        fn(corr);
}

/* cuProfilerStart (start) or cuProfilerStop, correlation id corr. */
static inline void fake_cupti_drive_profiler(const char *path, int start, uint32_t corr)
{
    void (*fn)(int, uint32_t);
    void *f = fake_cupti_hook(path, "fake_cupti_profiler", true);
    memcpy(&fn, &f, sizeof f);
    fn(start, corr);
}

/* An NVTX range pushed (name) or popped (NULL). */
static inline void fake_cupti_drive_nvtx(const char *path, const char *name)
{
    void (*fn)(const char *);
    void *f = fake_cupti_hook(path, "fake_cupti_nvtx", true);
    memcpy(&fn, &f, sizeof f);
    fn(name);
}

static inline void cupti_launch(uint32_t corr)
{
    fake_cupti_drive_launch(fake_cupti_path, corr, true);
}

static inline void cupti_profiler(int start, uint32_t corr)
{
    fake_cupti_drive_profiler(fake_cupti_path, start, corr);
}

static inline void cupti_nvtx(const char *name)
{
    fake_cupti_drive_nvtx(fake_cupti_path, name);
}

#endif
