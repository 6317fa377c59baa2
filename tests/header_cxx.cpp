// The public headers compile as C++ and their symbols link with C linkage;
// the C++ API's header (C++17) compiles beside them.
#include "gpu_profile.h"
#include "gpufl.h"
#include "gpufl/gpufl.hpp"

#include <cstring>

static int in_scope()
{
    GPUFL_SCOPE("cxx")
    {
        return 1; // the scope's cleanup runs in C++ too
    }
    return 0;
}

int main()
{
    gp_options o;
    gp_options_init(&o);
    if (o.interval_s != 0.2 || o.backend != GP_BACKEND_AUTO || !o.strict)
        return 1;
    if (std::strcmp(gp_version(), GP_VERSION_STRING) != 0)
        return 1;
    gpufl_init_options fo;
    gpufl_init_options_init(&fo);
    if (!fo.enabled || fo.profiling_engine != GPUFL_ENGINE_MONITOR ||
        std::strcmp(fo.app_name, "gpufl") != 0)
        return 1;
    if (std::strcmp(gpufl_version(), GPUFL_VERSION_STRING) != 0 || in_scope() != 1)
        return 1;
    gpufl_scope s = gpufl_scope_begin("inert"); // no session: a no-op
    gpufl_scope_end(&s);
    GFL_SCOPE("inert") {}
    if (gpufl::detail::to_c(gpufl::InitOptions()).enabled != fo.enabled)
        return 1;
    return gp_strerror(GP_OK) == nullptr || gpufl_strerror(GPUFL_OK) == nullptr;
}
