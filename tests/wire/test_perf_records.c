/*
 * test_perf_records.c - the range profiler's records (src/wire/records.c:
 * perf_metric_event, kernel_perf_metric_event) byte for byte as GPUFlight
 * 1.3 writes them: the two lines below are copied from the sessions its
 * writer produced (the project's shared fixtures, gpufl-1.3,
 * uncompressed-windows: scope.1.log and device.1.log); the same values
 * through our writer must give the same bytes.  Then ours: "metrics" after
 * GPUFlight's keys, -1 for what was not collected, the bank-conflict
 * figures derived as GPUFlight derives them.
 */
#include "check.h"
#include "abi/trace_abi.h"
#include "util/buf.h"
#include "wire/records.h"

#include <math.h>
#include <string.h>

static const fl_ident ident = {4242, "gfnative", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"};

static const char fixture_scope[] =
    "{\"type\":\"perf_metric_event\",\"pid\":4242,\"app\":\"gfnative\",\"session_id\":"
    "\"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee\",\"name\":\"step\",\"start_ns\":1795600000000002000,"
    "\"end_ns\":1795600000000900000,\"device_id\":0,\"sm_throughput_pct\":71.5000,"
    "\"l1_hit_rate_pct\":40.0000,\"l2_hit_rate_pct\":80.0000,\"dram_read_bytes\":16777216,"
    "\"dram_write_bytes\":4194304,\"tensor_active_pct\":12.0000,\"user_scope\":\"train|step\","
    "\"scope_depth\":1}\n";

static const char fixture_kernel[] =
    "{\"type\":\"kernel_perf_metric_event\",\"pid\":4242,\"app\":\"gfnative\",\"session_id\":"
    "\"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee\",\"device_id\":0,\"range_index\":0,\"range_name\":"
    "\"0\",\"kernel_name\":\"gemm(float const*, float "
    "const*, float*)\",\"launch_ordinal\":2,\"sm_throughput_pct\":88.0000,\"l1_hit_rate_pct\":"
    "35.0000,\"l2_hit_rate_pct\":70.0000,\"dram_read_bytes\":1048576,\"dram_write_bytes\":524288,"
    "\"tensor_active_pct\":0.0000,\"achieved_occupancy_pct\":60.0000,"
    "\"shared_load_bank_conflicts\":-1,\"shared_store_bank_conflicts\":-1,"
    "\"shared_bank_conflicts\":-1,\"shared_wavefronts\":-1,\"shared_bank_conflict_overhead_pct\":"
    "-1.0000,\"shared_bank_conflict_nway\":-1.0000}\n";

static void none(double *k)
{
    for (int i = 0; i < FL_PV_COUNT; i++)
        k[i] = NAN;
}

/* The buffer as a C string. */
static const char *text(fl_buf *b)
{
    fl_buf_put(b, "", 1);
    b->len--;
    return b->p;
}

int main(void)
{
    fl_buf b = {0};
    fl_perf_row r = {.start_ns = 1795600000000002000ull,
                     .end_ns = 1795600000000900000ull,
                     .kind = FL_PERF_RANGE_SCOPE,
                     .name = "step",
                     .user_scope = "train|step",
                     .scope_depth = 1};
    none(r.known);
    r.known[FL_PV_SM_THROUGHPUT] = 71.5;
    r.known[FL_PV_L1_HIT] = 40;
    r.known[FL_PV_L2_HIT] = 80;
    r.known[FL_PV_DRAM_READ] = 16777216.7; /* GPUFlight truncates */
    r.known[FL_PV_DRAM_WRITE] = 4194304;
    r.known[FL_PV_TENSOR] = 12;
    fl_rec_perf_metric(&b, &ident, &r);
    CHECK_STR(text(&b), fixture_scope);

    fl_buf_reset(&b);
    fl_perf_row k = {.kind = FL_PERF_RANGE_KERNEL,
                     .range_index = 0,
                     .launch_ordinal = 2,
                     .name = "0", /* CUPTI's name of a kernel range, as GPUFlight writes it */
                     .kernel_name = "gemm(float const*, float const*, float*)"};
    none(k.known);
    k.known[FL_PV_SM_THROUGHPUT] = 88;
    k.known[FL_PV_L1_HIT] = 35;
    k.known[FL_PV_L2_HIT] = 70;
    k.known[FL_PV_DRAM_READ] = 1048576;
    k.known[FL_PV_DRAM_WRITE] = 524288;
    k.known[FL_PV_TENSOR] = 0;
    k.known[FL_PV_OCCUPANCY] = 60;
    fl_rec_kernel_perf_metric(&b, &ident, &k);
    CHECK_STR(text(&b), fixture_kernel);

    /* Ours: what was not collected is -1; the metrics object last; bank
     * conflicts: all = load + store, overhead 100*all/wavefronts, n-way
     * wavefronts/(wavefronts-all). */
    fl_buf_reset(&b);
    none(k.known);
    k.known[FL_PV_SHARED_LD_CONFLICTS] = 30;
    k.known[FL_PV_SHARED_ST_CONFLICTS] = 10;
    k.known[FL_PV_SHARED_WAVEFRONTS] = 200;
    const char *names[] = {"dram__throughput.avg.pct_of_peak_sustained_elapsed",
                           "sm__throughput.avg.pct_of_peak_sustained_elapsed"};
    double vals[] = {63.25, NAN};
    k.metric_names = names;
    k.metric_values = vals;
    k.n_metrics = 2;
    k.device_id = 1;
    k.name = "k\"q";
    k.kernel_name = NULL; /* not known: the range's name */
    fl_rec_kernel_perf_metric(&b, &ident, &k);
    CHECK_STR(text(&b),
              "{\"type\":\"kernel_perf_metric_event\",\"pid\":4242,\"app\":\"gfnative\","
              "\"session_id\":\"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee\",\"device_id\":1,"
              "\"range_index\":0,\"range_name\":\"k\\\"q\",\"kernel_name\":\"k\\\"q\","
              "\"launch_ordinal\":2,\"sm_throughput_pct\":-1.0000,\"l1_hit_rate_pct\":-1.0000,"
              "\"l2_hit_rate_pct\":-1.0000,\"dram_read_bytes\":-1,\"dram_write_bytes\":-1,"
              "\"tensor_active_pct\":-1.0000,\"achieved_occupancy_pct\":-1.0000,"
              "\"shared_load_bank_conflicts\":30,\"shared_store_bank_conflicts\":10,"
              "\"shared_bank_conflicts\":40,\"shared_wavefronts\":200,"
              "\"shared_bank_conflict_overhead_pct\":20.0000,\"shared_bank_conflict_nway\":1.2500,"
              "\"metrics\":{\"dram__throughput.avg.pct_of_peak_sustained_elapsed\":63.25,"
              "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\":null}}\n");
    fl_buf_free(&b);
    return check_done("test_perf_records");
}
