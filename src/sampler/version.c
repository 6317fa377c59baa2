/* sampler/version.c - the library's version (gpu_profile.h). */
#include "gpu_profile.h"

const char *gp_version(void)
{
    return GP_VERSION_STRING;
}

int gp_version_number(void)
{
    return GP_VERSION_NUMBER;
}
