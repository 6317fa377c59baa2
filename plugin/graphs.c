/*
 * graphs.c - CUDA graph nodes from CUPTI's resource callbacks (graphs.h).
 *
 * Promises: no driver call (the callbacks run inside the driver's graph
 * calls, the rule of docs/architecture.md), CUPTI's cuptiGetGraphNodeId /
 * cuptiGetGraphId only, made before our lock is taken; one mutex, held
 * for the table's updates and reads only, never across a CUPTI call, a
 * stack walk or the sink; bounded memory (NODES_MAX nodes, QUEUE_MAX
 * definitions between two drains; past either, counted as lost, never a
 * wrong row).  What the driver alone could say is left unknown rather than
 * asked for later with a handle that may be gone: the name of a kernel
 * node added with cudaGraphAddKernelNode (a captured launch names its own).
 */
#include "graphs.h"

#include "common/demangle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NODES_MAX 65536u
#define INDEX_SLOTS (2u * NODES_MAX) /* a power of two, half full at most */
#define QUEUE_MAX 65536u

const CUpti_CallbackId fl_graph_resource_cbids[] = {
    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_DEPENDENCY_CREATED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_DEPENDENCY_DESTROY_STARTING,
    CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
};
const size_t fl_n_graph_resource_cbids =
    sizeof fl_graph_resource_cbids / sizeof fl_graph_resource_cbids[0];

typedef struct gnode {
    uint64_t id; /* CUPTI's node id */
    uint32_t graph_id, type, deps, stack_id;
    char *kernel; /* owned; NULL: not known */
} gnode;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool tracking;
static gnode *nodes; /* in creation order: a graph's definition is its nodes in this order */
static size_t n_nodes, cap_nodes;
static uint32_t *slots; /* open addressing by id: position in nodes + 1; 0 empty */
static fl_graph_node_row *queue;
static size_t n_queue, cap_queue;
static uint64_t written, lost;

/* The outermost launch callback open on this thread, of session gen (a
 * launch a past session left open is forgotten); its kernel's name copied
 * (CUPTI's is valid during its callback only), cut at 1023 bytes. */
static _Atomic unsigned gen;
static _Thread_local struct {
    bool in;
    unsigned gen;
    uint32_t stack_id;
    char symbol[1024];
} launch_tls;

static size_t slot_of(uint64_t id)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & (INDEX_SLOTS - 1);
}

/* Under mu. */
static gnode *find(uint64_t id)
{
    if (!slots || !id)
        return NULL;
    for (size_t i = slot_of(id);; i = (i + 1) & (INDEX_SLOTS - 1)) {
        uint32_t p = slots[i];
        if (!p)
            return NULL;
        if (nodes[p - 1].id == id)
            return &nodes[p - 1];
    }
}

/* Under mu: id's entry, new (zeroed but its id) or the one kept; NULL
 * when the table is full or memory is short (counted). */
static gnode *add(uint64_t id)
{
    gnode *g = find(id);
    if (g || !id)
        return g;
    if (!slots && !(slots = calloc(INDEX_SLOTS, sizeof *slots)))
        goto full;
    if (n_nodes == NODES_MAX)
        goto full;
    if (n_nodes == cap_nodes) {
        size_t cap = cap_nodes ? cap_nodes * 2 : 256;
        gnode *p = realloc(nodes, cap * sizeof *p);
        if (!p)
            goto full;
        nodes = p;
        cap_nodes = cap;
    }
    size_t i = slot_of(id);
    while (slots[i])
        i = (i + 1) & (INDEX_SLOTS - 1);
    slots[i] = (uint32_t)(n_nodes + 1);
    g = &nodes[n_nodes++];
    memset(g, 0, sizeof *g);
    g->id = id;
    return g;
full:
    lost++;
    return NULL;
}

static void forget_all(void)
{
    for (size_t i = 0; i < n_nodes; i++)
        free(nodes[i].kernel);
    free(nodes);
    free(slots);
    free(queue);
    nodes = NULL;
    slots = NULL;
    queue = NULL;
    n_nodes = cap_nodes = n_queue = cap_queue = 0;
}

void fl_graphs_start(bool on)
{
    pthread_mutex_lock(&mu);
    forget_all();
    written = lost = 0;
    pthread_mutex_unlock(&mu);
    atomic_fetch_add(&gen, 1);
    atomic_store(&tracking, on);
}

