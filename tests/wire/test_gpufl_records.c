/*
 * test_gpufl_records.c - the flight recorder's record lines (src/wire/records.c).
 *
 * Every record type is written from fixed inputs and compared byte for byte
 * with tests/golden/gpufl/<type>.ndjson.  The goldens were checked by hand
 * against the wire-format spec; after a deliberate change regenerate them
 * with
 *
 *     GP_UPDATE_GOLDEN=1 ctest -R test_gpufl_records
 *
 * and review the diff.  Every line produced here is parsed by jansson
 * (duplicate keys rejected).  The example session in
 * tests/fixtures/gpufl-session/ is the reference for key order and batch
 * columns: its lines are reproduced byte for byte from the equivalent
 * inputs, and the key sequence of each record (jansson keeps insertion
 * order, checked first) and each batch's columns are compared with ours.
 * fl_buf itself (digits, growth, oom, NUL termination) is checked too.
 */
#include "check.h"
#include "util/buf.h"
#include "wire/records.h"
#include "gpu_profile.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>

#define SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"
#define MIB 1048576ull

static const fl_ident ident = {4242, "sample_app", SID};

/* -------------------------------------------------------------- helpers */

/* Parses every line of text (which must end in '\n') as one JSON object. */
static void check_lines_json(const char *text, const char *what)
{
    size_t len = strlen(text);
    CHECK(len > 0 && text[len - 1] == '\n');
    const char *p = text;
    int lines = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        json_error_t e;
        json_t *j = json_loadb(p, n, JSON_REJECT_DUPLICATES, &e);
        if (!j || !json_is_object(j)) {
            fprintf(stderr, "%s line %d is not a JSON object: %s (col %d)\n  %.*s\n", what,
                    lines + 1, j ? "not an object" : e.text, e.column, (int)n, p);
            CHECK(!"invalid JSON line");
        } else {
            CHECK(1);
        }
        json_decref(j);
        lines++;
        p = nl ? nl + 1 : p + n;
    }
    CHECK(lines > 0);
}

static json_t *parse_line(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    if (!j)
        fprintf(stderr, "cannot parse %s: %s\n", text, e.text);
    return j;
}

/* The keys of obj in their order, comma-joined (into buf). */
static const char *keys_of(const json_t *obj, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    if (!json_is_object(obj))
        return "(not an object)";
    for (void *it = json_object_iter((json_t *)obj); it;
         it = json_object_iter_next((json_t *)obj, it)) {
        int n = snprintf(buf + len, cap - len, "%s%s", len ? "," : "", json_object_iter_key(it));
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
    return buf;
}

#define CHECK_KEYS(obj_a, obj_b)                                                                   \
    do {                                                                                           \
        char ka_[2048], kb_[2048];                                                                 \
        CHECK_STR(keys_of((obj_a), ka_, sizeof ka_), keys_of((obj_b), kb_, sizeof kb_));           \
    } while (0)

static void golden(const char *file, const char *got)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s%s", "gpufl/", file);
    check_golden(rel, got, "test_gpufl_records");
}

/* Writes, validates and compares one golden; frees the buffer's text. */
static void finish(fl_buf *b, const char *file)
{
    CHECK(!b->oom);
    CHECK(b->p != NULL);
    if (!b->p)
        return;
    CHECK_U64(strlen(b->p), b->len);
    check_lines_json(b->p, file);
    golden(file, b->p);
    fl_buf_free(b);
}

/* ------------------------------------------------------------- inputs */

static gp_device_sample full_sample(void)
{
    gp_device_sample s;
    memset(&s, 0, sizeof s);
    s.valid = GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER |
              GP_M_ENERGY | GP_M_TEMP | GP_M_CLOCK_SM | GP_M_CLOCK_MEM | GP_M_THROTTLE |
              GP_M_PCIE_TX | GP_M_PCIE_RX;
    s.util_gpu_pct = 87;
    s.util_mem_pct = 41;
    s.mem_used_bytes = 12345678901ull;  /* 11773.7 MiB */
    s.mem_total_bytes = 81559ull * MIB; /* 81559 MiB */
    s.power_mw = 312500;
    s.energy_mj = 123456789;
    s.temp_c = 61;
    s.clock_sm_mhz = 1980;
    s.clock_mem_mhz = 2619;
    s.throttle_reasons = GP_THROTTLE_GPU_IDLE | GP_THROTTLE_SW_POWER_CAP;
    s.pcie_tx_kbps = 1000;
    s.pcie_rx_kbps = 2500;
    return s;
}

static fl_device_live live_dev0(void)
{
    fl_device_live d = {0,
                        "NVIDIA H100 80GB HBM3",
                        "GPU-5a6b7c8d-0000-1111-2222-333344445555",
                        "NVIDIA",
                        "00000000:19:00.0",
                        true,
                        full_sample()};
    return d;
}

/* A device the sampler has not read yet: whatever s holds must not show. */
static fl_device_live live_dev1(void)
{
    fl_device_live d = {1, "Fake \"quoted\" GPU", NULL, "NVIDIA", NULL, false, full_sample()};
    return d;
}

static fl_device_static static_full(void)
{
    fl_device_static d = {0,
                          "NVIDIA H100 80GB HBM3",
                          "GPU-5a6b7c8d-0000-1111-2222-333344445555",
                          "NVIDIA",
                          "Hopper",
                          9,
                          0,
                          52428800,
                          49152,
                          65536,
                          132,
                          32};
    return d;
}

static fl_device_static static_unknown(void)
{
    fl_device_static d = {1, "Unknown", NULL, NULL, NULL, -1, -1, -1, -1, -1, -1, -1};
    return d;
}

