#!/bin/sh
# Regenerates the cubins tests/plugin/test_cupti_pcsamp.c reads (sm_90),
# from pcsamp_kernel.cu in this directory:
#   sh tests/plugin/data/make_cubins.sh [NVCC]
# The cubins record the directory they were compiled in: the test checks
# the file name and the lines, not the directory.
set -eu
cd "$(dirname "$0")"
nvcc=${1:-${NVCC:-nvcc}}
command -v "$nvcc" >/dev/null 2>&1 || nvcc=/usr/local/cuda/bin/nvcc
"$nvcc" -cubin -lineinfo -arch=sm_90 -o pcsamp_lines.cubin pcsamp_kernel.cu
"$nvcc" -cubin -arch=sm_90 -o pcsamp_nolines.cubin pcsamp_kernel.cu
echo "make_cubins.sh: pcsamp_lines.cubin, pcsamp_nolines.cubin"
