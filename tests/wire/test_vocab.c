/*
 * test_vocab.c - the wire vocabulary (src/wire/vocab.h) and its users: every
 * name maps to its id and back; the reader maps a batch's columns onto the
 * vocabulary's ids whatever their order; and every batch writer writes
 * exactly the vocabulary's type name, version and columns, so a column
 * renamed or reordered in the table changes what is written.
 */
#include "check.h"
#include "reader/read.h"
#include "util/buf.h"
#include "wire/records.h"
#include "wire/vocab.h"

#include <jansson.h>
#include <string.h>

static void test_names_round_trip(void)
{
    for (int t = FL_T_UNKNOWN + 1; t < FL_T_COUNT; t++) {
        const fl_type_info *ti = fl_type_get((fl_type)t);
        CHECK(ti->name[0] != '\0');
        CHECK_INT(fl_type_of(ti->name, strlen(ti->name)), t);
        CHECK(ti->channel <= FL_CH_ALL);
        if (ti->batch) {
            CHECK(ti->ncols > 0 && ti->ncols <= FL_MAX_COLS);
            CHECK_STR(ti->cols[ti->col_dt], "dt_ns");
            if (ti->col_duration >= 0)
                CHECK_STR(ti->cols[ti->col_duration], "duration_ns");
            for (size_t c = 0; c < ti->ncols; c++)
                CHECK(ti->cols[c] && ti->cols[c][0]);
        } else {
            CHECK_INT(ti->ncols, 0);
        }
    }
    CHECK_INT(fl_type_of("kernel_event_batch", 18), FL_T_KERNEL_EVENT_BATCH);
    CHECK_INT(fl_type_of("kernel_event_batch", 15), FL_T_UNKNOWN); /* a prefix */
    /* GPUFlight's pre-batch kernel_event is a type of its own */
    CHECK_INT(fl_type_of("kernel_event_batch", 12), FL_T_KERNEL_EVENT);
    CHECK_INT(fl_type_of("job_startx", 10), FL_T_UNKNOWN);
    CHECK_INT(fl_type_of("", 0), FL_T_UNKNOWN);
    CHECK_INT(fl_type_of(NULL, 0), FL_T_UNKNOWN);
    CHECK_STR(fl_type_name(FL_T_UNKNOWN), "");
    CHECK_STR(fl_type_name((fl_type)999), "");
    CHECK_STR(fl_type_name(FL_T_SCOPE_EVENT_BATCH), "scope_event_batch");
    CHECK_INT(fl_type_get(FL_T_SCOPE_EVENT_BATCH)->version, 3);
    CHECK_INT(fl_type_get(FL_T_SHUTDOWN)->version, 0);
    CHECK_INT(fl_type_get(FL_T_JOB_START)->channel, FL_CH_ALL);
    CHECK_INT(fl_type_get(FL_T_DEVICE_METRIC_BATCH)->channel, FL_CH_SYSTEM);

    CHECK_STR(fl_channel_name(FL_CH_DEVICE), "device");
    CHECK_STR(fl_channel_name(FL_CH_SYSTEM), "system");
    CHECK(fl_channel_name(FL_CH_COUNT) == NULL);
    CHECK(fl_channel_name(-1) == NULL);
    for (int d = 0; d < FL_DICT_COUNT; d++)
        CHECK_INT(fl_dict_of(fl_dict_name((fl_dict)d)), d);
    CHECK(fl_dict_name(FL_DICT_COUNT) == NULL);
    CHECK(fl_dict_name((fl_dict)-1) == NULL);
    CHECK_INT(fl_dict_of("nope_dict"), FL_DICT_COUNT);
    CHECK_INT(fl_dict_of(NULL), FL_DICT_COUNT);
    for (int s = 0; s < FL_CAP_COUNT; s++)
        CHECK_INT(fl_cap_status_of(fl_cap_status_name((fl_cap_status)s)), s);
    CHECK(fl_cap_status_name(FL_CAP_COUNT) == NULL);
    CHECK(fl_cap_status_name((fl_cap_status)-1) == NULL);
    CHECK_INT(fl_cap_status_of("Collected"), FL_CAP_COUNT);
    CHECK_STR(fl_mig_key_name(FL_MIG_PROFILE), "profile");
    CHECK(fl_mig_key_name(FL_MIG_KEY_COUNT) == NULL);
    CHECK(fl_mig_key_name(-1) == NULL);
    CHECK_INT(fl_cap_status_of(NULL), FL_CAP_COUNT);
    for (int e = GPUFL_ENGINE_MONITOR; e <= GPUFL_ENGINE_DEEP; e++) {
        gpufl_engine back;
        CHECK(fl_engine_of_wire(fl_engine_wire_name((gpufl_engine)e), &back));
        CHECK_INT(back, e);
    }
    CHECK_STR(fl_engine_wire_name(GPUFL_ENGINE_TRACE), "nvidia.trace");
    CHECK_STR(fl_engine_wire_name((gpufl_engine)42), "nvidia.monitor");
    CHECK(!fl_engine_of_wire("Trace", NULL));
}

