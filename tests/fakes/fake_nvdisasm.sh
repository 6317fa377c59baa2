#!/bin/sh
# fake_nvdisasm.sh - a stand-in for the CUDA toolkit's nvdisasm, run by the
# plugin's disassembler (plugin/common/disasm.c) in the tests.  It records how it
# was called and replays a real capture (tests/plugin/data/
# pcsamp_kernel.sass, CUDA 11.8's nvdisasm -c -fun on the test kernel).
#   FAKE_NVDISASM_OUT   the capture to print
#   FAKE_NVDISASM_LOG   a file to append "args: ...", "elf: yes|no" and
#                       "secret: yes|no" (whether GPUFL_API_KEY reached it)
#   FAKE_NVDISASM_MODE  ok (default) | fail (stderr, exit 3) | hang (sleeps
#                       in a grandchild holding the output open) | flood
#                       (output without end) | crash (SIGSEGV)
for last; do :; done
if [ -n "${FAKE_NVDISASM_LOG:-}" ]; then
    {
        echo "args: $*"
        if [ "$(head -c 4 "$last" | od -An -c | tr -d ' ')" = '177ELF' ]; then
            echo "elf: yes"
        else
            echo "elf: no"
        fi
        if env | grep -q '^GPUFL_API_KEY='; then echo "secret: yes"; else echo "secret: no"; fi
    } >>"$FAKE_NVDISASM_LOG"
fi
case "${FAKE_NVDISASM_MODE:-ok}" in
fail)
    echo "nvdisasm fatal   : Elf file '$last' does not contain Cuda architecture information" >&2
    exit 3
    ;;
hang)
    sleep 30 &
    wait
    ;;
flood) yes '        /*0000*/                   NOP ;' ;;
crash) kill -SEGV $$ ;;
*) cat "${FAKE_NVDISASM_OUT:?}" ;;
esac
