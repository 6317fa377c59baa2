// The C++ API (include/gpufl/gpufl.hpp) against the library and the fake
// NVML: seed 002's C++ blocks run (seed_blocks.cpp), and every way out of a
// scope - end, return, break, continue, goto, exception - leaves a closed
// scope in the session read back from scope.log (names, depths, begin/end
// pairs); init's outcomes reach the caller through lastStatus/lastError.
#include "../../include/gpufl/gpufl.hpp"
#include "../check.h"
#include "cxx_test.h"

#include <jansson.h>

#include <algorithm>
#include <fcntl.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

// CHECK_STR for std::string values (kept alive for the comparison).
#define CHECK_SSTR(a, b)                                                                           \
    do {                                                                                           \
        const std::string sa_ = (a), sb_ = (b);                                                    \
        CHECK_STR(sa_.c_str(), sb_.c_str());                                                       \
    } while (0)

namespace
{

std::string g_tmp; // this run's scratch directory

// One scope row: "B name depth" / "E name depth", and its instance id.
struct ScopeRow {
    std::string text;
    long long id;
};

std::string read_text(const std::string &path)
{
    size_t len = 0;
    char *t = check_read_file(path.c_str(), &len);
    std::string s = t ? std::string(t, len) : std::string();
    free(t);
    return s;
}

int column(json_t *batch, const char *name)
{
    json_t *cols = json_object_get(batch, "columns");
    for (size_t i = 0; i < json_array_size(cols); i++)
        if (strcmp(json_string_value(json_array_get(cols, i)), name) == 0)
            return (int)i;
    return -1;
}

// Every scope_event_batch row of dir/scope.log, in order (one thread: the
// order the program ran them).
std::vector<ScopeRow> read_scopes(const std::string &dir)
{
    std::vector<ScopeRow> out;
    std::vector<std::pair<long long, std::string>> names;
    std::string text = read_text(dir + "/scope.log");
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        std::string line = text.substr(pos, nl == std::string::npos ? nl : nl - pos);
        pos = nl == std::string::npos ? text.size() : nl + 1;
        json_error_t e;
        json_t *j = json_loads(line.c_str(), 0, &e);
        CHECK(j != nullptr);
        if (!j)
            continue;
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(j, "scope_name_dict"), k, v)
        {
            names.emplace_back(atoll(k), json_string_value(v));
        }
        const char *type = json_string_value(json_object_get(j, "type"));
        if (type && strcmp(type, "scope_event_batch") == 0) {
            int ci = column(j, "scope_instance_id"), cn = column(j, "name_id");
            int ct = column(j, "event_type"), cd = column(j, "depth");
            json_t *rows = json_object_get(j, "rows");
            for (size_t i = 0; i < json_array_size(rows); i++) {
                json_t *r = json_array_get(rows, i);
                long long nid = json_integer_value(json_array_get(r, cn));
                std::string name = "?";
                for (auto &n : names)
                    if (n.first == nid)
                        name = n.second;
                long long t = json_integer_value(json_array_get(r, ct));
                out.push_back({std::string(t == 0   ? "B "
                                           : t == 1 ? "E "
                                                    : "? ") +
                                   name + " " +
                                   std::to_string(json_integer_value(json_array_get(r, cd))),
                               json_integer_value(json_array_get(r, ci))});
            }
        }
        json_decref(j);
    }
    return out;
}

// Each end closes the innermost open scope (same id and name), none is left.
void check_pairing(const std::vector<ScopeRow> &rows)
{
    std::vector<const ScopeRow *> open;
    for (auto &r : rows) {
        if (r.text[0] == 'B') {
            open.push_back(&r);
            continue;
        }
        CHECK(!open.empty());
        if (open.empty())
            continue;
        CHECK_INT(r.id, open.back()->id);
        CHECK_SSTR(r.text.substr(1), open.back()->text.substr(1));
        open.pop_back();
    }
    CHECK_INT(open.size(), 0);
}

int early_return()
{
    GFL_SCOPE("early_return")
    {
        return 7;
    }
    return 0;
}

