/*
 * gpufl/gpufl.hpp - the seed's GPUFlight C++ API, header-only, over the C
 * API of gpufl.h (same library, libgpuprofile; nothing to link but it).
 *
 * Promises: InitOptions has exactly the seed's fields, types and defaults
 * and maps field for field onto gpufl_init_options (an empty string is the
 * C default); init() returns false on an error or when the kill switch is
 * on, and lastStatus() / lastError() say which and why; scopes
 * (GFL_SCOPE, ScopedMonitor, monitor) close however their block is left,
 * exceptions included.  Nothing here throws or allocates on its own: every
 * call is noexcept (monitor() only propagates what the caller's function
 * throws).  C++17.  See docs/gpufl.md, "C++ API".
 */
#ifndef GPUFL_GPUFL_HPP
#define GPUFL_GPUFL_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "gpufl/gpufl.hpp needs C++17 (-std=c++17); from C, include <gpufl.h>"
#endif

#include "../gpufl.h"

#include <cstddef>
#include <string>
#include <utility>

namespace gpufl
{

enum class BackendKind {
    Auto = GPUFL_BACKEND_AUTO,
    Nvidia = GPUFL_BACKEND_NVIDIA,
    Amd = GPUFL_BACKEND_AMD, // ROCm SMI (Monitor only); no AMD GPU: init() fails
    None = GPUFL_BACKEND_NONE
};

enum class ProfilingEngine {
    Monitor = GPUFL_ENGINE_MONITOR,
    Trace = GPUFL_ENGINE_TRACE,
    PcSampling = GPUFL_ENGINE_PC_SAMPLING,
    SassMetrics = GPUFL_ENGINE_SASS_METRICS,
    RangeProfiler = GPUFL_ENGINE_RANGE_PROFILER,
    Deep = GPUFL_ENGINE_DEEP,
    PmSampling = GPUFL_ENGINE_PM_SAMPLING // not in the seed: Trace + PM sampling
};

// The seed's fields, names, types and defaults, in its order (the options
// of gpufl.h beyond the seed's are left at their defaults).
struct InitOptions {
    std::string app_name = "gpufl";
    std::string log_path = ""; // "" = app_name

    std::string backend_url = "";
    std::string api_key = "";
    std::string api_path = "";  // "" = "/api/v1"
    bool remote_upload = false; // deprecated: one line at init, no effect

    bool enable_stack_trace = false;
    bool enable_source_collection = true;
    bool enable_external_correlation = true;
    bool enable_synchronization = true;
    bool enable_memory_tracking = false;
    bool enable_cuda_graphs_tracking = false;

    int system_sample_rate_ms = 0;
    int kernel_sample_rate_ms = 0; // deprecated: accepted, no effect
    bool continuous_system_sampling = false;

    BackendKind backend = BackendKind::Auto;
    ProfilingEngine profiling_engine = ProfilingEngine::Monitor;

