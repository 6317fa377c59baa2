/*
 * aggregator.c - CUPTI's PC records -> fl_sample_row, aggregated.
 *
 * Promises: every stall-reason entry with samples of every PC record fed is
 * counted once, in the row of its (device, kernel launch, function, PC
 * offset, stall reason); rows are held in a fixed table of max_rows and
 * handed to the sink when it fills (so memory never grows with the run;
 * without a sink the samples that find no room are counted lost, never
 * silently dropped); a dictionary entry (function "mangled@source file",
 * stall-reason name, source file) goes to the sink before the first row
 * that uses it; a function's source line is asked of CUPTI once per (cubin,
 * function, PC offset) and then cached (direct-mapped); no lock: one
 * thread at a time (pcsamp.c's mutex, or the writer thread).
 */
#include "aggregator.h"
#include "cubins.h"
#include "id_table.h"
#include "launch.h"
#include "text_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROWS 65536u
#define LINE_CACHE 16384u  /* (cubin, function, PC) -> file:line */
#define FN_CACHE 16384u    /* CUPTI's name pointer and cubin -> function id */
#define ACT_FN_SLOTS 4096u /* activity API: function id -> name */
#define ACT_SRC_SLOTS 16384u
#define MAX_DEVICES 64u
#define MAX_STALL 256u

/* An interning table: text -> id (ids from 1), new entries kept until
 * flushed. */
typedef struct dict {
    fl_id_slot *slots; /* keys: the texts, ours */
    size_t cap, used;
    uint32_t *new_ids;
    const char **new_names;
    size_t n_new, new_cap;
} dict;

typedef struct line_slot {
    uint64_t crc, pc;
    uint32_t fn, file_id, line;
    bool used;
} line_slot;

typedef struct fn_slot {
    const char *ptr;
    uint64_t crc;
    uint32_t id;
} fn_slot;

typedef struct act_fn {
    uint32_t id; /* CUPTI's function id; 0: empty */
    char *name;  /* ours */
    uint32_t dict_id;
} act_fn;

typedef struct act_src {
    uint32_t id; /* CUPTI's source locator id; 0: empty */
    uint32_t file_id, line;
} act_src;

struct fl_agg {
    fl_agg_config cfg;
    fl_sample_row *rows;
    uint32_t *row_slot; /* each row's index slot */
    uint32_t *idx;      /* row + 1; 0: empty */
    size_t cap, n, idx_mask;
    dict fn, metric, file;
    uint32_t stall_metric[MAX_DEVICES][MAX_STALL];
    line_slot lines[LINE_CACHE];
    fn_slot fns[FN_CACHE];
    act_fn act_fns[ACT_FN_SLOTS];
    act_src act_srcs[ACT_SRC_SLOTS];
    uint32_t last_corr, last_scope; /* the last launch's scope, cached */
    fl_trace_stats st;
    fl_agg_fn *new_fns; /* functions met since fl_agg_take_functions (cfg.disasm) */
    size_t n_new_fns, cap_new_fns;
};

/* ---------------------------------------------------------------- dicts */

/* The id of text (interned, announced at the next flush); 0 when out of
 * memory. */
static uint32_t intern(dict *d, const char *text)
{
    if ((d->used + 1) * 2 > d->cap && !fl_id_table_grow(&d->slots, &d->cap, 64, true))
        return 0;
    size_t j = fl_text_hash(text) & (d->cap - 1);
    for (; d->slots[j].key; j = (j + 1) & (d->cap - 1))
        if (strcmp(d->slots[j].key, text) == 0)
            return d->slots[j].id;
    if (d->n_new == d->new_cap) {
        size_t nc = d->new_cap ? d->new_cap * 2 : 32;
        uint32_t *ids = realloc(d->new_ids, nc * sizeof *ids);
        if (!ids)
            return 0;
        d->new_ids = ids;
        const char **names = realloc(d->new_names, nc * sizeof *names);
        if (!names)
            return 0;
        d->new_names = names;
        d->new_cap = nc;
    }
    char *copy = strdup(text);
    if (!copy)
        return 0;
    uint32_t id = (uint32_t)++d->used;
    d->slots[j] = (fl_id_slot){copy, id};
    d->new_ids[d->n_new] = id;
    d->new_names[d->n_new++] = copy;
    return id;
}

static void dict_free(dict *d)
{
    for (size_t i = 0; i < d->cap; i++)
        free((void *)d->slots[i].key);
    free(d->slots);
    free(d->new_ids);
    free(d->new_names);
}

