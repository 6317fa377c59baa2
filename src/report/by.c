/*
 * report/by.c - kernel launches grouped by what launched them: the
 * framework op of each launch (CUPTI external correlation: kernel rows'
 * external_kind / external_id, named by op_dict for our kind, kept as
 * "<kind>#<id>" for others: PyTorch's profiler, XLA), shown as the report's
 * "ops" section; and, for `report --by line`, the source line of the
 * launch (the innermost frame of its CPU stack that is the program's: a
 * Python frame first, else one outside the CUDA, driver and framework
 * libraries).  The same view renders hotspots --by op|line.  Names are
 * resolved when rendering: op_dict may come after the rows it names.
 */
#include "json_write.h"
#include "model.h"
#include "report_int.h"
#include "units.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNELS_SHOWN 3 /* a group's kernels under it in the text */
#define LABEL_MAX 256

/* ============================================================ collect */

static void group_add(fl_report *r, fl_groups *g, uint64_t key, int64_t kind, uint64_t id,
                      const char *stack, uint32_t kernel_id, uint64_t dur)
{
    bool fresh;
    grpstat *s = fl_report_entry(r, &g->by, (void **)&g->g, &g->n, &g->cap, sizeof *s, key, &fresh);
    if (!s)
        return;
    if (fresh) {
        s->kind = kind;
        s->id = id;
        s->stack = stack;
    }
    s->launches++;
    s->gpu_ns += dur;
    g->launches++;
    g->gpu_ns += dur;
    uint32_t gi = (uint32_t)(s - g->g);
    grpkern *e = fl_report_entry(r, &g->gk_by, (void **)&g->gk, &g->n_gk, &g->cap_gk, sizeof *e,
                                 (uint64_t)gi << 32 | kernel_id, &fresh);
    if (!e)
        return;
    if (fresh) {
        e->grp = gi;
        e->kernel_id = kernel_id;
    }
    e->launches++;
    e->gpu_ns += dur;
}

void fl_report_op_row(fl_report *r, int64_t kind, uint64_t id, uint32_t kernel_id, uint64_t dur)
{
    /* Kinds are CUPTI's few numbers: mixed into the id's top bits, a
     * collision of two (kind, id) needs two 64-bit ids to meet. */
    uint64_t key = id ^ ((uint64_t)kind * 0x9e3779b97f4a7c15ull);
    group_add(r, &r->ops, key, kind, id, NULL, kernel_id, dur);
}

void fl_report_line_row(fl_report *r, const char *stack, uint32_t kernel_id, uint64_t dur)
{
    group_add(r, &r->lines, (uint64_t)(uintptr_t)stack, 0, 0, stack, kernel_id, dur);
}

static void groups_free(fl_groups *g)
{
    free(g->g);
    free(g->gk);
    fl_map_free(&g->by);
    fl_map_free(&g->gk_by);
    memset(g, 0, sizeof *g);
}

void fl_report_by_free(fl_report *r)
{
    groups_free(&r->ops);
    groups_free(&r->lines);
}

void fl_report_set_by(fl_report *r, int by)
{
    if (!r || by < FL_BY_KERNEL || by > FL_BY_LINE)
        return;
    r->by = by;
    r->by_line = by == FL_BY_LINE;
}

int fl_report_by_of(const char *name)
{
    static const char *const names[] = {"kernel", "op", "line"};
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* ============================================================= labels */

static bool starts(const char *s, size_t n, const char *p)
{
    size_t k = strlen(p);
    return n >= k && memcmp(s, p, k) == 0;
}

/* A frame of the CUDA runtime, the driver, a framework or the C library,
 * or one without a symbol ("lib.so+0x..."): not where the program is. */
static bool library_frame(const char *f, size_t n)
{
    static const char *const prefixes[] = {"cuda",         "__cuda",   "__device_stub", "at::",
                                           "c10::",        "torch::",  "caffe2::",      "_Py",
                                           "Py",           "cublas",   "cudnn",         "cufft",
                                           "curand",       "cusparse", "nccl",          "cutlass",
                                           "triton",       "std::",    "__libc",        "clone",
                                           "start_thread", "_start",   "xla::",         "jax"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (starts(f, n, prefixes[i]))
            return true;
    if (n > 2 && f[0] == 'c' && f[1] == 'u' && f[2] >= 'A' && f[2] <= 'Z')
        return true; /* the driver API: cuLaunchKernel, ... */
    /* "module+0xoffset": no symbol, nothing to show the user. */
    const char *plus = memchr(f, '+', n);
    return plus && !memchr(f, ' ', n) && (size_t)(plus - f) + 2 < n && plus[1] == '0' &&
           plus[2] == 'x';
}

/* A Python frame ("file.py:12 function", the interpreter's stacks). */
static bool python_frame(const char *f, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i++)
        if (memcmp(f + i, ".py:", 4) == 0)
            return true;
    return false;
}

/* A Python frame of a library, not the program: an installed package,
 * the standard library, PyTorch's own Python (torch/_ops.py, ...) or ours
 * (gpufl.torch's dispatch mode runs every op it tags). */
static bool python_library_frame(const char *f, size_t n)
{
    /* pystack.c spells an installed package's path from its folder
     * ("torch/_ops.py"): "(torch/" as well as "/torch/". */
    static const char *const parts[] = {
        "/site-packages/", "/dist-packages/", "/lib/python3",  "/torch/",       "(torch/",
        "/gpufl/",         "(gpufl/",         "/gpu_profile/", "(gpu_profile/", "(<frozen "};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        size_t k = strlen(parts[i]);
        for (size_t j = 0; j + k <= n; j++)
            if (memcmp(f + j, parts[i], k) == 0)
                return true;
    }
    return false;
}