    std::string config_file = "";
    bool flush_logs_always = false;
    bool enable_debug_output = false;
    bool enabled = true;
};

namespace detail
{

// The outcome of the calling thread's last init() / generateReport(): a
// fixed buffer, so recording an error never allocates (or throws).
inline gpufl_error &last_error() noexcept
{
    static thread_local gpufl_error e{};
    return e;
}

// The C options for opts; the strings point into opts, which must outlive
// the use of the result.
inline gpufl_init_options to_c(const InitOptions &opts) noexcept
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = opts.app_name.c_str();
    o.log_path = opts.log_path.c_str();
    o.backend_url = opts.backend_url.c_str();
    o.api_key = opts.api_key.c_str();
    o.api_path = opts.api_path.c_str();
    o.remote_upload = opts.remote_upload;
    o.enable_stack_trace = opts.enable_stack_trace;
    o.enable_source_collection = opts.enable_source_collection;
    o.enable_external_correlation = opts.enable_external_correlation;
    o.enable_synchronization = opts.enable_synchronization;
    o.enable_memory_tracking = opts.enable_memory_tracking;
    o.enable_cuda_graphs_tracking = opts.enable_cuda_graphs_tracking;
    o.system_sample_rate_ms = opts.system_sample_rate_ms;
    o.kernel_sample_rate_ms = opts.kernel_sample_rate_ms;
    o.continuous_system_sampling = opts.continuous_system_sampling;
    o.backend = static_cast<gpufl_backend_kind>(opts.backend);
    o.profiling_engine = static_cast<gpufl_engine>(opts.profiling_engine);
    o.config_file = opts.config_file.c_str();
    o.flush_logs_always = opts.flush_logs_always;
    o.enable_debug_output = opts.enable_debug_output;
    o.enabled = opts.enabled;
    return o;
}

inline bool record(gpufl_status st) noexcept
{
    gpufl_error &e = last_error();
    e.status = st;
    if (st == GPUFL_OK)
        e.message[0] = '\0';
    return st == GPUFL_OK;
}

} // namespace detail

// Starts a session.  false when it did not start: lastStatus() is
// GPUFL_DISABLED for the kill switch (enabled = false, GPUFL_DISABLED),
// else the error, and lastError() the message naming the input and the fix.
inline bool init(const InitOptions &opts) noexcept
{
    gpufl_init_options o = detail::to_c(opts);
    gpufl_error &e = detail::last_error();
    e.message[0] = '\0';
    return detail::record(gpufl_init(&o, &e));
}

// Flushes, writes shutdown, stops the threads; idempotent.
inline void shutdown() noexcept
{
    gpufl_shutdown();
}

// The text report of this process's session to output_path, or to standard
// output for "".  Returns nothing (the seed's signature): lastStatus() /
// lastError() tell whether it was written.
inline void generateReport(const std::string &output_path = "") noexcept
{
    gpufl_error &e = detail::last_error();
    e.message[0] = '\0';
    detail::record(gpufl_generate_report(output_path.c_str(), &e));
}

// The status of the calling thread's last init() or generateReport()
// (GPUFL_OK before any); its message, "" after success.
inline gpufl_status lastStatus() noexcept
{
    return detail::last_error().status;
}
inline const char *lastError() noexcept
{
    return detail::last_error().message;
}

// System phases: system_start / system_stop records, and a sampling window
// when continuous_system_sampling is off.
inline void systemStart(const std::string &name = "system") noexcept
{
    gpufl_system_start(name.c_str());
}
inline void systemStop(const std::string &name = "system") noexcept
{
    gpufl_system_stop(name.c_str());
}

// A scope from construction to destruction (any way out of its block).
// The name is copied at construction.  Neither copyable nor movable: a
// scope belongs to the block (and thread) that opened it.
class ScopedMonitor
{
  public:
    explicit ScopedMonitor(const char *name) noexcept : scope_(gpufl_scope_begin(name)) {}
    explicit ScopedMonitor(const std::string &name) noexcept : ScopedMonitor(name.c_str()) {}
    ~ScopedMonitor()
    {
        gpufl_scope_end(&scope_);
    }
    ScopedMonitor(const ScopedMonitor &) = delete;
    ScopedMonitor &operator=(const ScopedMonitor &) = delete;

  private:
    gpufl_scope scope_;
};

// f() inside a scope named name; returns what f returns, and closes the
// scope before an exception from f goes on to the caller.
template <class F> auto monitor(const std::string &name, F &&f) -> decltype(std::forward<F>(f)())
{
    ScopedMonitor scope(name);
    return std::forward<F>(f)();
}

