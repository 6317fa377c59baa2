/*
 * report/model.c - the session model (model.h): job_start, the
 * dictionaries, capture_capabilities, shutdown and the time span, kept as
 * records stream by, and every kernel row given to its owner once its
 * detail is known, so the report and the exports join rows and details by
 * the same has_details rule (docs/gpufl.md).
 *
 * A kernel batch written before its details is held (one batch) until the
 * next record that is not a kernel_detail; details no row claimed are
 * forgotten past PENDING_MAX and counted as orphans.
 */
#include "model.h"
#include "../reader/read.h"
#include "model_int.h"
#include "../wire/records.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PENDING_MAX 65536u /* kernel_details waiting for their row */

/* The dictionaries the report names things by (wire/vocab.h). */
static const fl_dict dict_ids[DICT_COUNT] = {FL_DICT_KERNEL,   FL_DICT_SCOPE_NAME,  FL_DICT_METRIC,
                                             FL_DICT_FUNCTION, FL_DICT_SOURCE_FILE, FL_DICT_STACK,
                                             FL_DICT_OP};

/* ====================================================== life and names */

static char *dup_str(fl_model *m, const char *s)
{
    return fl_dup_str(s, &m->oom);
}

fl_model *fl_model_create(fl_model_kernel_fn fn, void *user)
{
    fl_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->priv = calloc(1, sizeof *m->priv);
    if (!m->priv) {
        free(m);
        return NULL;
    }
    m->priv->fn = fn;
    m->priv->user = user;
    m->default_device = -1;
    /* A bad variable keeps the default here: the entry points
     * (fl_report_env_check) refuse it before a report is made. */
    (void)fl_keys_from_env(&m->keys, NULL);
    m->priv->budget = &m->keys;
    m->priv->pool.budget = m->priv->current.budget = m->priv->pending.budget = &m->keys;
    for (int i = 0; i < DICT_COUNT; i++)
        m->priv->dict[i].budget = &m->keys;
    return m;
}

/* A freed detail on p->spare (allocated as one: detail_new). */
typedef union kd_spare {
    fl_kdetail d;
    union kd_spare *next;
} kd_spare;
#define SPARE_MAX 8192u /* ~700 KiB: a batch of details at a time (1024) and then some */

/* A detail is charged to the budget's bytes while it is allocated (spares
 * included). */
#define DETAIL_BYTES (sizeof(kd_spare) + FL_MALLOC_OVERHEAD_BYTES)

static fl_kdetail *detail_new(fl_model_priv *p)
{
    kd_spare *s = p->spare;
    if (!s) {
        if (!fl_keys_charge(p->budget, DETAIL_BYTES))
            return NULL;
        s = calloc(1, sizeof *s);
        if (!s)
            fl_keys_refund(p->budget, DETAIL_BYTES);
        return s ? &s->d : NULL;
    }
    p->spare = s->next;
    p->n_spare--;
    memset(&s->d, 0, sizeof s->d);
    return &s->d;
}

static void detail_free(fl_model_priv *p, fl_kdetail *d)
{
    if (!d)
        return;
    if (p->n_spare >= SPARE_MAX) {
        free(d);
        fl_keys_refund(p->budget, DETAIL_BYTES);
        return;
    }
    kd_spare *s = (kd_spare *)(void *)d;
    s->next = p->spare;
    p->spare = s;
    p->n_spare++;
}

static void free_details(fl_model_priv *p, fl_u64map *map)
{
    for (size_t i = 0; i < map->cap; i++)
        if (map->used[i])
            detail_free(p, (fl_kdetail *)(uintptr_t)map->vals[i].a);
    fl_map_clear(map);
}

