/*
 * fake_libcuda.c - a libcuda.so.1 with the few driver calls plugin/driver.c
 * looks up, and a model of the driver's init lock, for the plugin's tests
 * (tests/plugin/test_cupti_driver.c, test_cupti_inject.c).  One device:
 * compute capability 9.0, 132 SMs, "Fake GPU".
 *
 * The lock, as the hang on an H200 showed it (../shared/gpu-probes):
 *  - cuInit takes it exclusive; the first cuInit of the process calls
 *    InitializeInjection of the file CUDA_INJECTION64_PATH names, inside,
 *    under the lock (as the real driver does), and every later cuInit
 *    (a second runtime: cuBLAS's own) takes it again;
 *  - a launch (fake_cuda_launch_begin/end, which the fake CUPTI of
 *    fake_cupti_api.c wraps around its launch callbacks) holds it shared;
 *  - a call made under the wrong lock - any driver call from inside a
 *    launch (a CUPTI callback) or from inside cuInit (InitializeInjection),
 *    a cuInit while this thread's launch holds the lock, a wait for the
 *    lock longer than FAKE_WAIT_S - is a violation: said on stderr,
 *    counted (fake_cuda_violations, the last one's words in
 *    fake_cuda_last_violation), and answered CUDA_ERROR_NOT_PERMITTED, so
 *    a test fails loudly where a real driver would hang.
 * Driver calls before the first cuInit answer CUDA_ERROR_NOT_INITIALIZED,
 * as the real driver does.  Declares its own types (the test build needs
 * no cuda.h for it); the CUresult and attribute numbers are cuda.h's.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
#define CUDA_ERROR_NOT_PERMITTED 800

#define FAKE_WAIT_S 30 /* a real driver would wait forever: a deadlock */

static atomic_int init_calls;
static atomic_bool inited;
static atomic_int violations;
static atomic_int injection_result = -1;
static char last_violation[512];

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int readers;
    bool writer;
    bool gated; /* fake_cuda_gate_inits: later cuInits wait */
} lk = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false, false};

static _Thread_local int tls_launch_depth; /* this thread's launches in progress */
static _Thread_local bool tls_in_init;     /* this thread is inside cuInit */
static void (*after_injection)(void);

API int fake_cuda_init_calls(void)
{
    return atomic_load(&init_calls);
}

API int fake_cuda_violations(void)
{
    return atomic_load(&violations);
}

API const char *fake_cuda_last_violation(void)
{
    return last_violation;
}

/* InitializeInjection's answer, -1 when none was called. */
API int fake_cuda_injection_result(void)
{
    return atomic_load(&injection_result);
}

/* Whether the calling thread is inside cuInit / inside a launch: what the
 * fake CUPTI checks its own calls against. */
API bool fake_cuda_thread_in_init(void)
{
    return tls_in_init;
}

API bool fake_cuda_thread_in_launch(void)
{
    return tls_launch_depth > 0;
}

/* Called inside the first cuInit, right after InitializeInjection has
 * returned, the lock still held: a test looks at what was started there. */
API void fake_cuda_on_injected(void (*fn)(void))
{
    after_injection = fn;
}

API void fake_cuda_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
API void fake_cuda_violation(const char *fmt, ...)
{
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&lk.mu);
    snprintf(last_violation, sizeof last_violation, "%s", m);
    pthread_mutex_unlock(&lk.mu);
    atomic_fetch_add(&violations, 1);
    fprintf(stderr, "fake libcuda: VIOLATION: %s\n", m);
}

/* Waits on the lock's condition while cond holds, at most FAKE_WAIT_S;
 * false (a violation said) on the bound.  Under lk.mu. */
static bool wait_while(bool (*cond)(void), const char *what)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += FAKE_WAIT_S;
    while (cond())
        if (pthread_cond_timedwait(&lk.cv, &lk.mu, &until) != 0 && cond()) {
            pthread_mutex_unlock(&lk.mu);
            fake_cuda_violation("%s waited %d s for the driver's lock: a real driver hangs here",
                                what, FAKE_WAIT_S);
            pthread_mutex_lock(&lk.mu);
            return false;
        }
    return true;
}

static bool busy_for_writer(void)
{
    return lk.writer || lk.readers > 0;
}

static bool busy_for_reader(void)
{
    return lk.writer;
}

static bool gate_closed(void)
{
    return lk.gated;
}

/* While on, every cuInit but the process's first waits (a driver slow to
 * come up for the threads that call it after injection). */
API void fake_cuda_gate_inits(int on)
{
    pthread_mutex_lock(&lk.mu);
    lk.gated = on != 0;
    pthread_cond_broadcast(&lk.cv);
    pthread_mutex_unlock(&lk.mu);
}

