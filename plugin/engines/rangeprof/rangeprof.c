/*
 * rangeprof.c - CUPTI's range profiler (cupti_range_profiler.h) for the
 * RangeProfiler engine.
 *
 * Promises:
 *  - CUPTI's order, as GPUFlight 1.3 measured it: cuptiProfilerInitialize
 *    at start; on the first outermost scope with a current context:
 *    cuptiGetDeviceId, the chip, the metric set's config image (the host
 *    table: the set cut to one pass for scope ranges), Enable,
 *    GetCounterDataSize, CounterDataImageInitialize, SetConfig (user range
 *    and user replay, one range a pass; or auto range and kernel replay);
 *    then at each outermost scope CounterDataImageInitialize, Start,
 *    PushRange (scope ranges) ... PopRange, Stop, DecodeData;
 *  - the application's thread does only what must happen in stream order
 *    (Start/Push/Pop/Stop and the decode into the image, which the next
 *    range reuses): the image is copied into a bounded queue and evaluated
 *    on the writer thread (GetCounterDataInfo, GetRangeInfo, the host's
 *    evaluate);
 *  - a CUPTI refusal becomes a status and a message naming the error and
 *    its fix (with the advice to initialise before the first kernel when a
 *    context was already current at start), never a crash: the session
 *    runs Trace; afterwards every hook is a no-op;
 *  - one range at a time: an outermost scope opened while another thread's
 *    range is open, or on another context, is counted (rp_skipped);
 *  - every CUPTI call goes through `api` (tests inject answers).
 */
#include "rangeprof.h"

#include "../../common/cupti_error.h"
#include "../../common/demangle.h"
#include "../../common/metrics_image.h"
#include "../../../src/util/clock.h"
#include "../../../src/util/error.h"

#include <math.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_BYTES 256

static const fl_rp_api real_api = {FL_RP_CALLS(FL_API_CUPTI)};
static const fl_rp_api *api = &real_api;

void fl_rp_set_api(const fl_rp_api *a)
{
    api = a ? a : &real_api;
}

/* ------------------------------------------------------------ the metrics */

const char *const fl_rp_default_set[FL_RP_DEFAULT_SLOTS][3] = {
    {"sm__warps_active.avg.pct_of_peak_sustained_active", NULL, NULL},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", NULL, NULL},
    {"dram__bytes_read.sum", "dram__bytes_op_read.sum", NULL},
    {"dram__bytes_write.sum", "dram__bytes_op_write.sum", NULL},
    {"l1tex__t_sector_hit_rate.pct", NULL, NULL},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", NULL, NULL},
    {"lts__t_sector_hit_rate.pct", NULL, NULL},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", NULL, NULL},
};

