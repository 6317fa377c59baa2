/*
 * test_cli_run.c - `gpu-profile -- CMD` end to end, through the fake NVML
 * and the fake nvidia-smi: exit statuses (CMD's own, 126 / 127 with their
 * messages, 125 for the profiler's own failures with CMD not run), every
 * bad option and value with its exact message, --help / --version, the
 * report's place (stderr, -o FILE, nothing with -q) and CMD's stdout byte
 * for byte the same with and without the profiler (stdin passed through),
 * no GPU backend (one note line; --strict makes it an error), a device that
 * does not exist, the none backend, and the page faults it adds to a
 * command's start.
 */
#include "harness.h"
#include "json_mini.h"

#include "gpu_profile.h"

#include <sys/resource.h>

#define DEFAULT_SCENARIO "device 0\n"

/* The last line of the report: CMD's status and wall time. */
static void check_status_line(const char *line, const char *what)
{
    CHECK_PREFIX(line, "gpu-profile: ");
    CHECK_CONTAINS(line, what);
    CHECK_CONTAINS(line, " after ");
    CHECK(strlen(line) > 3 && strcmp(line + strlen(line) - 2, " s") == 0);
}

static void test_exit_status(void)
{
    h_scenario(DEFAULT_SCENARIO);
    for (int code = 0; code <= 3; code += 3) {
        char c[8];
        snprintf(c, sizeof c, "%d", code);
        const char *argv[] = {h_cli, "--interval", "0.01", "--", h_child, "exit", c, NULL};
        h_result r;
        h_run(argv, NULL, NULL, 0, &r);
        CHECK_INT(r.code, code);
        CHECK_INT(r.out_len, 0);
        char line[512], want[64];
        CHECK_PREFIX(h_line(r.err, 0, line, sizeof line), "GPU 0  Fake NVIDIA GPU  GPU-fa4e");
        CHECK_CONTAINS(r.err, "\n  util.gpu          mean 42.0%  p50 42%  p95 42%  max 42%\n");
        snprintf(want, sizeof want, "exited with status %d", code);
        check_status_line(h_line(r.err, h_count_lines(r.err) - 1, line, sizeof line), want);
        h_result_free(&r);
    }
    /* Options may also come without "--": the command starts at the first
     * word that is not an option. */
    const char *argv[] = {h_cli, "-q", h_child, "exit", "5", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 5);
    CHECK_INT(r.err_len, 0);
    h_result_free(&r);
}

static void test_not_found_not_executable(void)
{
    h_scenario(DEFAULT_SCENARIO);
    const char *argv[] = {h_cli, "--", "gp-no-such-command-4711", "arg", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 127);
    CHECK_STR(r.err, "gpu-profile: cannot run 'gp-no-such-command-4711': No such file or "
                     "directory (not found in PATH)\n");
    CHECK_INT(r.out_len, 0);
    h_result_free(&r);

    char path[512], want[1024];
    h_path(path, sizeof path, "missing/prog");
    const char *argv2[] = {h_cli, "--", path, NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 127);
    snprintf(want, sizeof want, "gpu-profile: cannot run '%s': No such file or directory\n", path);
    CHECK_STR(r.err, want);
    h_result_free(&r);

    /* No execute bit: execve refuses it even to root. */
    h_path(path, sizeof path, "not-executable.sh");
    h_write_file(path, "#!/bin/sh\nexit 0\n", 17);
    chmod(path, 0644);
    const char *argv3[] = {h_cli, "--json", "--", path, NULL};
    h_run(argv3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 126);
    snprintf(want, sizeof want, "gpu-profile: cannot run '%s': Permission denied\n", path);
    CHECK_STR(r.err, want);
    h_result_free(&r);
}

typedef struct bad_case {
    const char *args[4]; /* options before "--" */
    const char *message; /* the whole of stderr */
} bad_case;