void fl_model_destroy(fl_model *m)
{
    if (!m)
        return;
    fl_model_priv *p = m->priv;
    free(m->app);
    free(m->session_id);
    free(m->hostname);
    free(m->session_kind);
    free(m->engine);
    for (size_t i = 0; i < m->n_devices; i++) {
        free(m->devices[i].name);
        free(m->devices[i].uuid);
        free(m->devices[i].mig_profile);
        free(m->devices[i].mig_parent_uuid);
        free(m->devices[i].mig_parent_name);
    }
    free(m->devices);
    json_decref(m->caps);
    json_decref(m->shutdown);
    if (p) {
        for (int i = 0; i < DICT_COUNT; i++)
            fl_map_free(&p->dict[i]);
        free_details(p, &p->current);
        fl_map_free(&p->current);
        free_details(p, &p->pending);
        fl_map_free(&p->pending);
        while (p->spare) {
            kd_spare *s = p->spare;
            p->spare = s->next;
            free(s);
        }
        free(p->held);
        free(p->cur_session);
        fl_pool_free(&p->pool);
        free(p);
    }
    free(m);
}

static const char *dict_name(const fl_model *m, int dict, uint64_t id)
{
    const fl_mval *v = fl_map_find(&m->priv->dict[dict], id);
    return v ? (const char *)(uintptr_t)v->a : NULL;
}

const char *fl_model_kernel_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_KERNEL, id);
}

const char *fl_model_scope_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_SCOPE, id);
}

const char *fl_model_metric_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_METRIC, id);
}

const char *fl_model_function_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_FUNCTION, id);
}

const char *fl_model_source_file_name(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_SOURCE_FILE, id);
}

const char *fl_model_stack_text(const fl_model *m, uint64_t id)
{
    return dict_name(m, DICT_STACK, id);
}

const char *fl_model_op_name(const fl_model *m, int64_t kind, uint64_t id)
{
    /* Only our kind's ids are op_dict's: PyTorch's profiler (CUSTOM0)
     * and XLA push ids of their own, which stay ids. */
    return kind == FL_OP_KIND ? dict_name(m, DICT_OP, id) : NULL;
}

int fl_model_op_label(const fl_model *m, int64_t kind, uint64_t id, char *buf, size_t cap)
{
    const char *n = fl_model_op_name(m, kind, id);
    if (n)
        return snprintf(buf, cap, "%s", n);
    return snprintf(buf, cap, "%s#%" PRIu64, fl_external_kind_name(kind), id);
}

const char *fl_external_kind_name(int64_t kind)
{
    /* CUpti_ExternalCorrelationKind's numbers. */
    static const char *const names[] = {"invalid", "unknown", "openacc",
                                        "custom0", "custom1", "custom2"};
    return kind >= 0 && kind < (int64_t)(sizeof names / sizeof names[0]) ? names[kind] : "external";
}

const fl_model_device *fl_model_device_of(const fl_model *m, int64_t id)
{
    for (size_t i = 0; i < m->n_devices; i++)
        if (m->devices[i].id == id)
            return &m->devices[i];
    return NULL;
}

int64_t fl_model_gpu_of_cuda(const fl_model *m, int64_t cuda_id)
{
    for (size_t i = 0; cuda_id >= 0 && i < m->n_devices; i++)
        if (m->devices[i].cuda_id == cuda_id)
            return m->devices[i].id;
    return cuda_id;
}

const char *fl_model_device_name(const fl_model *m, int64_t id)
{
    const fl_model_device *d = fl_model_device_of(m, id);
    return d ? d->name : NULL;
}

bool fl_model_mig_title(const fl_model *m, int64_t id, char *buf, size_t cap)
{
    const fl_model_device *d = fl_model_device_of(m, id);
    if (cap)
        buf[0] = '\0';
    if (!d || !d->is_mig)
        return false;
    char gi[24] = "n/a", ci[24] = "n/a", parent[24] = "?";
    if (d->mig_gi >= 0)
        snprintf(gi, sizeof gi, "%" PRId64, d->mig_gi);
    if (d->mig_ci >= 0)
        snprintf(ci, sizeof ci, "%" PRId64, d->mig_ci);
    if (d->mig_parent_id >= 0)
        snprintf(parent, sizeof parent, "%" PRId64, d->mig_parent_id);
    snprintf(buf, cap, "MIG %s (GI %s CI %s) of GPU %s%s%s",
             d->mig_profile ? d->mig_profile : "n/a", gi, ci, parent, d->mig_parent_name ? " " : "",
             d->mig_parent_name ? d->mig_parent_name : "");
    return true;
}

