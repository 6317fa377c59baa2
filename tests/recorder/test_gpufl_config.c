/*
 * test_gpufl_config.c - the recorder's option resolution (src/recorder/config.c):
 * defaults, every field from code / config file / environment, precedence
 * between them, the kill switch, every config and environment error with
 * its message, validation, derived values, the deprecation warning and the
 * provenance text.  Config files live in a mktemp directory; every case
 * starts from a clean GPUFL_* environment.
 */
#include "check.h"
#include "recorder/config.h"
#include "gpufl.h"

#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];
static char written[256][512];
static int n_written;

static const char *const env_vars[] = {
    "GPUFL_DISABLED",         "GPUFL_BACKEND_URL",        "GPUFL_API_KEY",
    "GPUFL_API_PATH",         "GPUFL_PROFILING_ENGINE",   "GPUFL_REMOTE_UPLOAD",
    "GPUFL_CONFIG_FILE",      "GPUFL_ENABLE_STACK_TRACE", "GPUFL_NO_TSC",
    "GPUFL_CUPTI_BUFFER_KIB",
};

static void clean_env(void)
{
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
        unsetenv(env_vars[i]);
}

/* Writes text to <tmpdir>/<name> and returns the path (valid until exit). */
static const char *cfg(const char *name, const char *text)
{
    if (n_written >= 256) {
        fprintf(stderr, "too many config files\n");
        exit(2);
    }
    char *path = written[n_written++];
    snprintf(path, sizeof written[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    return path;
}

static const char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", tmpdir, name);
    return p;
}

/* Resolves opts into c; the error is reset first so stale text cannot pass. */
static gpufl_status resolve(const gpufl_init_options *o, fl_config *c, gpufl_error *e)
{
    memset(e, 0x5a, sizeof *e);
    e->message[0] = '\0';
    return fl_config_resolve(o, c, e);
}

/* A failed resolve leaves out zeroed. */
static void check_empty(const fl_config *c)
{
    CHECK(c->app_name == NULL);
    CHECK(c->log_path == NULL);
    CHECK(c->api_path == NULL);
    CHECK(c->config_file == NULL);
    CHECK(c->provenance == NULL);
    CHECK_INT(c->n_warnings, 0);
}

/* ------------------------------------------------------------ defaults */

static void test_options_defaults(void)
{
    gpufl_init_options o;
    memset(&o, 0x7f, sizeof o);
    gpufl_init_options_init(&o);
    CHECK_STR(o.app_name, "gpufl");
    CHECK_STR(o.log_path, "");
    CHECK_STR(o.backend_url, "");
    CHECK_STR(o.api_key, "");
    CHECK_STR(o.api_path, "");
    CHECK_INT(o.remote_upload, false);
    CHECK_INT(o.enable_stack_trace, false);
    CHECK_INT(o.enable_source_collection, true);
    CHECK_INT(o.enable_external_correlation, true);
    CHECK_INT(o.enable_synchronization, true);
    CHECK_INT(o.enable_memory_tracking, false);
    CHECK_INT(o.enable_cuda_graphs_tracking, false);
    CHECK_INT(o.system_sample_rate_ms, 0);
    CHECK_INT(o.kernel_sample_rate_ms, 0);
    CHECK_INT(o.continuous_system_sampling, false);
    CHECK_INT(o.backend, GPUFL_BACKEND_AUTO);
    CHECK_INT(o.profiling_engine, GPUFL_ENGINE_MONITOR);
    CHECK_STR(o.config_file, "");
    CHECK_INT(o.flush_logs_always, false);
    CHECK_INT(o.enable_debug_output, false);
    CHECK_INT(o.enabled, true);
    CHECK(o.log_fn == NULL);
    CHECK(o.log_user == NULL);
    gpufl_init_options_init(NULL); /* accepted */
}

static void check_resolved_defaults(const fl_config *c)
{
    CHECK_STR(c->app_name, "gpufl");
    CHECK_STR(c->log_path, "gpufl");
    CHECK_STR(c->backend_url, "");
    CHECK_STR(c->api_key, "");
    CHECK_STR(c->api_path, "/api/v1");
    CHECK_INT(c->remote_upload, false);
    CHECK_INT(c->enable_stack_trace, false);
    CHECK_INT(c->enable_source_collection, true);
    CHECK_INT(c->enable_external_correlation, true);
    CHECK_INT(c->enable_synchronization, true);
    CHECK_INT(c->enable_memory_tracking, false);
    CHECK_INT(c->enable_cuda_graphs_tracking, false);
    CHECK_INT(c->system_sample_rate_ms, 0);
    CHECK_INT(c->kernel_sample_rate_ms, 0);
    CHECK_INT(c->continuous_system_sampling, false);
    CHECK_INT(c->backend, GPUFL_BACKEND_AUTO);
    CHECK_INT(c->profiling_engine, GPUFL_ENGINE_MONITOR);
    CHECK_STR(c->config_file, "");
    CHECK_INT(c->flush_logs_always, false);
    CHECK_INT(c->enable_debug_output, false);
    CHECK(c->log_fn == NULL);
    CHECK(c->log_user == NULL);
    CHECK_INT(c->n_warnings, 0);
    CHECK(c->warnings[0] == NULL);
    CHECK_STR(c->provenance, "");
}

static void test_resolve_defaults(void)
{
    clean_env();
    fl_config c;
    gpufl_error e;
    memset(&c, 0x33, sizeof c); /* out need not be initialised */
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
    CHECK_INT(e.status, GPUFL_OK);
    CHECK_STR(e.message, "");
    check_resolved_defaults(&c);
    fl_config_free(&c);

    gpufl_init_options o;
    gpufl_init_options_init(&o);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    check_resolved_defaults(&c);
    fl_config_free(&c);

    /* NULL strings in code mean "left at default". */
    o.app_name = NULL;
    o.log_path = NULL;
    o.backend_url = NULL;
    o.api_key = NULL;
    o.api_path = NULL;
    o.config_file = NULL;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    check_resolved_defaults(&c);
    fl_config_free(&c);

    /* "" strings too, app_name included. */
    o.app_name = "";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    check_resolved_defaults(&c);
    fl_config_free(&c);

    /* A NULL err is accepted. */
    CHECK_INT(fl_config_resolve(NULL, &c, NULL), GPUFL_OK);
    fl_config_free(&c);
    CHECK_INT(fl_config_resolve(NULL, NULL, &e), GPUFL_ERR_INVALID_ARG);
    CHECK_INT(e.status, GPUFL_ERR_INVALID_ARG);
}

/* ---------------------------------------------------- each field's source */

static void dummy_log(const char *line, void *user)
{
    (void)line;
    (void)user;
}

static void test_fields_from_code(void)
{
    clean_env();
    int user = 0;
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "train";
    o.log_path = "runs/train.log";
    o.backend_url = "https://api.example.com";
    o.api_key = "gpfl_codesecret";
    o.api_path = "/proxy/api/v1";
    o.remote_upload = true;
    o.enable_stack_trace = true;
    o.enable_source_collection = false;
    o.enable_external_correlation = false;
    o.enable_synchronization = false;
    o.enable_memory_tracking = true;
    o.enable_cuda_graphs_tracking = true;
    o.system_sample_rate_ms = 50;
    o.kernel_sample_rate_ms = 7;
    o.continuous_system_sampling = true;
    o.backend = GPUFL_BACKEND_NONE;
    o.profiling_engine = GPUFL_ENGINE_DEEP;
    o.flush_logs_always = true;
    o.enable_debug_output = true;
    o.log_fn = dummy_log;
    o.log_user = &user;

    fl_config c;
    gpufl_error e;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "train");
    CHECK_STR(c.log_path, "runs/train");
    CHECK_STR(c.backend_url, "https://api.example.com");
    CHECK_STR(c.api_key, "gpfl_codesecret");
    CHECK_STR(c.api_path, "/proxy/api/v1");
    CHECK_INT(c.remote_upload, true);
    CHECK_INT(c.enable_stack_trace, true);
    CHECK_INT(c.enable_source_collection, false);
    CHECK_INT(c.enable_external_correlation, false);
    CHECK_INT(c.enable_synchronization, false);
    CHECK_INT(c.enable_memory_tracking, true);
    CHECK_INT(c.enable_cuda_graphs_tracking, true);
    CHECK_INT(c.system_sample_rate_ms, 50);
    CHECK_INT(c.kernel_sample_rate_ms, 7);
    CHECK_INT(c.continuous_system_sampling, true);
    CHECK_INT(c.backend, GPUFL_BACKEND_NONE);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_DEEP);
    CHECK_STR(c.config_file, "");
    CHECK_INT(c.flush_logs_always, true);
    CHECK_INT(c.enable_debug_output, true);
    CHECK(c.log_fn == dummy_log);
    CHECK(c.log_user == &user);
    CHECK_STR(c.provenance, "  app_name = train (code)\n"
                            "  log_path = runs/train (code)\n"
                            "  backend_url = https://api.example.com (code)\n"
                            "  api_key = <set> (code)\n"
                            "  api_path = /proxy/api/v1 (code)\n"
                            "  remote_upload = true (code)\n"
                            "  enable_stack_trace = true (code)\n"
                            "  enable_source_collection = false (code)\n"
                            "  enable_external_correlation = false (code)\n"
                            "  enable_synchronization = false (code)\n"
                            "  enable_memory_tracking = true (code)\n"
                            "  enable_cuda_graphs_tracking = true (code)\n"
                            "  system_sample_rate_ms = 50 (code)\n"
                            "  kernel_sample_rate_ms = 7 (code) - deprecated, no effect\n"
                            "  continuous_system_sampling = true (code)\n"
                            "  backend = None (code)\n"
                            "  profiling_engine = Deep (code)\n"
                            "  flush_logs_always = true (code)\n"
                            "  enable_debug_output = true (code)\n");
    CHECK(strstr(c.provenance, "gpfl_codesecret") == NULL);
    fl_config_free(&c);

    /* Every backend and engine value is accepted from code. */
    for (int b = GPUFL_BACKEND_AUTO; b <= GPUFL_BACKEND_NONE; b++) {
        gpufl_init_options_init(&o);
        o.backend = (gpufl_backend_kind)b;
        CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
        CHECK_INT(c.backend, b);
        fl_config_free(&c);
    }
    for (int g = GPUFL_ENGINE_MONITOR; g <= GPUFL_ENGINE_DEEP; g++) {
        gpufl_init_options_init(&o);
        o.profiling_engine = (gpufl_engine)g;
        CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
        CHECK_INT(c.profiling_engine, g);
        fl_config_free(&c);
    }
}

