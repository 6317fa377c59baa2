// pcsamp_kernel.cu - the kernel of the checked-in cubins pcsamp_lines.cubin
// (nvcc -lineinfo) and pcsamp_nolines.cubin (without), which
// tests/plugin/test_cupti_pcsamp.c maps PC offsets of to source lines with
// the real libcupti.  Regenerate them with make_cubins.sh.
__global__ void chase(const unsigned *next, unsigned *out, int n)
{
    unsigned p = threadIdx.x;
    for (int i = 0; i < n; i++)
        p = next[p];
    out[threadIdx.x] = p;
}