/* A MIG instance (device 2) of GPU 0; its compute instance id unknown. */
static const gp_mig_info mig_info = {
    1, 0, "GPU-5a6b7c8d-0000-1111-2222-333344445555", "NVIDIA H100 80GB HBM3", "1g.10gb", 10, -1};
static const gp_mig_info whole_gpu = {0, 0, "", "", "", -1, -1};

/* ------------------------------------------------------------- goldens */

static void golden_job_start(void)
{
    fl_device_live devs[2] = {live_dev0(), live_dev1()};
    fl_device_static gs[2] = {static_full(), static_unknown()};
    fl_device_static cs[1] = {static_full()};
    fl_job_start js;
    memset(&js, 0, sizeof js);
    js.log_path = "/var/log/gpufl/sample_app";
    js.ts_ns = 1760000000000000000ull;
    js.hostname = "node-7";
    js.ip_addr = "10.0.0.7";
    /* RAM known, CPU not (the first reading has no difference yet). */
    js.host.valid = FL_HOST_RAM;
    js.host.cpu_pct = 99.0;
    js.host.ram_used_mib = 2048;
    js.host.ram_total_mib = 16384;
    js.devices = devs;
    js.n_devices = 2;
    js.gpu_static = gs;
    js.n_gpu_static = 2;
    js.cuda_static = cs;
    js.n_cuda_static = 1;
    js.session_kind = "monitor";
    js.profiling_engine = NULL;

    fl_buf b = {0};
    fl_rec_job_start(&b, &ident, &js);
    /* Without an engine the key is left out, not null. */
    CHECK(b.p && strstr(b.p, "profiling_engine") == NULL);
    /* Without a run_id none of the run keys (GPUFlight's line as it was). */
    CHECK(b.p && strstr(b.p, "\"run_id\"") == NULL && strstr(b.p, "\"rank\"") == NULL);
    finish(&b, "job_start.ndjson");

    /* With one: every run key, rank 0 as 0, what is unknown null. */
    js.run = (fl_run_ident){.run_id = "r-1",
                            .rank_source = "RANK",
                            .rank = 0,
                            .have_rank = true,
                            .world_size = 2,
                            .have_world_size = true,
                            .mono_ns = 12345};
    fl_rec_job_start(&b, &ident, &js);
    CHECK(b.p &&
          strstr(b.p, ",\"run_id\":\"r-1\",\"rank\":0,\"local_rank\":null,"
                      "\"world_size\":2,\"rank_source\":\"RANK\",\"monotonic_ns\":12345}\n"));
    /* A rank source not known is null, like a time not read. */
    js.run.rank_source = NULL;
    js.run.mono_ns = 0;
    fl_buf_reset(&b);
    fl_rec_job_start(&b, &ident, &js);
    CHECK(b.p && strstr(b.p, ",\"rank_source\":null,\"monotonic_ns\":null}\n"));
    fl_buf_free(&b);
}

/* gpu_static_devices with a whole GPU (mig info given, is_mig 0: no key)
 * and a MIG instance (the "mig" object, a member not known null). */
static void golden_job_start_mig(void)
{
    fl_device_static gs[2] = {static_full(), static_unknown()};
    gs[0].mig = &whole_gpu;
    gs[1].id = 2;
    gs[1].name = "NVIDIA H100 80GB HBM3 MIG 1g.10gb";
    gs[1].uuid = "MIG-00000003-0000-0000-0000-000000000003";
    gs[1].mig = &mig_info;
    fl_job_start js;
    memset(&js, 0, sizeof js);
    js.log_path = "/var/log/gpufl/sample_app";
    js.ts_ns = 1760000000000000000ull;
    js.hostname = "node-7";
    js.gpu_static = gs;
    js.n_gpu_static = 2;
    js.session_kind = "monitor";
    fl_buf b = {0};
    fl_rec_job_start(&b, &ident, &js);
    json_t *rec = parse_line(b.p ? b.p : "");
    json_t *arr = json_object_get(rec, "gpu_static_devices");
    CHECK(json_object_get(json_array_get(arr, 0), "mig") == NULL);
    json_t *m = json_object_get(json_array_get(arr, 1), "mig");
    CHECK_STR(json_string_value(json_object_get(m, "profile")), "1g.10gb");
    CHECK_INT(json_integer_value(json_object_get(m, "gpu_instance_id")), 10);
    CHECK(json_is_null(json_object_get(m, "compute_instance_id")));
    CHECK_INT(json_integer_value(json_object_get(m, "parent_id")), 0);
    json_decref(rec);
    finish(&b, "job_start_mig.ndjson");
}

static void golden_shutdown(void)
{
    fl_buf b = {0};
    fl_rec_shutdown(&b, &ident, 1760000000003000000ull);
    finish(&b, "shutdown.ndjson");

    fl_rec_shutdown_child(&b, &ident, 1760000000003000000ull, 3, 0, false);
    fl_rec_shutdown_child(&b, &ident, 1760000000004000000ull, -1, 11, true);
    finish(&b, "shutdown_child.ndjson");
}

static void golden_system(void)
{
    fl_device_live devs[2] = {live_dev0(), live_dev1()};
    fl_host_sample host = {FL_HOST_CPU | FL_HOST_RAM, 12.3456789, 3000, 16384};
    fl_buf b = {0};
    fl_rec_system(&b, &ident, true, "warm-up phase", 1760000000000100000ull, &host, devs, 2);
    finish(&b, "system_start.ndjson");

    fl_host_sample none = {0, 0, 0, 0};
    fl_rec_system(&b, &ident, false, "warm-up phase", 1760000000000900000ull, &none, devs, 1);
    finish(&b, "system_stop.ndjson");
}