// Upload (GPUFlight's uploadLogs; docs/gpufl.md, "Upload"): the options and
// result of gpufl_upload_logs with GPUFlight 1.3's field names where it has
// one.  Empty strings: the environment (GPUFL_BACKEND_URL, GPUFL_API_KEY,
// GPUFL_API_PATH), then "/api/v1" for api_path.
struct UploadOptions {
    std::string log_path;          // a session directory, or a log directory
    std::string backend_url;       // "https://host", no /api/v1
    std::string api_key;           // sent as Authorization: Bearer; never logged
    std::string api_path;          // "" = "/api/v1"
    std::string session_id_filter; // "" = every finished session under log_path
    bool force = false;            // also unfinished (live or crashed) sessions
    int connect_timeout_ms = 10 * 1000;
    int read_timeout_ms = 60 * 1000; // per request
    int max_retries = 2;             // after a 5xx, a timeout or a dropped connection
    int retry_delay_ms = 500;        // doubled at each retry
};

struct UploadResult {
    bool success = false;
    gpufl_status status = GPUFL_OK; // GPUFL_DISABLED: the kill switch, nothing sent
    std::size_t files_processed = 0;
    std::size_t files_skipped_by_cursor = 0;
    std::size_t events_uploaded = 0;
    std::size_t events_rejected = 0;
    std::size_t bytes_uploaded = 0;
    std::size_t sessions_uploaded = 0;
    int http_status = -1; // of the request that failed; -1: none, or no HTTP answer
    std::string message;  // what failed or was skipped; never the key
};

// Uploads what opts.log_path holds (after shutdown(): only finished
// sessions unless force).  Never throws for an upload failure: see
// success, status, http_status and message.
inline UploadResult uploadLogs(const UploadOptions &opts)
{
    gpufl_upload_options o;
    gpufl_upload_options_init(&o);
    o.log_path = opts.log_path.c_str();
    o.backend_url = opts.backend_url.c_str();
    o.api_key = opts.api_key.c_str();
    o.api_path = opts.api_path.c_str();
    o.session_id = opts.session_id_filter.c_str();
    o.force = opts.force;
    o.connect_timeout_s = opts.connect_timeout_ms / 1000.0;
    o.timeout_s = opts.read_timeout_ms / 1000.0;
    o.max_retries = opts.max_retries;
    o.retry_delay_ms = opts.retry_delay_ms;
    gpufl_upload_result r{};
    gpufl_error e{};
    UploadResult out;
    out.status = gpufl_upload_logs(&o, &r, &e);
    out.success = r.success;
    out.files_processed = static_cast<std::size_t>(r.files_processed);
    out.files_skipped_by_cursor = static_cast<std::size_t>(r.files_skipped_by_cursor);
    out.events_uploaded = static_cast<std::size_t>(r.events_uploaded);
    out.events_rejected = static_cast<std::size_t>(r.events_rejected);
    out.bytes_uploaded = static_cast<std::size_t>(r.bytes_uploaded);
    out.sessions_uploaded = static_cast<std::size_t>(r.sessions_uploaded);
    out.http_status = r.http_status;
    out.message = r.message[0] ? r.message : e.message;
    return out;
}

} // namespace gpufl

#define GFL_CAT2_(a, b) a##b
#define GFL_CAT_(a, b) GFL_CAT2_(a, b)
#ifdef __COUNTER__
#define GFL_UNIQUE_(base) GFL_CAT_(base, __COUNTER__)
#else
#define GFL_UNIQUE_(base) GFL_CAT_(base, __LINE__)
#endif

// GFL_SCOPE("name") { ... }: the block runs once inside a scope, closed when
// the block is left: its end, return, break / continue (which act on the
// enclosing loop, as for a plain block), goto, an exception.  The guard
// lives in an if-statement's initializer and the block is its else branch,
// so an `else` after the block can only belong to an enclosing `if`.
#define GFL_SCOPE(name)                                                                            \
    if (::gpufl::ScopedMonitor GFL_UNIQUE_(gfl_scope_guard_){name}; false) {                       \
    } else

#endif /* GPUFL_GPUFL_HPP */