// Every way out of a scope, in the order the expected rows below list them.
void run_scopes()
{
    cxx_test::seed_scoping();
    cxx_test::seed_system_monitoring();
    int caught = 0;
    try {
        GFL_SCOPE("throw_macro")
        {
            throw std::runtime_error("macro");
        }
    } catch (const std::runtime_error &) {
        caught++;
    }
    try {
        gpufl::ScopedMonitor s("throw_object");
        throw 1;
    } catch (int) {
        caught++;
    }
    try {
        gpufl::monitor("throw_lambda", [] { throw std::runtime_error("lambda"); });
    } catch (const std::runtime_error &) {
        caught++;
    }
    CHECK_INT(caught, 3);
    CHECK_INT(early_return(), 7);
    int i = 0;
    for (; i < 3; i++) {
        GFL_SCOPE("loop_break")
        {
            if (i == 1)
                break; // leaves the for loop, not only the scope
        }
    }
    CHECK_INT(i, 1);
    int after = 0;
    for (int k = 0; k < 2; k++) {
        GFL_SCOPE("loop_continue")
        {
            if (k == 0)
                continue;
            after++;
        }
    }
    CHECK_INT(after, 1);
    GFL_SCOPE("goto_out")
    {
        goto out;
    }
out:
    GFL_SCOPE("outer")
    {
        GFL_SCOPE("inner") {}
        GFL_SCOPE("inner")
        {
            GFL_SCOPE("a") GFL_SCOPE("b") {}
        }
    }
    try {
        GFL_SCOPE("outer_throw")
        {
            gpufl::ScopedMonitor inner(std::string("inner_") + "throw");
            throw std::runtime_error("two levels");
        }
    } catch (const std::runtime_error &) {
        caught++;
    }
    CHECK_INT(caught, 4);
    CHECK_INT(gpufl::monitor("value", [] { return 42; }), 42);
    int x = 1;
    int &ref = gpufl::monitor("ref", [&]() -> int & { return x; });
    CHECK(&ref == &x);
    std::unique_ptr<int> p = gpufl::monitor("move_only", [] { return std::make_unique<int>(5); });
    CHECK(p && *p == 5);
    // An else after the block belongs to the enclosing if.
    int branch = 0;
    if (x == 1)
        GFL_SCOPE("if_taken")
        {
            branch = 1;
        }
    else
        branch = 2;
    CHECK_INT(branch, 1);
    if (x == 2)
        GFL_SCOPE("if_not_taken") {}
    else
        branch = 3;
    CHECK_INT(branch, 3);
}

const char *const EXPECTED[] = {
    "B name 0",
    "E name 0",
    "B name 0",
    "E name 0",
    "B name 0",
    "E name 0",
    "B throw_macro 0",
    "E throw_macro 0",
    "B throw_object 0",
    "E throw_object 0",
    "B throw_lambda 0",
    "E throw_lambda 0",
    "B early_return 0",
    "E early_return 0",
    "B loop_break 0",
    "E loop_break 0",
    "B loop_break 0",
    "E loop_break 0",
    "B loop_continue 0",
    "E loop_continue 0",
    "B loop_continue 0",
    "E loop_continue 0",
    "B goto_out 0",
    "E goto_out 0",
    "B outer 0",
    "B inner 1",
    "E inner 1",
    "B inner 1",
    "B a 2",
    "B b 3",
    "E b 3",
    "E a 2",
    "E inner 1",
    "E outer 0",
    "B outer_throw 0",
    "B inner_throw 1",
    "E inner_throw 1",
    "E outer_throw 0",
    "B value 0",
    "E value 0",
    "B ref 0",
    "E ref 0",
    "B move_only 0",
    "E move_only 0",
    "B if_taken 0",
    "E if_taken 0",
};

