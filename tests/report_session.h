/*
 * report_session.h - the "rich" session the report and export tests read
 * (tests/test_report.c, tests/test_export.c), written with the recorder's
 * own record writers (src/wire/records.c) into <dir>/<RS_SID>/.  Test code
 * only.
 *
 * What it holds (times in us after RS_T0, the job_start):
 *   2 devices (0 "Fake GPU A", 1 "Fake GPU B");
 *   kernels, all on device 0 (the writers' device_id column; details
 *   written before their batch, as the recorder does):
 *     gemm  x4  100 110 120 300 us  user_scope train|step, grid changes
 *     relu  x2   20  25 us          user_scope global
 *     copy  x1   50 us              user_scope null, occupancy null
 *     odd   x1   10 us              user_scope train, external id 77,
 *                                   a name with a comma and quotes
 *   memcpy HtoD 8 MiB / 100 us, DtoH 1 MiB / 50 us, DtoD 64 KiB / 10 us
 *          (on device 1; the others on device 0), kind 3 512 B / 5 us,
 *          PtoP 2 MiB / 20 us (0 -> 1);
 *   memset 4 KiB / 4 us on device 1, 1 MiB / 6 us on device 0;
 *   scopes: train 900..2900, step 950..1700 and 1900..2800, NVTX range
 *          "load data" 960..1800 (instance id 2^62 + 5);
 *   device metrics at 200, 2200, 4200 (device 1's util.gpu and one power
 *          reading null; device 0's energy counter at 200 and 4200);
 *   host metrics at 200, 2200 (CPU null), 4200;
 *   capture_capabilities at init, and at shutdown with user_scope
 *          fallback and memory_tracking skipped;
 *   shutdown at 5000.
 * The crashed variant has no final capture_capabilities and no shutdown,
 * a "train" scope begun at 4000 and never ended, and a torn last line in
 * device.log.
 *
 * rs_write_nodev() writes another session, with lines of the spec's
 * columns written by hand: batches without a device_id column (from
 * another writer, or ours before it wrote one) in a session with two
 * devices.  See there.
 */
#ifndef GP_TEST_REPORT_SESSION_H
#define GP_TEST_REPORT_SESSION_H

#include "check.h"
#include "abi/trace_abi.h"
#include "util/buf.h"
#include "wire/records.h"
#include "gpu_profile.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#define RS_SID "5e551011-aaaa-4bbb-8ccc-0123456789ab"
#define RS_T0 1760000000000000000ull
#define RS_US(x) (RS_T0 + (uint64_t)(x)*1000ull)
#define RS_MIB 1048576ull

static const fl_ident rs_ident = {777, "rich_app", RS_SID};

static fl_kernel_row rs_kernel(uint64_t t_us, uint64_t dur_us, uint32_t kid, uint32_t stream,
                               uint32_t corr, uint32_t gx, uint32_t regs, uint8_t has_details)
{
    fl_kernel_row k;
    memset(&k, 0, sizeof k);
    k.t_ns = RS_US(t_us);
    k.duration_ns = dur_us * 1000;
    k.kernel_id = kid;
    k.stream_id = stream;
    k.corr_id = corr;
    k.grid[0] = gx;
    k.grid[1] = 64;
    k.grid[2] = 1;
    k.block[0] = 16;
    k.block[1] = 16;
    k.block[2] = 1;
    k.num_regs = (uint16_t)regs;
    k.static_smem_bytes = 8192;
    k.dynamic_smem_bytes = 1024;
    k.has_details = has_details;
    return k;
}

static int rs_put(const char *dir, const char *name, const fl_buf *b, const char *tail)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int bad = b->len && fwrite(b->p, 1, b->len, f) != b->len;
    if (tail)
        bad |= fputs(tail, f) < 0;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