CUptiResult fl_graphs_subscribe(CUpti_SubscriberHandle sub)
{
    CUptiResult r = CUPTI_SUCCESS;
    for (size_t i = 0; r == CUPTI_SUCCESS && i < fl_n_graph_resource_cbids; i++)
        r = cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, fl_graph_resource_cbids[i]);
    if (r != CUPTI_SUCCESS)
        atomic_store(&tracking, false);
    return r;
}

void fl_graphs_stop(void)
{
    atomic_store(&tracking, false);
}

void fl_graphs_launch_enter(const char *symbol)
{
    if (!atomic_load_explicit(&tracking, memory_order_relaxed))
        return;
    launch_tls.in = true;
    launch_tls.gen = atomic_load_explicit(&gen, memory_order_relaxed);
    launch_tls.stack_id = 0;
    size_t n = symbol ? strnlen(symbol, sizeof launch_tls.symbol - 1) : 0;
    memcpy(launch_tls.symbol, symbol ? symbol : "", n);
    launch_tls.symbol[n] = '\0';
}

void fl_graphs_launch_stack(uint32_t stack_id)
{
    launch_tls.stack_id = stack_id;
}

void fl_graphs_launch_exit(void)
{
    launch_tls.in = false;
}

static uint64_t node_id(CUgraphNode n)
{
    uint64_t id = 0;
    return n && cuptiGetGraphNodeId(n, &id) == CUPTI_SUCCESS ? id : 0;
}

static uint32_t graph_id(CUgraph g)
{
    uint32_t id = 0;
    return g && cuptiGetGraphId(g, &id) == CUPTI_SUCCESS ? id : 0;
}

/* Under mu: a name for g, unless it has one already (a definition queued
 * may point to that one until the next drain: never freed before
 * release); *kernel NULL when taken. */
static void keep_kernel(gnode *g, char **kernel)
{
    if (!g->kernel) {
        g->kernel = *kernel;
        *kernel = NULL;
    }
}

/* A node made: by a launch captured from a stream (inside its launch
 * callback: its name and stack) or by an explicit add (its stack now). */
static void node_created(const CUpti_GraphData *gd, fl_stacks *st)
{
    uint64_t id = node_id(gd->node);
    uint32_t gid = graph_id(gd->graph);
    if (!id)
        return;
    bool launch =
        launch_tls.in && launch_tls.gen == atomic_load_explicit(&gen, memory_order_relaxed);
    uint32_t stack = launch ? launch_tls.stack_id : st ? fl_stacks_capture(st, 0) : 0;
    char *kernel = NULL;
    if (launch && launch_tls.symbol[0] && gd->nodeType == CU_GRAPH_NODE_TYPE_KERNEL) {
        char name[4096]; /* as kernel_dict names the kernel's records */
        fl_demangle(launch_tls.symbol, name, sizeof name);
        kernel = strdup(name);
    }
    pthread_mutex_lock(&mu);
    gnode *g = add(id);
    if (g) {
        g->graph_id = gid;
        g->type = (uint32_t)gd->nodeType;
        g->stack_id = stack;
        keep_kernel(g, &kernel);
    }
    pthread_mutex_unlock(&mu);
    free(kernel);
}

/* A copy (cudaGraphClone, or the executable graph's own at instantiation):
 * what its source was, so a kernel naming the copy finds the source's
 * stack. */
static void node_cloned(const CUpti_GraphData *gd)
{
    uint64_t id = node_id(gd->node), from = node_id(gd->originalNode);
    uint32_t gid = graph_id(gd->graph);
    if (!id)
        return;
    pthread_mutex_lock(&mu);
    gnode *src = find(from);
    gnode copy = src ? *src : (gnode){.type = (uint32_t)gd->nodeType};
    char *kernel = copy.kernel ? strdup(copy.kernel) : NULL;
    gnode *g = add(id); /* may move src */
    if (g) {
        char *had = g->kernel;
        *g = copy;
        g->id = id;
        g->graph_id = gid;
        g->kernel = had;
        keep_kernel(g, &kernel);
    }
    pthread_mutex_unlock(&mu);
    free(kernel);
}

/* node now depends on one node more (or less): cuGraphNodeGetDependencies'
 * count, kept without asking the driver. */
