/*
 * graphs.h - CUDA graph nodes as CUPTI's resource callbacks announce them
 * (graphs.c), for graph_node_definition and for the CPU stack a replayed
 * node's kernel is attributed to.
 *
 * A node created (by a launch during stream capture, or by an explicit
 * cudaGraphAdd*Node) is remembered with its type, the stack of the thread
 * that made it and, for a captured launch, the kernel's name; a node
 * cloned (cudaGraphClone, cudaGraphInstantiate) inherits its source's;
 * an executable graph instantiated queues one definition per node of
 * the graph it was made from, handed to the sink at the next drain.  A
 * kernel record's graphNodeId finds the stack of the node that launched
 * it (fl_graphs_node_stack), whichever copy of the node CUPTI names.
 */
#ifndef GP_PLUGIN_GRAPHS_H
#define GP_PLUGIN_GRAPHS_H

#include "../src/abi/trace_abi.h"
#include "stacks.h"

#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>

/* The resource callbacks graph tracking subscribes (graph nodes created,
 * cloned, their dependencies, executable graphs created). */
extern const CUpti_CallbackId fl_graph_resource_cbids[];
extern const size_t fl_n_graph_resource_cbids;

/* Enables fl_graph_resource_cbids on sub; CUPTI's refusal stops the
 * tracking (no definition is written) and is returned. */
CUptiResult fl_graphs_subscribe(CUpti_SubscriberHandle sub);

/* start(): forgets a past session's nodes; on: the callbacks below keep
 * nodes from now on.  stop(): they keep none (stop() of the plugin). */
void fl_graphs_start(bool on);
void fl_graphs_stop(void);

/* The application's thread, inside CUPTI's resource callback: true when
 * cbid is one of fl_graph_resource_cbids (handled, whether kept or not).
 * st: the stack table (NULL: no stacks).  No driver call. */
bool fl_graphs_event(CUpti_CallbackId cbid, const void *data, fl_stacks *st);

/* The outermost launch callback on this thread: its entry (the kernel's
 * name, copied when graphs are tracked), the stack its entry captured,
 * and its exit, so a node a captured launch creates takes both. */
void fl_graphs_launch_enter(const char *symbol);
void fl_graphs_launch_stack(uint32_t stack_id);
void fl_graphs_launch_exit(void);

/* The writer thread (the decoder): the stack that created the node whose
 * CUPTI id a kernel record carries (graphNodeId); 0: none known. */
uint32_t fl_graphs_node_stack(uint64_t node_id);

/* The writer thread: how many definitions are queued now (before the
 * stacks are announced), then the first upto of them to
 * sink->graph_nodes (after): every stack they name is announced. */
size_t fl_graphs_mark(void);
void fl_graphs_drain(const fl_trace_sink *sink, size_t upto);

/* Definitions handed over, and those not kept (table or queue full). */
void fl_graphs_counts(uint64_t *written, uint64_t *lost);

/* After the last drain: the table's memory back. */
void fl_graphs_release(void);

#endif /* GP_PLUGIN_GRAPHS_H */