uint64_t fl_model_origin(const fl_model *m)
{
    if (m->have_start)
        return m->start_ns;
    return m->have_time ? m->first_ns : 0;
}

size_t fl_model_mem_bytes(const fl_model *m)
{
    const fl_model_priv *p = m->priv;
    size_t n = sizeof *m + sizeof *p + fl_pool_bytes(&p->pool) + fl_map_bytes(&p->current) +
               fl_map_bytes(&p->pending) + p->held_cap * sizeof(fl_krow) +
               (p->current.n + p->pending.n) * sizeof(fl_kdetail);
    for (int i = 0; i < DICT_COUNT; i++)
        n += fl_map_bytes(&p->dict[i]);
    return n;
}

/* ======================================= kernel rows and their details */

const char *fl_model_peek_stack(const fl_model *m, uint32_t kernel_id, uint32_t corr_id,
                                bool has_details)
{
    const fl_model_priv *p = m->priv;
    const fl_mval *v = has_details && p->pending.n ? fl_map_find(&p->pending, corr_id) : NULL;
    if (!v && p->current.n)
        v = fl_map_find(&p->current, kernel_id);
    const fl_kdetail *d = v ? (const fl_kdetail *)(uintptr_t)v->a : NULL;
    return d ? d->stack_trace : NULL;
}

const fl_kdetail *fl_model_claim(fl_model *m, uint32_t kernel_id, uint32_t corr_id,
                                 bool has_details)
{
    fl_model_priv *p = m->priv;
    if (!has_details) {
        const fl_mval *cur = p->current.n ? fl_map_find(&p->current, kernel_id) : NULL;
        return cur ? (const fl_kdetail *)(uintptr_t)cur->a : NULL;
    }
    fl_kdetail *d = NULL;
    fl_mval *v = p->pending.n ? fl_map_find(&p->pending, corr_id) : NULL;
    if (v) {
        d = (fl_kdetail *)(uintptr_t)v->a;
        fl_map_del(&p->pending, corr_id);
    } else {
        m->details_missing++;
    }
    fl_mval *cur = p->current.n ? fl_map_find(&p->current, kernel_id) : NULL;
    if (cur) {
        detail_free(p, (fl_kdetail *)(uintptr_t)cur->a);
        if (d) {
            cur->a = (uintptr_t)d;
        } else {
            /* Its detail was lost: this row and the later ones up to
             * the next detail have none. */
            fl_map_del(&p->current, kernel_id);
        }
    } else if (d) {
        cur = fl_map_put(&p->current, kernel_id, NULL);
        if (cur) {
            cur->a = (uintptr_t)d;
        } else {
            detail_free(p, d);
            m->oom = true;
            d = NULL;
        }
    }
    return d; /* the kernel's current detail now */
}

static void emit_row(fl_model *m, fl_krow *k)
{
    fl_model_priv *p = m->priv;
    k->detail = fl_model_claim(m, k->kernel_id, k->corr_id, k->has_details);
    if (p->fn)
        p->fn(p->user, k);
}

void fl_model_flush_held(fl_model *m)
{
    fl_model_priv *p = m->priv;
    if (!p->holding)
        return;
    p->holding = false;
    for (size_t i = 0; i < p->n_held; i++)
        emit_row(m, &p->held[i]);
    p->n_held = 0;
}

void fl_model_finish(fl_model *m)
{
    fl_model_flush_held(m);
    m->details_orphan += m->priv->pending.n;
    free_details(m->priv, &m->priv->pending);
}