static void test_column_map(void)
{
    /* The writer's order. */
    const fl_type_info *k = fl_type_get(FL_T_KERNEL_EVENT_BATCH);
    fl_batch b;
    memset(&b, 0, sizeof b);
    b.type = "kernel_event_batch";
    b.cols = k->cols;
    b.ncols = k->ncols;
    fl_batch_map_columns(&b);
    CHECK_INT(b.type_id, FL_T_KERNEL_EVENT_BATCH);
    for (int c = 0; c < FL_COL_KERNEL_COUNT; c++)
        CHECK_INT(fl_batch_colid(&b, c), c);
    CHECK_INT(fl_batch_time_col(&b, false), FL_COL_KERNEL_DT_NS);
    CHECK_INT(fl_batch_time_col(&b, true), FL_COL_KERNEL_DURATION_NS);

    /* Another writer's order, a column of its own, a duplicate, missing
     * columns (GPUFlight's ten columns have no device_id). */
    static const char *const other[] = {"duration_ns", "extra",   "dt_ns",      "kernel_id",
                                        "dt_ns",       "corr_id", "has_details"};
    b.cols = other;
    b.ncols = 7;
    fl_batch_map_columns(&b);
    CHECK_INT(b.type_id, FL_T_KERNEL_EVENT_BATCH);
    CHECK_INT(fl_batch_colid(&b, FL_COL_KERNEL_DURATION_NS), 0);
    CHECK_INT(fl_batch_colid(&b, FL_COL_KERNEL_DT_NS), 2);
    CHECK_INT(fl_batch_colid(&b, FL_COL_KERNEL_KERNEL_ID), 3);
    CHECK_INT(fl_batch_colid(&b, FL_COL_KERNEL_CORR_ID), 5);
    CHECK_INT(fl_batch_colid(&b, FL_COL_KERNEL_HAS_DETAILS), 6);
    CHECK_INT(fl_batch_colid(&b, FL_COL_KERNEL_DEVICE_ID), -1);
    CHECK_INT(fl_batch_colid(&b, FL_COL_KERNEL_STREAM_ID), -1);
    CHECK_INT(fl_batch_colid(&b, -1), -1);
    CHECK_INT(fl_batch_colid(&b, FL_MAX_COLS), -1);
    CHECK_INT(fl_batch_col(&b, "dt_ns"), 2);

    /* A type the vocabulary does not know: no ids, but its time columns
     * are still found by name. */
    b.type = "future_event_batch";
    fl_batch_map_columns(&b);
    CHECK_INT(b.type_id, FL_T_UNKNOWN);
    CHECK_INT(fl_batch_colid(&b, FL_COL_KERNEL_DT_NS), -1);
    CHECK_INT(fl_batch_time_col(&b, false), 2);
    CHECK_INT(fl_batch_time_col(&b, true), 0);
    /* A record type's name on a batch is not a batch type. */
    b.type = "job_start";
    fl_batch_map_columns(&b);
    CHECK_INT(b.type_id, FL_T_UNKNOWN);
}