/* Every driver call but cuInit: not under a launch or inside cuInit on
 * this thread; waits while another thread is inside cuInit. */
static CUresult enter(const char *what)
{
    if (tls_in_init) {
        fake_cuda_violation("%s called inside cuInit (from InitializeInjection): the driver "
                            "is initialising and holds its lock",
                            what);
        return CUDA_ERROR_NOT_PERMITTED;
    }
    if (tls_launch_depth > 0) {
        fake_cuda_violation("%s called inside a launch (a CUPTI callback): the launch holds "
                            "the driver's lock a second cuInit waits for",
                            what);
        return CUDA_ERROR_NOT_PERMITTED;
    }
    pthread_mutex_lock(&lk.mu);
    bool ok = wait_while(busy_for_reader, what);
    pthread_mutex_unlock(&lk.mu);
    if (!ok)
        return CUDA_ERROR_NOT_PERMITTED;
    return atomic_load(&inited) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

static void inject(void)
{
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (!path || !*path)
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *f = h ? dlsym(h, "InitializeInjection") : NULL;
    if (!f) {
        fprintf(stderr, "fake libcuda: CUDA_INJECTION64_PATH %s: %s\n", path, dlerror());
        return;
    }
    int (*fn)(void);
    memcpy(&fn, &f, sizeof f);
    atomic_store(&injection_result, fn());
}

API CUresult cuInit(unsigned int flags)
{
    (void)flags;
    if (tls_launch_depth > 0) {
        fake_cuda_violation("cuInit called inside a launch (a CUPTI callback): the launch "
                            "holds the driver's lock shared and cuInit wants it exclusive");
        return CUDA_ERROR_NOT_PERMITTED;
    }
    if (tls_in_init) {
        fake_cuda_violation("cuInit called inside cuInit (from InitializeInjection)");
        return CUDA_ERROR_NOT_PERMITTED;
    }
    pthread_mutex_lock(&lk.mu);
    for (;;) {
        if (!wait_while(busy_for_writer, "cuInit")) {
            pthread_mutex_unlock(&lk.mu);
            return CUDA_ERROR_NOT_PERMITTED;
        }
        if (!(lk.gated && atomic_load(&inited)))
            break;
        if (!wait_while(gate_closed, "cuInit (gated)")) {
            pthread_mutex_unlock(&lk.mu);
            return CUDA_ERROR_NOT_PERMITTED;
        }
    }
    lk.writer = true;
    pthread_mutex_unlock(&lk.mu);
    atomic_fetch_add(&init_calls, 1);
    if (!atomic_load(&inited)) {
        tls_in_init = true;
        inject();
        if (after_injection)
            after_injection();
        tls_in_init = false;
        atomic_store(&inited, 1);
    }
    pthread_mutex_lock(&lk.mu);
    lk.writer = false;
    pthread_cond_broadcast(&lk.cv);
    pthread_mutex_unlock(&lk.mu);
    return CUDA_SUCCESS;
}

/* A launch: the lock held shared from begin to end (the fake CUPTI calls
 * its launch callbacks in between). */
API CUresult fake_cuda_launch_begin(void)
{
    CUresult r = enter("a launch");
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lk.mu);
    lk.readers++;
    pthread_mutex_unlock(&lk.mu);
    tls_launch_depth++;
    return CUDA_SUCCESS;
}

API void fake_cuda_launch_end(void)
{
    if (tls_launch_depth == 0)
        return;
    tls_launch_depth--;
    pthread_mutex_lock(&lk.mu);
    lk.readers--;
    pthread_cond_broadcast(&lk.cv);
    pthread_mutex_unlock(&lk.mu);
}

API CUresult cuDeviceGetCount(int *n)
{
    CUresult r = enter("cuDeviceGetCount");
    if (r != CUDA_SUCCESS)
        return r;
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    *n = 1;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    CUresult r = enter("cuDeviceGet");
    if (r != CUDA_SUCCESS)
        return r;
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
    CUresult r = enter("cuDeviceGetAttribute");
    if (r != CUDA_SUCCESS)
        return r;
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
    CUresult r = enter("cuDeviceGetName");
    if (r != CUDA_SUCCESS)
        return r;
    if (!name || len <= 0 || d != 0)
        return CUDA_ERROR_INVALID_VALUE;
    strncpy(name, "Fake GPU", (size_t)len - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
    CUresult r = enter("cuDeviceGetUuid_v2");
    if (r != CUDA_SUCCESS)
        return r;
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
    return enter("cuCtxGetCurrent");
}

API CUresult cuCtxSynchronize(void)
{
    return enter("cuCtxSynchronize");
}