void test_session()
{
    gpufl::InitOptions o;
    o.app_name = "cxx";
    o.log_path = g_tmp + "/logs";
    CHECK(gpufl::init(o));
    CHECK_INT(gpufl::lastStatus(), GPUFL_OK);
    CHECK_STR(gpufl::lastError(), "");
    char dir[4096];
    gpufl_session_dir(dir, sizeof dir);
    char id[64];
    gpufl_session_id(id, sizeof id);
    CHECK(!gpufl::init(o)); // a second init while recording
    CHECK_INT(gpufl::lastStatus(), GPUFL_ERR_STATE);
    run_scopes();
    gpufl::shutdown();
    gpufl::shutdown(); // idempotent
    GFL_SCOPE("after_shutdown") {}

    std::vector<ScopeRow> rows = read_scopes(dir);
    size_t n = sizeof EXPECTED / sizeof EXPECTED[0];
    CHECK_INT(rows.size(), n);
    for (size_t i = 0; i < rows.size() && i < n; i++)
        CHECK_STR(rows[i].text.c_str(), EXPECTED[i]);
    check_pairing(rows);

    std::string system = read_text(std::string(dir) + "/system.log");
    for (const char *s : {"\"system_start\"", "\"system_stop\"", "\"phase_name\""})
        CHECK_CONTAINS(system.c_str(), s);

    // The report of the session just shut down, to a file; then a path
    // that cannot be written.
    std::string report = g_tmp + "/report.txt";
    gpufl::generateReport(report);
    CHECK_INT(gpufl::lastStatus(), GPUFL_OK);
    CHECK_STR(gpufl::lastError(), "");
    std::string text = read_text(report);
    CHECK_SSTR(text.substr(0, text.find('\n')), std::string("report  cxx  session ") + id);
    gpufl::generateReport(g_tmp + "/no/such/dir/r.txt");
    CHECK_INT(gpufl::lastStatus(), GPUFL_ERR_IO);
    CHECK_CONTAINS(gpufl::lastError(), "no/such/dir/r.txt");
}

// init's failures: false, the status and a message naming the input.
void test_init_errors()
{
    gpufl::InitOptions o;
    o.log_path = g_tmp + "/errors";
    o.enabled = false;
    CHECK(!gpufl::init(o));
    CHECK_INT(gpufl::lastStatus(), GPUFL_DISABLED);
    CHECK_CONTAINS(gpufl::lastError(), "enabled = false");
    CHECK(!gpufl_is_active());
    struct stat st;
    CHECK(stat(o.log_path.c_str(), &st) != 0); // nothing created
    o.enabled = true;
    o.system_sample_rate_ms = -5;
    CHECK(!gpufl::init(o));
    CHECK_INT(gpufl::lastStatus(), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(gpufl::lastError(), "system_sample_rate_ms");
    o.system_sample_rate_ms = 0;
    o.backend = gpufl::BackendKind::Amd; // no AMD GPU here: strict, like Nvidia
    CHECK(!gpufl::init(o));
    CHECK_INT(gpufl::lastStatus(), GPUFL_ERR_BACKEND);
    CHECK_CONTAINS(gpufl::lastError(), "backend Amd");
    // A success clears the last message.
    o.backend = gpufl::BackendKind::None;
    CHECK(gpufl::init(o));
    CHECK_STR(gpufl::lastError(), "");
    gpufl::shutdown();
}

// remote_upload: one deprecation line at init, through the C library's
// log path (stderr here: InitOptions has no log_fn), and init succeeds.
void test_remote_upload()
{
    std::string path = g_tmp + "/stderr.txt";
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    gpufl::InitOptions o;
    o.log_path = g_tmp + "/upload";
    o.backend = gpufl::BackendKind::None;
    o.remote_upload = true;
    o.kernel_sample_rate_ms = 100; // deprecated: accepted, no effect
    bool ok = gpufl::init(o);
    gpufl::shutdown();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK(ok);
    std::string err = read_text(path);
    CHECK_INT(std::count(err.begin(), err.end(), '\n'), 1);
    CHECK_CONTAINS(err.c_str(), "[gpufl] remote_upload is deprecated");
}

// Every field reaches the C options; empty strings are the C defaults.
void test_mapping()
{
    gpufl::InitOptions o;
    gpufl_init_options d;
    gpufl_init_options_init(&d);
    gpufl_init_options c = gpufl::detail::to_c(o);
    CHECK_STR(c.app_name, "gpufl");
    CHECK_STR(c.log_path, "");
    CHECK(c.enable_source_collection && c.enabled && !c.remote_upload);
    CHECK_INT(c.backend, GPUFL_BACKEND_AUTO);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_MONITOR);
    CHECK_INT(c.cupti_buffer_kib, d.cupti_buffer_kib); // beyond the seed: C defaults
    o.app_name = "a";
    o.log_path = "l";
    o.backend_url = "u";
    o.api_key = "k";
    o.api_path = "p";
    o.config_file = "f";
    o.remote_upload = o.enable_stack_trace = o.enable_memory_tracking = true;
    o.enable_cuda_graphs_tracking = o.continuous_system_sampling = true;
    o.flush_logs_always = o.enable_debug_output = true;
    o.enable_source_collection = o.enable_external_correlation = false;
    o.enable_synchronization = o.enabled = false;
    o.system_sample_rate_ms = 50;
    o.kernel_sample_rate_ms = 7;
    o.backend = gpufl::BackendKind::None;
    o.profiling_engine = gpufl::ProfilingEngine::PmSampling;
    c = gpufl::detail::to_c(o);
    std::string s = std::string(c.app_name) + c.log_path + c.backend_url + c.api_key + c.api_path +
                    c.config_file;
    CHECK_STR(s.c_str(), "alukpf");
    CHECK(c.remote_upload && c.enable_stack_trace && c.enable_memory_tracking);
    CHECK(c.enable_cuda_graphs_tracking && c.continuous_system_sampling);
    CHECK(c.flush_logs_always && c.enable_debug_output);
    CHECK(!c.enable_source_collection && !c.enable_external_correlation);
    CHECK(!c.enable_synchronization && !c.enabled);
    CHECK_INT(c.system_sample_rate_ms, 50);
    CHECK_INT(c.kernel_sample_rate_ms, 7);
    CHECK_INT(c.backend, GPUFL_BACKEND_NONE);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_PM_SAMPLING);
    CHECK_SSTR(cxx_test::seed_init_options_mismatches(), "");
}

