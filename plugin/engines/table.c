/*
 * table.c - the plugin's engines, one row each (engine.h).
 *
 * Promises: the one place an engine is listed; teardown order (PC
 * sampling before SASS metrics, which may use its aggregator: released
 * after it, walking backward).  Adding an engine: its folder beside the
 * others, its const fl_engine, one row here.  Also the defaults hook
 * the engines with a flat metric list share.
 */
#include "engine.h"

extern const fl_engine fl_pcs_engine, fl_pms_engine, fl_sass_engine, fl_rp_engine;

const fl_engine *const fl_engines[] = {
    &fl_pcs_engine,
    &fl_pms_engine,
    &fl_sass_engine,
    &fl_rp_engine,
};
const size_t fl_n_engines = sizeof fl_engines / sizeof fl_engines[0];

size_t fl_engine_flat_defaults(const char *const *set, size_t n, const char **names,
                               unsigned *slots, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap; i++) {
        slots[k] = (unsigned)i;
        names[k++] = set[i];
    }
    return k;
}