/* ============================================================= records */

/* Our "mig" object (wire/vocab.h's FL_MIG_KEYS); a member absent, null or
 * of another type is unknown. */
static void add_mig(fl_model *m, fl_model_device *d, const json_t *mig)
{
    d->is_mig = true;
    int64_t *ids[FL_MIG_KEY_COUNT] = {[FL_MIG_GPU_INSTANCE_ID] = &d->mig_gi,
                                      [FL_MIG_COMPUTE_INSTANCE_ID] = &d->mig_ci,
                                      [FL_MIG_PARENT_ID] = &d->mig_parent_id};
    char **texts[FL_MIG_KEY_COUNT] = {[FL_MIG_PROFILE] = &d->mig_profile,
                                      [FL_MIG_PARENT_UUID] = &d->mig_parent_uuid,
                                      [FL_MIG_PARENT_NAME] = &d->mig_parent_name};
    for (int k = 0; k < FL_MIG_KEY_COUNT; k++) {
        const char *key = fl_mig_key_name(k);
        if (ids[k] && (!fl_jget_i64(mig, key, ids[k]) || *ids[k] < 0))
            *ids[k] = -1;
        const char *text = fl_jget_str(mig, key);
        if (texts[k] && text && text[0])
            *texts[k] = dup_str(m, text);
    }
}

/* A new device entry (NULL when out of memory). */
static fl_model_device *new_device(fl_model *m, int64_t id, int64_t cuda_id)
{
    fl_model_device *p = realloc(m->devices, (m->n_devices + 1) * sizeof *p);
    if (!p) {
        m->oom = true;
        return NULL;
    }
    m->devices = p;
    fl_model_device *d = &p[m->n_devices++];
    memset(d, 0, sizeof *d);
    d->id = id;
    d->cuda_id = cuda_id;
    return d;
}

/* The entry a cuda_static_devices entry (CUDA's ordinal cuda, its uuid)
 * describes: the one CUDA listed already, else the GPU of the same uuid;
 * only when a uuid is missing on either side, the GPU of the same number
 * (all an older session lets one tell); else a device of its own. */
static fl_model_device *cuda_device(fl_model *m, int64_t cuda, const char *uuid)
{
    for (size_t i = 0; i < m->n_devices; i++)
        if (m->devices[i].cuda_id == cuda)
            return &m->devices[i];
    for (size_t i = 0; i < m->n_devices; i++)
        if (m->devices[i].cuda_id < 0 && fl_device_uuid_same(m->devices[i].uuid, uuid))
            return &m->devices[i];
    for (size_t i = 0; i < m->n_devices; i++) {
        fl_model_device *d = &m->devices[i];
        if (d->cuda_id < 0 && d->id == cuda && (!d->uuid || !uuid || !uuid[0]))
            return d;
    }
    return NULL;
}

/* One entry of job_start's lists: gpu_static_devices and devices number
 * the GPUs as NVML does (cuda false), cuda_static_devices as CUDA does,
 * which differs when CUDA sees fewer (CUDA_VISIBLE_DEVICES): joined by
 * uuid, never by number alone. */
static void add_device(fl_model *m, const json_t *dev, bool cuda, size_t pos)
{
    int64_t id;
    /* An entry without an id (an older or another writer's) is numbered
     * by its place in the list, as GPUFlight's analyzer takes the list. */
    if (!json_object_get(dev, "id"))
        id = (int64_t)pos;
    else if (!fl_jget_i64(dev, "id", &id))
        return;
    const char *uuid = fl_jget_str(dev, "uuid");
    fl_model_device *d = NULL;
    if (cuda) {
        d = cuda_device(m, id, uuid);
        if (d)
            d->cuda_id = id;
    } else {
        for (size_t i = 0; i < m->n_devices && !d; i++)
            if (m->devices[i].id == id && m->devices[i].cuda_id < 0)
                d = &m->devices[i];
    }
    if (!d && !(d = new_device(m, id, cuda ? id : -1)))
        return;
    if (!d->name && fl_jget_str(dev, "name"))
        d->name = dup_str(m, fl_jget_str(dev, "name"));
    if (!d->uuid && uuid && uuid[0])
        d->uuid = dup_str(m, uuid);
    const json_t *mig = json_object_get(dev, FL_KEY_MIG);
    if (!d->is_mig && json_is_object(mig))
        add_mig(m, d, mig);
}