static const struct {
    const char *name;
    int slot;
} known_names[] = {
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", FL_PV_SM_THROUGHPUT},
    {"l1tex__t_sector_hit_rate.pct", FL_PV_L1_HIT},
    {"lts__t_sector_hit_rate.pct", FL_PV_L2_HIT},
    {"dram__bytes_read.sum", FL_PV_DRAM_READ},
    {"dram__bytes_op_read.sum", FL_PV_DRAM_READ},
    {"dram__bytes_write.sum", FL_PV_DRAM_WRITE},
    {"dram__bytes_op_write.sum", FL_PV_DRAM_WRITE},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", FL_PV_TENSOR},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", FL_PV_OCCUPANCY},
    {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", FL_PV_SHARED_LD_CONFLICTS},
    {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", FL_PV_SHARED_ST_CONFLICTS},
    {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", FL_PV_SHARED_CONFLICTS},
    {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", FL_PV_SHARED_WAVEFRONTS},
};

void fl_rp_known(const char *const *names, const double *values, size_t n, double *known)
{
    for (int k = 0; k < FL_PV_COUNT; k++)
        known[k] = NAN;
    for (size_t i = 0; i < n; i++) {
        double v = values[i];
        if (!isfinite(v) || v < 0)
            continue;
        for (size_t j = 0; j < sizeof known_names / sizeof known_names[0]; j++) {
            if (strcmp(names[i], known_names[j].name) != 0)
                continue;
            int k = known_names[j].slot;
            if ((k == FL_PV_L1_HIT || k == FL_PV_L2_HIT) && v > 100.0)
                break;
            known[k] = v;
            break;
        }
    }
}

static void append(char *out, size_t cap, const char *fmt, const char *a, const char *b)
{
    size_t at = strlen(out);
    if (at >= cap - 1)
        return;
    snprintf(out + at, cap - at, fmt, a, b);
}

/* Tries name on top of what c holds; keeps it when valid (and one pass
 * when asked).  Returns false when the host library itself failed. */
static bool try_add(const gp_metrics_plugin *host, void *h, fl_rp_choice *c, const char *name,
                    bool one_pass, bool report, gp_error *err)
{
    if (c->n >= FL_RP_METRICS_MAX) {
        if (report)
            append(c->left_out, sizeof c->left_out, "%s%s (more than 32 metrics)",
                   c->left_out[0] ? "; " : "", name);
        return true;
    }
    c->names[c->n] = strdup(name);
    if (!c->names[c->n])
        return false;
    uint8_t *img = NULL;
    size_t size = 0, passes = 0;
    gp_error why = {0};
    gp_status st = fl_metrics_image(host, h, c->names, c->n + 1, &img, &size, &passes, &why);
    if (st == GP_ERR_INVALID_ARG || (st == 0 && one_pass && passes > 1)) {
        if (report) {
            char p[64];
            snprintf(p, sizeof p, "the set would need %zu passes", passes);
            append(c->left_out, sizeof c->left_out, "%s%s (", c->left_out[0] ? "; " : "", name);
            append(c->left_out, sizeof c->left_out, "%s%s)", st == 0 ? p : "not on this chip", "");
        }
        free(img);
        free(c->names[c->n]);
        c->names[c->n] = NULL;
        return true;
    }
    if (st != 0) {
        /* The host's message as it always read: at most 255 bytes. */
        gp_error_set(err, GP_ERR_CUPTI, "%.255s", why.message);
        free(c->names[c->n]);
        c->names[c->n] = NULL;
        return false;
    }
    c->n++;
    free(c->image);
    c->image = img;
    c->image_size = size;
    c->passes = passes;
    return true;
}

void fl_rp_choice_free(fl_rp_choice *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->names[i]);
    free(c->image);
    memset(c, 0, sizeof *c);
}

gp_status fl_rp_choose(const gp_metrics_plugin *host, void *h, const char *list, bool one_pass,
                       fl_rp_choice *c, gp_error *err)
{
    memset(c, 0, sizeof *c);
    bool ok = true;
    if (!list || !*list) {
        for (int s = 0; s < FL_RP_DEFAULT_SLOTS && ok; s++) {
            const char *const *cand = fl_rp_default_set[s];
            size_t before = c->n;
            for (int k = 0; k < 3 && cand[k] && c->n == before && ok; k++)
                ok = try_add(host, h, c, cand[k], one_pass, k == 2 || cand[k + 1] == NULL, err);
        }
    } else {
        const char *p = list;
        while (*p && ok) {
            while (*p == ',' || *p == ' ')
                p++;
            size_t n = strcspn(p, ", ");
            if (n == 0)
                break;
            char name[NAME_MAX_BYTES];
            snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p);
            ok = try_add(host, h, c, name, one_pass, true, err);
            p += n;
        }
    }
    if (!ok) {
        fl_rp_choice_free(c);
        if (err)
            err->status = GP_ERR_CUPTI; /* the message, when there is one, is try_add's */
        return GP_ERR_CUPTI;
    }
    if (c->n == 0) {
        gp_error_set(err, GP_ERR_INVALID_ARG, "no metric of the set can be collected%s: %s",
                     one_pass ? " in one pass" : "",
                     c->left_out[0] ? c->left_out : "the set is empty");
        char keep[512];
        snprintf(keep, sizeof keep, "%s", c->left_out);
        fl_rp_choice_free(c);
        snprintf(c->left_out, sizeof c->left_out, "%s", keep);
        return GP_ERR_INVALID_ARG;
    }
    return 0;
}

/* ----------------------------------------------------------- the engine */

/* A launch of a kernel window: its symbol (mangled, malloc'd) and its
 * place among the session's launches (GPUFlight's launch_ordinal: its
 * analyzer names a range "0", "1" by the ordinal-th launch). */
typedef struct kname {
    char *sym;
    uint64_t ordinal;
} kname;

typedef struct queued {
    uint8_t *image;
    size_t size;
    uint64_t start_ns, end_ns;
    char name[NAME_MAX_BYTES];
    kname *kernels; /* the window's launches in order */
    size_t n_kernels;
} queued;

/* Everything below under mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool on, per_kernel, setup_done, stopped, open;
    uint32_t status;
    char msg[512];
    fl_engine_env env;
    char *list; /* the user's metrics, NULL: defaults */
    CUcontext ctx;
    uint32_t device;
    char chip[32];
    void *host_obj;
    fl_rp_choice choice;
    CUpti_RangeProfiler_Object *obj;
    uint8_t *image;
    size_t image_size;
    size_t max_ranges; /* ranges a window's image holds */
    pthread_t owner;
    uint64_t start_ns;
    char name[NAME_MAX_BYTES];
    kname *kernels; /* the open window's launches (kernel ranges), at most max_ranges */
    size_t n_kernels, cap_kernels;
    queued q[FL_RP_QUEUE_MAX];
    size_t nq, q_bytes;
    uint64_t windows, ranges, dropped, skipped, incomplete;
} R;
/* The session's kernel launches so far (every context, window or not),
 * counted while the engine is on (counting). */