/* The line a stack ("outer|...|inner") was launched from, into buf. */
void fl_by_line_label(const char *stack, char *buf, size_t cap)
{
    if (!stack || !*stack) {
        snprintf(buf, cap, "(no stack)");
        return;
    }
    const char *user = NULL, *inner = NULL, *py = NULL, *py_lib = NULL;
    size_t user_n = 0, inner_n = 0, py_n = 0, py_lib_n = 0;
    const char *end = stack + strlen(stack);
    while (end > stack) {
        const char *b = end;
        while (b > stack && b[-1] != '|')
            b--;
        size_t n = (size_t)(end - b);
        if (!inner) {
            inner = b;
            inner_n = n;
        }
        if (!py && python_frame(b, n)) {
            if (!python_library_frame(b, n)) {
                py = b;
                py_n = n;
                break;
            }
            if (!py_lib) {
                py_lib = b;
                py_lib_n = n;
            }
        }
        if (!user && n && !library_frame(b, n)) {
            user = b;
            user_n = n;
        }
        end = b > stack ? b - 1 : b;
    }
    if (!py && py_lib) { /* only library Python frames: the innermost of them */
        py = py_lib;
        py_n = py_lib_n;
    }
    const char *f = py ? py : user ? user : inner;
    size_t n = py ? py_n : user ? user_n : inner_n;
    snprintf(buf, cap, "%.*s", (int)n, f ? f : "");
}

bool fl_by_kernel_op(const fl_report *r, uint32_t kernel_id, char *buf, size_t cap)
{
    const grpkern *best = NULL;
    for (size_t i = 0; i < r->ops.n_gk; i++) {
        const grpkern *e = &r->ops.gk[i];
        if (e->kernel_id == kernel_id && (!best || e->gpu_ns > best->gpu_ns))
            best = e;
    }
    if (!best)
        return false;
    const grpstat *g = &r->ops.g[best->grp];
    fl_model_op_label(r->m, g->kind, g->id, buf, cap);
    return true;
}

/* ============================================================== views */

typedef struct grow {
    char label[LABEL_MAX];
    const grpstat *first; /* ops: the (kind, id) */
    uint64_t launches, gpu_ns;
    size_t k0, nk; /* its kernels: view.k[k0 .. k0 + nk) */
} grow;

typedef struct gkern {
    size_t row;
    uint32_t kernel_id;
    uint64_t launches, gpu_ns;
} gkern;

typedef struct gview {
    grow *rows;
    size_t n;
    gkern *k;
    size_t nk;
    size_t *row_of; /* group index -> row */
} gview;

static int by_label(const void *a, const void *b)
{
    return strcmp(((const grow *)a)->label, ((const grow *)b)->label);
}

static int by_time(const void *a, const void *b)
{
    const grow *x = a, *y = b;
    return fl_heaviest_first(x->gpu_ns, y->gpu_ns, x->launches, y->launches, x->label, y->label);
}

static int kern_order(const void *a, const void *b)
{
    const gkern *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->kernel_id != y->kernel_id)
        return x->kernel_id < y->kernel_id ? -1 : 1;
    return 0;
}

static int kern_time(const void *a, const void *b)
{
    const gkern *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns < y->gpu_ns ? 1 : -1;
    return x->kernel_id < y->kernel_id ? -1 : x->kernel_id > y->kernel_id;
}

static void view_free(gview *v)
{
    free(v->rows);
    free(v->k);
    free(v->row_of);
    memset(v, 0, sizeof *v);
}

/* The rows of the ops' groups (ops) or the lines': one per label (several
 * stacks may end on one line), most GPU time first, each with its kernels
 * (most time first).  Out of memory: false, and *oom set (the output's). */