/* Writes the session into <base>/<RS_SID>/; its directory into out.  0 or -1. */
static int rs_write(const char *base, bool crashed, char *out, size_t cap)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", base, RS_SID);
    mkdir(base, 0755);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return -1;
    if (out)
        snprintf(out, cap, "%s", dir);
    fl_buf ch[3] = {{0}, {0}, {0}};

    /* ---- on every channel: job_start, capabilities, dictionaries */
    fl_device_live live[2] = {{0, "Fake GPU A", "GPU-aaaa", "NVIDIA", NULL, false, {0}},
                              {1, "Fake GPU B", "GPU-bbbb", "NVIDIA", NULL, false, {0}}};
    fl_device_static st[2] = {
        {0, "Fake GPU A", "GPU-aaaa", "NVIDIA", "Hopper", 9, 0, 52428800, 49152, 65536, 132, 32},
        {1, "Fake GPU B", "GPU-bbbb", "NVIDIA", "Hopper", 9, 0, 52428800, 49152, 65536, 132, 32}};
    fl_job_start js = {.log_path = "logs",
                       .ts_ns = RS_T0,
                       .hostname = "rich-host",
                       .ip_addr = "10.0.0.7",
                       .host = {FL_HOST_CPU | FL_HOST_RAM, 5.0, 2048, 16384},
                       .devices = live,
                       .n_devices = 2,
                       .gpu_static = st,
                       .n_gpu_static = 2,
                       .cuda_static = st,
                       .n_cuda_static = 2,
                       .session_kind = "trace",
                       .profiling_engine = "nvidia.trace"};
    fl_capability caps0[] = {
        {"kernel_events", true, FL_CAP_COLLECTED, "", "", ""},
        {"user_scope", true, FL_CAP_COLLECTED, "", "", ""},
        {"memory_tracking", false, FL_CAP_NOT_REQUESTED, "", "", ""},
    };
    fl_dict_entry kd[] = {{1, "gemm_kernel(float const*, float*)"},
                          {2, "relu(float*, int)"},
                          {3, "copy_kernel"},
                          {4, "odd, \"quoted\" name"}};
    fl_dict_entry sd[] = {{1, "train"}, {2, "step"}, {3, "load data"}};
    for (int c = 0; c < 3; c++) {
        fl_rec_job_start(&ch[c], &rs_ident, &js);
        fl_rec_capabilities(&ch[c], RS_SID, RS_T0, "nvidia.trace", "nvidia.trace", caps0, 3);
        fl_rec_dictionary(&ch[c], RS_SID, FL_DICT_KERNEL, kd, 4);
        fl_rec_dictionary(&ch[c], RS_SID, FL_DICT_SCOPE_NAME, sd, 3);
    }

    /* ---- device: kernels, details first (as recorder/trace_sink.c writes them) */
    fl_occupancy occ_gemm = {0.5, 1.0, 0.5, 1.0, 1.0, 8, FL_LIMIT_REGISTERS};
    fl_occupancy occ_relu = {1.0, 1.0, 1.0, 1.0, 1.0, 16, FL_LIMIT_WARPS};
    fl_occupancy occ_odd = {0.25, 1.0, 1.0, 0.25, 1.0, 2, FL_LIMIT_SHARED_MEM};
    fl_kernel_row b1[5] = {
        rs_kernel(1000, 100, 1, 7, 101, 64, 64, 1), rs_kernel(1150, 20, 2, 7, 102, 256, 16, 1),
        rs_kernel(1150, 50, 3, 13, 104, 32, 32, 1), rs_kernel(1200, 110, 1, 7, 103, 64, 64, 0),
        rs_kernel(1400, 120, 1, 7, 105, 64, 64, 0)};
    fl_rec_kernel_detail(&ch[0], &rs_ident, &b1[0], &occ_gemm, "train|step", NULL);
    fl_rec_kernel_detail(&ch[0], &rs_ident, &b1[1], &occ_relu, "global", NULL);
    fl_rec_kernel_detail(&ch[0], &rs_ident, &b1[2], NULL, NULL, NULL);
    fl_rec_kernel_batch(&ch[0], RS_SID, 1, b1, 5);
    fl_kernel_row b2[3] = {rs_kernel(2000, 300, 1, 7, 201, 128, 64, 1),
                           rs_kernel(2400, 10, 4, 14, 202, 8, 40, 1),
                           rs_kernel(2500, 25, 2, 7, 203, 256, 16, 0)};
    b2[1].external_kind = 2;
    b2[1].external_id = 77;
    fl_rec_kernel_detail(&ch[0], &rs_ident, &b2[0], &occ_gemm, "train|step", NULL);
    fl_rec_kernel_detail(&ch[0], &rs_ident, &b2[1], &occ_odd, "train", NULL);
    fl_rec_kernel_batch(&ch[0], RS_SID, 2, b2, 3);

    /* memcpy of each direction, one peer-to-peer (adds src/dst columns) */
    fl_memcpy_row mc[5];
    memset(mc, 0, sizeof mc);
    struct {
        uint64_t t, dur, bytes;
        uint8_t kind;
        uint32_t dev, src, dst;
        uint8_t peer;
    } mcs[5] = {{500, 100, 8 * RS_MIB, 1, 0, 0, 0, 0},
                {3000, 50, 1 * RS_MIB, 2, 0, 0, 0, 0},
                {3100, 10, 65536, 8, 1, 1, 1, 0},
                {3150, 5, 512, 3, 0, 0, 0, 0},
                {3200, 20, 2 * RS_MIB, 10, 0, 0, 1, 1}};
    for (int i = 0; i < 5; i++) {
        mc[i].t_ns = RS_US(mcs[i].t);
        mc[i].duration_ns = mcs[i].dur * 1000;
        mc[i].bytes = mcs[i].bytes;
        mc[i].copy_kind = mcs[i].kind;
        mc[i].stream_id = 7;
        mc[i].corr_id = (uint32_t)(300 + i);
        mc[i].device_id = mcs[i].dev;
        mc[i].src_device_id = mcs[i].src;
        mc[i].dst_device_id = mcs[i].dst;
        mc[i].peer = mcs[i].peer;
    }
    fl_rec_memcpy_batch(&ch[0], RS_SID, 1, mc, 5);
    fl_memset_row ms[2] = {{RS_US(3300), 4000, 4096, 21, 401, 1, 1, 0, 1},
                           {RS_US(3400), 6000, RS_MIB, 7, 402, 0, 1, 255, 1}};
    fl_rec_memset_event(&ch[0], &rs_ident, &ms[0]);
    fl_rec_memset_event(&ch[0], &rs_ident, &ms[1]);

    /* ---- scope: nested scopes and an NVTX range */
    uint64_t nv = (1ull << 62) + 5;
    fl_scope_row sr[9] = {
        {RS_US(900), 1, RS_US(900), 1, 0, FL_SCOPE_BEGIN, 0},
        {RS_US(950), 2, RS_US(950), 2, 1, FL_SCOPE_BEGIN, 0},
        {RS_US(960), nv, RS_US(960), 3, 0, FL_SCOPE_BEGIN, 0},
        {RS_US(1700), 2, RS_US(950), 2, 1, FL_SCOPE_END, 0},
        {RS_US(1800), nv, RS_US(960), 3, 0, FL_SCOPE_END, 0},
        {RS_US(1900), 3, RS_US(1900), 2, 1, FL_SCOPE_BEGIN, 0},
        {RS_US(2800), 3, RS_US(1900), 2, 1, FL_SCOPE_END, 0},
        {RS_US(2900), 1, RS_US(900), 1, 0, FL_SCOPE_END, 0},
        {RS_US(4000), 4, RS_US(4000), 1, 0, FL_SCOPE_BEGIN, 0},
    };
    fl_rec_scope_batch(&ch[1], RS_SID, 1, sr, crashed ? 9 : 8);

    /* ---- system: device and host metrics with nulls */
    fl_device_row dr[6];
    memset(dr, 0, sizeof dr);
    const uint32_t all = GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL |
                         GP_M_POWER | GP_M_TEMP | GP_M_CLOCK_SM;
    struct {
        uint64_t t;
        uint32_t dev, valid, ug, um;
        uint64_t used_mib;
        uint32_t power_mw;
        int32_t temp;
        uint32_t clk;
        uint64_t energy_mj;
    } dm[6] = {
        {200, 0, all | GP_M_ENERGY, 10, 5, 1024, 100000, 40, 1400, 5000000},
        {200, 1, all & ~GP_M_UTIL_GPU, 0, 3, 512, 90000, 38, 1300, 0},
        {2200, 0, all, 90, 60, 4096, 300000, 60, 1900, 0},
        {2200, 1, all & ~(GP_M_UTIL_GPU | GP_M_POWER), 0, 10, 2048, 0, 45, 1500, 0},
        {4200, 0, all | GP_M_ENERGY, 50, 30, 3072, 200000, 55, 1700, 5000800},
        {4200, 1, all & ~GP_M_UTIL_GPU, 0, 7, 1024, 110000, 41, 1350, 0},
    };
    for (int i = 0; i < 6; i++) {
        dr[i].t_ns = RS_US(dm[i].t);
        dr[i].device_id = dm[i].dev;
        gp_device_sample *s = &dr[i].s;
        s->valid = dm[i].valid;
        s->util_gpu_pct = dm[i].ug;
        s->util_mem_pct = dm[i].um;
        s->mem_used_bytes = dm[i].used_mib * RS_MIB;
        s->mem_total_bytes = 81920 * RS_MIB;
        s->power_mw = dm[i].power_mw;
        s->temp_c = dm[i].temp;
        s->clock_sm_mhz = dm[i].clk;
        s->energy_mj = dm[i].energy_mj;
    }
    fl_rec_device_batch(&ch[2], RS_SID, 1, dr, 6);
    fl_host_row hr[3] = {{RS_US(200), {FL_HOST_CPU | FL_HOST_RAM, 12.5, 2048, 16384}},
                         {RS_US(2200), {FL_HOST_RAM, 0, 3000, 16384}},
                         {RS_US(4200), {FL_HOST_CPU | FL_HOST_RAM, 50.0, 2500, 16384}}};
    fl_rec_host_batch(&ch[2], RS_SID, "rich-host", "10.0.0.7", 1, hr, 3);

    /* ---- the end */
    if (!crashed) {
        fl_capability caps1[] = {
            {"kernel_events", true, FL_CAP_COLLECTED, "", "", "8 kernels (5 details)"},
            {"user_scope", true, FL_CAP_FALLBACK, "", "cupti_subscriber_busy",
             "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another tool holds the callbacks"},
            {"memory_tracking", true, FL_CAP_SKIPPED, "", "needs_trace",
             "needs profiling_engine Trace or above"},
            {"pc_sampling", false, FL_CAP_NOT_REQUESTED, "", "", ""},
        };
        for (int c = 0; c < 3; c++) {
            fl_rec_capabilities(&ch[c], RS_SID, RS_US(4990), "nvidia.trace", "nvidia.trace", caps1,
                                4);
            fl_rec_shutdown(&ch[c], &rs_ident, RS_US(5000));
        }
    }
    int rc = 0;
    rc |= rs_put(dir, "device.log", &ch[0], crashed ? "{\"version\":1,\"type\":\"kernel_ev" : NULL);
    rc |= rs_put(dir, "scope.log", &ch[1], NULL);
    rc |= rs_put(dir, "system.log", &ch[2], NULL);
    for (int c = 0; c < 3; c++)
        fl_buf_free(&ch[c]);
    return rc;
}