/* Another session's job_start (a run's sessions read into one model,
 * report/runs_read.c): the last session's joins end with it - a detail
 * no row claimed is an orphan, a kernel's current detail is not the next
 * process's - the run starts at its earliest job_start, and its devices
 * are every session's, one entry per uuid. */
static void next_session(fl_model *m, const json_t *rec)
{
    fl_model_priv *p = m->priv;
    m->next_sessions++;
    m->details_orphan += p->pending.n;
    free_details(p, &p->pending);
    free_details(p, &p->current);
    uint64_t ts;
    if (fl_jget_u64(rec, "ts_ns", &ts) && (!m->have_start || ts < m->start_ns)) {
        m->start_ns = ts;
        m->have_start = true;
    }
    static const char *const lists[] = {"gpu_static_devices", "rocm_static_devices", "devices",
                                        "cuda_static_devices"};
    for (size_t l = 0; l < 4; l++) {
        const json_t *arr = json_object_get(rec, lists[l]);
        for (size_t i = 0; i < json_array_size(arr); i++) {
            const json_t *dev = json_array_get(arr, i);
            if (!json_is_object(dev))
                continue;
            const char *uuid = fl_jget_str(dev, "uuid");
            bool known = false;
            for (size_t k = 0; k < m->n_devices && l < 3 && uuid && uuid[0]; k++)
                known |= fl_device_uuid_same(m->devices[k].uuid, uuid);
            if (!known && (l == 3 || (uuid && uuid[0])))
                add_device(m, dev, l == 3, i);
        }
    }
}

static void on_job_start(fl_model *m, const json_t *rec)
{
    if (m->have_start || m->app) {
        /* The first one wins (every channel repeats it); another session's
         * is a run's next session. */
        fl_model_priv *p = m->priv;
        const char *sid = fl_jget_str(rec, "session_id");
        const char *cur = p->cur_session ? p->cur_session : m->session_id;
        if (sid && cur && strcmp(sid, cur) != 0) {
            free(p->cur_session);
            p->cur_session = dup_str(m, sid);
            next_session(m, rec);
        }
        return;
    }
    m->app = dup_str(m, fl_jget_str(rec, "app"));
    m->session_id = dup_str(m, fl_jget_str(rec, "session_id"));
    m->hostname = dup_str(m, fl_jget_str(rec, "hostname"));
    m->session_kind = dup_str(m, fl_jget_str(rec, "session_kind"));
    m->engine = dup_str(m, fl_jget_str(rec, "profiling_engine"));
    m->have_pid = fl_jget_i64(rec, "pid", &m->pid);
    m->have_start = fl_jget_u64(rec, "ts_ns", &m->start_ns);
    /* NVML's lists first: they number the GPUs the report shows; ROCm's
     * (GPUFlight: the AMD entries of gpu_static_devices) numbered alike. */
    static const char *const lists[] = {"gpu_static_devices", "rocm_static_devices", "devices",
                                        "cuda_static_devices"};
    for (size_t l = 0; l < 4; l++) {
        const json_t *arr = json_object_get(rec, lists[l]);
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (json_is_object(json_array_get(arr, i)))
                add_device(m, json_array_get(arr, i), l == 3, i);
    }
    const fl_model_device *only = m->n_devices == 1 ? &m->devices[0] : NULL;
    m->default_device = !only ? -1 : only->cuda_id >= 0 ? only->cuda_id : only->id;
}

