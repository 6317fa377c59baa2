/*
 * demangle.h - C++ names as nsys shows them (demangle.c): the activity
 * decoder's kernel names and the range profiler's kernel ranges.
 */
#ifndef GP_PLUGIN_COMMON_DEMANGLE_H
#define GP_PLUGIN_COMMON_DEMANGLE_H

#include <stddef.h>

/* The demangled form of a mangled C++ name into out (the name itself when
 * it is not mangled or the demangler is absent).  Exposed for tests. */
void fl_demangle(const char *name, char *out, size_t cap);

#endif /* GP_PLUGIN_COMMON_DEMANGLE_H */
