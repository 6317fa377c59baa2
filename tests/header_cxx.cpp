// The public header compiles as C++ and its symbols link with C linkage.
#include "gpu_profile.h"

#include <cstring>

int main()
{
    gp_options o;
    gp_options_init(&o);
    if (o.interval_s != 0.2 || o.backend != GP_BACKEND_AUTO || !o.strict)
        return 1;
    if (std::strcmp(gp_version(), GP_VERSION_STRING) != 0)
        return 1;
    return gp_strerror(GP_OK) == nullptr;
}