static void test_fields_from_config(void)
{
    clean_env();
    const char *path = cfg("all.json", "{\n"
                                       "  \"app_name\": \"cfgapp\",\n"
                                       "  \"log_path\": \"/var/log/gpufl.log\",\n"
                                       "  \"backend_url\": \"https://cfg.example.com\",\n"
                                       "  \"api_key\": \"gpfl_cfgsecret\",\n"
                                       "  \"api_path\": \"/cfg/api\",\n"
                                       "  \"remote_upload\": true,\n"
                                       "  \"enable_stack_trace\": true,\n"
                                       "  \"enable_source_collection\": false,\n"
                                       "  \"enable_external_correlation\": false,\n"
                                       "  \"enable_synchronization\": false,\n"
                                       "  \"enable_memory_tracking\": true,\n"
                                       "  \"enable_cuda_graphs_tracking\": true,\n"
                                       "  \"system_sample_rate_ms\": 100,\n"
                                       "  \"kernel_sample_rate_ms\": 3,\n"
                                       "  \"continuous_system_sampling\": true,\n"
                                       "  \"backend\": \"nvidia\",\n"
                                       "  \"profiling_engine\": \"PCSAMPLING\",\n"
                                       "  \"flush_logs_always\": true,\n"
                                       "  \"enable_debug_output\": true,\n"
                                       "  \"enabled\": true\n"
                                       "}\n");
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.config_file = path;
    fl_config c;
    gpufl_error e;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "cfgapp");
    CHECK_STR(c.log_path, "/var/log/gpufl");
    CHECK_STR(c.backend_url, "https://cfg.example.com");
    CHECK_STR(c.api_key, "gpfl_cfgsecret");
    CHECK_STR(c.api_path, "/cfg/api");
    CHECK_INT(c.remote_upload, true);
    CHECK_INT(c.enable_stack_trace, true);
    CHECK_INT(c.enable_source_collection, false);
    CHECK_INT(c.enable_external_correlation, false);
    CHECK_INT(c.enable_synchronization, false);
    CHECK_INT(c.enable_memory_tracking, true);
    CHECK_INT(c.enable_cuda_graphs_tracking, true);
    CHECK_INT(c.system_sample_rate_ms, 100);
    CHECK_INT(c.kernel_sample_rate_ms, 3);
    CHECK_INT(c.continuous_system_sampling, true);
    CHECK_INT(c.backend, GPUFL_BACKEND_NVIDIA);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_PC_SAMPLING);
    CHECK_STR(c.config_file, path);
    CHECK_INT(c.flush_logs_always, true);
    CHECK_INT(c.enable_debug_output, true);
    CHECK_INT(c.n_warnings, 1);

    char want[8192];
    snprintf(want, sizeof want,
             "  app_name = cfgapp (config %1$s)\n"
             "  log_path = /var/log/gpufl (config %1$s)\n"
             "  backend_url = https://cfg.example.com (config %1$s)\n"
             "  api_key = <set> (config %1$s)\n"
             "  api_path = /cfg/api (config %1$s)\n"
             "  remote_upload = true (config %1$s)\n"
             "  enable_stack_trace = true (config %1$s)\n"
             "  enable_source_collection = false (config %1$s)\n"
             "  enable_external_correlation = false (config %1$s)\n"
             "  enable_synchronization = false (config %1$s)\n"
             "  enable_memory_tracking = true (config %1$s)\n"
             "  enable_cuda_graphs_tracking = true (config %1$s)\n"
             "  system_sample_rate_ms = 100 (config %1$s)\n"
             "  kernel_sample_rate_ms = 3 (config %1$s) - deprecated, no effect\n"
             "  continuous_system_sampling = true (config %1$s)\n"
             "  backend = Nvidia (config %1$s)\n"
             "  profiling_engine = PcSampling (config %1$s)\n"
             "  config_file = %1$s (code)\n"
             "  flush_logs_always = true (config %1$s)\n"
             "  enable_debug_output = true (config %1$s)\n",
             path);
    CHECK_STR(c.provenance, want);
    CHECK(strstr(c.provenance, "gpfl_cfgsecret") == NULL);
    fl_config_free(&c);

    /* Every backend name, any case. */
    static const char *const backends[] = {"auto", "NVIDIA", "Amd", "nOnE"};
    for (int b = 0; b < 4; b++) {
        char text[64];
        snprintf(text, sizeof text, "{\"backend\": \"%s\"}", backends[b]);
        o.config_file = cfg("backend.json", text);
        CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
        CHECK_INT(c.backend, b);
        fl_config_free(&c);
    }
    /* "" strings in the file are left at default, like in code. */
    o.config_file = cfg("empty_strings.json", "{\"app_name\": \"\", \"api_path\": \"\"}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "gpufl");
    CHECK_STR(c.api_path, "/api/v1");
    fl_config_free(&c);
    /* An empty object and escaped keys. */
    o.config_file = cfg("empty_obj.json", "{}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "gpufl");
    CHECK_STR(c.config_file, o.config_file);
    fl_config_free(&c);
    o.config_file =
        cfg("escaped.json", "{\"app\\u005fname\": \"esc\", \"api_path\": \"/a\\\"{[\"}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "esc");
    CHECK_STR(c.api_path, "/a\"{[");
    fl_config_free(&c);
}

static void test_fields_from_env(void)
{
    clean_env();
    setenv("GPUFL_BACKEND_URL", "https://env.example.com", 1);
    setenv("GPUFL_API_KEY", "gpfl_envsecret", 1);
    setenv("GPUFL_API_PATH", "/env/api", 1);
    setenv("GPUFL_PROFILING_ENGINE", "trace", 1);
    setenv("GPUFL_REMOTE_UPLOAD", "YES", 1);
    setenv("GPUFL_ENABLE_STACK_TRACE", "1", 1);
    fl_config c;
    gpufl_error e;
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
    CHECK_STR(c.backend_url, "https://env.example.com");
    CHECK_STR(c.api_key, "gpfl_envsecret");
    CHECK_STR(c.api_path, "/env/api");
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_TRACE);
    CHECK_INT(c.remote_upload, true);
    CHECK_INT(c.enable_stack_trace, true);
    CHECK_STR(c.provenance, "  backend_url = https://env.example.com (env GPUFL_BACKEND_URL)\n"
                            "  api_key = <set> (env GPUFL_API_KEY)\n"
                            "  api_path = /env/api (env GPUFL_API_PATH)\n"
                            "  remote_upload = true (env GPUFL_REMOTE_UPLOAD)\n"
                            "  enable_stack_trace = true (env GPUFL_ENABLE_STACK_TRACE)\n"
                            "  profiling_engine = Trace (env GPUFL_PROFILING_ENGINE)\n");
    CHECK(strstr(c.provenance, "gpfl_envsecret") == NULL);
    fl_config_free(&c);

    /* GPUFL_CONFIG_FILE names the config file. */
    clean_env();
    const char *path = cfg("envfile.json", "{\"app_name\": \"fromenvfile\"}");
    setenv("GPUFL_CONFIG_FILE", path, 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "fromenvfile");
    CHECK_STR(c.config_file, path);
    char want[1024];
    /* log_path derives from app_name but is not itself set: one line only. */
    snprintf(want, sizeof want,
             "  app_name = fromenvfile (config %s)\n"
             "  config_file = %s (env GPUFL_CONFIG_FILE)\n",
             path, path);
    CHECK_STR(c.provenance, want);
    fl_config_free(&c);

    /* Empty values count as unset. */
    clean_env();
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
        setenv(env_vars[i], "", 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
    check_resolved_defaults(&c);
    fl_config_free(&c);

    /* Engine names in any case; every engine. */
    static const char *const engines[] = {"MONITOR",     "Trace",         "pcsampling",
                                          "sassMetrics", "RANGEPROFILER", "deep"};
    for (int g = 0; g < 6; g++) {
        clean_env();
        setenv("GPUFL_PROFILING_ENGINE", engines[g], 1);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
        CHECK_INT(c.profiling_engine, g);
        fl_config_free(&c);
    }
    /* Every boolean spelling of GPUFL_REMOTE_UPLOAD. */
    static const char *const truthy[] = {"1", "true", "TRUE", "Yes", "on", "ON"};
    static const char *const falsy[] = {"0", "false", "False", "no", "NO", "off"};
    for (int i = 0; i < 6; i++) {
        clean_env();
        setenv("GPUFL_REMOTE_UPLOAD", truthy[i], 1);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
        CHECK_INT(c.remote_upload, true);
        fl_config_free(&c);
        setenv("GPUFL_REMOTE_UPLOAD", falsy[i], 1);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
        CHECK_INT(c.remote_upload, false);
        CHECK_INT(c.n_warnings, 0);
        fl_config_free(&c);
    }
    clean_env();
}

/* ------------------------------------------------------------ precedence */

/* For a string field with an environment variable: each pair of sources. */
static void precedence_str(const char *key, const char *env, size_t opt_off, size_t out_off)
{
    fl_config c;
    gpufl_error e;
    gpufl_init_options o;
    char text[256], want[1024];
    snprintf(text, sizeof text, "{\"%s\": \"/from-config\"}", key);
    const char *path = cfg("prec.json", text);
#define SET_OPT(v) (*(const char **)(void *)((char *)&o + opt_off) = (v))
#define GOT() (*(char **)(void *)((char *)&c + out_off))

    /* config > default */
    clean_env();
    gpufl_init_options_init(&o);
    o.config_file = path;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(GOT(), "/from-config");
    snprintf(want, sizeof want, "  %s = %s (config %s)\n", key,
             strcmp(key, "api_key") == 0 ? "<set>" : "/from-config", path);
    CHECK_CONTAINS(c.provenance, want);
    fl_config_free(&c);

    /* env > config */
    setenv(env, "/from-env", 1);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(GOT(), "/from-env");
    snprintf(want, sizeof want, "  %s = %s (env %s)\n", key,
             strcmp(key, "api_key") == 0 ? "<set>" : "/from-env", env);
    CHECK_CONTAINS(c.provenance, want);
    fl_config_free(&c);

    /* code > env > config */
    SET_OPT("/from-code");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(GOT(), "/from-code");
    snprintf(want, sizeof want, "  %s = %s (code)\n", key,
             strcmp(key, "api_key") == 0 ? "<set>" : "/from-code");
    CHECK_CONTAINS(c.provenance, want);
    fl_config_free(&c);

    /* code > config */
    unsetenv(env);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(GOT(), "/from-code");
    fl_config_free(&c);

    /* code > env */
    setenv(env, "/from-env", 1);
    o.config_file = "";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(GOT(), "/from-code");
    fl_config_free(&c);

    /* env > default */
    SET_OPT("");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(GOT(), "/from-env");
    fl_config_free(&c);
    clean_env();
#undef SET_OPT
#undef GOT
}

static void test_precedence(void)
{
    precedence_str("backend_url", "GPUFL_BACKEND_URL", offsetof(gpufl_init_options, backend_url),
                   offsetof(fl_config, backend_url));
    precedence_str("api_key", "GPUFL_API_KEY", offsetof(gpufl_init_options, api_key),
                   offsetof(fl_config, api_key));
    precedence_str("api_path", "GPUFL_API_PATH", offsetof(gpufl_init_options, api_path),
                   offsetof(fl_config, api_path));

    fl_config c;
    gpufl_error e;
    gpufl_init_options o;

    /* profiling_engine: config Trace, env Deep, code SassMetrics. */
    clean_env();
    gpufl_init_options_init(&o);
    o.config_file = cfg("prec_engine.json", "{\"profiling_engine\": \"Trace\"}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_TRACE); /* config > default */
    fl_config_free(&c);
    setenv("GPUFL_PROFILING_ENGINE", "Deep", 1);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_DEEP); /* env > config */
    CHECK_CONTAINS(c.provenance, "  profiling_engine = Deep (env GPUFL_PROFILING_ENGINE)\n");
    fl_config_free(&c);
    o.profiling_engine = GPUFL_ENGINE_SASS_METRICS;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_SASS_METRICS); /* code > env > config */
    CHECK_CONTAINS(c.provenance, "  profiling_engine = SassMetrics (code)\n");
    fl_config_free(&c);
    o.config_file = "";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_SASS_METRICS); /* code > env */
    fl_config_free(&c);
    unsetenv("GPUFL_PROFILING_ENGINE");
    o.config_file = cfg("prec_engine.json", "{\"profiling_engine\": \"Trace\"}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_SASS_METRICS); /* code > config */
    fl_config_free(&c);
    /* Code equal to the default (Monitor) is "left at default": env wins. */
    o.profiling_engine = GPUFL_ENGINE_MONITOR;
    o.config_file = "";
    setenv("GPUFL_PROFILING_ENGINE", "pcsampling", 1);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.profiling_engine, GPUFL_ENGINE_PC_SAMPLING);
    fl_config_free(&c);

    /* remote_upload: an env value that is set wins over the config even
     * when it says the default; code can only say true (false = default). */
    clean_env();
    gpufl_init_options_init(&o);
    o.config_file = cfg("prec_ru.json", "{\"remote_upload\": true}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.remote_upload, true); /* config > default */
    fl_config_free(&c);
    setenv("GPUFL_REMOTE_UPLOAD", "off", 1);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.remote_upload, false); /* env > config */
    CHECK_INT(c.n_warnings, 0);
    CHECK_CONTAINS(c.provenance, "  remote_upload = false (env GPUFL_REMOTE_UPLOAD)\n");
    fl_config_free(&c);
    o.remote_upload = true;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.remote_upload, true); /* code > env > config */
    CHECK_CONTAINS(c.provenance, "  remote_upload = true (code)\n");
    fl_config_free(&c);
    o.config_file = cfg("prec_ru_false.json", "{\"remote_upload\": false}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.remote_upload, true); /* code > env, code > config */
    fl_config_free(&c);
    unsetenv("GPUFL_REMOTE_UPLOAD");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.remote_upload, true); /* code > config */
    fl_config_free(&c);
    o.remote_upload = false;
    setenv("GPUFL_REMOTE_UPLOAD", "1", 1);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.remote_upload, true); /* env > config (false), code at default */
    fl_config_free(&c);

    /* config_file: code's path wins over GPUFL_CONFIG_FILE. */
    clean_env();
    const char *a = cfg("prec_a.json", "{\"app_name\": \"from_a\"}");
    const char *b = cfg("prec_b.json", "{\"app_name\": \"from_b\"}");
    setenv("GPUFL_CONFIG_FILE", b, 1);
    gpufl_init_options_init(&o);
    o.config_file = a;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "from_a");
    CHECK_STR(c.config_file, a);
    fl_config_free(&c);
    o.config_file = "";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "from_b");
    CHECK_STR(c.config_file, b);
    fl_config_free(&c);
    /* Code naming a good file is not disturbed by a missing env file. */
    setenv("GPUFL_CONFIG_FILE", tmp_path("missing-env.json"), 1);
    o.config_file = a;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "from_a");
    fl_config_free(&c);
    clean_env();

    /* Fields without an environment variable: code > config > default. */
    const char *all = cfg("prec_all.json", "{\"app_name\": \"cfg\", \"log_path\": \"cfglogs\", "
                                           "\"enable_source_collection\": true, "
                                           "\"enable_stack_trace\": true, "
                                           "\"system_sample_rate_ms\": 20, "
                                           "\"backend\": \"None\"}");
    gpufl_init_options_init(&o);
    o.config_file = all;
    o.app_name = "code";
    o.log_path = "codelogs";
    o.enable_source_collection = false; /* differs from default true: code wins */
    o.system_sample_rate_ms = 5;
    o.backend = GPUFL_BACKEND_NVIDIA;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "code");
    CHECK_STR(c.log_path, "codelogs");
    CHECK_INT(c.enable_source_collection, false);
    CHECK_INT(c.enable_stack_trace, true); /* code left it at default */
    CHECK_INT(c.system_sample_rate_ms, 5);
    CHECK_INT(c.backend, GPUFL_BACKEND_NVIDIA);
    fl_config_free(&c);
    /* A code value equal to the default loses to the config. */
    const char *off = cfg("prec_off.json", "{\"enable_source_collection\": false, "
                                           "\"app_name\": \"cfgname\"}");
    gpufl_init_options_init(&o);
    o.config_file = off;
    o.enable_source_collection = true;
    o.app_name = "gpufl";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.enable_source_collection, false);
    CHECK_STR(c.app_name, "cfgname");
    fl_config_free(&c);
}