static bool view_build(const fl_report *r, bool ops, gview *v, bool *oom)
{
    const fl_groups *g = ops ? &r->ops : &r->lines;
    memset(v, 0, sizeof *v);
    if (!g->n)
        return true;
    grow *rows = calloc(g->n, sizeof *rows);
    size_t *idx = calloc(g->n, sizeof *idx);
    v->row_of = calloc(g->n, sizeof *v->row_of);
    v->k = calloc(g->n_gk ? g->n_gk : 1, sizeof *v->k);
    if (!rows || !idx || !v->row_of || !v->k) {
        free(rows);
        free(idx);
        view_free(v);
        *oom = true;
        return false;
    }
    for (size_t i = 0; i < g->n; i++) {
        const grpstat *s = &g->g[i];
        if (ops)
            fl_model_op_label(r->m, s->kind, s->id, rows[i].label, sizeof rows[i].label);
        else
            fl_by_line_label(s->stack, rows[i].label, sizeof rows[i].label);
        rows[i].first = s;
        rows[i].launches = s->launches;
        rows[i].gpu_ns = s->gpu_ns;
        rows[i].k0 = i; /* the group, until merged */
    }
    qsort(rows, g->n, sizeof *rows, by_label);
    /* Merge equal labels (lines only: an op's label is its own). */
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (!ops && n && strcmp(rows[n - 1].label, rows[i].label) == 0) {
            rows[n - 1].launches += rows[i].launches;
            rows[n - 1].gpu_ns += rows[i].gpu_ns;
        } else {
            rows[n++] = rows[i];
        }
        idx[rows[i].k0] = n - 1;
    }
    /* idx: group -> merged row; then the rows by time, and the map. */
    for (size_t i = 0; i < n; i++)
        rows[i].k0 = i;
    qsort(rows, n, sizeof *rows, by_time);
    size_t *pos = calloc(n, sizeof *pos);
    if (!pos) {
        free(rows);
        free(idx);
        view_free(v);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        pos[rows[i].k0] = i;
    for (size_t i = 0; i < g->n; i++)
        v->row_of[i] = pos[idx[i]];
    free(pos);
    free(idx);
    for (size_t i = 0; i < g->n_gk; i++)
        v->k[i] = (gkern){v->row_of[g->gk[i].grp], g->gk[i].kernel_id, g->gk[i].launches,
                          g->gk[i].gpu_ns};
    qsort(v->k, g->n_gk, sizeof *v->k, kern_order);
    size_t nk = 0;
    for (size_t i = 0; i < g->n_gk; i++) {
        if (nk && v->k[nk - 1].row == v->k[i].row && v->k[nk - 1].kernel_id == v->k[i].kernel_id) {
            v->k[nk - 1].launches += v->k[i].launches;
            v->k[nk - 1].gpu_ns += v->k[i].gpu_ns;
        } else {
            v->k[nk++] = v->k[i];
        }
    }
    qsort(v->k, nk, sizeof *v->k, kern_time);
    for (size_t i = 0; i < n; i++)
        rows[i].nk = 0;
    for (size_t i = nk; i-- > 0;) {
        rows[v->k[i].row].k0 = i;
        rows[v->k[i].row].nk++;
    }
    v->rows = rows;
    v->n = n;
    v->nk = nk;
    return true;
}

static const char *kernel_name(const fl_report *r, uint32_t id, char *buf, size_t cap)
{
    const char *n = fl_model_kernel_name(r->m, id);
    if (n)
        return n;
    snprintf(buf, cap, "kernel %" PRIu32 " (not in kernel_dict)", id);
    return buf;
}

/* =============================================================== text */

/* The rows shown: top_n as the kernels' (figures.c: 10 when not > 0). */
static size_t top_of(int top_n)
{
    return (size_t)(top_n < 1 ? 10 : top_n);
}

static void text_view(const fl_report *r, const gview *v, size_t top, const char *col, fl_buf *b)
{
    fl_buf_printf(b, "  %3s %8s %11s %6s %7s  %s\n", "#", "launches", "total ms", "time", "kernels",
                  col);
    for (size_t i = 0; i < v->n && i < top; i++) {
        const grow *g = &v->rows[i];
        fl_buf_printf(b, "  %3zu %8" PRIu64 " %11.3f ", i + 1, g->launches,
                      (double)g->gpu_ns / 1e6);
        if (r->kernel_ns)
            fl_buf_printf(b, "%5.1f%% ", 100.0 * (double)g->gpu_ns / (double)r->kernel_ns);
        else
            fl_buf_printf(b, "%6s ", "-");
        fl_buf_printf(b, "%7zu  ", g->nk);
        fl_put_line(b, g->label, 100);
        fl_buf_puts(b, "\n");
        for (size_t j = 0; j < g->nk && j < KERNELS_SHOWN; j++) {
            const gkern *k = &v->k[g->k0 + j];
            char buf[64];
            fl_buf_printf(b, "      %8" PRIu64 " %11.3f  ", k->launches, (double)k->gpu_ns / 1e6);
            fl_put_line(b, kernel_name(r, k->kernel_id, buf, sizeof buf), 90);
            fl_buf_puts(b, "\n");
        }
        if (g->nk > KERNELS_SHOWN)
            fl_buf_printf(b, "      (%zu more %s)\n", g->nk - KERNELS_SHOWN,
                          fl_plural(g->nk - KERNELS_SHOWN, "kernel", "kernels"));
    }
    if (v->n > top)
        fl_buf_printf(b, "  (%zu more)\n", v->n - top);
}

