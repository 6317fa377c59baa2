/*
 * options.c - the command line of `gpu-profile [OPTIONS] -- CMD [ARGS...]`.
 *
 * Promises: every value is parsed strictly (the whole text, finite, in
 * range); every mistake prints one line that names the option, the value
 * and what would be accepted, and makes the command exit 125 without
 * running CMD.  `--opt VALUE` and `--opt=VALUE` are the same.  Options end
 * at `--` or at the first word that is not an option (like env and time).
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cli_usage(FILE *f)
{
    fputs("usage: gpu-profile [OPTIONS] [--] CMD [ARGS...]\n"
          "       gpu-profile [OPTIONS] --duration SECONDS | --pid PID\n"
          "       gpu-profile SUBCOMMAND [OPTIONS] ... (the list below)\n"
          "\n"
          "Runs CMD, samples the GPUs while it runs, and reports when it ends.  CMD's\n"
          "stdin, stdout, stderr and terminal are its own; the report goes to stderr\n"
          "(or to -o FILE), so CMD's stdout is byte-for-byte what it would be alone.\n"
          "\n"
          "options:\n"
          "  --device N|N,M|UUID|all  GPUs to sample (default: the GPUs CMD can see:\n"
          "                         every GPU, filtered by CUDA_VISIBLE_DEVICES)\n"
          "  --interval SECONDS     sampling period, 0.001 to 86400 (default 0.2)\n"
          "  --backend B            auto | nvml | smi | amd | none (default auto: nvml,\n"
          "                         else smi, else amd when it sees an AMD GPU)\n"
          "  --nvml-library FILE    the NVML to load (default libnvidia-ml.so.1 from the\n"
          "                         loader's path)\n"
          "  --smi-path FILE        the nvidia-smi to run (default: the one in PATH)\n"
          "  --rocm-smi-library FILE  the ROCm SMI of --backend amd (default\n"
          "                         $GPU_PROFILE_ROCM_SMI_LIBRARY, else librocm_smi64.so.7\n"
          "                         ... .so.1 from the loader's path)\n"
          "  --duration SECONDS     without CMD: sample this long, then report; with CMD:\n"
          "                         sample and trace only this long from the window's start\n"
          "                         (CMD runs on untouched)\n"
          "  --pid PID              without CMD: sample until process PID exits (with\n"
          "                         --duration: whichever ends first; Ctrl-C ends early,\n"
          "                         the report still printed)\n"
          "  --delay SECONDS        with CMD: the window starts this long after CMD starts\n"
          "  --capture-range RANGE  with --engine trace or above: trace only between\n"
          "                         cudaProfilerStart/Stop (cudaProfilerApi) or inside the\n"
          "                         NVTX ranges named NAME (nvtx:NAME), as nsys spells it\n"
          "  --capture-range-end E  stop (default: the first window), repeat (every one),\n"
          "                         repeat:N (the first N)\n"
          "  --rotate-size SIZE     with --log-dir or --engine: publish each channel's\n"
          "                         window as <channel>.<N>.log.gz past SIZE (64M, 1G)\n"
          "  --rotate-interval S    ... and once a window has been open S seconds\n"
          "  --max-disk SIZE        once the session's files reach SIZE, count trace rows\n"
          "                         and samples instead of writing them (GPU and host\n"
          "                         samples go on)\n"
          "  --warmup SECONDS       leave the first seconds out of the statistics\n"
          "  --repeats N            run CMD N times, each measured; the report adds each\n"
          "                         run and mean, std, min, max across runs (default 1)\n"
          "  --warmup-runs M        first run CMD M times unmeasured (default 0)\n"
          "  --strict               no GPU backend is an error: exit 125, CMD not run\n"
          "  --no-strict            without a GPU backend run CMD anyway and say why\n"
          "                         nothing was sampled (default)\n"
          "  --json                 the report as one JSON object (gpu-profile.run)\n"
          "  -o, --output FILE      write the report to FILE instead of stderr (-: stdout,\n"
          "                         after CMD's own output)\n"
          "  --samples FILE         every raw sample, as CSV (.csv) or NDJSON (.ndjson,\n"
          "                         .jsonl), written as taken (-: CSV on stdout)\n"
          "  --log-dir DIR          also record the run as a GPUFlight session (Monitor\n"
          "                         engine) in DIR/<session_id>/{device,scope,system}.log\n"
          "  --app NAME             the session's app name (default: CMD's file name)\n"
          "  --engine NAME          Monitor (default: device metrics only) | Trace |\n"
          "                         PcSampling | SassMetrics | RangeProfiler | Deep |\n"
          "                         PmSampling:\n"
          "                         above Monitor, loads the CUPTI plugin into CMD's CUDA\n"
          "                         processes and adds their kernels, copies and\n"
          "                         memsets to the report\n"
          "  --stack-trace          with --engine trace or above: the CPU stack of each\n"
          "                         kernel launch in the session (costs 0.1-1 us a launch)\n"
          "  --metrics LIST         with --engine pmsampling or rangeprofiler: the metrics,\n"
          "                         CUPTI names separated by commas (pmsampling default:\n"
          "                         SM, tensor, DRAM, GR active %; rangeprofiler default:\n"
          "                         occupancy, DRAM throughput and bytes, L1/L2 hit rates,\n"
          "                         tensor pipe, SM throughput)\n"
          "  --pm-interval US       with --engine pmsampling: microseconds of GPU time\n"
          "                         between samples (1..1000000; default 100)\n"
          "  --range-per-kernel     with --engine rangeprofiler: one range per kernel\n"
          "                         (kernel replay, every pass) instead of per scope\n"
          "  --sass-all-kernels     with --engine sassmetrics or deep: count every kernel,\n"
          "                         not only those inside gpufl scopes (an unmodified\n"
          "                         program opens none)\n"
          "  --wait all|primary     all (default): sample until CMD and every process it\n"
          "                         left behind have exited; primary: until CMD exits\n"
          "  --no-live              no live status line on a terminal stderr\n"
          "  --ascii                ASCII text: C for the degree sign, an ASCII sparkline\n"
          "                         (the default when the locale is not UTF-8)\n"
          "  -q, --quiet            nothing on stderr but errors (-o FILE still written)\n"
          "  --version              print the version\n"
          "  -h, --help             this text\n"
          "\n"
          "exit status: CMD's own; 128+N when a signal N killed it; 126 / 127 when CMD\n"
          "cannot be executed / is not found; 125 when gpu-profile itself cannot start\n"
          "(a bad option, or no GPU backend with --strict), and then CMD is not run.\n"
          "\n"
          "examples:\n"
          "  gpu-profile -- python train.py --epochs 1\n"
          "  gpu-profile --json -o run.json --interval 0.05 -- ./bench\n"
          "  gpu-profile --device 0,1 --samples samples.csv -- torchrun --nproc-per-node 2 t.py\n"
          "  gpu-profile --log-dir logs --app train -- python train.py\n"
          "  gpu-profile --engine trace -- ./app            # + kernels, memcpy, memset\n"
          "  gpu-profile --engine trace --capture-range nvtx:step --capture-range-end repeat:5 \\\n"
          "      -- python train.py                        # the first 5 training steps\n"
          "  CUDA_VISIBLE_DEVICES=1 gpu-profile -- ./app     # samples GPU 1 only\n"
          "  gpu-profile devices --json\n"
          "  gpu-profile --duration 60 --json -o idle.json   # watch the GPUs, no command\n"
          "  gpu-profile --pid 4242 --log-dir logs          # until a running job exits\n"
          "\n",
          f);
}

int cli_parse_seconds(const char *opt, const char *text, double min, double max, double *out)
{
    char *end = NULL;
    errno = 0;
    /* strtod skips leading blanks and reads "inf", "nan" and hex floats; a
     * number of seconds is none of those. */
    int plain = text[0] && !isspace((unsigned char)text[0]);
    for (const char *p = text; plain && *p; p++)
        if (isalpha((unsigned char)*p) && *p != 'e' && *p != 'E')
            plain = 0;
    double d = plain ? strtod(text, &end) : NAN;
    if (!plain || end == text || *end || errno == ERANGE || !isfinite(d)) {
        cli_say("%s: '%s' is not a number of seconds (e.g. 0.2)", opt, text);
        return -1;
    }
    if (d < min || d > max) {
        cli_say("%s: %s is out of range: use %.10g to %.10g seconds", opt, text, min, max);
        return -1;
    }
    *out = d;
    return 0;
}