static void dict_announce(dict *d, const fl_trace_sink *s, int which)
{
    if (d->n_new && s && s->sample_names)
        s->sample_names(s->user, which, d->new_ids, d->new_names, d->n_new);
    if (s)
        d->n_new = 0;
}

/* ------------------------------------------------------------ lifetime */

fl_agg *fl_agg_create(const fl_agg_config *cfg)
{
    fl_agg *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (cfg)
        p->cfg = *cfg;
    p->cap = p->cfg.max_rows ? p->cfg.max_rows : DEFAULT_ROWS;
    size_t ic = 16;
    while (ic < p->cap * 2)
        ic *= 2;
    p->idx_mask = ic - 1;
    p->rows = malloc(p->cap * sizeof *p->rows);
    p->row_slot = malloc(p->cap * sizeof *p->row_slot);
    p->idx = calloc(ic, sizeof *p->idx);
    if (!p->rows || !p->row_slot || !p->idx) {
        fl_agg_destroy(p);
        return NULL;
    }
    return p;
}

void fl_agg_destroy(fl_agg *p)
{
    if (!p)
        return;
    dict_free(&p->fn);
    dict_free(&p->metric);
    dict_free(&p->file);
    for (size_t i = 0; i < ACT_FN_SLOTS; i++)
        free(p->act_fns[i].name);
    fl_agg_free_functions(p->new_fns, p->n_new_fns);
    free(p->rows);
    free(p->row_slot);
    free(p->idx);
    free(p);
}

/* ---------------------------------------------------------------- flush */

void fl_agg_flush(fl_agg *p, const fl_trace_sink *s)
{
    if (!p || !s)
        return;
    dict_announce(&p->fn, s, FL_SAMPLE_DICT_FUNCTION);
    dict_announce(&p->metric, s, FL_SAMPLE_DICT_METRIC);
    dict_announce(&p->file, s, FL_SAMPLE_DICT_SOURCE_FILE);
    for (size_t i = 0; i < p->n; i++) {
        bool sass = p->rows[i].sample_kind == FL_SAMPLE_KIND_SASS;
        p->st.engines[FL_ENGINE_PC].counters.pc.samples += sass ? 0 : p->rows[i].samples;
        p->st.engines[FL_ENGINE_PC].counters.pc.rows += sass ? 0 : 1;
        p->st.engines[FL_ENGINE_SASS].counters.sass.rows += sass ? 1 : 0;
        p->idx[p->row_slot[i]] = 0;
    }
    for (size_t i = 0; i < p->n && s->samples; i += FL_TRACE_BATCH)
        s->samples(s->user, p->rows + i, p->n - i < FL_TRACE_BATCH ? p->n - i : FL_TRACE_BATCH);
    p->n = 0;
}

/* ------------------------------------------------------------- the rows */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

/* The hash of a row's PC (device, launch, function, offset): its stall
 * reasons then take consecutive slots, so one PC record's entries share a
 * cache line of the index. */
static uint64_t pc_hash(const fl_sample_row *k)
{
    uint64_t h = mix(mix(k->pc_offset, k->function_id), (uint64_t)k->corr_id << 8 | k->device_id);
    h *= 0xff51afd7ed558ccdull;
    return h ^ h >> 29;
}

/* Adds samples to the row of key k (k->samples ignored; h its pc_hash),
 * making it. */
static void add(fl_agg *p, const fl_trace_sink *s, const fl_sample_row *k, uint64_t h,
                uint64_t samples)
{
    h += k->stall_reason + k->metric_id;
    size_t j = h & p->idx_mask;
    for (uint32_t r; (r = p->idx[j]) != 0; j = (j + 1) & p->idx_mask) {
        fl_sample_row *x = &p->rows[r - 1];
        if (x->pc_offset == k->pc_offset && x->function_id == k->function_id &&
            x->stall_reason == k->stall_reason && x->metric_id == k->metric_id &&
            x->corr_id == k->corr_id && x->device_id == k->device_id &&
            x->sample_kind == k->sample_kind) {
            x->samples += samples;
            return;
        }
    }
    if (p->n == p->cap) {
        if (!s) {
            if (k->sample_kind == FL_SAMPLE_KIND_SASS)
                p->st.engines[FL_ENGINE_SASS].counters.sass.lost_values += samples;
            else
                p->st.engines[FL_ENGINE_PC].counters.pc.lost_samples += samples;
            return;
        }
        fl_agg_flush(p, s);
        j = h & p->idx_mask;
    }
    p->rows[p->n] = *k;
    p->rows[p->n].samples = samples;
    p->row_slot[p->n] = (uint32_t)j;
    p->idx[j] = (uint32_t)++p->n;
}