void fl_text_sec_ops(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    if (!r->ops.launches)
        return; /* no launch carried an op: nothing to say */
    gview v;
    if (!view_build(r, true, &v, &b->oom))
        return;
    size_t top = top_of(in->top_n);
    fl_buf_printf(b,
                  "\nops  %zu framework %s over %" PRIu64 " of %" PRIu64
                  " kernel launches (%.1f%% of kernel time)\n",
                  v.n, fl_plural(v.n, "op", "ops"), r->ops.launches, r->kernel_launches,
                  r->kernel_ns ? 100.0 * (double)r->ops.gpu_ns / (double)r->kernel_ns : 0.0);
    text_view(r, &v, top, "op", b);
    view_free(&v);
}

void fl_text_hotspots_by(const fl_report *r, int top_n, fl_buf *b)
{
    bool ops = r->by == FL_BY_OP;
    const fl_groups *g = ops ? &r->ops : &r->lines;
    gview v;
    if (!view_build(r, ops, &v, &b->oom))
        return;
    size_t top = top_of(top_n);
    const char *what = ops ? "op" : "line";
    fl_buf_printf(b, "\nhotspots  top %zu of %zu %ss by GPU time  (by %s)\n", v.n < top ? v.n : top,
                  v.n, what, what);
    if (!v.n)
        fl_buf_printf(b, "  no kernel launch carried %s\n",
                      ops ? "a framework op (external correlation)"
                          : "a CPU stack (enable_stack_trace)");
    else
        text_view(r, &v, top, what, b);
    if (r->kernel_launches > g->launches)
        fl_buf_printf(b, "  %" PRIu64 " of %" PRIu64 " kernel launches without %s\n",
                      r->kernel_launches - g->launches, r->kernel_launches,
                      ops ? "an op" : "a stack");
    view_free(&v);
}

/* =============================================================== JSON */

static void json_view(const fl_report *r, const gview *v, size_t top, bool ops, const char *key,
                      jw *w)
{
    j_open(w, key, '[');
    for (size_t i = 0; i < v->n && i < top; i++) {
        const grow *g = &v->rows[i];
        j_open(w, NULL, '{');
        j_str(w, "name", g->label);
        if (ops) {
            j_str(w, "kind", fl_external_kind_name(g->first->kind));
            /* a string: 64-bit hashes are past JSON's exact integers */
            char id[24];
            snprintf(id, sizeof id, "%" PRIu64, g->first->id);
            j_str(w, "id", id);
            j_bool(w, "named", fl_model_op_name(r->m, g->first->kind, g->first->id) != NULL);
        }
        j_u64(w, "launches", g->launches);
        j_u64(w, "gpu_ns", g->gpu_ns);
        j_open(w, "kernels", '[');
        for (size_t j = 0; j < g->nk; j++) {
            const gkern *k = &v->k[g->k0 + j];
            char buf[64];
            j_open(w, NULL, '{');
            j_str(w, "name", kernel_name(r, k->kernel_id, buf, sizeof buf));
            j_u64(w, "launches", k->launches);
            j_u64(w, "gpu_ns", k->gpu_ns);
            j_close(w, '}');
        }
        j_close(w, ']');
        j_close(w, '}');
    }
    j_close(w, ']');
}

void fl_json_sec_ops(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    gview v;
    if (!view_build(r, true, &v, &w->b->oom))
        return;
    j_open(w, "ops", '{');
    j_u64(w, "launches", r->ops.launches);
    j_u64(w, "gpu_ns", r->ops.gpu_ns);
    j_u64(w, "count", v.n);
    json_view(r, &v, top_of(in->top_n), true, "ops", w);
    j_close(w, '}');
    view_free(&v);
}

void fl_json_hotspots_by(const fl_report *r, int top_n, jw *w)
{
    bool ops = r->by == FL_BY_OP;
    const fl_groups *g = ops ? &r->ops : &r->lines;
    gview v;
    if (!view_build(r, ops, &v, &w->b->oom))
        return;
    j_u64(w, "grouped_launches", g->launches);
    j_u64(w, "grouped_gpu_ns", g->gpu_ns);
    j_u64(w, "group_count", v.n);
    json_view(r, &v, top_of(top_n), ops, "groups", w);
    view_free(&v);
}