static atomic_uint_least64_t launches;
static atomic_bool counting;
/* R.open && R.per_kernel, for launches to test without the lock. */
static atomic_bool kernel_window;

static void free_names(kname **names, size_t *n)
{
    for (size_t i = 0; *names && i < *n; i++)
        free((*names)[i].sym);
    free(*names);
    *names = NULL;
    *n = 0;
}

/* The first failure is the session's reason (mu held). */
static void fail(CUptiResult r, const char *what)
{
    if (R.status != FL_PC_ACTIVE)
        return;
    R.status = fl_profiler_status(r, R.env.late);
    char m[400];
    fl_pcs_explain(r, what, m, sizeof m);
    /* fl_pcs_explain speaks of PC sampling: the fixes are the same. */
    snprintf(R.msg, sizeof R.msg, "%s%s", m, fl_late_init_advice(R.env.late));
}

static void fail_text(uint32_t status, const char *text)
{
    if (R.status != FL_PC_ACTIVE)
        return;
    R.status = status;
    snprintf(R.msg, sizeof R.msg, "%s; the session runs Trace", text);
}

uint32_t fl_rp_engine_start(const fl_trace_options *o, const fl_engine_env *env)
{
    pthread_mutex_lock(&mu);
    memset(&R, 0, sizeof R);
    R.status = FL_PC_OFF;
    if (!o->range_profiler || !env || !env->host) {
        pthread_mutex_unlock(&mu);
        return FL_PC_OFF;
    }
    R.on = true;
    atomic_store(&launches, 0);
    atomic_store(&counting, true);
    R.env = *env;
    R.per_kernel = o->perf_per_kernel;
    R.list = o->perf_metrics && *o->perf_metrics ? strdup(o->perf_metrics) : NULL;
    R.status = FL_PC_ACTIVE;
    CUpti_Profiler_Initialize_Params p = {.structSize =
                                              CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUptiResult r = api->profiler_init(&p);
    if (r != CUPTI_SUCCESS)
        fail(r, "cuptiProfilerInitialize");
    uint32_t st = R.status;
    pthread_mutex_unlock(&mu);
    return st;
}

/* Kernel ranges a window holds: as many as fit FL_RP_IMAGE_BYTES, from
 * the image sizes CUPTI gives for one and two ranges (at least 1, at most
 * FL_RP_KERNEL_RANGES; mu held). */
static size_t ranges_fitting(CUpti_RangeProfiler_GetCounterDataSize_Params sp, CUptiResult *r)
{
    size_t size[2];
    for (size_t k = 0; k < 2; k++) {
        sp.maxNumOfRanges = k + 1;
        sp.maxNumRangeTreeNodes = (uint32_t)(k + 1);
        sp.counterDataSize = 0;
        *r = api->data_size(&sp);
        if (*r != CUPTI_SUCCESS)
            return 1;
        size[k] = sp.counterDataSize;
    }
    size_t per = size[1] > size[0] ? size[1] - size[0] : 0;
    size_t base = size[0] > per ? size[0] - per : 0;
    if (per == 0 || base + per >= FL_RP_IMAGE_BYTES)
        return per == 0 ? FL_RP_KERNEL_RANGES : 1;
    size_t n = (FL_RP_IMAGE_BYTES - base) / per; /* >= 1: base + per fits */
    return n > FL_RP_KERNEL_RANGES ? FL_RP_KERNEL_RANGES : n;
}

/* The profiler object, image and configuration on ctx (mu held). */
static bool setup(CUcontext ctx)
{
    R.setup_done = true;
    R.ctx = ctx;
    CUptiResult r = api->device_id(ctx, &R.device);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiGetDeviceId");
        return false;
    }
    CUpti_Device_GetChipName_Params cp = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
                                          .deviceIndex = R.device};
    r = api->chip_name(&cp);
    if (r != CUPTI_SUCCESS || !cp.pChipName) {
        fail(r != CUPTI_SUCCESS ? r : CUPTI_ERROR_UNKNOWN, "cuptiDeviceGetChipName");
        return false;
    }
    snprintf(R.chip, sizeof R.chip, "%s", cp.pChipName);
    char canon[64], why[400] = "";
    gp_error e = {0};
    gp_status st = R.env.host->acquire(R.chip, 0, &R.host_obj, canon, sizeof canon, &e);
    if (st == GP_OK)
        st = fl_rp_choose(R.env.host, R.host_obj, R.list, !R.per_kernel, &R.choice, &e);
    if (st != GP_OK) {
        snprintf(why, sizeof why, "%s", e.message);
        char t[512];
        snprintf(t, sizeof t,
                 "the metric set on %s: %s (choose others with --metrics / "
                 "GPUFL_METRICS; `gpu-profile metrics list --chip %s` lists them)",
                 R.chip, why, R.chip);
        fail_text(st == GP_ERR_INVALID_ARG ? FL_RP_NO_METRICS : FL_PC_FAILED, t);
        return false;
    }
    CUpti_RangeProfiler_Enable_Params ep = {
        .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, .ctx = ctx};
    r = api->enable(&ep);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiRangeProfilerEnable");
        return false;
    }
    R.obj = ep.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params sp = {
        .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
        .pRangeProfilerObject = R.obj,
        .pMetricNames = (const char **)R.choice.names,
        .numMetrics = R.choice.n,
        .maxNumOfRanges = 1,
        .maxNumRangeTreeNodes = 1};
    size_t max_ranges = R.per_kernel ? ranges_fitting(sp, &r) : 1;
    R.max_ranges = max_ranges;
    sp.maxNumOfRanges = max_ranges;
    sp.maxNumRangeTreeNodes = (uint32_t)max_ranges;
    if (r == CUPTI_SUCCESS)
        r = api->data_size(&sp);
    const char *what = "cuptiRangeProfilerGetCounterDataSize";
    if (r == CUPTI_SUCCESS) {
        R.image_size = sp.counterDataSize;
        R.image = calloc(1, R.image_size ? R.image_size : 1);
        if (!R.image) {
            fail_text(FL_PC_FAILED, "out of memory for the counter-data image");
            goto disable;
        }
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params ip = {
            .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE,
            .pRangeProfilerObject = R.obj,
            .counterDataSize = R.image_size,
            .pCounterData = R.image};
        what = "cuptiRangeProfilerCounterDataImageInitialize";
        r = api->data_init(&ip);
    }
    if (r == CUPTI_SUCCESS) {
        CUpti_RangeProfiler_SetConfig_Params sc = {
            .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE,
            .pRangeProfilerObject = R.obj,
            .configSize = R.choice.image_size,
            .pConfig = R.choice.image,
            .counterDataImageSize = R.image_size,
            .pCounterDataImage = R.image,
            .range = R.per_kernel ? CUPTI_AutoRange : CUPTI_UserRange,
            .replayMode = R.per_kernel ? CUPTI_KernelReplay : CUPTI_UserReplay,
            .maxRangesPerPass = max_ranges,
            .numNestingLevels = 1,
            .minNestingLevel = 1,
            .passIndex = 0,
            .targetNestingLevel = 1};
        what = "cuptiRangeProfilerSetConfig";
        r = api->set_config(&sc);
    }
    if (r == CUPTI_SUCCESS)
        return true;
    fail(r, what);