/* ------------------------------------------------------------ kill switch */

static void test_disabled(void)
{
    fl_config c;
    gpufl_error e;
    gpufl_init_options o;
    const char *good = cfg("dis_good.json", "{\"app_name\": \"x\", \"enabled\": true}");
    const char *bad = cfg("dis_bad.json", "{ not json");
    const char *missing = tmp_path("dis_missing.json");

    static const char *const truthy[] = {"1", "TRUE", "Yes", "on", "true", "YES", "On"};
    for (size_t i = 0; i < sizeof truthy / sizeof truthy[0]; i++) {
        clean_env();
        setenv("GPUFL_DISABLED", truthy[i], 1);
        memset(&c, 0x44, sizeof c);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_DISABLED);
        CHECK_INT(e.status, GPUFL_DISABLED);
        CHECK_CONTAINS(e.message, "GPUFL_DISABLED");
        check_empty(&c);
        fl_config_free(&c);
    }
    static const char *const falsy[] = {"0", "false", "FALSE", "no", "No", "off", "OFF", ""};
    for (size_t i = 0; i < sizeof falsy / sizeof falsy[0]; i++) {
        clean_env();
        setenv("GPUFL_DISABLED", falsy[i], 1);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
        CHECK_STR(c.app_name, "gpufl");
        fl_config_free(&c);
    }
    static const char *const invalid[] = {"maybe", "2", " 1", "disabled"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        clean_env();
        setenv("GPUFL_DISABLED", invalid[i], 1);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_ENV);
        CHECK_INT(e.status, GPUFL_ERR_ENV);
        char want[128];
        snprintf(want, sizeof want, "GPUFL_DISABLED=\"%s\" is not a boolean", invalid[i]);
        CHECK_CONTAINS(e.message, want);
        CHECK_CONTAINS(e.message, "1, true, yes or on");
        CHECK_CONTAINS(e.message, "0, false, no or off");
        check_empty(&c);
        fl_config_free(&c);
    }
    clean_env();
    setenv("GPUFL_DISABLED", "maybe", 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_ENV);
    CHECK_STR(e.message, "GPUFL_DISABLED=\"maybe\" is not a boolean: use 1, true, yes or on to "
                         "disable the recorder, 0, false, no or off (or unset it) to keep it on "
                         "(any case)");

    /* Over enabled = true in code, over a config, before any file is read. */
    clean_env();
    setenv("GPUFL_DISABLED", "1", 1);
    gpufl_init_options_init(&o);
    o.enabled = true;
    o.app_name = "code";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    CHECK_STR(e.message, "GPUFL_DISABLED=1: the recorder is off, nothing was started");
    o.config_file = good;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    o.config_file = bad;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    o.config_file = missing;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    o.config_file = "";
    setenv("GPUFL_CONFIG_FILE", missing, 1);
    setenv("GPUFL_PROFILING_ENGINE", "bogus", 1); /* not looked at either */
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    check_empty(&c);
    /* An invalid GPUFL_DISABLED is reported even when code says disabled. */
    setenv("GPUFL_DISABLED", "perhaps", 1);
    o.enabled = false;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_ENV);

    /* enabled = false in code: nothing is read, a missing file is fine. */
    clean_env();
    gpufl_init_options_init(&o);
    o.enabled = false;
    o.config_file = missing;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    CHECK_STR(e.message, "enabled = false in code: the recorder is off, nothing was started");
    check_empty(&c);
    o.config_file = bad;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    o.config_file = "";
    setenv("GPUFL_CONFIG_FILE", missing, 1);
    setenv("GPUFL_PROFILING_ENGINE", "bogus", 1);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    /* ... and the missing file really is an error otherwise. */
    o.enabled = true;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    clean_env();

    /* "enabled": false in the config. */
    const char *cfg_off = cfg("dis_cfg.json", "{\n  \"app_name\": \"x\",\n  \"enabled\": false\n}");
    gpufl_init_options_init(&o);
    o.config_file = cfg_off;
    memset(&c, 0x44, sizeof c);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    char want[1024];
    snprintf(want, sizeof want,
             "config file \"%s\", line 3, column 3: \"enabled\" is false: the recorder is off, "
             "nothing was started",
             cfg_off);
    CHECK_STR(e.message, want);
    check_empty(&c);
    setenv("GPUFL_CONFIG_FILE", cfg_off, 1);
    o.config_file = "";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    clean_env();
    /* GPUFL_DISABLED=0 does not turn a config's "enabled": false back on. */
    setenv("GPUFL_DISABLED", "0", 1);
    o.config_file = cfg_off;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_DISABLED);
    clean_env();
    /* "enabled": true changes nothing and is not in the provenance. */
    o.config_file = good;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK(strstr(c.provenance, "enabled") == NULL);
    fl_config_free(&c);
}