int cli_parse_backend(const char *opt, const char *text, gp_backend_kind *out)
{
    gp_error err;
    if (gp_backend_parse(text, out, &err) != GP_OK) {
        cli_say("%s: '%s' is not a backend: use auto, nvml, smi, amd or none", opt, text);
        return -1;
    }
    return 0;
}

int cli_backend_option(gp_options *o, int key, const char *value)
{
    if (key == CLI_K_BACKEND)
        return cli_parse_backend("--backend", value, &o->backend);
    if (key == CLI_K_NVML_LIBRARY)
        o->nvml_library = value;
    else if (key == CLI_K_SMI_PATH)
        o->smi_path = value;
    else if (key == CLI_K_ROCM_SMI_LIBRARY)
        o->rocm_smi_library = value;
    else
        return 1;
    return 0;
}

static int parse_device_spec(const char *opt, const char *text)
{
    if (strcmp(text, "all") == 0)
        return 0;
    unsigned idx[CLI_MAX_DEVICES];
    size_t n = 0;
    char msg[512];
    if (cli_list_indices_only(text, idx, CLI_MAX_DEVICES, &n, msg, sizeof msg) < 0) {
        cli_say("%s: %s", opt, msg);
        return -1;
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcasecmp(s + n - k, suffix) == 0;
}

static int parse_samples(const char *opt, const char *text, cli_opts *o)
{
    if (strcmp(text, "-") == 0 || ends_with(text, ".csv")) { /* "-": stdout, as CSV */
        o->samples_format = CLI_SAMPLES_CSV;
    } else if (ends_with(text, ".ndjson") || ends_with(text, ".jsonl")) {
        o->samples_format = CLI_SAMPLES_NDJSON;
    } else {
        cli_say("%s: '%s' has no known extension: name it .csv, .ndjson or .jsonl", opt, text);
        return -1;
    }
    o->samples = text;
    return 0;
}

/* Keys of the long-only options (getopt's val). */
enum {
    K_DEVICE = 256,
    K_INTERVAL,
    K_WARMUP,
    K_SAMPLES,
    K_WAIT,
    K_LOG_DIR,
    K_APP,
    K_ENGINE,
    K_METRICS,
    K_PM_INTERVAL,
    K_JSON,
    K_ASCII,
    K_NO_LIVE,
    K_STACK_TRACE,
    K_RANGE_PER_KERNEL,
    K_SASS_ALL_KERNELS,
    K_STRICT,
    K_NO_STRICT,
    K_VERSION,
    K_DURATION,
    K_PID,
    K_REPEATS,
    K_WARMUP_RUNS,
    K_DELAY,
    K_CAPTURE_RANGE,
    K_CAPTURE_RANGE_END,
    K_ROTATE_SIZE,
    K_ROTATE_INTERVAL,
    K_MAX_DISK
};

const cli_opt cli_run_opts[] = {
    {CLI_ROW_DEVICE(K_DEVICE)},
    {"interval", K_INTERVAL, 1, "SECONDS", "a number of seconds (e.g. 0.2)", NULL},
    {CLI_ROW_BACKEND},
    {"warmup", K_WARMUP, 1, "SECONDS", "a number of seconds (e.g. 1.5)", NULL},
    {"output", 'o', 1, "FILE", "a file name (- for stdout)", NULL},
    {"samples", K_SAMPLES, 1, "FILE",
     "a file name ending in .csv, .ndjson or .jsonl (- for stdout)", NULL},
    {"wait", K_WAIT, 1, "WHICH", "all or primary", "all primary"},
    {"log-dir", K_LOG_DIR, 1, "DIR", "a directory", NULL},
    {"app", K_APP, 1, "NAME", "a name", NULL},
    {"engine", K_ENGINE, 1, "NAME",
     "Monitor, Trace, PcSampling, SassMetrics, RangeProfiler, Deep or PmSampling",
     "Monitor Trace PcSampling SassMetrics RangeProfiler Deep PmSampling"},
    {"metrics", K_METRICS, 1, "LIST", "a comma-separated list of metric names", NULL},
    {"pm-interval", K_PM_INTERVAL, 1, "US", "microseconds between PM samples (1..1000000)", NULL},
    {"json", K_JSON, 0, NULL, NULL, NULL},
    {"ascii", K_ASCII, 0, NULL, NULL, NULL},
    {"quiet", 'q', 0, NULL, NULL, NULL},
    {"no-live", K_NO_LIVE, 0, NULL, NULL, NULL},
    {"stack-trace", K_STACK_TRACE, 0, NULL, NULL, NULL},
    {"range-per-kernel", K_RANGE_PER_KERNEL, 0, NULL, NULL, NULL},
    {"sass-all-kernels", K_SASS_ALL_KERNELS, 0, NULL, NULL, NULL},
    {"strict", K_STRICT, 0, NULL, NULL, NULL},
    {"no-strict", K_NO_STRICT, 0, NULL, NULL, NULL},
    {"version", K_VERSION, 0, NULL, NULL, NULL},
    {"help", 'h', 0, NULL, NULL, NULL},
    {CLI_ROW_NVML_LIBRARY},
    {CLI_ROW_SMI_PATH},
    {CLI_ROW_ROCM_SMI_LIBRARY},
    {"duration", K_DURATION, 1, "SECONDS", "a number of seconds (e.g. 60)", NULL},
    {"pid", K_PID, 1, "PID", "a process id", NULL},
    {"repeats", K_REPEATS, 1, "N", "a number of measured runs (1..10000)", NULL},
    {"warmup-runs", K_WARMUP_RUNS, 1, "M", "a number of unmeasured runs first (0..10000)", NULL},
    {"delay", K_DELAY, 1, "SECONDS", "a number of seconds after CMD starts (e.g. 10)", NULL},
    {"capture-range", K_CAPTURE_RANGE, 1, "RANGE", "cudaProfilerApi or nvtx:NAME",
     "cudaProfilerApi nvtx:"},
    {"capture-range-end", K_CAPTURE_RANGE_END, 1, "END", "stop, repeat or repeat:N",
     "stop repeat repeat:"},
    {"rotate-size", K_ROTATE_SIZE, 1, "SIZE", "a size in bytes, or with K, M, G, T (e.g. 64M)",
     NULL},
    {"rotate-interval", K_ROTATE_INTERVAL, 1, "SECONDS", "a number of seconds (e.g. 300)", NULL},
    {"max-disk", K_MAX_DISK, 1, "SIZE", "a size in bytes, or with K, M, G, T (e.g. 2G)", NULL},
};
const size_t cli_run_n_opts = sizeof cli_run_opts / sizeof cli_run_opts[0];

/* What one option asks of cli_parse_run_args. */
enum { OPT_DONE = 0, OPT_EXIT = 1, OPT_FAILED = -1, OPT_UNKNOWN = 2 };

/* The options without a value; --help and --version end the parse (main
 * prints them, with the subcommands' stdout conventions). */
static int apply_flag(const char *name, cli_opts *o)
{
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        o->help = 1;
        return OPT_EXIT;
    } else if (strcmp(name, "--version") == 0) {
        o->version = 1;
        return OPT_EXIT;
    } else if (strcmp(name, "--json") == 0) {
        o->json = 1;
    } else if (strcmp(name, "--ascii") == 0) {
        o->ascii = 1;
    } else if (strcmp(name, "-q") == 0 || strcmp(name, "--quiet") == 0) {
        o->quiet = 1;
    } else if (strcmp(name, "--no-live") == 0) {
        o->no_live = 1;
    } else if (strcmp(name, "--stack-trace") == 0) {
        o->stack_trace = 1;
    } else if (strcmp(name, "--range-per-kernel") == 0) {
        o->range_per_kernel = 1;
    } else if (strcmp(name, "--sass-all-kernels") == 0) {
        o->sass_all_kernels = 1;
    } else if (strcmp(name, "--strict") == 0) {
        o->gp.strict = 1;
    } else if (strcmp(name, "--no-strict") == 0) {
        o->gp.strict = 0;
    } else {
        return OPT_UNKNOWN;
    }
    return OPT_DONE;
}

