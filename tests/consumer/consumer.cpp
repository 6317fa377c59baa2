// Uses the installed C++ API (gpufl/gpufl.hpp): a session with one scope,
// no device backend, in the directory named by argv[1]; exits 0 when it was
// recorded.
#include <gpufl/gpufl.hpp>

#include <cstdio>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    gpufl::InitOptions o;
    o.app_name = "consumer";
    o.log_path = argv[1];
    o.backend = gpufl::BackendKind::None;
    if (!gpufl::init(o)) {
        std::fprintf(stderr, "%s\n", gpufl::lastError());
        return 1;
    }
    int v = 0;
    GFL_SCOPE("consumer")
    {
        v = gpufl::monitor("inner", [] { return 3; });
    }
    gpufl::shutdown();
    return v == 3 && gpufl::lastStatus() == GPUFL_OK ? 0 : 1;
}