/* --------------------------------------------------------- config errors */

/* Writes text to name, resolves with it and checks a GPUFL_ERR_CONFIG whose
 * message is: config file "<path>", line L, column C: <rest>, where rest
 * contains each of the given pieces. */
static void config_error(const char *name, const char *text, int line, int col, const char *p1,
                         const char *p2, const char *p3)
{
    clean_env();
    const char *path = cfg(name, text);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.config_file = path;
    fl_config c;
    gpufl_error e;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    CHECK_INT(e.status, GPUFL_ERR_CONFIG);
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "config file \"%s\", line %d, column %d: ", path, line, col);
    if (strncmp(e.message, prefix, strlen(prefix)) == 0) {
        check_passed_++;
    } else {
        check_failed_++;
        fprintf(stderr, "%s: message \"%s\" does not start with \"%s\"\n", name, e.message, prefix);
    }
    if (p1)
        CHECK_CONTAINS(e.message, p1);
    if (p2)
        CHECK_CONTAINS(e.message, p2);
    if (p3)
        CHECK_CONTAINS(e.message, p3);
    check_empty(&c);
    fl_config_free(&c);

    /* The same file through GPUFL_CONFIG_FILE gives the same message. */
    char first[GPUFL_ERROR_MESSAGE_MAX];
    memcpy(first, e.message, sizeof first);
    setenv("GPUFL_CONFIG_FILE", path, 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_CONFIG);
    CHECK_STR(e.message, first);
    clean_env();
}