disable:;
    CUpti_RangeProfiler_Disable_Params dp = {.structSize =
                                                 CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE,
                                             .pRangeProfilerObject = R.obj};
    api->disable(&dp);
    R.obj = NULL;
    return false;
}

void fl_rp_range_begin(const char *name)
{
    pthread_mutex_lock(&mu);
    if (!R.on || R.status != FL_PC_ACTIVE || R.stopped) {
        pthread_mutex_unlock(&mu);
        return;
    }
    CUcontext ctx = R.env.current_ctx ? R.env.current_ctx() : NULL;
    if (R.open || !ctx || (R.setup_done && ctx != R.ctx)) {
        R.skipped++;
        pthread_mutex_unlock(&mu);
        return;
    }
    if (!R.setup_done && !setup(ctx)) {
        pthread_mutex_unlock(&mu);
        return;
    }
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ip = {
        .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE,
        .pRangeProfilerObject = R.obj,
        .counterDataSize = R.image_size,
        .pCounterData = R.image};
    CUptiResult r = api->data_init(&ip);
    const char *what = "cuptiRangeProfilerCounterDataImageInitialize";
    if (r == CUPTI_SUCCESS) {
        CUpti_RangeProfiler_Start_Params sp = {.structSize =
                                                   CUpti_RangeProfiler_Start_Params_STRUCT_SIZE,
                                               .pRangeProfilerObject = R.obj};
        what = "cuptiRangeProfilerStart";
        r = api->start(&sp);
    }
    if (r == CUPTI_SUCCESS && !R.per_kernel) {
        CUpti_RangeProfiler_PushRange_Params pp = {
            .structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE,
            .pRangeProfilerObject = R.obj,
            .pRangeName = name};
        what = "cuptiRangeProfilerPushRange";
        r = api->push(&pp);
        if (r != CUPTI_SUCCESS) {
            CUpti_RangeProfiler_Stop_Params st = {.structSize =
                                                      CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE,
                                                  .pRangeProfilerObject = R.obj};
            api->stop(&st);
        }
    }
    if (r != CUPTI_SUCCESS) {
        fail(r, what);
    } else {
        /* A window closed without its data (a refusal, passes missing,
         * the queue full) left its names: not this one's. */
        free_names(&R.kernels, &R.n_kernels);
        R.cap_kernels = 0;
        R.open = true;
        atomic_store(&kernel_window, R.per_kernel);
        R.owner = pthread_self();
        R.start_ns = gp_now_wall_ns();
        snprintf(R.name, sizeof R.name, "%s", name ? name : "");
    }
    pthread_mutex_unlock(&mu);
}