static void test_bad_options(void)
{
    h_scenario(DEFAULT_SCENARIO);
    static const bad_case cases[] = {
        {{"--interval", "abc"},
         "gpu-profile: --interval: 'abc' is not a number of seconds (e.g. 0.2)\n"},
        {{"--interval=0"},
         "gpu-profile: --interval: 0 is out of range: use 0.001 to 86400 "
         "seconds\n"},
        {{"--interval", "-1"},
         "gpu-profile: --interval: -1 is out of range: use 0.001 to 86400 "
         "seconds\n"},
        {{"--interval", "1e9"},
         "gpu-profile: --interval: 1e9 is out of range: use 0.001 to "
         "86400 seconds\n"},
        {{"--interval", "inf"},
         "gpu-profile: --interval: 'inf' is not a number of seconds (e.g. 0.2)\n"},
        {{"--interval", "nan"},
         "gpu-profile: --interval: 'nan' is not a number of seconds (e.g. 0.2)\n"},
        {{"--interval", "0x10"},
         "gpu-profile: --interval: '0x10' is not a number of seconds (e.g. 0.2)\n"},
        {{"--interval", " 1"},
         "gpu-profile: --interval: ' 1' is not a number of seconds (e.g. 0.2)\n"},
        {{"--interval", "0.5s"},
         "gpu-profile: --interval: '0.5s' is not a number of seconds (e.g. 0.2)\n"},
        {{"--interval", ""},
         "gpu-profile: --interval: the value is empty: give a number of seconds (e.g. 0.2)\n"},
        {{"--warmup", "-0.5"},
         "gpu-profile: --warmup: -0.5 is out of range: use 0 to 1000000 "
         "seconds\n"},
        {{"--warmup", "soon"},
         "gpu-profile: --warmup: 'soon' is not a number of seconds (e.g. 0.2)\n"},
        {{"--device", "x"},
         "gpu-profile: --device: 'x' is not a device: use an index (0), a "
         "comma list (0,2), a GPU UUID (GPU-...) or all\n"},
        {{"--device", "1,1"},
         "gpu-profile: --device: '1,1' names device 1 twice: list each device once\n"},
        {{"--device=0,,1"},
         "gpu-profile: --device: '0,,1' has an empty entry: write indices or UUIDs like 0,2\n"},
        {{"--device", "MIG-"},
         "gpu-profile: --device: 'MIG-' is not a device: use an index (0), a "
         "comma list (0,2), a GPU UUID (GPU-...) or all\n"},
        {{"--backend", "cuda"},
         "gpu-profile: --backend: 'cuda' is not a backend: use auto, nvml, smi, amd or none\n"},
        {{"--samples", "out.txt"},
         "gpu-profile: --samples: 'out.txt' has no known extension: "
         "name it .csv, .ndjson or .jsonl\n"},
        {{"--wait", "maybe"}, "gpu-profile: --wait: 'maybe' is not a choice: use all or primary\n"},
        {{"--bogus"}, "gpu-profile: unknown option '--bogus' (see gpu-profile --help)\n"},
        {{"-x"}, "gpu-profile: unknown option '-x' (see gpu-profile --help)\n"},
        {{"--json=yes"}, "gpu-profile: --json takes no value (see gpu-profile --help)\n"},
        {{"-o", "/gp-no-such-dir/r.json"},
         "gpu-profile: --output: cannot create "
         "'/gp-no-such-dir/r.json': No such file or "
         "directory\n"},
        {{"--samples", "/gp-no-such-dir/s.csv"},
         "gpu-profile: --samples: cannot create "
         "'/gp-no-such-dir/s.csv': No such file or "
         "directory\n"},
    };
    char marker[512];
    h_path(marker, sizeof marker, "marker");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *argv[16];
        size_t n = 0;
        argv[n++] = h_cli;
        for (size_t i = 0; i < 4 && cases[k].args[i]; i++)
            argv[n++] = cases[k].args[i];
        argv[n++] = "--";
        argv[n++] = h_child;
        argv[n++] = "touch";
        argv[n++] = marker;
        argv[n] = NULL;
        h_result r;
        h_run(argv, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 125);
        CHECK_STR(r.err, cases[k].message);
        CHECK_INT(r.out_len, 0);
        CHECK(!h_exists(marker)); /* CMD was not run */
        h_result_free(&r);
    }

    /* A value missing at the end, and no command at all. */
    const char *argv1[] = {h_cli, "--interval", NULL};
    h_result r;
    h_run(argv1, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --interval needs a value: a number of seconds (e.g. 0.2)\n");
    h_result_free(&r);
    const char *argv2[] = {h_cli, "--json", "--", NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: no command to run: gpu-profile [OPTIONS] -- CMD [ARGS...] "
                     "(see gpu-profile --help)\n");
    h_result_free(&r);
}