static void test_config_errors(void)
{
    /* Malformed JSON: jansson's own line and column (the end of the bad token). */
    config_error("bad_token.json", "{\n  \"app_name\": \"x\",\n  \"log_path\": \n}\n", 4, 1,
                 "malformed JSON: unexpected token near '}'", "write one JSON object", NULL);
    config_error("bad_literal.json", "{\n \"enable_stack_trace\": tru }", 2, 26,
                 "malformed JSON: invalid token near 'tru'", NULL, NULL);
    config_error("trailing_comma.json", "{\"app_name\": \"x\",}", 1, 18,
                 "malformed JSON: string or '}' expected near '}'", NULL, NULL);
    config_error("trailing_text.json", "{\"app_name\": \"x\"} x", 1, 19,
                 "malformed JSON: end of file expected near 'x'", NULL, NULL);
    config_error("unterminated.json", "{\"app_name\": \"x", 1, 15, "malformed JSON", NULL, NULL);
    config_error("empty.json", "", 1, 1, "the file is empty", "{\"app_name\": \"train\"}", NULL);
    config_error("blank.json", "\n\n  ", 3, 3, "the file is empty", NULL, NULL);

    /* Top level not an object. */
    config_error("array.json", "\n  [1, 2]\n", 2, 3,
                 "the top level is an array: expected a JSON object of options", NULL, NULL);
    config_error("scalar.json", "42", 1, 1, "the top level is an integer: expected a JSON object",
                 NULL, NULL);
    config_error("string.json", " \"x\"", 1, 2, "the top level is a string", NULL, NULL);

    /* Unknown key: named, with the known keys. */
    config_error("unknown.json", "{\n  \"app_name\": \"x\",\n    \"sample_rate\": 5\n}", 3, 5,
                 "unknown key \"sample_rate\": use one of app_name, log_path, backend_url, "
                 "api_key, api_path, remote_upload, enable_stack_trace, enable_source_collection, "
                 "enable_external_correlation, enable_synchronization, enable_memory_tracking, "
                 "enable_cuda_graphs_tracking, system_sample_rate_ms, kernel_sample_rate_ms, "
                 "continuous_system_sampling, backend, profiling_engine, flush_logs_always, "
                 "enable_debug_output, enabled",
                 NULL, NULL);
    /* Case matters for keys; positions count characters, not bytes. */
    config_error("case.json", "{\"api_path\": \"/\xc3\xa9\xc3\xa9\", \"App_Name\": 1}", 1, 21,
                 "unknown key \"App_Name\"", NULL, NULL);
    /* A key-like string inside a value or a nested container is not a key. */
    config_error("nested.json",
                 "{\"app_name\": \"\\\"log_path\\\": {\", \"bogus\": [\"x\", {\"y\": 1}]}", 1, 33,
                 "unknown key \"bogus\"", NULL, NULL);

    /* Wrong types: the expected type. */
    config_error("type_str.json", "{\"app_name\": 5}", 1, 2,
                 "key \"app_name\" has the wrong type: expected a string, got an integer", NULL,
                 NULL);
    config_error("type_str_null.json", "{\n  \"api_key\": null\n}", 2, 3,
                 "key \"api_key\" has the wrong type: expected a string, got null", NULL, NULL);
    config_error("type_bool.json", "{\n\t\"enable_stack_trace\": \"yes\"\n}", 2, 2,
                 "key \"enable_stack_trace\" has the wrong type: expected true or false, got a "
                 "string",
                 NULL, NULL);
    config_error("type_bool_int.json", "{\"remote_upload\": 1}", 1, 2,
                 "key \"remote_upload\" has the wrong type: expected true or false, got an integer",
                 NULL, NULL);
    config_error("type_enabled.json", "{\"enabled\": \"false\"}", 1, 2,
                 "key \"enabled\" has the wrong type: expected true or false, got a string", NULL,
                 NULL);
    config_error("type_int.json", "{\"system_sample_rate_ms\": \"50\"}", 1, 2,
                 "key \"system_sample_rate_ms\" has the wrong type: expected an integer in "
                 "0..2147483647, got a string",
                 NULL, NULL);
    config_error("type_real.json", "{\"system_sample_rate_ms\": 50.0}", 1, 2,
                 "key \"system_sample_rate_ms\" has the wrong type: expected an integer in "
                 "0..2147483647, got a real number",
                 NULL, NULL);
    config_error("type_obj.json", "{\"log_path\": {\"a\": 1}}", 1, 2,
                 "key \"log_path\" has the wrong type: expected a string, got an object", NULL,
                 NULL);
    config_error("type_arr.json", "{\"flush_logs_always\": [true]}", 1, 2,
                 "key \"flush_logs_always\" has the wrong type: expected true or false, got an "
                 "array",
                 NULL, NULL);
    config_error("type_backend.json", "{\"backend\": 1}", 1, 2,
                 "key \"backend\" has the wrong type: expected a string, one of Auto, Nvidia, Amd, "
                 "None, got an integer",
                 NULL, NULL);
    config_error("type_engine.json", "{\"profiling_engine\": true}", 1, 2,
                 "key \"profiling_engine\" has the wrong type: expected a string, one of Monitor, "
                 "Trace, PcSampling, SassMetrics, RangeProfiler, Deep, PmSampling, got a boolean",
                 NULL, NULL);

    /* Values out of range. */
    config_error("range_neg.json", "{\n  \"kernel_sample_rate_ms\": -1\n}", 2, 3,
                 "key \"kernel_sample_rate_ms\" is out of range: -1; expected an integer in "
                 "0..2147483647",
                 NULL, NULL);
    config_error("range_big.json", "{\"system_sample_rate_ms\": 2147483648}", 1, 2,
                 "key \"system_sample_rate_ms\" is out of range: 2147483648; expected an integer "
                 "in 0..2147483647",
                 NULL, NULL);
    config_error("backend_value.json", "{\"backend\": \"gpu\"}", 1, 2,
                 "key \"backend\" has an unknown value \"gpu\": expected one of Auto, Nvidia, Amd, "
                 "None (any case)",
                 NULL, NULL);
    config_error(
        "engine_value.json", "{\"app_name\": \"x\", \"profiling_engine\": \"fast\"}", 1, 19,
        "key \"profiling_engine\" has an unknown value \"fast\": expected one of "
        "Monitor, Trace, PcSampling, SassMetrics, RangeProfiler, Deep, PmSampling (any case)",
        NULL, NULL);

    /* Duplicate keys: the second one, with where the first is. */
    config_error("dup.json",
                 "{\n  \"app_name\": \"a\",\n  \"log_path\": \"l\",\n  \"app_name\": \"b\"\n}", 4,
                 3, "duplicate key \"app_name\" (first at line 2, column 3): keep only one of them",
                 NULL, NULL);
    config_error("dup_adjacent.json", "{\"enabled\": true, \"enabled\": false}", 1, 19,
                 "duplicate key \"enabled\" (first at line 1, column 2)", NULL, NULL);
    /* A duplicate inside a nested value: jansson's position and text. */
    config_error("dup_nested.json", "{\"app_name\": {\"x\": 1, \"x\": 2}}", 1, 25,
                 "malformed JSON: duplicate object key", NULL, NULL);

    /* config_file inside a config file. */
    config_error("nested_cfg.json",
                 "{\n  \"app_name\": \"x\",\n  \"config_file\": \"other.json\"\n}", 3, 3,
                 "key \"config_file\" is not allowed inside a config file: remove it and set "
                 "config_file in code or GPUFL_CONFIG_FILE instead",
                 NULL, NULL);

    /* The first problem in file order is the one reported. */
    config_error("order.json", "{\"zzz\": 1, \"app_name\": 2}", 1, 2, "unknown key \"zzz\"", NULL,
                 NULL);

    /* Unreadable files: the path and strerror, no position. */
    fl_config c;
    gpufl_error e;
    gpufl_init_options o;
    clean_env();
    gpufl_init_options_init(&o);
    o.config_file = tmp_path("does-not-exist.json");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    char want[1024];
    snprintf(want, sizeof want,
             "config file \"%s\" cannot be read: No such file or directory; check the path",
             o.config_file);
    CHECK_STR(e.message, want);
    check_empty(&c);
    setenv("GPUFL_CONFIG_FILE", tmp_path("does-not-exist.json"), 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_CONFIG);
    snprintf(want, sizeof want,
             "config file \"%s\" (named by GPUFL_CONFIG_FILE) cannot be read: No such file or "
             "directory; check the path",
             tmp_path("does-not-exist.json"));
    CHECK_STR(e.message, want);
    clean_env();
    const char *dir = tmp_path("a-directory");
    CHECK_INT(mkdir(dir, 0700), 0);
    o.config_file = dir;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    snprintf(want, sizeof want,
             "config file \"%s\" cannot be read: a directory, not a regular file", dir);
    CHECK_CONTAINS(e.message, want);
    rmdir(dir);
}