/* The type, version and columns of the one line in b. */
static void check_written(fl_buf *b, fl_type t, size_t ncols_written)
{
    const fl_type_info *ti = fl_type_get(t);
    json_error_t e;
    json_t *j = b->p ? json_loads(b->p, 0, &e) : NULL;
    CHECK(j != NULL);
    if (!j)
        return;
    CHECK_STR(json_string_value(json_object_get(j, "type")), ti->name);
    CHECK_INT(json_integer_value(json_object_get(j, "version")), ti->version);
    json_t *cols = json_object_get(j, "columns");
    CHECK_INT(json_array_size(cols), ncols_written);
    for (size_t i = 0; i < json_array_size(cols) && i < ti->ncols; i++)
        CHECK_STR(json_string_value(json_array_get(cols, i)), ti->cols[i]);
    json_decref(j);
    fl_buf_reset(b);
}

static void test_writers_write_the_vocabulary(void)
{
    fl_buf b = {0};
    fl_kernel_row k = {.t_ns = 10, .duration_ns = 5, .kernel_id = 1};
    fl_rec_kernel_batch(&b, "s", 1, &k, 1);
    check_written(&b, FL_T_KERNEL_EVENT_BATCH, FL_COL_KERNEL_COUNT);
    fl_memcpy_row m = {.t_ns = 10, .bytes = 4};
    fl_rec_memcpy_batch(&b, "s", 1, &m, 1);
    check_written(&b, FL_T_MEMCPY_EVENT_BATCH, FL_COL_MEMCPY_SRC_DEVICE_ID);
    m.peer = 1;
    fl_rec_memcpy_batch(&b, "s", 1, &m, 1);
    check_written(&b, FL_T_MEMCPY_EVENT_BATCH, FL_COL_MEMCPY_COUNT);
    fl_device_row d = {.t_ns = 10};
    d.s.valid = GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_TEMP | GP_M_POWER | GP_M_MEM_USED |
                GP_M_MEM_TOTAL | GP_M_CLOCK_SM;
    fl_rec_device_batch(&b, "s", 1, &d, 1);
    check_written(&b, FL_T_DEVICE_METRIC_BATCH, FL_DEVMETRIC_BASE_COLS);
    fl_host_row h = {.t_ns = 10};
    fl_rec_host_batch(&b, "s", "host", "127.0.0.1", 1, &h, 1);
    check_written(&b, FL_T_HOST_METRIC_BATCH, FL_COL_HOSTMETRIC_COUNT);
    fl_scope_row sc = {.t_ns = 10, .name_id = 1};
    fl_rec_scope_batch(&b, "s", 1, &sc, 1);
    check_written(&b, FL_T_SCOPE_EVENT_BATCH, FL_COL_SCOPE_TID);
    fl_scope_event se = {.row = sc, .tid = 77};
    fl_rec_scope_events(&b, "s", 1, &se, 1);
    check_written(&b, FL_T_SCOPE_EVENT_BATCH, FL_COL_SCOPE_COUNT);
    fl_sync_row sy = {.t_ns = 10};
    fl_rec_sync_batch(&b, "s", 1, &sy, 1);
    check_written(&b, FL_T_SYNCHRONIZATION_EVENT_BATCH, FL_COL_SYNC_COUNT);
    fl_alloc_row a = {.t_ns = 10};
    fl_rec_alloc_batch(&b, "s", 1, &a, 1);
    check_written(&b, FL_T_MEMORY_ALLOC_EVENT_BATCH, FL_COL_ALLOC_COUNT);
    fl_graph_row g = {.t_ns = 10};
    fl_rec_graph_batch(&b, "s", 1, &g, 1);
    check_written(&b, FL_T_GRAPH_EVENT_BATCH, FL_COL_GRAPH_COUNT);
    fl_buf_free(&b);
}

int main(void)
{
    test_names_round_trip();
    test_column_map();
    test_writers_write_the_vocabulary();
    return check_done("test_vocab");
}