void fl_agg_add(fl_agg *p, const fl_trace_sink *s, const fl_sample_row *k, uint64_t h,
                uint64_t value)
{
    add(p, s, k, h, value);
}

uint64_t fl_agg_row_hash(const fl_sample_row *k)
{
    return pc_hash(k);
}

/* The innermost scope open at launch corr (0: none known). */
static uint32_t scope_of(fl_agg *p, uint32_t corr)
{
    if (!p->cfg.scopes || !corr)
        return 0;
    if (corr == p->last_corr)
        return p->last_scope;
    uint32_t ids[FL_SCOPE_PATH_MAX];
    size_t n = fl_launch_scope_get(corr, ids, FL_SCOPE_PATH_MAX);
    p->last_corr = corr;
    p->last_scope = n ? ids[n - 1] : 0;
    return p->last_scope;
}

/* ------------------------------------------------------ stall reasons */

void fl_agg_stall_names(fl_agg *p, uint32_t device_id, const uint32_t *index,
                        const char *const *names, size_t n)
{
    if (!p || device_id >= MAX_DEVICES)
        return;
    for (size_t i = 0; i < n; i++)
        if (index[i] < MAX_STALL && names[i])
            p->stall_metric[device_id][index[i]] = intern(&p->metric, names[i]);
}

static uint32_t metric_of(fl_agg *p, uint32_t dev, uint32_t stall)
{
    uint32_t *m = dev < MAX_DEVICES && stall < MAX_STALL ? &p->stall_metric[dev][stall] : NULL;
    if (m && *m)
        return *m;
    char name[48];
    snprintf(name, sizeof name, "stall_reason_%u", stall);
    uint32_t id = intern(&p->metric, name);
    if (m)
        *m = id;
    return id;
}

/* ----------------------------------------------------- functions, lines */

/* file:line of pc in function fn_id (name) of cubin crc, cached; *line 0
 * and 0 returned when unknown. */
static uint32_t line_of(fl_agg *p, uint64_t crc, uint32_t fn_id, const char *name, uint64_t pc,
                        uint32_t *line)
{
    *line = 0;
    if (!p->cfg.source || !name)
        return 0;
    uint64_t h = mix(mix(crc, fn_id), pc) * 0x9e3779b97f4a7c15ull;
    line_slot *c = &p->lines[(h >> 40) & (LINE_CACHE - 1)];
    if (c->used && c->crc == crc && c->pc == pc && c->fn == fn_id) {
        *line = c->line;
        return c->file_id;
    }
    char file[1024];
    uint32_t ln = 0, file_id = 0;
    if (fl_cubin_line(crc, name, pc, file, sizeof file, &ln))
        file_id = intern(&p->file, file);
    *c = (line_slot){crc, pc, fn_id, file_id, file_id ? ln : 0, true};
    *line = c->line;
    return file_id;
}

uint32_t fl_agg_source_line(fl_agg *p, uint64_t crc, uint32_t fn_id, const char *name, uint64_t pc,
                            uint32_t *line)
{
    return line_of(p, crc, fn_id, name, pc, line);
}

uint32_t fl_agg_metric_id(fl_agg *p, const char *name)
{
    return p && name ? intern(&p->metric, name) : 0;
}

/* A function met for the first time, kept for the disassembly (at most
 * FL_PCS_NEW_FNS_MAX between two takes; the rest counted). */
#define FL_PCS_NEW_FNS_MAX 4096u
static void new_function(fl_agg *p, uint64_t crc, uint32_t id, const char *name)
{
    if (!p->cfg.disasm)
        return;
    if (p->n_new_fns == p->cap_new_fns) {
        size_t nc = p->cap_new_fns ? p->cap_new_fns * 2 : 16;
        fl_agg_fn *g = nc <= FL_PCS_NEW_FNS_MAX ? realloc(p->new_fns, nc * sizeof *g) : NULL;
        if (!g) {
            p->st.disasm_skipped++;
            return;
        }
        p->new_fns = g;
        p->cap_new_fns = nc;
    }
    char *copy = strdup(name);
    if (!copy) {
        p->st.disasm_skipped++;
        return;
    }
    p->new_fns[p->n_new_fns++] = (fl_agg_fn){.crc = crc, .function_id = id, .name = copy};
}