/* ---------------------------------------------------------- env errors */

static void test_env_errors(void)
{
    fl_config c;
    gpufl_error e;
    clean_env();
    setenv("GPUFL_PROFILING_ENGINE", "fast", 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_ENV);
    CHECK_INT(e.status, GPUFL_ERR_ENV);
    CHECK_STR(e.message, "GPUFL_PROFILING_ENGINE=\"fast\" is not an engine: use one of Monitor, "
                         "Trace, PcSampling, SassMetrics, RangeProfiler, Deep, PmSampling");
    check_empty(&c);
    setenv("GPUFL_PROFILING_ENGINE", "Auto", 1); /* a backend, not an engine */
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_ENV);
    CHECK_CONTAINS(e.message, "GPUFL_PROFILING_ENGINE=\"Auto\"");

    clean_env();
    setenv("GPUFL_REMOTE_UPLOAD", "maybe", 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_ENV);
    CHECK_STR(e.message, "GPUFL_REMOTE_UPLOAD=\"maybe\" is not a boolean: use one of 1, true, yes, "
                         "on, 0, false, no, off (any case)");
    check_empty(&c);

    /* An invalid env value is an error even when code overrides the field:
     * the variable is wrong either way. */
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.remote_upload = true;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_ENV);

    /* A config file is read (and its errors come) before the environment. */
    clean_env();
    setenv("GPUFL_PROFILING_ENGINE", "fast", 1);
    gpufl_init_options_init(&o);
    o.config_file = cfg("env_order.json", "{\"bogus\": 1}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    o.config_file = cfg("env_order_ok.json", "{\"app_name\": \"a\"}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_ENV);
    check_empty(&c);
    clean_env();

    /* A number an int cannot hold is out of range, as the config file
     * says, not "not a whole number" (issue 32). */
    static const char *const too_big[] = {"2147483648", "-2147483649", "99999999999999999999"};
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        setenv("GPUFL_CUPTI_BUFFER_KIB", too_big[i], 1);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_ENV);
        char want[256];
        snprintf(want, sizeof want,
                 "GPUFL_CUPTI_BUFFER_KIB=\"%s\" is out of range: use a whole number in "
                 "0..2147483647",
                 too_big[i]);
        CHECK_STR(e.message, want);
        check_empty(&c);
    }
    setenv("GPUFL_CUPTI_BUFFER_KIB", "12x", 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_ENV);
    CHECK_STR(e.message, "GPUFL_CUPTI_BUFFER_KIB=\"12x\" is not a whole number");
    setenv("GPUFL_CUPTI_BUFFER_KIB", "2048", 1);
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
    CHECK_INT(c.cupti_buffer_kib, 2048);
    fl_config_free(&c);
    clean_env();

    /* GPUFL_NO_TSC takes the documented truth values only (issue 32). */
    static const struct {
        const char *v;
        bool no_tsc;
    } tsc[] = {{"1", true},      {"TRUE", true}, {"yes", true},  {"On", true}, {"0", false},
               {"false", false}, {"NO", false},  {"off", false}, {"", false}};
    for (size_t i = 0; i < sizeof tsc / sizeof tsc[0]; i++) {
        setenv("GPUFL_NO_TSC", tsc[i].v, 1);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
        CHECK_INT(c.no_tsc, tsc[i].no_tsc);
        fl_config_free(&c);
    }
    clean_env();
    CHECK_INT(resolve(NULL, &c, &e), GPUFL_OK);
    CHECK_INT(c.no_tsc, false);
    fl_config_free(&c);
    static const char *const not_bool[] = {"2", "maybe", "tsc", " 1"};
    for (size_t i = 0; i < sizeof not_bool / sizeof not_bool[0]; i++) {
        setenv("GPUFL_NO_TSC", not_bool[i], 1);
        CHECK_INT(resolve(NULL, &c, &e), GPUFL_ERR_ENV);
        char want[256];
        snprintf(want, sizeof want, "GPUFL_NO_TSC=\"%s\" is not a boolean: use 1, true, yes or on",
                 not_bool[i]);
        CHECK_CONTAINS(e.message, want);
        check_empty(&c);
    }
    clean_env();
}