static void dependency(const CUpti_GraphData *gd, bool made)
{
    uint64_t id = node_id(gd->node);
    pthread_mutex_lock(&mu);
    gnode *g = find(id);
    if (g && made)
        g->deps++;
    else if (g && g->deps)
        g->deps--;
    pthread_mutex_unlock(&mu);
}

/* An executable graph: one definition per node of the graph it was made
 * from, in the order the nodes were made (node_index), queued. */
static void exec_created(const CUpti_GraphData *gd)
{
    uint32_t gid = graph_id(gd->graph);
    uint64_t exec = (uint64_t)(uintptr_t)gd->graphExec;
    if (!gid || !exec)
        return;
    pthread_mutex_lock(&mu);
    uint32_t index = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        const gnode *g = &nodes[i];
        if (g->graph_id != gid)
            continue;
        if (n_queue == cap_queue) {
            size_t cap = cap_queue ? cap_queue * 2 : 64;
            fl_graph_node_row *p = cap <= QUEUE_MAX ? realloc(queue, cap * sizeof *p) : NULL;
            if (!p) {
                lost++;
                index++;
                continue;
            }
            queue = p;
            cap_queue = cap;
        }
        queue[n_queue++] = (fl_graph_node_row){.exec_key = exec,
                                               .node_id = g->id,
                                               .graph_id = gid,
                                               .node_index = index++,
                                               .node_type = g->type,
                                               .dependency_count = g->deps,
                                               .stack_id = g->stack_id,
                                               .kernel_name = g->kernel};
    }
    pthread_mutex_unlock(&mu);
}

bool fl_graphs_event(CUpti_CallbackId cbid, const void *data, fl_stacks *st)
{
    size_t i = 0;
    while (i < fl_n_graph_resource_cbids && fl_graph_resource_cbids[i] != cbid)
        i++;
    if (i == fl_n_graph_resource_cbids)
        return false;
    const CUpti_ResourceData *rd = data;
    const CUpti_GraphData *gd = rd ? rd->resourceDescriptor : NULL;
    if (!gd || !atomic_load(&tracking))
        return true;
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)
        node_created(gd, st);
    else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
        node_cloned(gd);
    else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_DEPENDENCY_CREATED)
        dependency(gd, true);
    else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_DEPENDENCY_DESTROY_STARTING)
        dependency(gd, false);
    else
        exec_created(gd);
    return true;
}

uint32_t fl_graphs_node_stack(uint64_t node_id)
{
    pthread_mutex_lock(&mu);
    const gnode *g = find(node_id);
    uint32_t s = g ? g->stack_id : 0;
    pthread_mutex_unlock(&mu);
    return s;
}

size_t fl_graphs_mark(void)
{
    pthread_mutex_lock(&mu);
    size_t n = n_queue;
    pthread_mutex_unlock(&mu);
    return n;
}

void fl_graphs_drain(const fl_trace_sink *sink, size_t upto)
{
    static fl_graph_node_row out[FL_TRACE_BATCH]; /* the writer thread's alone */
    for (size_t done = 0; done < upto;) {
        size_t n = upto - done < FL_TRACE_BATCH ? upto - done : FL_TRACE_BATCH;
        pthread_mutex_lock(&mu);
        memcpy(out, queue + done, n * sizeof *out);
        pthread_mutex_unlock(&mu);
        /* The kernel names are the nodes', freed at start or release only. */
        if (sink->graph_nodes)
            sink->graph_nodes(sink->user, out, n);
        done += n;
    }
    if (!upto)
        return;
    /* Those queued since the mark wait for the next drain (their stacks
     * were not announced yet). */
    pthread_mutex_lock(&mu);
    memmove(queue, queue + upto, (n_queue - upto) * sizeof *queue);
    n_queue -= upto;
    written += upto;
    pthread_mutex_unlock(&mu);
}

void fl_graphs_counts(uint64_t *w, uint64_t *l)
{
    pthread_mutex_lock(&mu);
    *w = written;
    *l = lost;
    pthread_mutex_unlock(&mu);
}

void fl_graphs_release(void)
{
    atomic_store(&tracking, false);
    pthread_mutex_lock(&mu);
    forget_all();
    pthread_mutex_unlock(&mu);
}