static void golden_dictionary(void)
{
    fl_dict_entry scope[] = {
        {1, "train_step"},
        {2, "say \"hi\" \\ path\n\ttab\x01 del\x7f"},
        {3, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"},
    };
    fl_dict_entry kern[] = {
        {1, "bad\xff\xfe"
            "end"},
        {7, "cut \xe2\x82"},
        {12, "over\xc0\xaflong"},
    };
    fl_buf b = {0};
    fl_rec_dictionary(&b, SID, FL_DICT_SCOPE_NAME, scope, 3);
    fl_rec_dictionary(&b, SID, FL_DICT_KERNEL, kern, 3);
    fl_rec_dictionary(&b, SID, FL_DICT_FUNCTION, NULL, 0);
    finish(&b, "dictionary_update.ndjson");
}

static void golden_capabilities(void)
{
    fl_capability caps[] = {
        {"kernel_events", true, FL_CAP_FALLBACK, "monitor", "cupti_unavailable",
         "CUPTI could not be loaded: libcupti.so.12: cannot open shared object file"},
        {"pc_sampling", false, FL_CAP_NOT_REQUESTED, NULL, NULL, NULL},
        {"host_metrics", true, FL_CAP_COLLECTED, "", NULL, NULL},
    };
    fl_buf b = {0};
    fl_rec_capabilities(&b, SID, 1760000000000000001ull, "nvidia.trace", "nvidia.monitor", caps, 3);
    finish(&b, "capture_capabilities.ndjson");
}

static fl_device_row base_row(uint64_t t, uint32_t dev, uint32_t util)
{
    fl_device_row r;
    memset(&r, 0, sizeof r);
    r.t_ns = t;
    r.device_id = dev;
    r.s = full_sample();
    r.s.util_gpu_pct = util;
    return r;
}

static void golden_device_batch(void)
{
    const uint64_t t0 = 1760000000000200000ull;
    fl_buf b = {0};
    uint32_t seen = 0; /* one session's columns, batch after batch */

    /* 1. Base columns only: energy, memory clock and PCIe are valid but
     *    zero everywhere, or not valid at all. */
    fl_device_row a[3] = {base_row(t0, 0, 10), base_row(t0 + 1000000, 0, 95),
                          base_row(t0 + 2000000, 1, 40)};
    for (int i = 0; i < 3; i++) {
        a[i].s.energy_mj = 0;
        a[i].s.clock_mem_mhz = 0;
        a[i].s.pcie_tx_kbps = a[i].s.pcie_rx_kbps = 0;
    }
    a[2].s.valid &= ~(uint32_t)(GP_M_ENERGY | GP_M_CLOCK_MEM);
    fl_rec_device_batch_cols(&b, SID, 1, a, 3, &seen);
    CHECK_U64(seen, (1u << FL_DEVMETRIC_BASE_COLS) - 1);

    /* 2. Every optional column; an invalid value in one row is null there. */
    fl_device_row o[3] = {base_row(t0 + 3000000, 0, 50), base_row(t0 + 4000000, 0, 60),
                          base_row(t0 + 5000000, 1, 70)};
    o[1].s.valid &= ~(uint32_t)(GP_M_ENERGY | GP_M_PCIE_RX);
    o[2].s.valid &= ~(uint32_t)GP_M_CLOCK_MEM;
    o[2].s.energy_mj = 9;
    fl_rec_device_batch_cols(&b, SID, 2, o, 3, &seen);

    /* 3. Invalid metrics are null, never 0; a row older than the base has
     *    dt 0; every column the session has seen stays, null where this
     *    batch has no value. */
    fl_device_row z[3] = {base_row(t0 + 7000000, 0, 0), base_row(t0 + 6000000, 0, 0),
                          base_row(t0 + 8000000, 1, 0)};
    z[0].s.valid = GP_M_UTIL_GPU | GP_M_CLOCK_MEM;
    z[1].s.valid = 0;
    z[2].s.valid = GP_M_TEMP | GP_M_MEM_TOTAL | GP_M_PCIE_TX;
    z[2].s.temp_c = -5;
    fl_rec_device_batch_cols(&b, SID, 3, z, 3, &seen);

    /* 4. The same rows in a session that has seen nothing yet: only the
     *    columns some row has a value for (no all-null column). */
    uint32_t fresh = 0;
    fl_rec_device_batch_cols(&b, SID, 4, z, 3, &fresh);
    CHECK_U64(fresh, 1u << FL_COL_DEVMETRIC_DT_NS | 1u << FL_COL_DEVMETRIC_DEVICE_ID |
                         1u << FL_COL_DEVMETRIC_GPU_UTIL | 1u << FL_COL_DEVMETRIC_TEMP_C |
                         1u << FL_COL_DEVMETRIC_TOTAL_MIB | 1u << FL_COL_DEVMETRIC_CLOCK_MEM);
    /* 5. That session's next batch: power appears, and what it had stays. */
    fl_device_row p = base_row(t0 + 9000000, 0, 33);
    p.s.valid = GP_M_POWER;
    fl_rec_device_batch_cols(&b, SID, 5, &p, 1, &fresh);
    /* 6. GPM extension columns in a fresh session: percent x 100 and
     *    bytes/s, rounded; a metric missing in one row is null there; a
     *    GPM metric no row has gets no column. */
    fl_device_row g[2] = {base_row(t0 + 10000000, 0, 90), base_row(t0 + 11000000, 0, 91)};
    uint32_t gseen = 0;
    for (int i = 0; i < 2; i++) {
        g[i].s.valid = GP_M_UTIL_GPU | GP_M_GPM(GP_GPM_SM_ACTIVE) | GP_M_GPM(GP_GPM_PCIE_TX) |
                       GP_M_GPM(GP_GPM_NVLINK_RX);
        g[i].s.gpm[GP_GPM_SM_ACTIVE] = 38.256 + i;
        g[i].s.gpm[GP_GPM_PCIE_TX] = 1048576000.4;
        g[i].s.gpm[GP_GPM_NVLINK_RX] = 0; /* reported as 0: a real 0 */
    }
    g[0].s.valid |= GP_M_GPM(GP_GPM_TENSOR_ACTIVE);
    g[0].s.gpm[GP_GPM_TENSOR_ACTIVE] = 12.5;
    fl_rec_device_batch_cols(&b, SID, 6, g, 2, &gseen);
    CHECK_U64(gseen, 1u << FL_COL_DEVMETRIC_DT_NS | 1u << FL_COL_DEVMETRIC_DEVICE_ID |
                         1u << FL_COL_DEVMETRIC_GPU_UTIL | 1u << FL_COL_DEVMETRIC_SM_ACTIVE |
                         1u << FL_COL_DEVMETRIC_TENSOR_ACTIVE | 1u << FL_COL_DEVMETRIC_GPM_PCIE_TX |
                         1u << FL_COL_DEVMETRIC_NVLINK_RX);
    finish(&b, "device_metric_batch.ndjson");
}

static void golden_host_batch(void)
{
    const uint64_t t0 = 1760000000000200000ull;
    fl_host_row r[5] = {
        {t0, {FL_HOST_CPU | FL_HOST_RAM, 12.5, 2048, 16384}},
        {t0 + 1000000, {FL_HOST_RAM, 55.0, 2100, 16384}}, /* no cpu */
        {t0 + 2000000, {FL_HOST_CPU, 87.996, 0, 0}},      /* no RAM */
        {t0 + 3000000, {FL_HOST_CPU | FL_HOST_RAM, 100.0, 2712, 16384}},
        {t0 + 4000000, {FL_HOST_CPU | FL_HOST_RAM, 0.004, 2712, 16384}},
    };
    fl_buf b = {0};
    fl_rec_host_batch(&b, SID, "node-7", "10.0.0.7", 4, r, 5);
    finish(&b, "host_metric_batch.ndjson");
}

static void golden_scope_batch(void)
{
    const uint64_t t0 = 1760000000000900000ull;
    fl_scope_row r[5] = {
        {t0, 1, t0, 1, 0, FL_SCOPE_BEGIN, 0},
        {t0 + 100, 2, t0 + 100, 2, 1, FL_SCOPE_BEGIN, 0},
        {t0 + 900, 2, t0 + 100, 2, 1, FL_SCOPE_END, 0},
        {t0 - 50, 3, t0 - 50, 3, 0, FL_SCOPE_BEGIN, 0}, /* late: dt 0 */
        {t0 + 1300000, 9223372036854775807ull, t0, 1, 65535, FL_SCOPE_END, 0},
    };
    fl_buf b = {0};
    fl_rec_scope_batch(&b, SID, 1, r, 5);
    /* With the threads: our tid column after the spec's eight. */
    fl_scope_event e[3] = {
        {.row = r[0], .tid = 4242}, {.row = r[1], .tid = 4243}, {.row = r[2], .tid = 4294967295u}};
    fl_rec_scope_events(&b, SID, 2, e, 3);
    finish(&b, "scope_event_batch.ndjson");
}

/* -------------------------------------------------- semantics (no golden) */

static json_t *one_device_job_start(const fl_device_live *dev)
{
    fl_job_start js;
    memset(&js, 0, sizeof js);
    js.devices = dev;
    js.n_devices = 1;
    js.session_kind = "monitor";
    fl_buf b = {0};
    fl_rec_job_start(&b, &ident, &js);
    json_t *j = b.p ? parse_line(b.p) : NULL;
    fl_buf_free(&b);
    CHECK(j != NULL);
    return j;
}

static bool is_null_at(json_t *dev, const char *key)
{
    return json_is_null(json_object_get(dev, key));
}

static long long int_at(json_t *dev, const char *key)
{
    json_t *v = json_object_get(dev, key);
    CHECK(json_is_integer(v));
    return (long long)json_integer_value(v);
}

static void check_live_device_rules(void)
{
    fl_device_live d = live_dev0();

    /* used without total: free unknown. */
    d.s.valid = GP_M_MEM_USED | GP_M_THROTTLE | GP_M_PCIE_RX;
    d.s.throttle_reasons = GP_THROTTLE_HW_THERMAL;
    json_t *j = one_device_job_start(&d);
    json_t *dev = json_array_get(json_object_get(j, "devices"), 0);
    CHECK_INT(int_at(dev, "used_mib"), 11773);
    CHECK(is_null_at(dev, "free_mib"));
    CHECK(is_null_at(dev, "total_mib"));
    CHECK_INT(int_at(dev, "throttle_pwr"), 0);
    CHECK_INT(int_at(dev, "throttle_therm"), 1);
    CHECK_INT(int_at(dev, "pcie_rx_bw_bps"), 2500 * 1024);
    CHECK(is_null_at(dev, "pcie_tx_bw_bps"));
    CHECK(is_null_at(dev, "clk_gfx_mhz"));
    CHECK(is_null_at(dev, "util_gpu_pct"));
    json_decref(j);

    /* Each power reason alone counts; no GP_M_THROTTLE: both null. */
    const uint64_t pwr[] = {GP_THROTTLE_SW_POWER_CAP, GP_THROTTLE_HW_POWER_BRAKE,
                            GP_THROTTLE_HW_SLOWDOWN};
    for (int i = 0; i < 3; i++) {
        d.s.valid = GP_M_THROTTLE;
        d.s.throttle_reasons = pwr[i];
        j = one_device_job_start(&d);
        dev = json_array_get(json_object_get(j, "devices"), 0);
        CHECK_INT(int_at(dev, "throttle_pwr"), 1);
        CHECK_INT(int_at(dev, "throttle_therm"), 0);
        json_decref(j);
    }
    d.s.throttle_reasons = GP_THROTTLE_SW_THERMAL | GP_THROTTLE_SYNC_BOOST;
    j = one_device_job_start(&d);
    dev = json_array_get(json_object_get(j, "devices"), 0);
    CHECK_INT(int_at(dev, "throttle_pwr"), 0);
    CHECK_INT(int_at(dev, "throttle_therm"), 1);
    json_decref(j);
    d.s.valid = GP_M_UTIL_GPU;
    j = one_device_job_start(&d);
    dev = json_array_get(json_object_get(j, "devices"), 0);
    CHECK(is_null_at(dev, "throttle_pwr"));
    CHECK(is_null_at(dev, "throttle_therm"));
    CHECK_INT(int_at(dev, "util_gpu_pct"), 87);
    json_decref(j);

    /* free = total - used, in bytes, then rounded down; never negative. */
    d.s.valid = GP_M_MEM_USED | GP_M_MEM_TOTAL;
    j = one_device_job_start(&d);
    dev = json_array_get(json_object_get(j, "devices"), 0);
    CHECK_INT(int_at(dev, "free_mib"), (81559ull * MIB - 12345678901ull) / MIB);
    json_decref(j);
    d.s.mem_used_bytes = d.s.mem_total_bytes + 1;
    j = one_device_job_start(&d);
    dev = json_array_get(json_object_get(j, "devices"), 0);
    CHECK_INT(int_at(dev, "free_mib"), 0);
    json_decref(j);
}

static void check_batch_rules(void)
{
    fl_buf b = {0};

    /* No rows: nothing at all. */
    fl_rec_device_batch(&b, SID, 1, NULL, 0);
    fl_rec_host_batch(&b, SID, "h", "1.2.3.4", 1, NULL, 0);
    fl_rec_scope_batch(&b, SID, 1, NULL, 0);
    fl_device_row dr = base_row(5, 0, 1);
    fl_rec_device_batch(&b, SID, 1, &dr, 0);
    CHECK_U64(b.len, 0);

    /* PCIe in one direction only: the sum is unknown, so no column. */
    dr.s.valid = GP_M_PCIE_TX | GP_M_UTIL_GPU;
    dr.s.pcie_tx_kbps = 77;
    fl_rec_device_batch(&b, SID, 1, &dr, 1);
    CHECK(b.p && strstr(b.p, "pcie_bw_bps") == NULL);
    CHECK(b.p && strstr(b.p, "\"base_time_ns\":5,") != NULL);
    fl_buf_reset(&b);

    /* A NaN cpu is null, not a crash or a garbage number. */
    fl_host_row hr = {10, {FL_HOST_CPU, NAN, 0, 0}};
    fl_rec_host_batch(&b, SID, NULL, NULL, 1, &hr, 1);
    CHECK(b.p && strstr(b.p, "\"rows\":[[0,null,null,null]]") != NULL);
    CHECK(b.p && strstr(b.p, "\"hostname\":null,\"ip_addr\":null") != NULL);
    fl_buf_reset(&b);
    fl_host_sample hs = {FL_HOST_CPU, INFINITY, 0, 0};
    fl_rec_system(&b, &ident, true, "x", 1, &hs, NULL, 0);
    CHECK(b.p && strstr(b.p, "\"cpu_pct\":null") != NULL);
    fl_buf_reset(&b);
    fl_rec_system(&b, &ident, false, "x", 1, NULL, NULL, 0);
    CHECK(b.p && strstr(b.p, "\"host\":{\"cpu_pct\":null,\"ram_used_mib\":null,"
                             "\"ram_total_mib\":null},\"devices\":[]}\n") != NULL);
    fl_buf_reset(&b);

    /* A large batch: the buffer grows, the line stays one valid object. */
    enum { N = 50000 };
    fl_device_row *rows = calloc(N, sizeof *rows);
    CHECK(rows != NULL);
    if (rows) {
        for (size_t i = 0; i < N; i++)
            rows[i] =
                base_row(1000000000ull + i * 1000000ull, (uint32_t)(i % 8), (uint32_t)i % 101);
        fl_rec_device_batch(&b, SID, 99, rows, N);
        CHECK(!b.oom);
        json_t *j = b.p ? parse_line(b.p) : NULL;
        CHECK(j != NULL);
        json_t *r = json_object_get(j, "rows");
        CHECK_U64(json_array_size(r), N);
        json_t *last = json_array_get(r, N - 1);
        CHECK_INT(json_integer_value(json_array_get(last, 0)), (long long)(N - 1) * 1000000);
        CHECK_INT(json_array_size(last), 12);
        CHECK_INT(json_integer_value(json_array_get(last, 9)), 123456789000ll);
        CHECK_INT(json_integer_value(json_array_get(last, 11)), (1000 + 2500) * 1024);
        json_decref(j);
        free(rows);
    }
    fl_buf_free(&b);
}

static void check_buf(void)
{
    fl_buf b = {0};
    fl_buf_u64(&b, 0);
    fl_buf_puts(&b, " ");
    fl_buf_u64(&b, UINT64_MAX);
    fl_buf_puts(&b, " ");
    fl_buf_i64(&b, INT64_MIN);
    fl_buf_puts(&b, " ");
    fl_buf_i64(&b, -1);
    fl_buf_puts(&b, " ");
    fl_buf_i64(&b, INT64_MAX);
    fl_buf_puts(&b, " ");
    fl_buf_u64(&b, 1000000000000000000ull);
    fl_buf_puts(&b, " ");
    fl_buf_str(&b, NULL);
    fl_buf_puts(&b, " ");
    fl_buf_str(&b, "a\"b\\c");
    fl_buf_printf(&b, " %d-%s", 42, "x");
    CHECK_STR(b.p, "0 18446744073709551615 -9223372036854775808 -1 9223372036854775807 "
                   "1000000000000000000 null \"a\\\"b\\\\c\" 42-x");
    CHECK_U64(strlen(b.p), b.len);

    /* printf that does not fit the current capacity. */
    size_t cap = b.cap;
    char big[3000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    fl_buf_reset(&b);
    CHECK_U64(b.len, 0);
    CHECK_U64(b.cap, cap); /* reset keeps the memory */
    CHECK_STR(b.p, "");
    fl_buf_printf(&b, "<%s>", big);
    CHECK_U64(b.len, sizeof big + 1);
    CHECK(b.p && b.p[0] == '<' && b.p[b.len - 1] == '>' && b.p[b.len] == '\0');
    fl_buf_put(&b, "", 0);
    CHECK_U64(b.len, sizeof big + 1);
    fl_buf_free(&b);
    CHECK(b.p == NULL && b.len == 0 && b.cap == 0);
    fl_buf_free(&b); /* idempotent */

    /* Doubling: one byte at a time, the capacity is always 256 * 2^k. */
    size_t reallocs = 0, last_cap = 0;
    for (int i = 0; i < 100000; i++) {
        fl_buf_put(&b, "x", 1);
        if (b.cap != last_cap) {
            reallocs++;
            last_cap = b.cap;
        }
    }
    CHECK_U64(b.len, 100000);
    CHECK(b.cap >= b.len + 1);
    CHECK((b.cap & (b.cap - 1)) == 0 && b.cap % 256 == 0);
    CHECK(reallocs <= 10);

    /* After an allocation failure appends are ignored until reset. */
    size_t len = b.len;
    b.oom = true;
    fl_buf_puts(&b, "more");
    fl_buf_u64(&b, 7);
    fl_buf_i64(&b, -7);
    fl_buf_str(&b, "s");
    fl_buf_printf(&b, "%d", 5);
    fl_rec_shutdown(&b, &ident, 1);
    CHECK_U64(b.len, len);
    fl_buf_reset(&b);
    CHECK(!b.oom);
    fl_buf_u64(&b, 7);
    CHECK_STR(b.p, "7");
    fl_buf_free(&b);
}

/* ----------------------------------------------- the example session */

static json_t *fixture_lines[64];
static size_t n_fixture_lines;
static size_t n_fixture_files;

static void load_fixture(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fixtures/gpufl-session", check_env("GP_TEST_SOURCE_DIR"));
    DIR *top = opendir(dir);
    CHECK(top != NULL);
    if (!top)
        return;
    struct dirent *s;
    while ((s = readdir(top)) != NULL) {
        if (s->d_name[0] == '.')
            continue;
        char sdir[1536];
        snprintf(sdir, sizeof sdir, "%s/%s", dir, s->d_name);
        DIR *sd = opendir(sdir);
        if (!sd)
            continue;
        struct dirent *f;
        while ((f = readdir(sd)) != NULL) {
            size_t fl = strlen(f->d_name);
            if (fl < 5 || strcmp(f->d_name + fl - 4, ".log") != 0)
                continue;
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", sdir, f->d_name);
            char *text = check_read_file(path, NULL);
            CHECK(text != NULL);
            if (!text)
                continue;
            n_fixture_files++;
            for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                json_t *j = parse_line(line);
                CHECK(j != NULL);
                if (j && n_fixture_lines < sizeof fixture_lines / sizeof fixture_lines[0])
                    fixture_lines[n_fixture_lines++] = j;
                else
                    json_decref(j);
            }
            free(text);
        }
        closedir(sd);
    }
    closedir(top);
    CHECK_INT(n_fixture_files, 3);
}

/* Our lines written from the inputs the example session describes. */
static void write_fixture_equivalents(fl_buf *out, const char *type)
{
    const uint64_t ts0 = 1760000000000000000ull;
    if (strcmp(type, "job_start") == 0) {
        fl_device_static st = {0, "Fake GPU", "GPU-0", "NVIDIA", "Hopper", 9,
                               0, 52428800,   49152,   65536,    132,      32};
        fl_job_start js;
        memset(&js, 0, sizeof js);
        js.log_path = "logs";
        js.ts_ns = ts0;
        js.hostname = "host0";
        js.ip_addr = "127.0.0.1";
        js.host = (fl_host_sample){FL_HOST_CPU | FL_HOST_RAM, 3.5, 2048, 16384};
        js.gpu_static = &st;
        js.n_gpu_static = 1;
        js.cuda_static = &st;
        js.n_cuda_static = 1;
        js.session_kind = "trace";
        js.profiling_engine = "nvidia.trace";
        fl_rec_job_start(out, &ident, &js);
    } else if (strcmp(type, "capture_capabilities") == 0) {
        fl_capability caps[] = {{"kernel_events", true, FL_CAP_COLLECTED, "", "", ""},
                                {"pc_sampling", false, FL_CAP_NOT_REQUESTED, NULL, NULL, NULL}};
        fl_rec_capabilities(out, SID, ts0 + 2900000, "nvidia.trace", "nvidia.trace", caps, 2);
    } else if (strcmp(type, "shutdown") == 0) {
        fl_rec_shutdown(out, &ident, ts0 + 3000000);
    } else if (strcmp(type, "device_metric_batch") == 0) {
        static const uint32_t v[3][8] = {{10, 5, 40, 90000, 1024, 81559, 1410},
                                         {95, 60, 55, 310000, 3072, 81559, 1980},
                                         {40, 20, 50, 150000, 3072, 81559, 1755}};
        fl_device_row r[3];
        memset(r, 0, sizeof r);
        for (int i = 0; i < 3; i++) {
            r[i].t_ns = ts0 + 200000 + (uint64_t)i * 1000000;
            r[i].s.valid = GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_TEMP | GP_M_POWER | GP_M_MEM_USED |
                           GP_M_MEM_TOTAL | GP_M_CLOCK_SM;
            r[i].s.util_gpu_pct = v[i][0];
            r[i].s.util_mem_pct = v[i][1];
            r[i].s.temp_c = (int32_t)v[i][2];
            r[i].s.power_mw = v[i][3];
            r[i].s.mem_used_bytes = v[i][4] * MIB + 12345; /* rounded down */
            r[i].s.mem_total_bytes = v[i][5] * MIB;
            r[i].s.clock_sm_mhz = v[i][6];
        }
        fl_rec_device_batch(out, SID, 1, r, 3);
    } else if (strcmp(type, "host_metric_batch") == 0) {
        fl_host_row r[2] = {{ts0 + 200000, {FL_HOST_CPU | FL_HOST_RAM, 12.5, 2048, 16384}},
                            {ts0 + 1200000, {FL_HOST_CPU | FL_HOST_RAM, 88.0, 2100, 16384}}};
        fl_rec_host_batch(out, SID, "host0", "127.0.0.1", 1, r, 2);
    } else if (strcmp(type, "scope_event_batch") == 0) {
        const uint64_t t = ts0 + 900000;
        fl_scope_row r[2] = {{t, 1, t, 1, 0, FL_SCOPE_BEGIN, 0},
                             {t + 1300000, 1, t, 1, 0, FL_SCOPE_END, 0}};
        fl_rec_scope_batch(out, SID, 1, r, 2);
    }
}

/* Whether ours (one line, newline included) is byte-equal to the fixture's
 * line of the same type, read raw from the file. */
static void check_fixture_bytes(const char *type, const char *ours)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fixtures/gpufl-session/" SID, check_env("GP_TEST_SOURCE_DIR"));
    static const char *const logs[] = {"device.log", "scope.log", "system.log"};
    char needle[128];
    snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
    int found = 0;
    for (size_t k = 0; k < 3; k++) {
        char path[1536];
        snprintf(path, sizeof path, "%s/%s", dir, logs[k]);
        char *text = check_read_file(path, NULL);
        if (!text)
            continue;
        for (char *line = text; *line;) {
            char *nl = strchr(line, '\n');
            size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
            if (memmem(line, n, needle, strlen(needle))) {
                found++;
                if (n != strlen(ours) || memcmp(line, ours, n) != 0) {
                    fprintf(stderr,
                            "%s (%s) differs from the fixture:\n  ours:    %s  fixture: %.*s", type,
                            logs[k], ours, (int)n, line);
                    CHECK(!"fixture line mismatch");
                } else {
                    CHECK(1);
                }
            }
            line += n;
        }
        free(text);
    }
    CHECK(found > 0);
}

