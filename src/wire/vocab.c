/*
 * wire/vocab.c - the strings of the wire vocabulary (vocab.h), each made
 * from the one X-macro line that also makes its enum, so a name and its
 * number cannot drift apart.
 */
#include "vocab.h"

#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The place of name among the n names; n when absent or NULL.  Every
 * "name to number" lookup of the vocabulary goes through here. */
static size_t name_at(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return n;
}

/* names[i], or NULL when i is out of range: every "number to name" lookup
 * of the vocabulary. */
static const char *name_of(const char *const *names, size_t n, long i)
{
    return i >= 0 && (size_t)i < n ? names[i] : NULL;
}

/* A list's X(id, name) line as the string "name". */
#define NAME_OF(id, name) #name,

static const char *const channel_names[FL_CH_COUNT] = {FL_CHANNELS(NAME_OF)};

const char *fl_channel_name(int ch)
{
    return name_of(channel_names, FL_CH_COUNT, ch);
}

static const char *const dict_names[FL_DICT_COUNT] = {FL_DICTS(NAME_OF)};

const char *fl_dict_name(fl_dict d)
{
    return name_of(dict_names, FL_DICT_COUNT, d);
}

fl_dict fl_dict_of(const char *name)
{
    return (fl_dict)name_at(dict_names, FL_DICT_COUNT, name);
}

/* Each batch's column names, as one array per batch. */
#define FL_X(batch, id, name) #name,
static const char *const cols_KERNEL[] = {FL_COLS_KERNEL(FL_X)};
static const char *const cols_MEMCPY[] = {FL_COLS_MEMCPY(FL_X)};
static const char *const cols_DEVMETRIC[] = {FL_COLS_DEVMETRIC(FL_X)};
static const char *const cols_HOSTMETRIC[] = {FL_COLS_HOSTMETRIC(FL_X)};
static const char *const cols_SCOPE[] = {FL_COLS_SCOPE(FL_X)};
static const char *const cols_SYNC[] = {FL_COLS_SYNC(FL_X)};
static const char *const cols_ALLOC[] = {FL_COLS_ALLOC(FL_X)};
static const char *const cols_PROFILE[] = {FL_COLS_PROFILE(FL_X)};
static const char *const cols_PM[] = {FL_COLS_PM(FL_X)};
static const char *const cols_GRAPH[] = {FL_COLS_GRAPH(FL_X)};
#undef FL_X

static const fl_type_info types[FL_T_COUNT] = {
    [FL_T_UNKNOWN] = {.name = "", .channel = FL_CH_ALL, .col_dt = -1, .col_duration = -1},
#define FL_X(id, nm, ch, ver)                                                                      \
    [FL_T_##id] = {                                                                                \
        .name = #nm, .channel = FL_CH_##ch, .version = ver, .col_dt = -1, .col_duration = -1},
    FL_RECORD_TYPES(FL_X)
#undef FL_X
#define FL_X(id, nm, ch, ver, c, dur)                                                              \
    [FL_T_##id] = {.name = #nm,                                                                    \
                   .channel = FL_CH_##ch,                                                          \
                   .version = ver,                                                                 \
                   .batch = true,                                                                  \
                   .ncols = (uint8_t)N_OF(cols_##c),                                               \
                   .cols = cols_##c,                                                               \
                   .col_dt = FL_COL_##c##_DT_NS,                                                   \
                   .col_duration = dur},
        FL_BATCH_TYPES(FL_X)
#undef FL_X
};
_Static_assert(FL_COL_DEVMETRIC_COUNT <= FL_MAX_COLS && FL_COL_PROFILE_COUNT <= FL_MAX_COLS,
               "FL_MAX_COLS holds every batch's columns");

const fl_type_info *fl_type_get(fl_type t)
{
    return (unsigned)t < FL_T_COUNT ? &types[t] : &types[FL_T_UNKNOWN];
}

fl_type fl_type_of(const char *name, size_t n)
{
    /* Eighteen names, most of them told apart by their length and first
     * byte: a linear scan costs less than a hash here. */
    if (!name)
        return FL_T_UNKNOWN;
    for (int t = FL_T_UNKNOWN + 1; t < FL_T_COUNT; t++) {
        const char *k = types[t].name;
        if (k[0] == name[0] && strlen(k) == n && memcmp(k, name, n) == 0)
            return (fl_type)t;
    }
    return FL_T_UNKNOWN;
}

static const char *const cap_status_names[FL_CAP_COUNT] = {FL_CAP_STATUSES(NAME_OF)};

const char *fl_cap_status_name(fl_cap_status s)
{
    return name_of(cap_status_names, FL_CAP_COUNT, s);
}

fl_cap_status fl_cap_status_of(const char *name)
{
    return (fl_cap_status)name_at(cap_status_names, FL_CAP_COUNT, name);
}

static const char *const engine_names[] = {FL_ENGINES(NAME_OF)};
enum {
#define FL_X(id, name) ENGINE_AT_##id,
    FL_ENGINES(FL_X)
#undef FL_X
};
#define FL_X(id, name)                                                                             \
    _Static_assert((int)GPUFL_ENGINE_##id == (int)ENGINE_AT_##id,                                  \
                   "FL_ENGINES follows gpufl_engine");
FL_ENGINES(FL_X)
#undef FL_X

const char *fl_engine_wire_name(gpufl_engine e)
{
    return (unsigned)e < N_OF(engine_names) ? engine_names[e] : engine_names[GPUFL_ENGINE_MONITOR];
}

bool fl_engine_of_wire(const char *name, gpufl_engine *out)
{
    size_t i = name_at(engine_names, N_OF(engine_names), name);
    if (i == N_OF(engine_names))
        return false;
    if (out)
        *out = (gpufl_engine)i;
    return true;
}

static const char *const mig_keys[] = {FL_MIG_KEYS(NAME_OF)};

const char *fl_mig_key_name(int k)
{
    return name_of(mig_keys, N_OF(mig_keys), k);
}
