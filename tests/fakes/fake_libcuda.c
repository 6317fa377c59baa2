/*
 * fake_libcuda.c - a libcuda.so.1 with the few driver calls plugin/driver.c
 * looks up, for tests/plugin/test_cupti_driver.c (put first on
 * LD_LIBRARY_PATH for that test only).  One device: compute capability
 * 9.0, 132 SMs, "Fake GPU".  It counts cuInit calls (fake_cuda_init_calls),
 * since a cuInit from inside a launch hung every injected program on an
 * H200: the test checks which of driver.c's paths make one.  Declares its
 * own types (the test build needs no cuda.h for it); the CUresult and
 * attribute numbers are cuda.h's.
 */
#include <stdatomic.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct {
    char bytes[16];
} CUuuid;

/* The build hides symbols by default: these are the library's API. */
#define API __attribute__((visibility("default")))

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_DEVICE 101

static atomic_int init_calls;
static atomic_bool inited;

API int fake_cuda_init_calls(void)
{
    return atomic_load(&init_calls);
}

API CUresult cuInit(unsigned int flags)
{
    (void)flags;
    atomic_fetch_add(&init_calls, 1);
    atomic_store(&inited, 1);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetCount(int *n)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    *n = 1;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
    if (!v || d != 0)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case 75: /* COMPUTE_CAPABILITY_MAJOR */
        *v = 9;
        break;
    case 76: /* COMPUTE_CAPABILITY_MINOR */
        *v = 0;
        break;
    case 16: /* MULTIPROCESSOR_COUNT */
        *v = 132;
        break;
    case 10: /* WARP_SIZE */
        *v = 32;
        break;
    default:
        *v = 1024;
        break;
    }
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (!name || len <= 0 || d != 0)
        return CUDA_ERROR_INVALID_VALUE;
    strncpy(name, "Fake GPU", (size_t)len - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
    if (!u || d != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < 16; i++)
        u->bytes[i] = (char)(0x10 + i);
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(void **ctx)
{
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    *ctx = NULL;
    return atomic_load(&inited) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

API CUresult cuCtxSynchronize(void)
{
    return CUDA_SUCCESS;
}