/* Pop (scope ranges), Stop, DecodeData, the image queued (mu held). */
static void close_range(void)
{
    R.open = false;
    atomic_store(&kernel_window, false);
    uint64_t end = gp_now_wall_ns();
    CUptiResult r = CUPTI_SUCCESS;
    if (!R.per_kernel) {
        CUpti_RangeProfiler_PopRange_Params pp = {
            .structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE,
            .pRangeProfilerObject = R.obj};
        r = api->pop(&pp);
        if (r != CUPTI_SUCCESS)
            fail(r, "cuptiRangeProfilerPopRange");
    }
    CUpti_RangeProfiler_Stop_Params sp = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE,
                                          .pRangeProfilerObject = R.obj};
    CUptiResult rs = api->stop(&sp);
    if (rs != CUPTI_SUCCESS) {
        fail(rs, "cuptiRangeProfilerStop");
        return;
    }
    if (r != CUPTI_SUCCESS)
        return;
    if (!sp.isAllPassSubmitted) {
        R.incomplete++;
        return;
    }
    CUpti_RangeProfiler_DecodeData_Params dp = {
        .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE,
        .pRangeProfilerObject = R.obj};
    r = api->decode(&dp);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiRangeProfilerDecodeData");
        return;
    }
    R.dropped += dp.numOfRangeDropped;
    R.windows++;
    if (R.nq >= FL_RP_QUEUE_MAX || R.q_bytes + R.image_size > FL_RP_QUEUE_BYTES) {
        R.dropped++;
        return;
    }
    queued *q = &R.q[R.nq];
    q->image = malloc(R.image_size ? R.image_size : 1);
    if (!q->image) {
        R.dropped++;
        return;
    }
    memcpy(q->image, R.image, R.image_size);
    q->size = R.image_size;
    q->start_ns = R.start_ns;
    q->end_ns = end;
    snprintf(q->name, sizeof q->name, "%s", R.name);
    q->kernels = R.kernels; /* the queue's now */
    q->n_kernels = R.n_kernels;
    R.kernels = NULL;
    R.n_kernels = R.cap_kernels = 0;
    R.nq++;
    R.q_bytes += R.image_size;
}