// uploadLogs over gpufl_upload_logs: the options reach it (a URL nothing
// listens on is named in the message, the key never), a missing URL is an
// argument error, and the kill switch sends nothing and succeeds.
void test_upload_logs()
{
    unsetenv("GPUFL_BACKEND_URL");
    unsetenv("GPUFL_API_KEY");
    gpufl::UploadOptions u;
    u.log_path = g_tmp + "/logs"; // test_session's finished session
    gpufl::UploadResult r = gpufl::uploadLogs(u);
    CHECK_INT(r.status, GPUFL_ERR_INVALID_ARG);
    CHECK(!r.success);
    CHECK(!r.message.empty());

    u.backend_url = "http://127.0.0.1:1";
    u.api_key = "gpfl_cxxsecret9876";
    u.max_retries = 0;
    u.connect_timeout_ms = 2000;
    r = gpufl::uploadLogs(u);
    CHECK_INT(r.status, GPUFL_ERR_UPLOAD);
    CHECK(!r.success);
    CHECK(r.message.find("http://127.0.0.1:1") != std::string::npos);
    CHECK(r.message.find("cxxsecret") == std::string::npos);
    CHECK_INT(r.events_uploaded, 0);

    setenv("GPUFL_DISABLED", "1", 1);
    r = gpufl::uploadLogs(u);
    unsetenv("GPUFL_DISABLED");
    CHECK_INT(r.status, GPUFL_DISABLED);
    CHECK(r.success);
    CHECK_INT(r.events_uploaded, 0);
    CHECK_INT(r.files_processed, 0);
}

} // namespace

int main()
{
    check_env("GP_TEST_FAKE_NVML"); // the fake NVML is on LD_LIBRARY_PATH
    char tmpl[] = "/tmp/gp-cxx-XXXXXX";
    if (!mkdtemp(tmpl))
        return 2;
    g_tmp = tmpl;
    CHECK_INT(gpufl::lastStatus(), GPUFL_OK); // before any call
    test_mapping();
    test_session();
    test_init_errors();
    test_remote_upload();
    test_upload_logs();
    std::string rm = "rm -rf '" + g_tmp + "'";
    CHECK_INT(system(rm.c_str()), 0);
    return check_done("test_cxx");
}