size_t fl_agg_take_functions(fl_agg *p, fl_agg_fn **out)
{
    *out = NULL;
    if (!p || !p->n_new_fns)
        return 0;
    size_t n = p->n_new_fns;
    *out = p->new_fns;
    p->new_fns = NULL;
    p->n_new_fns = p->cap_new_fns = 0;
    return n;
}

void fl_agg_free_functions(fl_agg_fn *fns, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(fns[i].name);
    free(fns);
}

/* The function_dict id of CUPTI's function name in cubin crc:
 * "mangled@dir/file" with the file of the function's first instruction
 * ("mangled@" without line information, as GPUFlight writes it). */
uint32_t fl_agg_function_id(fl_agg *p, const char *name, uint64_t crc)
{
    const char *key = name ? name : "<unknown>";
    char file[1024] = "";
    uint32_t ln = 0;
    if (p->cfg.source && name && !fl_cubin_line(crc, name, 0, file, sizeof file, &ln))
        file[0] = '\0';
    size_t kl = strlen(key), fl = strlen(file);
    char *text = malloc(kl + fl + 2);
    if (!text)
        return 0;
    memcpy(text, key, kl);
    text[kl] = '@';
    memcpy(text + kl + 1, file, fl + 1);
    size_t before = p->fn.used;
    uint32_t id = intern(&p->fn, text);
    free(text);
    if (id && p->fn.used > before && name)
        new_function(p, crc, id, name);
    return id;
}

/* The same, cached by CUPTI's name pointer (stable for the PC Sampling
 * API's records of a cubin). */
static uint32_t function_of(fl_agg *p, const char *name, uint64_t crc)
{
    const char *key = name ? name : "<unknown>";
    uint64_t h = mix((uint64_t)(uintptr_t)key, crc) * 0x9e3779b97f4a7c15ull;
    fn_slot *c = &p->fns[(h >> 40) & (FN_CACHE - 1)];
    if (c->ptr == key && c->crc == crc)
        return c->id;
    uint32_t id = fl_agg_function_id(p, name, crc);
    *c = (fn_slot){key, crc, id};
    return id;
}

/* ------------------------------------------------- the PC Sampling API */

void fl_agg_feed(fl_agg *p, const fl_trace_sink *s, const CUpti_PCSamplingData *d,
                 uint32_t device_id, uint64_t t_ns)
{
    if (!p || !d)
        return;
    p->st.engines[FL_ENGINE_PC].counters.pc.collections++;
    p->st.engines[FL_ENGINE_PC].counters.pc.total_samples += d->totalSamples;
    p->st.engines[FL_ENGINE_PC].counters.pc.dropped_samples += d->droppedSamples;
    p->st.engines[FL_ENGINE_PC].counters.pc.non_user_samples += d->nonUsrKernelsTotalSamples;
    p->st.engines[FL_ENGINE_PC].counters.pc.hw_buffer_full += d->hardwareBufferFull ? 1 : 0;
    size_t n = d->totalNumPcs < d->collectNumPcs ? d->totalNumPcs : d->collectNumPcs;
    if (!d->pPcData)
        return;
    fl_sample_row k = {.t_ns = t_ns, .device_id = device_id};
    for (size_t i = 0; i < n; i++) {
        const CUpti_PCSamplingPCData *pc = &d->pPcData[i];
        const CUpti_PCSamplingStallReason *sr = pc->stallReason;
        size_t ns = pc->stallReasonCount;
        if (!sr || ns == 0)
            continue;
        uint64_t crc = pc->cubinCrc;
        k.pc_offset = pc->pcOffset;
        k.corr_id = pc->correlationId;
        k.function_id = function_of(p, pc->functionName, crc);
        k.source_file_id =
            line_of(p, crc, k.function_id, pc->functionName, k.pc_offset, &k.source_line);
        k.scope_name_id = scope_of(p, k.corr_id);
        uint64_t h = pc_hash(&k);
        for (size_t j = 0; j < ns; j++) {
            uint32_t samples = sr[j].samples;
            if (!samples)
                continue;
            k.stall_reason = sr[j].pcSamplingStallReasonIndex;
            k.metric_id = metric_of(p, device_id, k.stall_reason);
            if (!k.source_file_id)
                p->st.engines[FL_ENGINE_PC].counters.pc.no_line_samples += samples;
            add(p, s, &k, h, samples);
        }
    }
}

/* --------------------------------------------------- the activity API */