void fl_rp_range_end(void)
{
    pthread_mutex_lock(&mu);
    if (R.open && pthread_equal(R.owner, pthread_self()))
        close_range();
    pthread_mutex_unlock(&mu);
}

void fl_rp_kernel_launch(void *ctx, const char *symbol)
{
    if (!symbol || !atomic_load_explicit(&counting, memory_order_relaxed))
        return;
    uint64_t ordinal = atomic_fetch_add_explicit(&launches, 1, memory_order_relaxed) + 1;
    if (!atomic_load_explicit(&kernel_window, memory_order_relaxed))
        return;
    pthread_mutex_lock(&mu);
    /* CUPTI numbers a window's kernel ranges in launch order on its
     * context: the names are kept in the same order. */
    if (R.open && R.per_kernel && ctx == (void *)R.ctx && R.n_kernels < R.max_ranges) {
        if (R.n_kernels == R.cap_kernels) {
            size_t cap = R.cap_kernels ? R.cap_kernels * 2 : 16;
            kname *g = realloc(R.kernels, cap * sizeof *g);
            if (g) {
                R.kernels = g;
                R.cap_kernels = cap;
            }
        }
        char *copy = R.n_kernels < R.cap_kernels ? strdup(symbol) : NULL;
        if (copy)
            R.kernels[R.n_kernels++] = (kname){copy, ordinal};
    }
    pthread_mutex_unlock(&mu);
}