/* ------------------------------------------------------------ validation */

static void validation_error(const gpufl_init_options *o, const char *want)
{
    fl_config c;
    gpufl_error e;
    CHECK_INT(resolve(o, &c, &e), GPUFL_ERR_INVALID_ARG);
    CHECK_INT(e.status, GPUFL_ERR_INVALID_ARG);
    CHECK_STR(e.message, want);
    check_empty(&c);
    fl_config_free(&c);
}

static void test_validation(void)
{
    clean_env();
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.system_sample_rate_ms = -1;
    validation_error(&o, "system_sample_rate_ms = -1 (code) is negative: use 0 (off) or a period "
                         "in milliseconds");
    gpufl_init_options_init(&o);
    o.kernel_sample_rate_ms = INT_MIN;
    validation_error(&o, "kernel_sample_rate_ms = -2147483648 (code) is negative: use 0 (off) or "
                         "a period in milliseconds");
    gpufl_init_options_init(&o);
    o.backend = (gpufl_backend_kind)4;
    validation_error(&o, "backend = 4 (code) is not a backend: use one of GPUFL_BACKEND_AUTO, "
                         "GPUFL_BACKEND_NVIDIA, GPUFL_BACKEND_AMD, GPUFL_BACKEND_NONE");
    gpufl_init_options_init(&o);
    o.backend = (gpufl_backend_kind)-1;
    validation_error(&o, "backend = -1 (code) is not a backend: use one of GPUFL_BACKEND_AUTO, "
                         "GPUFL_BACKEND_NVIDIA, GPUFL_BACKEND_AMD, GPUFL_BACKEND_NONE");
    gpufl_init_options_init(&o);
    o.profiling_engine = (gpufl_engine)7;
    validation_error(&o, "profiling_engine = 7 (code) is not an engine: use one of "
                         "GPUFL_ENGINE_MONITOR, GPUFL_ENGINE_TRACE, GPUFL_ENGINE_PC_SAMPLING, "
                         "GPUFL_ENGINE_SASS_METRICS, GPUFL_ENGINE_RANGE_PROFILER, "
                         "GPUFL_ENGINE_DEEP, GPUFL_ENGINE_PM_SAMPLING");
    /* Code overriding a valid env value with an invalid one still fails. */
    setenv("GPUFL_PROFILING_ENGINE", "trace", 1);
    validation_error(&o, "profiling_engine = 7 (code) is not an engine: use one of "
                         "GPUFL_ENGINE_MONITOR, GPUFL_ENGINE_TRACE, GPUFL_ENGINE_PC_SAMPLING, "
                         "GPUFL_ENGINE_SASS_METRICS, GPUFL_ENGINE_RANGE_PROFILER, "
                         "GPUFL_ENGINE_DEEP, GPUFL_ENGINE_PM_SAMPLING");
    clean_env();
    gpufl_init_options_init(&o);
    o.app_name = "a/b";
    validation_error(&o, "app_name \"a/b\" (code) contains '/': use a plain name and set log_path "
                         "for the directory");
    gpufl_init_options_init(&o);
    o.app_name = "a\nb";
    validation_error(&o, "app_name (code) contains a control character (0x0a): use printable "
                         "characters only");
    gpufl_init_options_init(&o);
    o.app_name = "tab\there";
    validation_error(&o, "app_name (code) contains a control character (0x09): use printable "
                         "characters only");
    gpufl_init_options_init(&o);
    o.app_name = "del\x7f";
    validation_error(&o, "app_name (code) contains a control character (0x7f): use printable "
                         "characters only");
    /* "." and ".." would put the session in the current or parent
     * directory (issue 32); names that merely contain dots are fine. */
    gpufl_init_options_init(&o);
    o.app_name = ".";
    validation_error(&o, "app_name \".\" (code) names the current directory, not an application: "
                         "use a plain name and set log_path for the directory");
    o.app_name = "..";
    validation_error(&o, "app_name \"..\" (code) names the parent directory, not an application: "
                         "use a plain name and set log_path for the directory");
    gpufl_init_options_init(&o);
    o.config_file = cfg("dotdot_name.json", "{\"app_name\": \"..\"}");
    char want_dots[1024];
    snprintf(want_dots, sizeof want_dots,
             "app_name \"..\" (config %s) names the parent directory, not an application: use "
             "a plain name and set log_path for the directory",
             o.config_file);
    validation_error(&o, want_dots);
    for (int i = 0; i < 3; i++) {
        fl_config dc;
        gpufl_error de;
        gpufl_init_options_init(&o);
        o.app_name = (const char *[]){"...", ".hidden", "v1..2"}[i];
        CHECK_INT(resolve(&o, &dc, &de), GPUFL_OK);
        CHECK_STR(dc.app_name, o.app_name);
        fl_config_free(&dc);
    }
    /* From the config file, the source says so. */
    gpufl_init_options_init(&o);
    o.config_file = cfg("bad_name.json", "{\"app_name\": \"runs/x\"}");
    char want[1024];
    snprintf(want, sizeof want,
             "app_name \"runs/x\" (config %s) contains '/': use a plain name and set log_path "
             "for the directory",
             o.config_file);
    validation_error(&o, want);
    /* Valid edges. */
    fl_config c;
    gpufl_error e;
    gpufl_init_options_init(&o);
    o.app_name = "my app-\xc3\xa9.v2";
    o.system_sample_rate_ms = INT_MAX;
    o.kernel_sample_rate_ms = INT_MAX;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "my app-\xc3\xa9.v2");
    CHECK_INT(c.system_sample_rate_ms, INT_MAX);
    fl_config_free(&c);
    o.config_file = cfg("max_rate.json", "{\"system_sample_rate_ms\": 2147483647, "
                                         "\"kernel_sample_rate_ms\": 0}");
    o.system_sample_rate_ms = 0;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.system_sample_rate_ms, INT_MAX);
    CHECK_INT(c.kernel_sample_rate_ms, INT_MAX); /* code */
    fl_config_free(&c);
}

