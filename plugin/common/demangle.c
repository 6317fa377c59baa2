/*
 * demangle.c - C++ names demangled (demangle.h).
 *
 * Promises: the C++ runtime's __cxa_demangle, looked up once (loaded only
 * when the process has none); a name it cannot demangle, or any name
 * without it, is given back as it is; NULL is "<unknown>".
 */
#include "demangle.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn find_demangler(void)
{
    /* The C++ runtime is in nearly every CUDA process already; load it
     * (once) only when it is not. */
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!f) {
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h)
            f = dlsym(h, "__cxa_demangle");
    }
    demangle_fn fn;
    memcpy(&fn, &f, sizeof fn);
    return fn;
}

void fl_demangle(const char *name, char *out, size_t cap)
{
    if (cap == 0)
        return;
    if (!name) {
        snprintf(out, cap, "%s", "<unknown>");
        return;
    }
    static demangle_fn fn;
    static bool looked;
    if (!looked) {
        fn = find_demangler();
        looked = true;
    }
    if (fn && name[0] == '_' && name[1] == 'Z') {
        int status = -1;
        char *d = fn(name, NULL, NULL, &status);
        if (d && status == 0) {
            snprintf(out, cap, "%s", d);
            free(d);
            return;
        }
        free(d);
    }
    snprintf(out, cap, "%s", name);
}