/* ----------------------------------------------------------- the writer */

static gp_status evaluate(const queued *q, size_t index, double *values, gp_error *err)
{
    for (size_t i = 0; i < R.choice.n; i++)
        values[i] = NAN;
    const char *const *names = (const char *const *)R.choice.names;
    return (api->evaluate ? api->evaluate : R.env.host->evaluate)(
        R.host_obj, q->image, q->size, index, names, R.choice.n, values, err);
}

/* One image's ranges into rows handed to sink (mu held: drain is the
 * writer's, and the queue was taken under mu). */
static void emit(const fl_trace_sink *sink, const queued *q)
{
    CUpti_RangeProfiler_GetCounterDataInfo_Params ip = {
        .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE,
        .pCounterDataImage = q->image,
        .counterDataImageSize = q->size};
    if (api->data_info(&ip) != CUPTI_SUCCESS || ip.numTotalRanges == 0) {
        R.dropped++;
        return;
    }
    size_t first = R.per_kernel ? 0 : ip.numTotalRanges - 1;
    gp_error why; /* filled by a failing evaluation, not zeroed per range (1 KiB) */
    for (size_t i = first; i < ip.numTotalRanges; i++) {
        double values[FL_RP_METRICS_MAX];
        if (evaluate(q, i, values, &why) != GP_OK) {
            R.dropped++;
            continue;
        }
        const char *name = q->name;
        char kernel[NAME_MAX_BYTES] = "";
        if (R.per_kernel && i < q->n_kernels)
            fl_demangle(q->kernels[i].sym, kernel, sizeof kernel);
        if (R.per_kernel) {
            CUpti_RangeProfiler_CounterData_GetRangeInfo_Params rp = {
                .structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE,
                .pCounterDataImage = q->image,
                .counterDataImageSize = q->size,
                .rangeIndex = i,
                .rangeDelimiter = "/"};
            name = api->range_info(&rp) == CUPTI_SUCCESS && rp.rangeName ? rp.rangeName : "";
        }
        fl_perf_row row = {.start_ns = q->start_ns,
                           .end_ns = q->end_ns,
                           .kind = R.per_kernel ? FL_PERF_RANGE_KERNEL : FL_PERF_RANGE_SCOPE,
                           .device_id = R.device,
                           .range_index = (uint32_t)i,
                           /* 0: the launch not seen (GPUFlight's "none") */
                           .launch_ordinal = R.per_kernel && i < q->n_kernels
                                                 ? (uint32_t)q->kernels[i].ordinal
                                                 : 0,
                           .scope_depth = 0,
                           .name = name,
                           .user_scope = R.per_kernel ? q->name : name,
                           .metric_names = (const char *const *)R.choice.names,
                           .metric_values = values,
                           .n_metrics = R.choice.n,
                           .kernel_name = kernel[0] ? kernel : NULL};
        fl_rp_known(row.metric_names, values, R.choice.n, row.known);
        if (sink && sink->perf_ranges)
            sink->perf_ranges(sink->user, &row, 1);
        R.ranges++;
    }
}

void fl_rp_engine_drain(const fl_trace_sink *sink)
{
    pthread_mutex_lock(&mu);
    if (!R.on || R.nq == 0) {
        pthread_mutex_unlock(&mu);
        return;
    }
    queued local[FL_RP_QUEUE_MAX];
    size_t n = R.nq;
    memcpy(local, R.q, n * sizeof *local);
    R.nq = 0;
    R.q_bytes = 0;
    /* Evaluated under mu: the names and host object live as long as the
     * session; range_begin waits at most one drain's evaluation. */
    for (size_t i = 0; i < n; i++) {
        emit(sink, &local[i]);
        free(local[i].image);
        free_names(&local[i].kernels, &local[i].n_kernels);
    }
    pthread_mutex_unlock(&mu);
}

