/*
 * abi/layout.h - the shape of a plugin table's layout (check.c compares
 * it): one uint32_t size per struct the table exchanges, listed by the
 * table's X(field, type) macro (FL_TRACE_LAYOUT_FIELDS,
 * GP_METRICS_LAYOUT_FIELDS), so both tables' layouts are made one way.
 */
#ifndef GP_ABI_LAYOUT_H
#define GP_ABI_LAYOUT_H

#include <stdint.h>

/* A layout struct's member: the size of `type` as one side saw it. */
#define GP_LAYOUT_MEMBER(field, type) uint32_t field;
/* A layout's value, positional (metrics_host.cpp is C++11). */
#define GP_LAYOUT_SIZE(field, type) sizeof(type),

#endif /* GP_ABI_LAYOUT_H */
