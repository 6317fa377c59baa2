/*
 * test_cli_flags.c - --nvml-library and --smi-path (run form, devices,
 * serve) load the fakes they name, and the messages the command prints
 * name its flags, never the library's fields (nvml_library, smi_path,
 * log_path, "backend none"), and never paste $PATH.
 */
#include "cli/harness.h"

static char fake_nvml[1024], fake_smi[1024];

/* The first entry of a path list variable + "/" + file. */
static void first_entry(const char *var, const char *file, char *out, size_t len)
{
    const char *v = check_env(var);
    snprintf(out, len, "%.*s/%s", (int)strcspn(v, ":"), v, file);
}

static void check_no_fields(const char *err)
{
    CHECK(strstr(err, "nvml_library") == NULL);
    CHECK(strstr(err, "smi_path") == NULL);
    CHECK(strstr(err, "log_path") == NULL);
    CHECK(strstr(err, "use backend none") == NULL);
    CHECK(strstr(err, "gp-marker-dir") == NULL); /* $PATH is not pasted */
}

static const char *no_gpu[] = {"LD_LIBRARY_PATH", "PATH=/gp-marker-dir:/gp-marker-dir2", NULL};

static void test_messages(void)
{
    h_result r;
    const char *dev[] = {h_cli, "devices", NULL};
    h_run(dev, no_gpu, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "Otherwise give --nvml-library PATH");
    CHECK_CONTAINS(r.err, "smi: nvidia-smi not found in PATH: install the NVIDIA driver or give "
                          "--smi-path PATH");
    CHECK_CONTAINS(r.err, "or use --backend none");
    check_no_fields(r.err);
    h_result_free(&r);

    const char *bad_lib[] = {h_cli,  "devices",        "--backend",
                             "nvml", "--nvml-library", "/gp-no-such/libnvidia-ml.so.1",
                             NULL};
    h_run(bad_lib, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "cannot load /gp-no-such/libnvidia-ml.so.1");
    CHECK_CONTAINS(r.err, "check --nvml-library PATH");
    check_no_fields(r.err);
    h_result_free(&r);

    /* The run form: --strict says it on stderr, without --strict the note. */
    const char *strict[] = {h_cli, "--strict", "--backend", "smi", "true", NULL};
    h_run(strict, no_gpu, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "not found in PATH: install the NVIDIA driver or give --smi-path PATH");
    check_no_fields(r.err);
    h_result_free(&r);
    const char *note[] = {h_cli, "--json", "--backend", "smi", "--smi-path", "/gp-no-such/smi",
                          "--",  "true",   NULL};
    h_run(note, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "fix --smi-path PATH");
    check_no_fields(r.err);
    h_result_free(&r);

    const char *logdir[] = {h_cli,       "-q",         "--backend", "none",
                            "--log-dir", "/proc/gp-x", "true",      NULL};
    h_run(logdir, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "choose a writable --log-dir");
    check_no_fields(r.err);
    h_result_free(&r);
}

/* Each message says a flag once, in the command's words: "--log-dir:
 * ... (--log-dir)" was the library's field in brackets after our prefix,
 * upload's "pass backend_url (--backend-url)" the library's field. */