void fl_rp_engine_stop(void)
{
    pthread_mutex_lock(&mu);
    if (R.on && !R.stopped) {
        R.stopped = true;
        if (R.open && R.status == FL_PC_ACTIVE)
            close_range();
        if (R.obj) {
            CUpti_RangeProfiler_Disable_Params dp = {
                .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE,
                .pRangeProfilerObject = R.obj};
            api->disable(&dp);
            R.obj = NULL;
        }
        if (R.status == FL_PC_ACTIVE && !R.setup_done)
            fail_text(FL_RP_NO_CONTEXT,
                      "no outermost gpufl scope ran with a CUDA context current, so no range "
                      "was profiled: open scopes (gpufl_scope_begin) around the GPU work");
    }
    pthread_mutex_unlock(&mu);
}

static void copy_list(char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < R.choice.n; i++)
        append(out, cap, "%s%s", i ? "," : "", R.choice.names[i]);
}

void fl_rp_engine_stats(fl_trace_stats *out)
{
    pthread_mutex_lock(&mu);
    out->engines[FL_ENGINE_RP].status = R.on ? R.status : FL_PC_OFF;
    out->engines[FL_ENGINE_RP].counters.rp.per_kernel = R.per_kernel;
    out->engines[FL_ENGINE_RP].counters.rp.passes = (uint32_t)R.choice.passes;
    out->engines[FL_ENGINE_RP].counters.rp.metrics = (uint32_t)R.choice.n;
    out->engines[FL_ENGINE_RP].counters.rp.windows = R.windows;
    out->engines[FL_ENGINE_RP].counters.rp.ranges = R.ranges;
    out->engines[FL_ENGINE_RP].counters.rp.dropped = R.dropped;
    out->engines[FL_ENGINE_RP].counters.rp.max_ranges = R.max_ranges;
    out->engines[FL_ENGINE_RP].counters.rp.skipped = R.skipped;
    out->engines[FL_ENGINE_RP].counters.rp.incomplete = R.incomplete;
    snprintf(out->engines[FL_ENGINE_RP].counters.rp.chip,
             sizeof out->engines[FL_ENGINE_RP].counters.rp.chip, "%s", R.chip);
    copy_list(out->engines[FL_ENGINE_RP].counters.rp.scheduled,
              sizeof out->engines[FL_ENGINE_RP].counters.rp.scheduled);
    snprintf(out->engines[FL_ENGINE_RP].counters.rp.left_out,
             sizeof out->engines[FL_ENGINE_RP].counters.rp.left_out, "%s", R.choice.left_out);
    snprintf(out->engines[FL_ENGINE_RP].message, sizeof out->engines[FL_ENGINE_RP].message, "%s",
             R.msg);
    pthread_mutex_unlock(&mu);
}

void fl_rp_engine_release(void)
{
    pthread_mutex_lock(&mu);
    if (R.on) {
        if (R.obj) {
            CUpti_RangeProfiler_Disable_Params dp = {
                .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE,
                .pRangeProfilerObject = R.obj};
            api->disable(&dp);
        }
        if (R.status != FL_PC_NO_DRIVER || R.setup_done) {
            CUpti_Profiler_DeInitialize_Params dp = {
                .structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
            api->profiler_deinit(&dp);
        }
        for (size_t i = 0; i < R.nq; i++) {
            free(R.q[i].image);
            free_names(&R.q[i].kernels, &R.q[i].n_kernels);
        }
        free_names(&R.kernels, &R.n_kernels);
        if (R.host_obj && R.env.host)
            R.env.host->release(R.host_obj);
        fl_rp_choice_free(&R.choice);
        free(R.image);
        free(R.list);
    }
    memset(&R, 0, sizeof R);
    atomic_store(&kernel_window, false);
    atomic_store(&counting, false);
    pthread_mutex_unlock(&mu);
}
