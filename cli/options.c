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
          "       gpu-profile devices [--json] [--backend B]\n"
          "       gpu-profile metrics chips|list|describe|passes ... (see metrics --help)\n"
          "\n"
          "Runs CMD, samples the GPUs while it runs, and reports when it ends.  CMD's\n"
          "stdin, stdout, stderr and terminal are its own; the report goes to stderr\n"
          "(or to -o FILE), so CMD's stdout is byte-for-byte what it would be alone.\n"
          "\n"
          "options:\n"
          "  --device N|N,M|UUID|all  GPUs to sample (default: the GPUs CMD can see:\n"
          "                         every GPU, filtered by CUDA_VISIBLE_DEVICES)\n"
          "  --interval SECONDS     sampling period, 0.001 to 86400 (default 0.2)\n"
          "  --backend B            auto | nvml | smi | none (default auto: nvml, else smi)\n"
          "  --warmup SECONDS       leave the first seconds out of the statistics\n"
          "  --strict               no GPU backend is an error: exit 125, CMD not run\n"
          "  --no-strict            without a GPU backend run CMD anyway and say why\n"
          "                         nothing was sampled (default)\n"
          "  --json                 the report as one JSON object (gpu-profile.run)\n"
          "  -o, --output FILE      write the report to FILE instead of stderr\n"
          "  --samples FILE         every raw sample, as CSV (.csv) or NDJSON (.ndjson,\n"
          "                         .jsonl), written as taken\n"
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
          "  --wait all|primary     all (default): sample until CMD and every process it\n"
          "                         left behind have exited; primary: until CMD exits\n"
          "  --no-live              no live status line on a terminal stderr\n"
          "  --ascii                ASCII sparkline\n"
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
          "  CUDA_VISIBLE_DEVICES=1 gpu-profile -- ./app     # samples GPU 1 only\n"
          "  gpu-profile devices --json\n",
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
        cli_say("%s: '%s' is not a backend: use auto, nvml, smi or none", opt, text);
        return -1;
    }
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
    if (ends_with(text, ".csv")) {
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

/* The options that take a value, and what a missing value should say. */
static const struct {
    const char *name;
    const char *what;
} valued[] = {
    {"--device", "an index, a comma list (0,2), a GPU UUID or all"},
    {"--interval", "a number of seconds (e.g. 0.2)"},
    {"--backend", "auto, nvml, smi or none"},
    {"--warmup", "a number of seconds (e.g. 1.5)"},
    {"--output", "a file name"},
    {"-o", "a file name"},
    {"--samples", "a file name ending in .csv, .ndjson or .jsonl"},
    {"--wait", "all or primary"},
    {"--log-dir", "a directory"},
    {"--app", "a name"},
    {"--engine", "Monitor, Trace, PcSampling, SassMetrics, RangeProfiler, Deep or PmSampling"},
    {"--metrics", "a comma-separated list of metric names"},
    {"--pm-interval", "microseconds between PM samples (1..1000000)"},
};

static int takes_value(const char *name, const char **what)
{
    for (size_t i = 0; i < sizeof valued / sizeof valued[0]; i++)
        if (strcmp(name, valued[i].name) == 0) {
            *what = valued[i].what;
            return 1;
        }
    return 0;
}

/* What one option word asks of cli_parse_run_args. */
enum { OPT_DONE = 0, OPT_EXIT = 1, OPT_FAILED = -1, OPT_UNKNOWN = 2 };

static int unknown_option(const char *word)
{
    cli_say("unknown option '%s' (see gpu-profile --help)", word);
    return OPT_FAILED;
}

/*
 * Splits argv[*i] into its name and, for an option that takes one, its
 * value: "--name=value", or the next word (then *i moves past it).  A
 * missing or empty value, or a value given to an option that takes none,
 * is reported here.
 */
static int read_option(int argc, char **argv, int *i, char *name, size_t name_cap,
                       const char **value)
{
    const char *a = argv[*i];
    *value = NULL;
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    if (eq) {
        size_t n = (size_t)(eq - a);
        if (n >= name_cap)
            return unknown_option(a);
        memcpy(name, a, n);
        name[n] = '\0';
        *value = eq + 1;
    } else {
        snprintf(name, name_cap, "%s", a);
    }
    const char *what = NULL;
    if (takes_value(name, &what)) {
        if (!*value) {
            if (*i + 1 >= argc) {
                cli_say("%s needs a value: %s", name, what);
                return OPT_FAILED;
            }
            *value = argv[++*i];
        }
        if ((*value)[0] == '\0') {
            cli_say("%s: the value is empty: give %s", name, what);
            return OPT_FAILED;
        }
    } else if (*value) {
        cli_say("%s takes no value (see gpu-profile --help)", name);
        return OPT_FAILED;
    }
    return OPT_DONE;
}

/* The options without a value; --help and --version print and end. */
static int apply_flag(const char *name, cli_opts *o)
{
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        cli_usage(stdout);
        return OPT_EXIT;
    } else if (strcmp(name, "--version") == 0) {
        printf("gpu-profile %s\n", gp_version());
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

/* The options with a value (never empty here); a bad one is reported. */
static int apply_valued(const char *name, const char *value, cli_opts *o)
{
    int bad = 0;
    if (strcmp(name, "--interval") == 0) {
        bad = cli_parse_seconds(name, value, 0.001, 86400, &o->gp.interval_s) < 0;
    } else if (strcmp(name, "--warmup") == 0) {
        bad = cli_parse_seconds(name, value, 0, 1e6, &o->gp.warmup_s) < 0;
    } else if (strcmp(name, "--backend") == 0) {
        bad = cli_parse_backend(name, value, &o->gp.backend) < 0;
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
    } else {
        return OPT_UNKNOWN;
    }
    return bad ? OPT_FAILED : OPT_DONE;
}

/* What must hold once the options end: a command, and --app only with
 * --log-dir. */
static int check_run_args(int argc, int i, const cli_opts *o)
{
    if (i >= argc) {
        cli_say(
            "no command to run: gpu-profile [OPTIONS] -- CMD [ARGS...] (see gpu-profile --help)");
        return -1;
    }
    if (o->app && !o->log_dir) {
        cli_say("--app names a session log: give --log-dir DIR too");
        return -1;
    }
    if (o->metrics && o->engine != GPUFL_ENGINE_PM_SAMPLING &&
        o->engine != GPUFL_ENGINE_RANGE_PROFILER) {
        cli_say("--metrics needs --engine pmsampling or --engine rangeprofiler: it sets the "
                "metrics they collect");
        return -1;
    }
    if (o->pm_interval && o->engine != GPUFL_ENGINE_PM_SAMPLING) {
        cli_say("--pm-interval needs --engine pmsampling: it sets how often PM sampling reads");
        return -1;
    }
    if (o->range_per_kernel && o->engine != GPUFL_ENGINE_RANGE_PROFILER) {
        cli_say("--range-per-kernel needs --engine rangeprofiler: the range profiler's ranges");
        return -1;
    }
    if (o->stack_trace && o->engine == GPUFL_ENGINE_MONITOR) {
        fprintf(stderr, "gpu-profile: --stack-trace needs --engine trace (or above): stacks are "
                        "taken at kernel launches\n");
        return -1;
    }
    return 0;
}

int cli_parse_run_args(int argc, char **argv, cli_opts *o)
{
    memset(o, 0, sizeof *o);
    gp_options_init(&o->gp);
    o->gp.strict = 0;
    o->gp.report = GP_REPORT_NONE;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break; /* the command starts here */

        char name[32];
        const char *value;
        if (read_option(argc, argv, &i, name, sizeof name, &value) != OPT_DONE)
            return -1;
        int r = value ? apply_valued(name, value, o) : apply_flag(name, o);
        if (r == OPT_UNKNOWN)
            r = unknown_option(a);
        if (r != OPT_DONE)
            return r == OPT_EXIT ? 1 : -1;
    }
    if (check_run_args(argc, i, o) < 0)
        return -1;
    o->cmd = argv + i;
    o->cmd_argc = argc - i;
    return 0;
}
