#!/bin/sh
# Regenerates the real disassembler capture tests/fakes/fake_nvdisasm.sh
# replays (pcsamp_kernel.sass) and the cubin a real nvdisasm reads in
# tests/plugin/test_cupti_disasm.c (pcsamp_cuda118.cubin), from
# pcsamp_kernel.cu in this directory:
#   sh tests/plugin/data/make_sass.sh NVCC_13 DIR_OF_CUDA_11_8_BIN
# CUDA 11.8's nvdisasm (Debian 12's nvidia-cuda-toolkit, non-free) cannot
# read CUDA 13's cubins (ELF ABI version 8), so the kernel's PTX from CUDA
# 13 is assembled again by 11.8's ptxas (.version lowered to 7.8: the
# kernel uses nothing newer), and that cubin disassembled by 11.8's
# nvdisasm with -c -fun <the function's symbol index>, as the plugin runs it.
set -eu
cd "$(dirname "$0")"
nvcc=${1:-/usr/local/cuda/bin/nvcc}
old=${2:?give the directory of CUDA 11.8 ptxas and nvdisasm}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$nvcc" -ptx -lineinfo -arch=sm_90 -o "$tmp/k.ptx" pcsamp_kernel.cu
sed 's/^\.version .*/.version 7.8/' "$tmp/k.ptx" >"$tmp/k78.ptx"
"$old/ptxas" -arch=sm_90 -lineinfo -o pcsamp_cuda118.cubin "$tmp/k78.ptx"
readelf -sW pcsamp_cuda118.cubin >"$tmp/syms" 2>/dev/null
idx=$(awk '$4 == "FUNC" && $NF == "_Z5chasePKjPji" { print $1 + 0 }' "$tmp/syms")
"$old/nvdisasm" -c -fun "$idx" pcsamp_cuda118.cubin >pcsamp_kernel.sass
echo "make_sass.sh: pcsamp_cuda118.cubin, pcsamp_kernel.sass (symbol $idx)"
