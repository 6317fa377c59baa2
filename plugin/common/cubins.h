/*
 * cubins.h - the cubin store (cubins.c): copies of the loaded modules'
 * cubins, keyed by the CRC CUPTI puts in its PC records, bounded in bytes;
 * PC offsets to file:line (cuptiGetSassToSourceCorrelation) and function
 * symbols for every engine that maps PCs to source.  One store per
 * process: a cubin is kept once, however many engines read it.
 */
#ifndef GP_PLUGIN_COMMON_CUBINS_H
#define GP_PLUGIN_COMMON_CUBINS_H

#include "../../src/abi/trace_abi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_PCS_CUBIN_BYTES_MAX (64u << 20) /* copies kept, in all */

/* Module-load callback (any thread): a copy of the cubin, while the bound
 * allows (else counted).  Cheap: no CUPTI call (its CRC is computed later,
 * on the writer thread: CUPTI holds locks in this callback). */
void fl_cubin_keep(const void *cubin, size_t bytes);

/* Writer thread: the source line of pc_offset in function fn of the cubin
 * whose CRC is crc.  Returns true with file ("dir/file") and *line (> 0)
 * when the cubin has line information for it; false otherwise. */
bool fl_cubin_line(uint64_t crc, const char *fn, uint64_t pc_offset, char *file, size_t cap,
                   uint32_t *line);

/* Whether an ELF image (a cubin) has line information (a .debug_line or
 * .nv_debug_line_sass section: nvcc -lineinfo or -G). */
bool fl_cubin_has_lines(const void *elf, size_t bytes);

/* Cubins kept, of which without line information, not kept (over the
 * bound), and bytes kept, into out's pc_cubins* fields. */
void fl_cubin_stats(fl_trace_stats *out);

/* Forgets every cubin (release). */
void fl_cubin_reset(void);

/* Writer thread: the copy of the cubin whose CRC is crc (*bytes its size),
 * NULL when none is kept; valid until fl_cubin_reset. */
const void *fl_cubin_bytes(uint64_t crc, size_t *bytes);

/* The ELF symbol-table index of function name in a cubin (what nvdisasm's
 * -fun takes); false when the cubin has no such function symbol. */
bool fl_cubin_symbol(const void *elf, size_t bytes, const char *name, uint32_t *index);

#endif /* GP_PLUGIN_COMMON_CUBINS_H */