static int parse_engine(const char *value, cli_opts *o)
{
    if (gpufl_engine_parse(value, &o->engine) != GPUFL_OK) {
        cli_say("--engine: '%s' is not an engine: use Monitor, Trace, PcSampling, SassMetrics, "
                "RangeProfiler, Deep or PmSampling (any case)",
                value);
        return -1;
    }
    return 0;
}

static int parse_wait(const char *value, cli_opts *o)
{
    if (strcmp(value, "all") == 0) {
        o->wait_primary = 0;
    } else if (strcmp(value, "primary") == 0) {
        o->wait_primary = 1;
    } else {
        cli_say("--wait: '%s' is not a choice: use all or primary", value);
        return -1;
    }
    return 0;
}

/* A number of runs: digits only, min..CLI_MAX_RUNS. */
static int parse_count(const char *opt, const char *text, int min, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = isdigit((unsigned char)text[0]) ? strtol(text, &end, 10) : -1;
    if (v < min || !end || *end || errno || v > CLI_MAX_RUNS) {
        cli_say("%s: '%s' is not a number of runs: use a whole number from %d to %d", opt, text,
                min, CLI_MAX_RUNS);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* --capture-range / --capture-range-end, checked by the recorder's own
 * parser (the values reach CMD's gpufl_init unchanged). */
static int check_capture(const char *opt, const char *range, const char *end, cli_opts *o)
{
    gp_error err;
    if (fl_capture_check(range, end, &err) != GP_OK) {
        cli_say("%s", err.message); /* the field names become the flags (say.c) */
        return -1;
    }
    if (end)
        o->capture_range_end = end;
    else
        o->capture_range = range;
    (void)opt;
    return 0;
}

/* --rotate-size / --max-disk: the recorder's own size parser (util's
 * gp_parse_size; the value reaches the session unchanged). */
static int check_size(const char *opt, const char *value, const char **out)
{
    uint64_t bytes;
    char why[256];
    if (gp_parse_size(value, &bytes, why, sizeof why) != 0) {
        cli_say("%s: %s", opt, why);
        return -1;
    }
    *out = value;
    return 0;
}

/* The options with a value (never empty here); a bad one is reported. */
static int apply_valued(const char *name, const char *value, cli_opts *o)
{
    int bad = 0;
    if (strcmp(name, "--interval") == 0) {
        bad = cli_parse_seconds(name, value, 0.001, 86400, &o->gp.interval_s) < 0;
    } else if (strcmp(name, "--warmup") == 0) {
        bad = cli_parse_seconds(name, value, 0, 1e6, &o->gp.warmup_s) < 0;
    } else if (strcmp(name, "--device") == 0) {
        bad = parse_device_spec(name, value) < 0;
        if (!bad)
            o->device_spec = value;
    } else if (strcmp(name, "-o") == 0 || strcmp(name, "--output") == 0) {
        o->output = value;
    } else if (strcmp(name, "--samples") == 0) {
        bad = parse_samples(name, value, o) < 0;
    } else if (strcmp(name, "--log-dir") == 0) {
        o->log_dir = value;
    } else if (strcmp(name, "--app") == 0) {
        o->app = value;
    } else if (strcmp(name, "--engine") == 0) {
        bad = parse_engine(value, o) < 0;
    } else if (strcmp(name, "--metrics") == 0) {
        o->metrics = value;
    } else if (strcmp(name, "--pm-interval") == 0) {
        char *end = NULL;
        long us = strtol(value, &end, 10);
        bad = !end || *end || us < 1 || us > 1000000;
        if (bad)
            cli_say("--pm-interval: '%s' is not a number of microseconds from 1 to 1000000", value);
        o->pm_interval = value;
    } else if (strcmp(name, "--wait") == 0) {
        bad = parse_wait(value, o) < 0;
    } else if (strcmp(name, "--duration") == 0) {
        bad = cli_parse_seconds(name, value, 0.001, 1e7, &o->duration_s) < 0;
    } else if (strcmp(name, "--pid") == 0) {
        char *end = NULL;
        errno = 0;
        long pid = strtol(value, &end, 10);
        bad = !isdigit((unsigned char)value[0]) || *end || errno || pid < 1 || pid > 0x3fffffff;
        if (bad)
            cli_say("--pid: '%s' is not a process id (a whole number from 1)", value);
        o->pid = (pid_t)pid;
    } else if (strcmp(name, "--delay") == 0) {
        bad = cli_parse_seconds(name, value, 0, 1e6, &o->delay_s) < 0;
    } else if (strcmp(name, "--capture-range") == 0) {
        bad = check_capture(name, value, NULL, o) < 0;
    } else if (strcmp(name, "--capture-range-end") == 0) {
        bad = check_capture(name, "cudaProfilerApi", value, o) < 0;
    } else if (strcmp(name, "--rotate-size") == 0) {
        bad = check_size(name, value, &o->rotate_size) < 0;
    } else if (strcmp(name, "--max-disk") == 0) {
        bad = check_size(name, value, &o->max_disk) < 0;
    } else if (strcmp(name, "--rotate-interval") == 0) {
        bad = cli_parse_seconds(name, value, 0.001, 2147483.0, &o->rotate_interval_s) < 0;
    } else if (strcmp(name, "--repeats") == 0) {
        bad = parse_count(name, value, 1, &o->repeats) < 0;
    } else if (strcmp(name, "--warmup-runs") == 0) {
        bad = parse_count(name, value, 0, &o->warmup_runs) < 0;
    } else {
        return OPT_UNKNOWN;
    }
    return bad ? OPT_FAILED : OPT_DONE;
}

/* The capture window's options: --delay and the capture ranges need CMD
 * (--duration alone without it watches); the ranges select trace rows, so
 * they need an engine above Monitor; a window and --repeats do not mix. */
static int check_window(int argc, int i, const cli_opts *o)
{
    int cmd = i < argc;
    if (!cmd && (o->delay_s > 0 || o->capture_range || o->capture_range_end)) {
        cli_say("%s needs a command: the window counts from CMD's start (gpu-profile [OPTIONS] "
                "-- CMD)",
                o->delay_s > 0     ? "--delay"
                : o->capture_range ? "--capture-range"
                                   : "--capture-range-end");
        return -1;
    }
    if (o->capture_range_end && !o->capture_range) {
        cli_say("--capture-range-end needs --capture-range: give --capture-range cudaProfilerApi "
                "or --capture-range nvtx:NAME too");
        return -1;
    }
    if (o->capture_range && o->engine == GPUFL_ENGINE_MONITOR) {
        cli_say("--capture-range selects traced kernels and copies: give --engine trace (or "
                "above) too");
        return -1;
    }
    if ((o->rotate_size || o->rotate_interval_s > 0 || o->max_disk) && !o->log_dir &&
        o->engine == GPUFL_ENGINE_MONITOR) {
        cli_say("%s bounds the session's files: give --log-dir DIR (or --engine trace or above)",
                o->rotate_size ? "--rotate-size"
                : o->max_disk  ? "--max-disk"
                               : "--rotate-interval");
        return -1;
    }
    if (cmd && (o->delay_s > 0 || o->duration_s > 0 || o->capture_range) && cli_multi_run(o)) {
        cli_say("--repeats / --warmup-runs measure whole runs: leave out --delay, --duration "
                "and --capture-range (or run once)");
        return -1;
    }
    return 0;
}

/* The options that tune some engines' work, each given only with one of
 * those engines (with another it would do nothing). */
static int check_engine_options(const cli_opts *o)
{
#define E(name) (1u << GPUFL_ENGINE_##name)
    const struct {
        bool given;
        unsigned engines;
        const char *why;
    } tuning[] = {
        {o->metrics != NULL, E(PM_SAMPLING) | E(RANGE_PROFILER),
         "--metrics needs --engine pmsampling or --engine rangeprofiler: it sets the metrics they "
         "collect"},
        {o->pm_interval != NULL, E(PM_SAMPLING),
         "--pm-interval needs --engine pmsampling: it sets how often PM sampling reads"},
        {o->range_per_kernel != 0, E(RANGE_PROFILER),
         "--range-per-kernel needs --engine rangeprofiler: the range profiler's ranges"},
        {o->sass_all_kernels != 0, E(SASS_METRICS) | E(DEEP),
         "--sass-all-kernels needs --engine sassmetrics or --engine deep: the kernels SassMetrics "
         "counts"},
    };
#undef E
    for (size_t k = 0; k < sizeof tuning / sizeof tuning[0]; k++) {
        if (tuning[k].given && !(tuning[k].engines & (1u << o->engine))) {
            cli_say("%s", tuning[k].why);
            return -1;
        }
    }
    return 0;
}

/* What must hold once the options end: a command, and --app only with
 * --log-dir. */
static int check_run_args(int argc, int i, const cli_opts *o)
{
    /* --duration with CMD is the capture window's length (check_window). */
    int watch = (o->duration_s > 0 && i >= argc) || o->pid;
    if (check_window(argc, i, o) < 0)
        return -1;
    if (i >= argc && !watch) {
        cli_say(
            "no command to run: gpu-profile [OPTIONS] -- CMD [ARGS...] (see gpu-profile --help)");
        return -1;
    }
    if (i < argc && o->pid) {
        cli_say("--pid watches without a command: give either CMD or --pid");
        return -1;
    }
    if (watch && o->engine != GPUFL_ENGINE_MONITOR) {
        cli_say("--engine %s traces a command's CUDA processes: it needs CMD, not --duration / "
                "--pid",
                gpufl_engine_name(o->engine));
        return -1;
    }
    if (o->output && o->samples && strcmp(o->output, "-") == 0 && strcmp(o->samples, "-") == 0) {
        cli_say("-o - and --samples - would both write to stdout: send one of them to a file");
        return -1;
    }
    if (o->app && !o->log_dir) {
        cli_say("--app names a session log: give --log-dir DIR too");
        return -1;
    }
    if (check_engine_options(o) < 0)
        return -1;
    if (cli_multi_run(o) && watch) {
        cli_say("--repeats / --warmup-runs run a command several times: give CMD, not "
                "--duration / --pid");
        return -1;
    }
    if (cli_multi_run(o) && (o->log_dir || o->engine != GPUFL_ENGINE_MONITOR)) {
        cli_say("--repeats / --warmup-runs measure device metrics only: leave out %s (or run "
                "once)",
                o->log_dir ? "--log-dir" : "--engine");
        return -1;
    }
    if (o->stack_trace && o->engine == GPUFL_ENGINE_MONITOR) {
        fprintf(stderr, "gpu-profile: --stack-trace needs --engine trace (or above): stacks are "
                        "taken at kernel launches\n");
        return -1;
    }
    return 0;
}

/* One option of the run form, by its long name; --help and --version
 * stop the parse (apply_flag). */
static int apply_run(void *ctx, int key, const char *value)
{
    cli_opts *o = ctx;
    int r = cli_backend_option(&o->gp, key, value);
    if (r <= 0)
        return r;
    const cli_opt *op = cli_opt_of(cli_run_opts, cli_run_n_opts, key);
    char name[40];
    snprintf(name, sizeof name, "--%s", op ? op->name : "?");
    r = value ? apply_valued(name, value, o) : apply_flag(name, o);
    return r == OPT_DONE ? 0 : r == OPT_EXIT ? 1 : -1;
}

int cli_parse_run_args(int argc, char **argv, cli_opts *o)
{
    memset(o, 0, sizeof *o);
    gp_options_init(&o->gp);
    o->gp.strict = 0;
    o->gp.report = GP_REPORT_NONE;
    o->repeats = 1;
    int p = cli_getopt_each(NULL, cli_run_opts, cli_run_n_opts, CLI_OPERANDS_CMD, argc, argv, NULL,
                            apply_run, o);
    if (p != 0)
        return p;
    int i = optind;
    if (check_run_args(argc, i, o) < 0)
        return -1;
    o->cmd = i < argc ? argv + i : NULL; /* NULL: watch (--duration, --pid) */
    o->cmd_argc = argc - i;
    o->cmd_first = i == 1;
    /* The report's degree sign, dots and sparkline blocks are UTF-8: a
     * terminal in another codeset would show them as garbage. */
    if (!cli_locale_utf8())
        o->ascii = 1;
    return 0;
}
