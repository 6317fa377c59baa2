/*
 * test_cupti_driver.c - plugin/driver.c over a fake libcuda.so.1
 * (tests/fakes/fake_libcuda.c, first on LD_LIBRARY_PATH): the driver is
 * initialised once (gp_driver_init, the injection's barrier; the limits
 * paths share it), every device's limits are read by ordinal and kept for
 * the writer and the CUPTI callbacks (gp_driver_limits_known), which never
 * ask the driver; before that nothing is known; with a libcuda.so.1 to
 * load the driver is not said to be missing.  Skips (77) when
 * libcuda.so.1 is not the fake (a machine whose loader finds a real one
 * first).
 */
#include "check.h"
#include "plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int (*init_calls)(void) = NULL;
    void *f = h ? dlsym(h, "fake_cuda_init_calls") : NULL;
    memcpy(&init_calls, &f, sizeof f);
    if (!init_calls) {
        printf("skipped: libcuda.so.1 is not tests/fakes/fake_libcuda.c (LD_LIBRARY_PATH)\n");
        return 77;
    }
    /* Loaded (by this test) and loadable: CUPTI's 999 is then not blamed
     * on a missing driver. */
    CHECK(!gp_driver_missing());
    fl_gpu_limits l;
    CHECK(!gp_driver_limits_known(0, &l)); /* nothing read yet */
    CHECK_INT(init_calls(), 0);
    CHECK(gp_driver_init());
    CHECK(gp_driver_init());
    CHECK_INT(init_calls(), 1);
    CHECK(gp_driver_limits(0, &l));
    CHECK(!gp_driver_limits(1, &l));
    CHECK(!gp_driver_limits_known(0, &l)); /* gp_driver_limits keeps nothing */
    fl_gpu_limits all[4];
    CHECK_INT(gp_driver_devices(all, 4), 1);
    CHECK_INT(all[0].sm_count, 132);
    memset(&l, 0, sizeof l);
    CHECK(gp_driver_limits_known(0, &l));
    CHECK_INT(l.cc_major, 9);
    CHECK_INT(l.sm_count, 132);
    CHECK_STR(l.name, "Fake GPU");
    CHECK_STR(l.uuid, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
    CHECK(!gp_driver_limits_known(1, &l));
    CHECK(!gp_driver_limits_known(1000, &l));
    CHECK_INT(init_calls(), 1);
    int (*violations)(void) = NULL;
    void *v = dlsym(h, "fake_cuda_violations");
    memcpy(&violations, &v, sizeof v);
    CHECK(violations && violations() == 0);
    CHECK_INT(gp_driver_ctx_synchronize(), 0);
    dlclose(h);
    CHECK(!gp_driver_missing()); /* driver.c keeps its own handle */
    return check_done("test_cupti_driver");
}