bool fl_model_dict_key(const char *key, uint64_t *id)
{
    char *end = NULL;
    unsigned long long v = strtoull(key, &end, 10);
    *id = (uint64_t)v;
    return end && end != key && !*end;
}

static void on_dictionary(fl_model *m, const json_t *rec)
{
    for (int d = 0; d < DICT_COUNT; d++) {
        json_t *dict = json_object_get(rec, fl_dict_name(dict_ids[d]));
        if (!dict)
            continue;
        if (!json_is_object(dict)) {
            m->bad_rows++;
            continue;
        }
        const char *key;
        json_t *val;
        json_object_foreach(dict, key, val)
        {
            uint64_t id;
            const char *name = json_string_value(val);
            if (!fl_model_dict_key(key, &id) || !name) {
                m->bad_rows++;
                continue;
            }
            const char *s = fl_pool_intern(&m->priv->pool, name);
            fl_mval *v = s ? fl_map_put(&m->priv->dict[d], id, NULL) : NULL;
            if (!v) {
                m->oom = true;
                return;
            }
            v->a = (uintptr_t)s;
        }
    }
}

/* s interned, by the last string slot i interned when it is the same. */
static const char *intern_again(fl_model *m, int i, const char *s)
{
    fl_model_priv *p = m->priv;
    const char *last = p->last_interned[i];
    if (s && last && strcmp(s, last) == 0)
        return last;
    const char *d = fl_pool_intern(&p->pool, s);
    if (d)
        p->last_interned[i] = d;
    else if (s)
        m->oom = true; /* or past the budget: fl_keys says which */
    return d;
}

void fl_model_detail(fl_model *m, const fl_detail *x)
{
    fl_model_priv *p = m->priv;
    uint64_t corr;
    if (!fl_jval_u64(&x->v[FL_KD_CORR_ID], &corr)) {
        m->bad_rows++;
        return;
    }
    fl_kdetail *d = detail_new(p);
    if (!d) {
        m->oom = true;
        return;
    }
    d->seq = ++p->seq;
    d->corr_id = (uint32_t)corr;
    d->have_grid = fl_dim3_parse(fl_jval_str(&x->v[FL_KD_GRID]), d->grid);
    d->have_block = fl_dim3_parse(fl_jval_str(&x->v[FL_KD_BLOCK]), d->block);
    uint64_t ss;
    d->static_shared = fl_jval_u64(&x->v[FL_KD_STATIC_SHARED], &ss) ? (int64_t)ss : -1;
    if (!fl_jval_real(&x->v[FL_KD_OCCUPANCY], &d->occupancy))
        d->occupancy = NAN;
    d->limiting = intern_again(m, 0, fl_jval_str(&x->v[FL_KD_LIMITING_RESOURCE]));
    d->user_scope = intern_again(m, 1, fl_jval_str(&x->v[FL_KD_USER_SCOPE]));
    d->stack_trace = intern_again(m, 2, fl_jval_str(&x->v[FL_KD_STACK_TRACE]));
    if (p->pending.n >= PENDING_MAX) {
        /* Details no row claimed (a damaged file): forget them. */
        m->details_orphan += p->pending.n;
        free_details(p, &p->pending);
    }
    bool fresh;
    fl_mval *v = fl_map_put(&p->pending, corr, &fresh);
    if (!v) {
        detail_free(p, d);
        m->oom = true;
        return;
    }
    if (!fresh) {
        detail_free(p, (fl_kdetail *)(uintptr_t)v->a);
        m->details_orphan++;
    }
    v->a = (uintptr_t)d;
}

