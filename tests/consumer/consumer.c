/* Uses the installed library: profiles a function on the none backend. */
#include <gpu_profile.h>
#include <string.h>

static int work(void *user)
{
    return *(int *)user;
}

int main(void)
{
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_NONE;
    o.report = GP_REPORT_NONE;
    int v = 5;
    gp_profiled_result r;
    if (gp_profile_call(&o, work, &v, &r, NULL) != GP_OK || r.value != 5)
        return 1;
    int ok = strcmp(r.gpu.backend, "none") == 0 && strcmp(gp_version(), GP_VERSION_STRING) == 0;
    gp_profiled_result_free(&r);
    return ok ? 0 : 1;
}