static void test_messages_once(void)
{
    h_result r;
    const char *logdir[] = {h_cli,       "-q",         "--backend", "none",
                            "--log-dir", "/proc/gp-x", "true",      NULL};
    h_run(logdir, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --log-dir: cannot create the log directory \"/proc/gp-x\": No "
                     "such file or directory: choose a writable --log-dir\n");
    h_result_free(&r);

    static const char *const no_upload_env[] = {"GPUFL_BACKEND_URL", "GPUFL_API_KEY",
                                                "GPUFL_API_PATH", NULL};
    const char *url[] = {h_cli, "upload", h_dir, NULL};
    h_run(url, no_upload_env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: upload: no backend URL: give --backend-url URL or set "
                     "GPUFL_BACKEND_URL, e.g. https://api.gpuflight.com\n");
    h_result_free(&r);
    const char *key[] = {h_cli, "upload", "--backend-url", "http://127.0.0.1:1", h_dir, NULL};
    h_run(key, no_upload_env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: upload: no API key: give --api-key KEY or set GPUFL_API_KEY\n");
    h_result_free(&r);
    const char *path[] = {h_cli,        "upload", "--backend-url", "http://127.0.0.1:1",
                          "--api-path", "x\ty",   h_dir,           NULL};
    const char *with_key[] = {"GPUFL_BACKEND_URL", "GPUFL_API_KEY=gp-test-key-123",
                              "GPUFL_API_PATH", NULL};
    h_run(path, with_key, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_PREFIX(r.err, "gpu-profile: upload: --api-path \"x?y\" is not a path");
    CHECK(strstr(r.err, "api_path") == NULL);
    h_result_free(&r);

    /* devices --json: the document's error is the stderr line's words, no
     * $PATH pasted into it either. */
    const char *dev[] = {h_cli, "devices", "--json", NULL};
    h_run(dev, no_gpu, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.out, "smi: nvidia-smi not found in PATH: install the NVIDIA driver or give "
                          "--smi-path PATH");
    check_no_fields(r.out);
    h_result_free(&r);
}

static int err_has_serving(const void *path)
{
    size_t n = 0;
    char *t = check_read_file((const char *)path, &n);
    int yes = t && strstr(t, "serve: 1 GPU (backend nvml)") != NULL;
    free(t);
    return yes;
}

static void test_flags_work(void)
{
    h_result r;
    const char *dev[] = {h_cli, "devices", "--nvml-library", fake_nvml, NULL};
    h_run(dev, no_gpu, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "Fake NVIDIA GPU");
    CHECK_CONTAINS(r.out, "backend nvml");
    h_result_free(&r);

    /* The fake nvidia-smi replaying an H100 capture, found only by --smi-path. */
    char env_caps[1200];
    snprintf(env_caps, sizeof env_caps,
             "FAKE_SMI_CAPTURES=%s/fixtures/nvidia-smi/"
             "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
             check_env("GP_TEST_SOURCE_DIR"));
    const char *smi_env[] = {"LD_LIBRARY_PATH", "PATH=/gp-marker-dir", env_caps, NULL};
    const char *smi[] = {h_cli, "devices", "--backend", "smi", "--smi-path", fake_smi, NULL};
    h_run(smi, smi_env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "backend smi");
    h_result_free(&r);

    const char *run[] = {h_cli,     "--strict",   "--json", "--nvml-library",
                         fake_nvml, "--interval", "0.05",   h_child,
                         "exit",    "0",          NULL};
    h_run(run, no_gpu, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "\"backend\":\"nvml\"");
    h_result_free(&r);

    const char *run_smi[] = {h_cli,    "--strict", "--json", "--backend", "smi", "--smi-path",
                             fake_smi, h_child,    "exit",   "0",         NULL};
    h_run(run_smi, smi_env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "\"backend\":\"smi\"");
    h_result_free(&r);

    /* serve: up on the fake NVML it was told about, then SIGTERM. */
    char err[512];
    h_path(err, sizeof err, "serve.err");
    const char *serve[] = {h_cli,     "serve", "--listen", "127.0.0.1:0", "--nvml-library",
                           fake_nvml, NULL};
    pid_t pid = h_spawn(serve, no_gpu, NULL, NULL, err);
    CHECK(h_wait_for(err_has_serving, err, 20));
    kill(pid, SIGTERM);
    CHECK_INT(h_code(h_wait(pid)), 128 + SIGTERM);
    const char *serve_bad[] = {h_cli,       "serve", "--listen",       "127.0.0.1:0",
                               "--backend", "nvml",  "--nvml-library", "/gp-no-such.so",
                               NULL};
    h_run(serve_bad, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "check --nvml-library PATH");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    first_entry("LD_LIBRARY_PATH", "libnvidia-ml.so.1", fake_nvml, sizeof fake_nvml);
    first_entry("PATH", "nvidia-smi", fake_smi, sizeof fake_smi);
    test_messages();
    test_messages_once();
    test_flags_work();
    h_cleanup();
    return check_done("test_cli_flags");
}
