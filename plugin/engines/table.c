/*
 * table.c - the plugin's engines, one row each (engine.h).
 *
 * Promises: the one place an engine is listed; teardown order (PC
 * sampling before SASS metrics, which may use its aggregator: released
 * after it, walking backward).  Adding an engine: its folder beside the
 * others, its const fl_engine, one row here.
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