static void test_help_version(void)
{
    const char *argv[] = {h_cli, "--help", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_PREFIX(r.out, "usage: gpu-profile [OPTIONS] [--] CMD [ARGS...]\n");
    CHECK_CONTAINS(r.out, "\nexamples:\n  gpu-profile -- python train.py");
    CHECK_CONTAINS(r.out, "--samples FILE");
    CHECK_INT(r.err_len, 0);
    h_result_free(&r);

    const char *argv2[] = {h_cli, "--version", "--", "false", NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char want[64];
    snprintf(want, sizeof want, "gpu-profile %s\n", gp_version());
    CHECK_STR(r.out, want);
    h_result_free(&r);
}

static void test_stdout_identical(void)
{
    h_scenario(DEFAULT_SCENARIO);
    static const char in[] = "stdin line 1\n\0binary\xff\xfe tail without newline";
    const char *direct[] = {h_child, "out", NULL};
    h_result base;
    h_run(direct, NULL, in, sizeof in - 1, &base);
    CHECK_INT(base.code, 0);
    CHECK_U64(base.out_len, 300000 + sizeof in - 1);
    CHECK_STR(base.err, "done\n");

    static const char *const variants[][4] = {
        {"--interval", "0.01", NULL},
        {"--json", NULL},
        {"-q", NULL},
        {"--backend", "none", NULL},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        const char *argv[12];
        size_t n = 0;
        argv[n++] = h_cli;
        for (size_t i = 0; variants[v][i]; i++)
            argv[n++] = variants[v][i];
        argv[n++] = "--";
        argv[n++] = h_child;
        argv[n++] = "out";
        argv[n] = NULL;
        h_result r;
        h_run(argv, NULL, in, sizeof in - 1, &r);
        CHECK_INT(r.code, 0);
        CHECK_U64(r.out_len, base.out_len);
        CHECK(r.out_len == base.out_len && memcmp(r.out, base.out, base.out_len) == 0);
        /* CMD's stderr comes first, the report after it. */
        CHECK_PREFIX(r.err, "done\n");
        if (strcmp(variants[v][0], "-q") == 0)
            CHECK_STR(r.err, "done\n");
        h_result_free(&r);
    }
    h_result_free(&base);
}

static void test_output_file_and_quiet(void)
{
    h_scenario(DEFAULT_SCENARIO);
    char report[512];
    h_path(report, sizeof report, "report.txt");
    const char *argv[] = {h_cli, "-o", report, "--", h_child, "exit", "2", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 2);
    CHECK_INT(r.err_len, 0);
    CHECK_INT(r.out_len, 0);
    char *text = check_read_file(report, NULL);
    CHECK(text != NULL);
    if (text) {
        char line[512];
        CHECK_PREFIX(text, "GPU 0  Fake NVIDIA GPU");
        check_status_line(h_line(text, h_count_lines(text) - 1, line, sizeof line),
                          "exited with status 2");
    }
    free(text);
    h_result_free(&r);

    /* -q: nothing on stderr, but -o FILE is still written, here as JSON. */
    const char *argv2[] = {h_cli, "-q",    "--json", "--output", report,
                           "--",  h_child, "exit",   "0",        NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(r.err_len, 0);
    size_t len = 0;
    text = check_read_file(report, &len);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, len, &why) : NULL;
    CHECK(doc != NULL);
    CHECK_STR(jn_str(jn_get(doc, "schema")), "gpu-profile.run");
    jn_free(doc);
    free(text);
    h_result_free(&r);
}

/* nvml cannot start (no driver) and the fake nvidia-smi has no captures. */
static const char *const no_gpu_env[] = {"FAKE_SMI_CAPTURES", NULL};

static void test_no_backend(void)
{
    h_scenario("init_error 9\n");
    const char *argv[] = {h_cli, "--", h_child, "exit", "4", NULL};
    h_result r;
    h_run(argv, no_gpu_env, NULL, 0, &r);
    CHECK_INT(r.code, 4);
    CHECK_INT(h_count_lines(r.err), 2);
    char line[2048];
    h_line(r.err, 0, line, sizeof line);
    CHECK_PREFIX(line, "gpu-profile: no GPU backend, nothing sampled (nvml: ");
    CHECK_CONTAINS(line, "Driver Not Loaded");
    CHECK_CONTAINS(line, "; smi: ");
    CHECK_CONTAINS(line, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                         "driver");
    CHECK(line[strlen(line) - 1] == ')');
    check_status_line(h_line(r.err, 1, line, sizeof line), "exited with status 4");
    h_result_free(&r);

    /* The same in JSON: backend none, the note, no device. */
    const char *argv2[] = {h_cli, "--json", "--", h_child, "exit", "0", NULL};
    h_run(argv2, no_gpu_env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    const char *why = NULL;
    jn *doc = jn_parse(r.err, r.err_len, &why);
    CHECK(doc != NULL);
    CHECK_STR(jn_str(jn_get(doc, "backend")), "none");
    CHECK_PREFIX(jn_str(jn_get(doc, "note")), "no GPU backend, nothing sampled (nvml: ");
    CHECK_INT(jn_get(doc, "devices") ? jn_get(doc, "devices")->n : 99, 0);
    CHECK(jn_is_null(jn_get(doc, "total")));
    CHECK_INT(jn_int(jn_get(doc, "exit_status")), 0);
    jn_free(doc);
    h_result_free(&r);
}

static void test_strict(void)
{
    h_scenario("init_error 9\n");
    char marker[512];
    h_path(marker, sizeof marker, "strict-marker");
    const char *argv[] = {h_cli, "--strict", "--", h_child, "touch", marker, NULL};
    h_result r;
    h_run(argv, no_gpu_env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK(!h_exists(marker));
    CHECK_INT(h_count_lines(r.err), 2);
    char line[2048];
    CHECK_PREFIX(h_line(r.err, 0, line, sizeof line),
                 "gpu-profile: no GPU backend could be opened (tried nvml, smi): nvml: ");
    CHECK_STR(h_line(r.err, 1, line, sizeof line),
              "gpu-profile: --strict: the command was not run (--no-strict runs it without "
              "sampling)");
    h_result_free(&r);

    /* --no-strict after --strict wins: the last one counts. */
    const char *argv2[] = {h_cli,   "--strict", "--no-strict", "-q", "--",
                           h_child, "touch",    marker,        NULL};
    h_run(argv2, no_gpu_env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK(h_exists(marker));
    h_result_free(&r);
    remove(marker);
}

/* --device naming a device the backend does not have is a mistake, not a
 * machine without a GPU: 125, CMD not run, the devices there are listed
 * (with or without --strict); with no backend it is the usual note. */
static void test_missing_device(void)
{
    h_scenario("device 0\ndevice 1\n");
    char marker[512], line[1024];
    h_path(marker, sizeof marker, "missing-device-marker");
    static const char *const devices_line =
        "gpu-profile: the devices nvml sees: 0 Fake NVIDIA GPU "
        "(GPU-fa4e0000-0000-0000-0000-000000000000), 1 Fake NVIDIA GPU "
        "(GPU-fa4e0000-0000-0000-0000-000000000001) (gpu-profile devices lists them)";
    for (int strict = 0; strict <= 1; strict++) {
        const char *argv[] = {h_cli,      strict ? "--strict" : "--no-strict",
                              "--device", "5",
                              "--",       h_child,
                              "touch",    marker,
                              NULL};
        h_result r;
        h_run(argv, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 125);
        CHECK(!h_exists(marker));
        CHECK_INT(h_count_lines(r.err), 2);
        CHECK_STR(h_line(r.err, 0, line, sizeof line),
                  "gpu-profile: --device: device 5 does not exist: nvml sees 2 devices (0-1); the "
                  "command was not run");
        CHECK_STR(h_line(r.err, 1, line, sizeof line), devices_line);
        CHECK_INT(r.out_len, 0);
        h_result_free(&r);
    }
    /* A UUID no device has, in a list, and as --duration's device. */
    const char *argv2[] = {h_cli, "--device", "1,GPU-ffff", "--", h_child, "touch", marker, NULL};
    h_result r;
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK(!h_exists(marker));
    CHECK_STR(h_line(r.err, 0, line, sizeof line),
              "gpu-profile: --device: 'GPU-ffff': no GPU has this UUID; the command was not run");
    CHECK_STR(h_line(r.err, 1, line, sizeof line), devices_line);
    h_result_free(&r);
    const char *argv3[] = {h_cli, "--device", "2", "--duration", "0.01", NULL};
    h_run(argv3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_INT(h_count_lines(r.err), 2);
    h_result_free(&r);

    /* No backend at all: nothing to list, CMD runs unsampled. */
    h_scenario("init_error 9\n");
    const char *argv4[] = {h_cli, "--device", "5", "--", h_child, "exit", "3", NULL};
    h_run(argv4, no_gpu_env, NULL, 0, &r);
    CHECK_INT(r.code, 3);
    CHECK_PREFIX(h_line(r.err, 0, line, sizeof line),
                 "gpu-profile: no GPU backend, nothing sampled (nvml: ");
    h_result_free(&r);

    /* A backend that opens but sees no GPU at all. */
    h_scenario("# no device\n");
    const char *argv5[] = {h_cli, "--backend", "nvml", "--", h_child, "exit", "1", NULL};
    h_run(argv5, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_PREFIX(h_line(r.err, 0, line, sizeof line),
                 "gpu-profile: nothing sampled (nvml sees no GPU: ");
    h_result_free(&r);
    /* ... also with --device: no device to name is no mistake in the name. */
    const char *argv6[] = {h_cli, "--device", "0", "--", h_child, "exit", "1", NULL};
    h_run(argv6, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_STR(h_line(r.err, 0, line, sizeof line),
              "gpu-profile: nothing sampled (--device 0: nvml sees no GPU)");
    h_result_free(&r);
}

static void test_backend_none(void)
{
    h_scenario(DEFAULT_SCENARIO);
    const char *argv[] = {h_cli, "--backend", "none", "--", h_child, "exit", "6", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 6);
    CHECK_INT(h_count_lines(r.err), 1);
    char line[512];
    check_status_line(h_line(r.err, 0, line, sizeof line), "exited with status 6");
    h_result_free(&r);

    const char *argv2[] = {h_cli, "--backend=none", "--json", "--", h_child, "exit", "0", NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    const char *why = NULL;
    jn *doc = jn_parse(r.err, r.err_len, &why);
    CHECK(doc != NULL);
    CHECK_STR(jn_str(jn_get(doc, "backend")), "none");
    CHECK(jn_is_null(jn_get(doc, "note")));
    CHECK_INT(jn_get(doc, "devices") ? jn_get(doc, "devices")->n : 99, 0);
    jn_free(doc);
    h_result_free(&r);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/* The minor page faults of argv run to its end (wait4: the process and
 * the children it waited for), the fewest of 5 runs; -1 when it failed. */
static long faults_of(const char *const *argv)
{
    long best = -1;
    for (int i = 0; i < 5; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0) {
                dup2(null, 1);
                dup2(null, 2);
            }
            execvp(argv[0], (char *const *)argv);
            _exit(127);
        }
        int st = 0;
        struct rusage ru;
        if (pid < 0 || wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return -1;
        if (best < 0 || ru.ru_minflt < best)
            best = ru.ru_minflt;
    }
    return best;
}
#endif

/* What the profiler adds to a command's start (issue 39): page faults,
 * not time (a loaded machine's time says nothing).  CMD is started with
 * vfork and the end stamp's helper shares our memory, so no copy of the
 * profiler's page tables is faulted back in: the run form of `-q
 * --backend none` costs at most 178 faults beyond `true`'s own (250 with
 * `true`'s 72 on the development VM; a fork of the profiler cost ~75
 * more).  Sanitizers' shadow memory faults by design: skipped there. */
static void test_startup_faults(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    fprintf(stderr, "test_startup_faults: skipped under a sanitizer\n");
#else
    const char *bare[] = {"true", NULL};
    const char *run[] = {h_cli, "-q", "--backend", "none", "--", "true", NULL};
    long t = faults_of(bare), g = faults_of(run);
    fprintf(stderr, "test_startup_faults: true %ld, gpu-profile -q --backend none -- true %ld\n", t,
            g);
    CHECK(t > 0);
    CHECK(g > 0);
    CHECK(g - t <= 178);
#endif
}

/* A first word that is no program but a typo or two from a subcommand
 * names it; still 127 (it could have been a program), and a program of
 * that name runs. */
static void test_subcommand_typo(void)
{
    h_scenario(DEFAULT_SCENARIO);
    static const char *const typos[][2] = {
        {"reprot", "report"}, {"devcies", "devices"}, {"exprt", "export"}};
    for (size_t i = 0; i < sizeof typos / sizeof typos[0]; i++) {
        const char *argv[] = {h_cli, typos[i][0], "logs", NULL};
        h_result r;
        h_run(argv, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 127);
        char want[512];
        snprintf(want, sizeof want,
                 "gpu-profile: cannot run '%s': No such file or directory (not found in PATH); "
                 "did you mean '%s'? (see gpu-profile --help)\n",
                 typos[i][0], typos[i][1]);
        CHECK_STR(r.err, want);
        h_result_free(&r);
    }
    /* After "--" or options the word is a program: no suggestion. */
    const char *argv2[] = {h_cli, "--", "reprot", NULL};
    h_result r;
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 127);
    CHECK_STR(r.err, "gpu-profile: cannot run 'reprot': No such file or directory (not found in "
                     "PATH)\n");
    h_result_free(&r);
    /* A program named like a typo runs. */
    char bin[512], prog[600], env_path[1200];
    h_path(bin, sizeof bin, "typo-bin");
    mkdir(bin, 0755);
    snprintf(prog, sizeof prog, "%s/reprot", bin);
    h_write_file(prog, "#!/bin/sh\nexit 7\n", 17);
    chmod(prog, 0755);
    snprintf(env_path, sizeof env_path, "PATH=%s:/usr/bin:/bin", bin);
    const char *env[] = {env_path, NULL};
    const char *argv3[] = {h_cli, "-q", "reprot", NULL};
    h_run(argv3, env, NULL, 0, &r);
    CHECK_INT(r.code, 7);
    CHECK_STR(r.err, "");
    h_result_free(&r);
}

/* "-" is stdout for -o and --samples (CSV): the report after CMD's own
 * output, no file named "-". */
static void test_stdout_dash(void)
{
    h_scenario(DEFAULT_SCENARIO);
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_INT(chdir(h_dir), 0); /* where a file "-" would appear */
    const char *argv[] = {h_cli, "-o", "-", "--", h_child, "exit", "3", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 3);
    CHECK_PREFIX(r.out, "GPU 0  Fake NVIDIA GPU");
    CHECK_CONTAINS(r.out, " exited with status 3 after ");
    CHECK_STR(r.err, "");
    h_result_free(&r);

    const char *argv2[] = {h_cli, "--json", "-o-", "--", "sh", "-c", "echo cmd-out", NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_PREFIX(r.out, "cmd-out\n{\"schema\":\"gpu-profile.run\"");
    const char *why = NULL;
    jn *doc = jn_parse(r.out + 8, r.out_len - 8, &why);
    CHECK(doc != NULL);
    CHECK_INT(jn_int(jn_get(doc, "exit_status")), 0);
    jn_free(doc);
    CHECK_STR(r.err, "");
    h_result_free(&r);

    const char *argv3[] = {h_cli, "-q",    "--interval", "0.01", "--samples", "-",
                           "--",  h_child, "exit",       "0",    NULL};
    h_run(argv3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_PREFIX(r.out, "t_wall_ns,t_mono_ns,device_index,util_gpu_pct,");
    CHECK(h_count_lines(r.out) >= 2);
    CHECK_STR(r.err, "");
    h_result_free(&r);

    const char *argv4[] = {h_cli, "-o", "-", "--samples", "-", "--", h_child, "exit", "0", NULL};
    h_run(argv4, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: -o - and --samples - would both write to stdout: send one of "
                     "them to a file\n");
    h_result_free(&r);
    CHECK(!h_exists("-"));
    CHECK_INT(chdir(cwd), 0);
}

/* Only a UTF-8 locale gets the dots and the blocks of
 * the sparkline; whatever this machine's locale, each case sets its own. */
static void test_locale(void)
{
    h_scenario(DEFAULT_SCENARIO);
    static const struct {
        const char *env[4];
        int utf8;
    } cases[] = {
        {{"LC_ALL=C", NULL}, 0},
        {{"LC_ALL=POSIX", NULL}, 0},
        {{"LC_ALL", "LC_CTYPE", "LANG", NULL}, 0},
        {{"LC_ALL", "LC_CTYPE", "LANG=en_US.ISO-8859-1", NULL}, 0},
        {{"LC_ALL", "LC_CTYPE=C", "LANG=C.UTF-8", NULL}, 0},
        {{"LC_ALL=C.UTF-8", NULL}, 1},
        {{"LC_ALL", "LC_CTYPE", "LANG=en_US.utf8", NULL}, 1},
        {{"LC_ALL=", "LC_CTYPE=de_DE.UTF-8@euro", "LANG=C", NULL}, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *argv[] = {h_cli, "--interval", "0.01", "--", h_child, "exit", "0", NULL};
        h_result r;
        h_run(argv, cases[k].env, NULL, 0, &r);
        CHECK_INT(r.code, 0);
        int high = 0;
        for (size_t i = 0; i < r.err_len; i++)
            high |= (unsigned char)r.err[i] >= 0x80;
        CHECK_INT(high, cases[k].utf8);
        /* The temperature is "C" in every locale (docs/json-schema.md's
         * vocabulary); the middle dot of the process line is not. */
        CHECK_CONTAINS(r.err, "max 35 C  mean 35.0 C\n");
        CHECK_CONTAINS(r.err, cases[k].utf8 ? " \xc2\xb7 mem " : " | mem ");
        h_result_free(&r);
    }
}

/* The closing line shows CMD as a shell would take it back. */
static void test_command_quoted(void)
{
    h_scenario(DEFAULT_SCENARIO);
    const char *argv[] = {h_cli, "--backend",  "none", "--", "sh",
                          "-c",  ": & exit 0", "it's", "",   NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char line[512];
    CHECK_PREFIX(h_line(r.err, 0, line, sizeof line),
                 "gpu-profile: sh -c ': & exit 0' 'it'\\''s' '' exited with status 0 after ");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    test_exit_status();
    test_not_found_not_executable();
    test_bad_options();
    test_help_version();
    test_stdout_identical();
    test_output_file_and_quiet();
    test_no_backend();
    test_strict();
    test_missing_device();
    test_backend_none();
    test_startup_faults();
    test_subcommand_typo();
    test_stdout_dash();
    test_locale();
    test_command_quoted();
    h_cleanup();
    return check_done("test_cli_run");
}
