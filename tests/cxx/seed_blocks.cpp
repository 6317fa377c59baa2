// Seed 002's C++ blocks, each included verbatim from tests/cxx/seed/*.inc
// (test_seed_examples.py checks those files against the seed's text), and
// compile-time checks that the header declares what the seed declares.
#include "seed/cxx-include.inc"

#include "cxx_test.h"

#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// The seed's InitOptions block declares namespace gpufl itself: it goes into
// a namespace of its own, where its BackendKind / ProfilingEngine are ours.
namespace seed_decl
{
using BackendKind = ::gpufl::BackendKind;
using ProfilingEngine = ::gpufl::ProfilingEngine;
#include "seed/cxx-init-options.inc"
} // namespace seed_decl

namespace seed_enums
{
#include "seed/cxx-backend-kind.inc"
#include "seed/cxx-profiling-engine.inc"
} // namespace seed_enums

#define GP_SAME_ENUMERATOR(E, v)                                                                   \
    static_assert(static_cast<int>(seed_enums::E::v) == static_cast<int>(gpufl::E::v), #E "::" #v)
GP_SAME_ENUMERATOR(BackendKind, Auto);
GP_SAME_ENUMERATOR(BackendKind, Nvidia);
GP_SAME_ENUMERATOR(BackendKind, Amd);
GP_SAME_ENUMERATOR(BackendKind, None);
GP_SAME_ENUMERATOR(ProfilingEngine, Monitor);
GP_SAME_ENUMERATOR(ProfilingEngine, Trace);
GP_SAME_ENUMERATOR(ProfilingEngine, PcSampling);
GP_SAME_ENUMERATOR(ProfilingEngine, SassMetrics);
GP_SAME_ENUMERATOR(ProfilingEngine, RangeProfiler);
GP_SAME_ENUMERATOR(ProfilingEngine, Deep);
// The seed's ladder ends at Deep (5); our one addition comes after it.
static_assert(static_cast<int>(seed_enums::ProfilingEngine::Deep) == 5, "seed ladder");
static_assert(static_cast<int>(gpufl::ProfilingEngine::PmSampling) == GPUFL_ENGINE_PM_SAMPLING,
              "PmSampling is the C API's");
static_assert(std::is_same_v<std::underlying_type_t<gpufl::BackendKind>, int>, "int enum");

// The seed's declarations, called as the seed writes them.
static_assert(std::is_same_v<decltype(gpufl::init(std::declval<const gpufl::InitOptions &>())),
                             decltype(seed_decl::gpufl::init(
                                 std::declval<const seed_decl::gpufl::InitOptions &>()))>,
              "init");
static_assert(std::is_same_v<decltype(gpufl::shutdown()), decltype(seed_decl::gpufl::shutdown())>,
              "shutdown");
static_assert(
    std::is_same_v<decltype(gpufl::generateReport()), decltype(seed_decl::gpufl::generateReport())>,
    "generateReport()");
static_assert(std::is_same_v<decltype(gpufl::generateReport(std::string())),
                             decltype(seed_decl::gpufl::generateReport(std::string()))>,
              "generateReport(path)");
static_assert(!std::is_copy_constructible_v<gpufl::ScopedMonitor> &&
                  !std::is_copy_assignable_v<gpufl::ScopedMonitor>,
              "ScopedMonitor is not copyable");

namespace cxx_test
{

void seed_scoping()
{
#include "seed/cxx-scoping.inc"
}

void seed_system_monitoring(){
#include "seed/cxx-system-monitoring.inc"
}

// Same type and default, field by field, by name.
#define GP_FIELD(f)                                                                                \
    do {                                                                                           \
        static_assert(std::is_same_v<decltype(seed.f), decltype(ours.f)>, #f);                     \
        if (!(seed.f == ours.f))                                                                   \
            out += #f " ";                                                                         \
    } while (0)

std::string seed_init_options_mismatches()
{
    const seed_decl::gpufl::InitOptions seed;
    const gpufl::InitOptions ours;
    // Exactly 21 members each (a structured binding must name them all),
    // the same types in the same order.
    const auto &[s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16, s17, s18,
                 s19, s20, s21] = seed;
    const auto &[o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11, o12, o13, o14, o15, o16, o17, o18,
                 o19, o20, o21] = ours;
    static_assert(
        std::is_same_v<decltype(std::tie(s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13,
                                         s14, s15, s16, s17, s18, s19, s20, s21)),
                       decltype(std::tie(o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11, o12, o13,
                                         o14, o15, o16, o17, o18, o19, o20, o21))>,
        "InitOptions: the seed's members in the seed's order");
    std::string out;
    if (std::tie(s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16, s17, s18,
                 s19, s20, s21) != std::tie(o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11, o12, o13,
                                            o14, o15, o16, o17, o18, o19, o20, o21))
        out += "(in order) ";
    GP_FIELD(app_name);
    GP_FIELD(log_path);
    GP_FIELD(backend_url);
    GP_FIELD(api_key);
    GP_FIELD(api_path);
    GP_FIELD(remote_upload);
    GP_FIELD(enable_stack_trace);
    GP_FIELD(enable_source_collection);
    GP_FIELD(enable_external_correlation);
    GP_FIELD(enable_synchronization);
    GP_FIELD(enable_memory_tracking);
    GP_FIELD(enable_cuda_graphs_tracking);
    GP_FIELD(system_sample_rate_ms);
    GP_FIELD(kernel_sample_rate_ms);
    GP_FIELD(continuous_system_sampling);
    GP_FIELD(backend);
    GP_FIELD(profiling_engine);
    GP_FIELD(config_file);
    GP_FIELD(flush_logs_always);
    GP_FIELD(enable_debug_output);
    GP_FIELD(enabled);
    return out;
}

} // namespace cxx_test
