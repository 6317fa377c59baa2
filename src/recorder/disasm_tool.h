/*
 * recorder/disasm_tool.h - which disassembler (nvdisasm) the PcSampling
 * engine may run for the sass channel (disasm_tool.c).
 */
#ifndef GP_RECORDER_DISASM_TOOL_H
#define GP_RECORDER_DISASM_TOOL_H

#include <stdbool.h>
#include <stddef.h>

/* The variable that names the disassembler; set but empty: none. */
#define FL_NVDISASM_ENV "GPUFL_NVDISASM"

/* The disassembler as an absolute, checked path (into path), from
 * $GPUFL_NVDISASM, else the first nvdisasm in $CUDA_HOME/bin,
 * $CUDA_PATH/bin, /usr/local/cuda/bin and the absolute directories of
 * $PATH.  false with why (what was looked at, and the fix) when there is
 * none; *bad_env is set when $GPUFL_NVDISASM names something unusable (a
 * mistake the user should hear of). */
bool fl_disasm_tool_find(char *path, size_t cap, char *why, size_t why_len, bool *bad_env);

#endif /* GP_RECORDER_DISASM_TOOL_H */
