/*
 * recorder/disasm_tool.h - which disassembler (nvdisasm) the PcSampling
 * engine may run for the sass channel (disasm_tool.c).
 */
#ifndef GP_RECORDER_DISASM_TOOL_H
#define GP_RECORDER_DISASM_TOOL_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>

/* The variable that names the disassembler; set but empty: none. */
#define FL_NVDISASM_ENV "GPUFL_NVDISASM"

/* The disassembler as an absolute, checked path (into path), from
 * $GPUFL_NVDISASM, else the first nvdisasm in $CUDA_HOME/bin,
 * $CUDA_PATH/bin, /usr/local/cuda/bin and the absolute directories of
 * $PATH.  GP_OK, or err filled (what was looked at, and the fix; NULL
 * accepted): GP_ERR_NOT_SUPPORTED when there is none (or the variable is
 * set but empty), GP_ERR_INVALID_ARG with *bad_env set when
 * $GPUFL_NVDISASM names something unusable (a mistake the user should
 * hear of). */
gp_status fl_disasm_tool_find(char *path, size_t cap, gp_error *err, bool *bad_env);

#endif /* GP_RECORDER_DISASM_TOOL_H */