void fl_model_record(fl_model *m, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)channel;
    if (!type || !rec)
        return;
    if (t == FL_T_KERNEL_DETAIL) {
        fl_detail d;
        fl_detail_of_json(rec, &d);
        fl_model_detail(m, &d);
        return;
    }
    fl_model_flush_held(m);
    uint64_t ts, dur;
    if (fl_jget_span(rec, &ts, &dur)) {
        fl_model_note_time(m, ts);
        if (dur)
            fl_model_note_time(m, ts + dur);
    }
    switch (t) {
    case FL_T_JOB_START:
    case FL_T_INIT: /* GPUFlight's older name for it */
        on_job_start(m, rec);
        break;
    case FL_T_DICTIONARY_UPDATE:
        on_dictionary(m, rec);
        break;
    case FL_T_CAPTURE_CAPABILITIES: {
        json_t *c = json_deep_copy(rec);
        if (!c) {
            m->oom = true;
            return;
        }
        json_decref(m->caps);
        m->caps = c; /* the last one wins */
        break;
    }
    case FL_T_SHUTDOWN: {
        /* A run's sessions read as one: it ends with its last. */
        if (fl_jget_u64(rec, "ts_ns", &ts) && (!m->have_shutdown || ts >= m->shutdown_ns)) {
            m->shutdown_ns = ts;
            m->have_shutdown = true;
        }
        json_t *c = json_deep_copy(rec);
        if (c) {
            json_decref(m->shutdown);
            m->shutdown = c;
        }
        break;
    }
    default:
        break;
    }
}

/* ====================================================== kernel batches */

/*
 * Row r into *k; false when it is not usable (dt_ns, kernel_id < 2^32 and
 * duration_ns must be non-negative integers; the other cells, when not,
 * take their "not recorded" value).  plain: the batch's cells are all
 * ints (fl_batch.all_ints) and every column is there - the writer's
 * batches: read straight, without looking at kinds.
 */
static inline __attribute__((always_inline)) bool krow_of(const fl_batch *b, const kcols *c,
                                                          size_t r, bool plain, fl_krow *k)
{
    if (plain) {
        const fl_cell *v = b->cells + r * b->ncols;
        int64_t dt = v[c->dt].i, kid = v[c->kid].i, dur = v[c->dur].i;
        if (dt < 0 || dur < 0 || (uint64_t)kid > UINT32_MAX)
            return false;
        k->start_ns = b->base_time_ns + (uint64_t)dt;
        k->duration_ns = (uint64_t)dur;
        k->kernel_id = (uint32_t)kid;
        k->stream_id = (uint32_t)nonneg_or(v[c->stream].i, 0);
        k->corr_id = (uint32_t)nonneg_or(v[c->corr].i, 0);
        k->dyn_shared = nonneg_or(v[c->dyn].i, -1);
        k->num_regs = nonneg_or(v[c->regs].i, -1);
        k->has_details = v[c->hd].i > 0;
        k->external_kind = nonneg_or(v[c->ek].i, 0);
        k->external_id = (uint64_t)nonneg_or(v[c->eid].i, 0);
        k->device_id = nonneg_or(v[c->dev].i, -1);
        k->detail = NULL;
        return true;
    }
    uint64_t dt, kid, dur, v;
    if (!fl_rcell_u64(b, r, c->dt, &dt) || !fl_rcell_u64(b, r, c->kid, &kid) ||
        !fl_rcell_u64(b, r, c->dur, &dur) || kid > UINT32_MAX)
        return false;
    k->start_ns = b->base_time_ns + dt;
    k->duration_ns = dur;
    k->kernel_id = (uint32_t)kid;
    k->stream_id = fl_rcell_u64(b, r, c->stream, &v) ? (uint32_t)v : 0;
    k->corr_id = fl_rcell_u64(b, r, c->corr, &v) ? (uint32_t)v : 0;
    k->dyn_shared = fl_rcell_u64(b, r, c->dyn, &v) ? (int64_t)v : -1;
    k->num_regs = fl_rcell_u64(b, r, c->regs, &v) ? (int64_t)v : -1;
    k->has_details = fl_rcell_u64(b, r, c->hd, &v) && v != 0;
    k->external_kind = fl_rcell_u64(b, r, c->ek, &v) ? (int64_t)v : 0;
    k->external_id = fl_rcell_u64(b, r, c->eid, &v) ? v : 0;
    k->device_id = fl_rcell_u64(b, r, c->dev, &v) ? (int64_t)v : -1;
    k->detail = NULL;
    return true;
}