/* ------------------------------------------------------- derived values */

static void log_path_case(const char *app, const char *log_path, const char *want)
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = app;
    o.log_path = log_path;
    fl_config c;
    gpufl_error e;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.log_path, want);
    fl_config_free(&c);
}

static void test_derived(void)
{
    clean_env();
    log_path_case(NULL, NULL, "gpufl");
    log_path_case("train", "", "train");
    log_path_case("train.log", "", "train");
    log_path_case("train", "runs/app.log", "runs/app");
    log_path_case("train", "runs/app", "runs/app");
    log_path_case("train", "/abs/dir/", "/abs/dir/");
    log_path_case("train", "a.log.log", "a.log");
    log_path_case("train", "app.LOG", "app.LOG");
    log_path_case("train", ".log", ".log"); /* nothing would be left */
    log_path_case("train", "x.logs", "x.logs");

    /* From the config file too. */
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.config_file = cfg("logpath.json", "{\"log_path\": \"cfg/out.log\"}");
    fl_config c;
    gpufl_error e;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.log_path, "cfg/out");
    fl_config_free(&c);
    o.config_file = cfg("appname.json", "{\"app_name\": \"cfgapp.log\"}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.app_name, "cfgapp.log");
    CHECK_STR(c.log_path, "cfgapp");
    fl_config_free(&c);

    /* api_path. */
    gpufl_init_options_init(&o);
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.api_path, "/api/v1");
    fl_config_free(&c);
    o.api_path = "/mnt/gpufl/api/v1";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.api_path, "/mnt/gpufl/api/v1");
    fl_config_free(&c);
}

/* ------------------------------------------- warnings and provenance */

static const char remote_warning[] =
    "remote_upload is deprecated (GPUFlight v1.1, removed in v1.2) and has no effect: live "
    "upload was removed; upload a finished session's logs instead (gpufl_upload_logs() "
    "after gpufl_shutdown(), or gpu-profile upload)";

static void test_warnings(void)
{
    fl_config c;
    gpufl_error e;
    gpufl_init_options o;

    clean_env();
    gpufl_init_options_init(&o);
    o.remote_upload = true;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.n_warnings, 1);
    CHECK_STR(c.warnings[0], remote_warning);
    CHECK(c.warnings[1] == NULL);
    fl_config_free(&c);

    /* From every source at once: still exactly one. */
    setenv("GPUFL_REMOTE_UPLOAD", "true", 1);
    o.config_file = cfg("warn.json", "{\"remote_upload\": true}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.n_warnings, 1);
    CHECK_STR(c.warnings[0], remote_warning);
    fl_config_free(&c);
    o.remote_upload = false;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK); /* env */
    CHECK_INT(c.n_warnings, 1);
    CHECK_STR(c.warnings[0], remote_warning);
    fl_config_free(&c);
    clean_env();
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK); /* config */
    CHECK_INT(c.n_warnings, 1);
    CHECK_STR(c.warnings[0], remote_warning);
    fl_config_free(&c);

    /* kernel_sample_rate_ms: no warning, a provenance note. */
    gpufl_init_options_init(&o);
    o.kernel_sample_rate_ms = 10;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.n_warnings, 0);
    CHECK(c.warnings[0] == NULL);
    CHECK_STR(c.provenance, "  kernel_sample_rate_ms = 10 (code) - deprecated, no effect\n");
    fl_config_free(&c);
}

static void test_provenance(void)
{
    fl_config c;
    gpufl_error e;
    gpufl_init_options o;

    /* One line per field from each source; the api key never appears. */
    clean_env();
    const char *path = cfg("prov.json", "{\"api_key\": \"gpfl_SECRET_cfg\", "
                                        "\"system_sample_rate_ms\": 100, \"backend\": \"amd\"}");
    setenv("GPUFL_API_KEY", "gpfl_SECRET_env", 1);
    setenv("GPUFL_API_PATH", "/p", 1);
    gpufl_init_options_init(&o);
    o.config_file = path;
    o.app_name = "prov";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.api_key, "gpfl_SECRET_env");
    char want[2048];
    snprintf(want, sizeof want,
             "  app_name = prov (code)\n"
             "  api_key = <set> (env GPUFL_API_KEY)\n"
             "  api_path = /p (env GPUFL_API_PATH)\n"
             "  system_sample_rate_ms = 100 (config %s)\n"
             "  backend = Amd (config %s)\n"
             "  config_file = %s (code)\n",
             path, path, path);
    CHECK_STR(c.provenance, want);
    CHECK(strstr(c.provenance, "SECRET") == NULL);
    fl_config_free(&c);

    o.api_key = "gpfl_SECRET_code";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.api_key, "gpfl_SECRET_code");
    CHECK_CONTAINS(c.provenance, "  api_key = <set> (code)\n");
    CHECK(strstr(c.provenance, "SECRET") == NULL);
    fl_config_free(&c);
    clean_env();

    /* Error messages do not echo the key either (a bad type names the key,
     * not its value). */
    o.api_key = "";
    o.config_file = cfg("prov_bad.json", "{\"api_key\": \"gpfl_SECRET\", \"x\": 1}");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    CHECK(strstr(e.message, "SECRET") == NULL);
    /* Nor does jansson's "near '...'" quote of a broken file with a key. */
    o.config_file = cfg("prov_cut.json", "{\"api_key\": \"gpfl_SECRET");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, "line 1, column 24: malformed JSON: premature end of input; ");
    CHECK(strstr(e.message, "SECRET") == NULL);
    /* Without one, the quote stays: it helps find the mistake. */
    o.config_file = cfg("prov_cut2.json", "{\"app_name\": \"abc");
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, "premature end of input near '\"abc'");
}

/* ---------------------------------------------------------------- free */

static void test_free(void)
{
    fl_config_free(NULL);
    fl_config c;
    memset(&c, 0, sizeof c);
    fl_config_free(&c);
    fl_config_free(&c);
    gpufl_error e;
    clean_env();
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.remote_upload = true;
    o.app_name = "free";
    CHECK_INT(resolve(&o, &c, &e), GPUFL_OK);
    fl_config_free(&c);
    CHECK(c.app_name == NULL);
    CHECK(c.provenance == NULL);
    CHECK(c.warnings[0] == NULL);
    CHECK_INT(c.n_warnings, 0);
    fl_config_free(&c); /* idempotent */
    /* After a late failure (validation after a config was applied). */
    o.config_file = cfg("free_late.json", "{\"log_path\": \"x\", \"remote_upload\": true}");
    o.system_sample_rate_ms = -3;
    CHECK_INT(resolve(&o, &c, &e), GPUFL_ERR_INVALID_ARG);
    check_empty(&c);
    fl_config_free(&c);
    fl_config_free(&c);
}

/* -------------------------------------------------------------- main */

static void cleanup(void)
{
    for (int i = 0; i < n_written; i++)
        unlink(written[i]);
    if (rmdir(tmpdir) != 0)
        fprintf(stderr, "warning: could not remove %s\n", tmpdir);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gpufl_cfg_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    test_options_defaults();
    test_resolve_defaults();
    test_fields_from_code();
    test_fields_from_config();
    test_fields_from_env();
    test_precedence();
    test_disabled();
    test_config_errors();
    test_env_errors();
    test_validation();
    test_derived();
    test_warnings();
    test_provenance();
    test_free();
    clean_env();
    cleanup();
    return check_done("test_gpufl_config");
}