void fl_agg_on_function(fl_agg *p, const CUpti_ActivityFunction *r)
{
    if (!p || !r->id)
        return;
    act_fn *f = &p->act_fns[r->id & (ACT_FN_SLOTS - 1)];
    free(f->name);
    *f = (act_fn){r->id, strdup(r->name ? r->name : "<unknown>"), 0};
}

void fl_agg_on_source(fl_agg *p, const CUpti_ActivitySourceLocator *r)
{
    if (!p || !r->id)
        return;
    act_src *x = &p->act_srcs[r->id & (ACT_SRC_SLOTS - 1)];
    uint32_t file = r->fileName && r->fileName[0] ? intern(&p->file, r->fileName) : 0;
    *x = (act_src){r->id, file, file ? r->lineNumber : 0};
}

void fl_agg_on_info(fl_agg *p, const CUpti_ActivityPCSamplingRecordInfo *r)
{
    if (!p)
        return;
    p->st.engines[FL_ENGINE_PC].counters.pc.collections++;
    p->st.engines[FL_ENGINE_PC].counters.pc.total_samples += r->totalSamples;
    p->st.engines[FL_ENGINE_PC].counters.pc.dropped_samples += r->droppedSamples;
}

void fl_agg_on_sample(fl_agg *p, const fl_trace_sink *s, const CUpti_ActivityPCSampling3 *r,
                      uint64_t t_ns)
{
    if (!p || !r->samples)
        return;
    const act_src *src = &p->act_srcs[r->sourceLocatorId & (ACT_SRC_SLOTS - 1)];
    bool have_src = r->sourceLocatorId && src->id == r->sourceLocatorId;
    act_fn *f = &p->act_fns[r->functionId & (ACT_FN_SLOTS - 1)];
    uint32_t fn = 0;
    if (r->functionId && f->id == r->functionId) {
        if (!f->dict_id) {
            /* The function's file: its first sample's. */
            const char *file = "";
            for (size_t i = 0; have_src && src->file_id && i < p->file.cap; i++)
                if (p->file.slots[i].key && p->file.slots[i].id == src->file_id)
                    file = p->file.slots[i].key;
            size_t kl = strlen(f->name ? f->name : ""), fl = strlen(file);
            char *text = malloc(kl + fl + 2);
            if (text) {
                snprintf(text, kl + fl + 2, "%s@%s", f->name ? f->name : "", file);
                f->dict_id = intern(&p->fn, text);
                free(text);
            }
        }
        fn = f->dict_id;
    }
    fl_sample_row k = {.t_ns = t_ns,
                       .pc_offset = r->pcOffset,
                       .corr_id = r->correlationId,
                       .device_id = 0, /* the record carries none */
                       .function_id = fn,
                       .metric_id = 0, /* stall_reason is CUPTI's activity enum */
                       .stall_reason = (uint32_t)r->stallReason,
                       .source_file_id = have_src ? src->file_id : 0,
                       .source_line = have_src ? src->line : 0,
                       .scope_name_id = scope_of(p, r->correlationId)};
    if (!k.source_file_id)
        p->st.engines[FL_ENGINE_PC].counters.pc.no_line_samples += r->samples;
    add(p, s, &k, pc_hash(&k), r->samples);
}

void fl_agg_stats(const fl_agg *p, fl_trace_stats *out)
{
    if (!p || !out)
        return;
    /* The aggregator's own counts: added to the engines', which keep
     * theirs (method, contexts, ...) in the same slots. */
    fl_pc_counters *pc = &out->engines[FL_ENGINE_PC].counters.pc;
    const fl_pc_counters *mine = &p->st.engines[FL_ENGINE_PC].counters.pc;
#define ADD_PC(field) pc->field += mine->field
    ADD_PC(samples);
    ADD_PC(rows);
    ADD_PC(collections);
    ADD_PC(total_samples);
    ADD_PC(dropped_samples);
    ADD_PC(non_user_samples);
    ADD_PC(hw_buffer_full);
    ADD_PC(lost_samples);
    ADD_PC(no_line_samples);
#undef ADD_PC
    fl_sass_counters *sass = &out->engines[FL_ENGINE_SASS].counters.sass;
    const fl_sass_counters *sass_mine = &p->st.engines[FL_ENGINE_SASS].counters.sass;
    sass->rows += sass_mine->rows; /* rows of sample_kind 1 (SASS metrics) */
    sass->lost_values += sass_mine->lost_values;
    out->disasm_skipped += p->st.disasm_skipped;
}