/* The batch's usable rows into p->held: returns their count, in *wait
 * whether one claims a detail not read yet, in *lo / *hi their time span
 * (*lo UINT64_MAX: none). */
static inline __attribute__((always_inline)) size_t take_rows(fl_model *m, const fl_batch *b,
                                                              const kcols *c, bool plain,
                                                              bool *wait, uint64_t *lo,
                                                              uint64_t *hi)
{
    fl_model_priv *p = m->priv;
    size_t n = 0;
    uint64_t bad = 0, l = UINT64_MAX, h = 0;
    bool w = false;
    for (size_t r = 0; r < b->nrows; r++) {
        fl_krow *k = &p->held[n];
        if (!krow_of(b, c, r, plain, k)) {
            bad++;
            continue;
        }
        n++;
        uint64_t t = k->start_ns, e = k->start_ns + k->duration_ns;
        l = t < l ? t : l;
        h = e > h ? e : h;
        if (k->has_details && !w && !(p->pending.n && fl_map_find(&p->pending, k->corr_id)))
            w = true;
    }
    m->bad_rows += bad;
    *wait = w;
    *lo = l;
    *hi = h;
    return n;
}

static void kernel_batch(fl_model *m, const fl_batch *b)
{
    fl_model_priv *p = m->priv;
    kcols c = kcols_of(b);
    if (c.dt < 0 || c.kid < 0 || c.dur < 0) {
        m->bad_rows += b->nrows ? b->nrows : 1;
        return;
    }
    if (p->held_cap < b->nrows) {
        fl_krow *h = realloc(p->held, b->nrows * sizeof *h);
        if (!h) {
            m->oom = true;
            return;
        }
        p->held = h;
        p->held_cap = b->nrows;
    }
    bool plain = b->all_ints && b->cells &&
                 (c.stream | c.corr | c.dyn | c.regs | c.hd | c.ek | c.eid | c.dev) >= 0;
    bool wait;
    uint64_t lo, hi; /* the batch's time span, for the session's */
    size_t n = plain ? take_rows(m, b, &c, true, &wait, &lo, &hi)
                     : take_rows(m, b, &c, false, &wait, &lo, &hi);
    if (lo != UINT64_MAX) {
        fl_model_note_time(m, lo);
        fl_model_note_time(m, hi);
    }
    p->n_held = n;
    p->holding = true;
    /* Details written after their batch (the example session's order):
     * wait for them until the next other record; else the rows go now. */
    if (!wait)
        fl_model_flush_held(m);
}

void fl_model_batch(fl_model *m, const fl_batch *b)
{
    fl_model_flush_held(m);
    if (!b || !b->type)
        return;
    if (b->type_id == FL_T_KERNEL_EVENT_BATCH) {
        kernel_batch(m, b); /* notes the batch's time span as it goes */
        return;
    }
    int c_dt = fl_batch_time_col(b, false), c_dur = fl_batch_time_col(b, true);
    if (c_dt >= 0) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t r = 0; r < b->nrows; r++) {
            uint64_t dt, dur = 0;
            if (!fl_rcell_u64(b, r, c_dt, &dt))
                continue;
            fl_rcell_u64(b, r, c_dur, &dur);
            uint64_t t = b->base_time_ns + dt;
            if (t < lo)
                lo = t;
            if (t + dur > hi)
                hi = t + dur;
        }
        if (lo != UINT64_MAX) {
            fl_model_note_time(m, lo);
            fl_model_note_time(m, hi);
        }
    }
}