/*
 * The "device not recorded" session, into <base>/<RS_SID>/ (its directory
 * into out; 0 or -1): device.log alone, the 2 devices of the rich session,
 * and (times in us after RS_T0)
 *   gemm  1000 + 100 us, stream 7  } a kernel_event_batch of the spec's
 *   relu  1050 + 100 us, stream 9  } ten columns: no device_id
 *   gemm  2000 +  40 us, stream 7, device 1 (our writer: device_id column)
 *   HtoD  3000 +  20 us, 1 MiB, stream 7: a memcpy_event_batch of the
 *         spec's six columns (no device_id, no src / dst)
 *   shutdown at 4000.
 * The first two and the copy do not say their device: "GPU ?".
 */
static int rs_write_nodev(const char *base, char *out, size_t cap)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", base, RS_SID);
    mkdir(base, 0755);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return -1;
    if (out)
        snprintf(out, cap, "%s", dir);
    fl_buf b = {0};
    fl_device_live live[2] = {{0, "Fake GPU A", "GPU-aaaa", "NVIDIA", NULL, false, {0}},
                              {1, "Fake GPU B", "GPU-bbbb", "NVIDIA", NULL, false, {0}}};
    fl_job_start js = {.log_path = "logs",
                       .ts_ns = RS_T0,
                       .hostname = "rich-host",
                       .ip_addr = "10.0.0.7",
                       .devices = live,
                       .n_devices = 2,
                       .session_kind = "trace",
                       .profiling_engine = "nvidia.trace"};
    fl_rec_job_start(&b, &rs_ident, &js);
    fl_dict_entry kd[] = {{1, "gemm_kernel(float const*, float*)"}, {2, "relu(float*, int)"}};
    fl_rec_dictionary(&b, RS_SID, FL_DICT_KERNEL, kd, 2);
    fl_buf_puts(&b, "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"" RS_SID
                    "\",\"batch_id\":1,\"base_time_ns\":1760000000001000000,\"columns\":"
                    "[\"dt_ns\",\"kernel_id\",\"stream_id\",\"duration_ns\",\"corr_id\","
                    "\"dyn_shared\",\"num_regs\",\"has_details\",\"external_kind\","
                    "\"external_id\"],\"rows\":[[0,1,7,100000,501,0,64,0,0,0],"
                    "[50000,2,9,100000,502,0,16,0,0,0]]}\n");
    fl_kernel_row k = rs_kernel(2000, 40, 1, 7, 503, 64, 64, 0);
    k.device_id = 1;
    fl_rec_kernel_batch(&b, RS_SID, 2, &k, 1);
    fl_buf_puts(&b, "{\"version\":1,\"type\":\"memcpy_event_batch\",\"session_id\":\"" RS_SID
                    "\",\"batch_id\":1,\"base_time_ns\":1760000000003000000,\"columns\":"
                    "[\"dt_ns\",\"stream_id\",\"duration_ns\",\"bytes\",\"copy_kind\","
                    "\"corr_id\"],\"rows\":[[0,7,20000,1048576,1,601]]}\n");
    fl_rec_shutdown(&b, &rs_ident, RS_US(4000));
    int rc = rs_put(dir, "device.log", &b, NULL);
    fl_buf_free(&b);
    return rc;
}

/* A fresh temporary directory under the test's binary dir (or /tmp). */
static int rs_tmpdir(char *out, size_t cap, const char *name)
{
    const char *bin = getenv("GP_TEST_BINARY_DIR");
    snprintf(out, cap, "%s/%s.XXXXXX", bin && *bin ? bin : "/tmp", name);
    return mkdtemp(out) ? 0 : -1;
}

#endif /* GP_TEST_REPORT_SESSION_H */