static void check_against_fixture(void)
{
    /* Key order is compared through jansson's iteration order: make sure
     * it really is the document's order before relying on it. */
    json_t *probe = parse_line("{\"z\":1,\"a\":2,\"m\":3,\"b\":4}");
    char kb[64];
    CHECK_STR(keys_of(probe, kb, sizeof kb), "z,a,m,b");
    json_decref(probe);

    load_fixture();
    CHECK(n_fixture_lines >= 15);

    static const char *const reproduced[] = {"job_start",         "capture_capabilities",
                                             "shutdown",          "device_metric_batch",
                                             "host_metric_batch", "scope_event_batch"};
    for (size_t k = 0; k < sizeof reproduced / sizeof reproduced[0]; k++) {
        fl_buf b = {0};
        write_fixture_equivalents(&b, reproduced[k]);
        CHECK(b.p != NULL);
        if (b.p)
            check_fixture_bytes(reproduced[k], b.p);
        fl_buf_free(&b);
    }

    int seen_batches = 0, seen_records = 0;
    for (size_t i = 0; i < n_fixture_lines; i++) {
        json_t *fx = fixture_lines[i];
        const char *type = json_string_value(json_object_get(fx, "type"));
        CHECK(type != NULL);
        if (!type)
            continue;
        /* Every line of the session belongs to it. */
        CHECK_STR(json_string_value(json_object_get(fx, "session_id")), SID);

        fl_buf b = {0};
        if (strcmp(type, "dictionary_update") == 0) {
            /* The fixture carries several dictionaries in one line, we
             * one per line: compare the envelope and each dictionary. */
            char kf[1024];
            keys_of(fx, kf, sizeof kf);
            CHECK(strncmp(kf, "version,type,session_id,", 24) == 0);
            void *it = json_object_iter(fx);
            for (int skip = 0; skip < 3 && it; skip++)
                it = json_object_iter_next(fx, it);
            for (; it; it = json_object_iter_next(fx, it)) {
                const char *dict = json_object_iter_key(it);
                json_t *fd = json_object_iter_value(it);
                fl_dict_entry e[16];
                size_t n = 0;
                const char *id;
                json_t *name;
                json_object_foreach(fd, id, name)
                {
                    if (n < 16)
                        e[n++] = (fl_dict_entry){(uint32_t)strtoul(id, NULL, 10),
                                                 json_string_value(name)};
                }
                fl_buf_reset(&b);
                CHECK(fl_dict_of(dict) != FL_DICT_COUNT);
                fl_rec_dictionary(&b, SID, fl_dict_of(dict), e, n);
                json_t *ours = b.p ? parse_line(b.p) : NULL;
                char ko[256], want[256];
                snprintf(want, sizeof want, "version,type,session_id,%s", dict);
                CHECK_STR(keys_of(ours, ko, sizeof ko), want);
                CHECK(json_equal(json_object_get(ours, dict), fd));
                CHECK(json_equal(json_object_get(ours, "version"), json_object_get(fx, "version")));
                CHECK_KEYS(json_object_get(ours, dict), fd);
                json_decref(ours);
            }
            seen_records++;
            fl_buf_free(&b);
            continue;
        }
        write_fixture_equivalents(&b, type);
        if (!b.p) {
            /* kernel_event_batch, memcpy_event_batch, kernel_detail: a
             * later engine's records, not written by this module. */
            continue;
        }
        json_t *ours = parse_line(b.p);
        CHECK(ours != NULL);
        CHECK_KEYS(ours, fx);
        if (strstr(type, "_batch")) {
            seen_batches++;
            CHECK(json_equal(json_object_get(ours, "columns"), json_object_get(fx, "columns")));
            CHECK(json_equal(json_object_get(ours, "version"), json_object_get(fx, "version")));
        } else {
            seen_records++;
        }
        if (strcmp(type, "job_start") == 0) {
            CHECK_KEYS(json_object_get(ours, "host"), json_object_get(fx, "host"));
            CHECK_KEYS(json_array_get(json_object_get(ours, "gpu_static_devices"), 0),
                       json_array_get(json_object_get(fx, "gpu_static_devices"), 0));
            CHECK_KEYS(json_array_get(json_object_get(ours, "cuda_static_devices"), 0),
                       json_array_get(json_object_get(fx, "cuda_static_devices"), 0));
            CHECK(json_equal(ours, fx));
        } else if (strcmp(type, "capture_capabilities") == 0) {
            json_t *oc = json_object_get(ours, "capabilities");
            json_t *fc = json_object_get(fx, "capabilities");
            CHECK_INT(json_array_size(oc), json_array_size(fc));
            for (size_t c = 0; c < json_array_size(fc); c++)
                CHECK_KEYS(json_array_get(oc, c), json_array_get(fc, c));
            CHECK(json_equal(ours, fx));
        } else {
            CHECK(json_equal(ours, fx));
        }
        json_decref(ours);
        fl_buf_free(&b);
    }
    /* 3 channels x (job_start, dictionary_update, capture_capabilities,
     * shutdown) and the three batch types of system/scope. */
    CHECK_INT(seen_records, 12);
    CHECK_INT(seen_batches, 3);

    /* The live device keys: the fixture's device list is empty, so the
     * spec's list is the reference. */
    fl_device_live d = live_dev0();
    json_t *j = one_device_job_start(&d);
    char kd[1024];
    CHECK_STR(keys_of(json_array_get(json_object_get(j, "devices"), 0), kd, sizeof kd),
              "id,name,uuid,vendor,pci_bus,used_mib,free_mib,total_mib,util_gpu_pct,"
              "util_mem_pct,temp_c,power_mw,clk_gfx_mhz,clk_sm_mhz,clk_mem_mhz,throttle_pwr,"
              "throttle_therm,pcie_rx_bw_bps,pcie_tx_bw_bps");
    json_decref(j);

    /* system_start/stop and shutdown with a child's end have no fixture
     * line: the spec's key lists. */
    fl_buf b = {0};
    fl_host_sample hs = {0, 0, 0, 0};
    fl_rec_system(&b, &ident, true, "p", 1, &hs, NULL, 0);
    j = b.p ? parse_line(b.p) : NULL;
    CHECK_STR(keys_of(j, kd, sizeof kd), "version,type,pid,app,session_id,name,ts_ns,host,devices");
    json_decref(j);
    fl_buf_reset(&b);
    fl_rec_shutdown_child(&b, &ident, 1, 0, 0, false);
    j = b.p ? parse_line(b.p) : NULL;
    CHECK_STR(keys_of(j, kd, sizeof kd), "type,pid,app,session_id,ts_ns,exit_code,signal,crashed");
    json_decref(j);
    fl_buf_reset(&b);
    fl_host_row hr = {1, {0, 0, 0, 0}};
    fl_rec_host_batch(&b, SID, "h", "i", 1, &hr, 1);
    j = b.p ? parse_line(b.p) : NULL;
    CHECK_STR(keys_of(j, kd, sizeof kd),
              "version,type,session_id,hostname,ip_addr,batch_id,base_time_ns,columns,rows");
    json_decref(j);
    fl_buf_free(&b);

    for (size_t i = 0; i < n_fixture_lines; i++)
        json_decref(fixture_lines[i]);
    n_fixture_lines = 0;
}

int main(void)
{
    check_buf();
    golden_job_start();
    golden_job_start_mig();
    golden_shutdown();
    golden_system();
    golden_dictionary();
    golden_capabilities();
    golden_device_batch();
    golden_host_batch();
    golden_scope_batch();
    check_live_device_rules();
    check_batch_rules();
    check_against_fixture();
    return check_done("test_gpufl_records");
}
