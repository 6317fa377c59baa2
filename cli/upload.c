/*
 * upload.c - `gpu-profile upload [--backend-url URL] [--api-key KEY |
 * --api-key-file FILE] [--api-path P] [--session ID] [--force] [--timeout S]
 * [--retries N] LOG_PATH`: gpufl_upload_logs() on a session directory or a
 * log directory (docs/cli.md, "gpu-profile upload").  One line on stderr
 * says what was sent or why not.  Exit status 0 when the upload went
 * through (or the kill switch skipped it), 1 when it failed, 125 for a bad
 * option.  A key given on the command line is copied away and wiped from
 * argv by the first thing main does (cli_upload_scrub_argv), so
 * /proc/PID/cmdline shows it only while the dynamic loader runs;
 * GPUFL_API_KEY and --api-key-file keep it out of the listing altogether.
 * No message shows the key, whichever option or variable it was pasted
 * into.
 */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void cli_upload_usage(FILE *f)
{
    fputs("usage: gpu-profile upload [--backend-url URL] [--api-key KEY | --api-key-file FILE]\n"
          "                          [--api-path P] [--session ID] [--force] [--timeout S]\n"
          "                          [--retries N] LOG_PATH\n"
          "\n"
          "Uploads the finished sessions at LOG_PATH (a session directory or a log\n"
          "directory) to a GPUFlight backend.  URL, KEY and P default to\n"
          "GPUFL_BACKEND_URL, GPUFL_API_KEY and GPUFL_API_PATH (else /api/v1).\n"
          "GPUFL_API_KEY or --api-key-file (the key alone in a file) keep the key out\n"
          "of the process listing; --api-key shows it there until gpu-profile starts.\n"
          "A re-run resumes where a failed upload stopped.  --force also sends\n"
          "sessions still recording or crashed.  Exit status 0 uploaded, 1 failed, 125\n"
          "for a bad option.  -h, --help: this text.\n",
          f);
}

static int bad(const char *fmt, const char *v)
{
    cli_say(fmt, v);
    return CLI_EXIT_USAGE;
}

static int number(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= lo && d <= hi)) {
        cli_say("upload: %s '%s' is not a number in %g..%g", opt, v, lo, hi);
        return -1;
    }
    *out = d;
    return 0;
}

/* The keys scrubbed from argv: where each was, and its copy (kept until
 * the end: every message hides it). */
static struct {
    const char *at;
    char *copy;
} g_keys[8];
static size_t g_n_keys;

/* A copy of text that every message hides, text itself overwritten. */
static char *hide_and_wipe(char *text)
{
    char *k = strdup(text);
    if (k && g_n_keys < sizeof g_keys / sizeof g_keys[0]) {
        g_keys[g_n_keys].at = text;
        g_keys[g_n_keys++].copy = k;
        cli_say_hide(k);
    }
    memset(text, 'x', strlen(text));
    return k;
}

/* The key of an --api-key whose value is arg (argv's text, wiped by the
 * scrub or now); owned here. */
static char *take_key(char *arg)
{
    for (size_t i = 0; i < g_n_keys; i++)
        if (g_keys[i].at == arg)
            return g_keys[i].copy;
    return hide_and_wipe(arg);
}

/* The upload option name (n bytes) names: exactly, or as the one it starts. */
static const cli_opt *upload_opt(const char *name, size_t n)
{
    const cli_opt *hit = NULL;
    for (size_t i = 0; i < cli_upload_n_opts; i++) {
        const char *o = cli_upload_opts[i].name;
        if (strncmp(o, name, n) != 0)
            continue;
        if (!o[n])
            return &cli_upload_opts[i];
        if (hit)
            return NULL; /* ambiguous */
        hit = &cli_upload_opts[i];
    }
    return hit;
}

void cli_upload_scrub_argv(int argc, char **argv)
{
    cli_say_hide(getenv("GPUFL_API_KEY"));
    if (argc < 2 || strcmp(argv[1], "upload") != 0)
        return; /* the run form's CMD keeps its arguments as given */
    for (int i = 2; i < argc; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (strncmp(a, "--", 2) != 0 || !a[2])
            continue;
        char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        /* Any start of "api-key", the ambiguous "--api-" too: its value
         * goes even when getopt then refuses the option. */
        if (n > 0 && n <= 7 && strncmp(a + 2, "api-key", n) == 0) {
            char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (v && *v)
                hide_and_wipe(v);
            continue;
        }
        const cli_opt *o = upload_opt(a + 2, n);
        if (o && o->has_arg && !eq)
            i++; /* its value, whatever it looks like */
    }
}

/* The key alone in the file at path (one line; its newline and blanks at
 * the ends dropped): NULL after a message. */
static char *key_from_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_say("upload: --api-key-file '%s': %s: give a file that holds the API key", path,
                strerror(errno));
        return NULL;
    }
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    buf[n] = '\0';
    bool nul = strlen(buf) != n;
    char *b = buf, *e = buf + n;
    while (*b == ' ' || *b == '\t')
        b++;
    while (e > b && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *e = '\0';
    const char *why = more || nul          ? "is over 4 KiB or holds a NUL byte"
                      : !*b                ? "is empty"
                      : strpbrk(b, "\r\n") ? "holds more than one line"
                                           : NULL;
    char *k = why ? NULL : hide_and_wipe(b);
    memset(buf, 0, sizeof buf);
    if (why)
        cli_say("upload: --api-key-file '%s' %s: put the API key alone in it", path, why);
    return k;
}

const cli_opt cli_upload_opts[] = {
    {"backend-url", 'u' + 256, 1, "URL", "the backend's URL (e.g. https://host)", NULL},
    {"api-key", 'k' + 256, 1, "KEY", "an API key", NULL},
    {"api-key-file", 'K' + 256, 1, "FILE", "a file that holds the API key", NULL},
    {"api-path", 'p' + 256, 1, "P", "the API path (e.g. /api/v1)", NULL},
    {"session", 's' + 256, 1, "ID", "a session id", NULL},
    {"force", 'f' + 256, 0, NULL, NULL, NULL},
    {"timeout", 't' + 256, 1, "SECONDS", "a number of seconds (0.001..86400)", NULL},
    {"retries", 'r' + 256, 1, "N", "a whole number in 0..10", NULL},
    {"help", 'h', 0, NULL, NULL, NULL},
};
const size_t cli_upload_n_opts = sizeof cli_upload_opts / sizeof cli_upload_opts[0];

int cli_upload_main(int argc, char **argv)
{
    gpufl_upload_options o;
    gpufl_upload_options_init(&o);
    char *key = NULL;
    double d;
    int c, rc = -1;
    cli_getopt g;
    cli_getopt_init(&g, "upload", cli_upload_opts, cli_upload_n_opts, 0);
    const char *optv;
    while (rc < 0 && (c = cli_getopt_next(&g, argc, argv, &optv)) != -1) {
        switch (c) {
        case 'u' + 256:
            o.backend_url = optv;
            break;
        case 'k' + 256:
            key = take_key((char *)optv); /* optv is argv's own text: wiped there */
            break;
        case 'K' + 256:
            if (!(key = key_from_file(optv)))
                rc = CLI_EXIT_USAGE;
            break;
        case 'p' + 256:
            o.api_path = optv;
            break;
        case 's' + 256:
            o.session_id = optv;
            break;
        case 'f' + 256:
            o.force = true;
            break;
        case 't' + 256:
            if (number("--timeout", optv, 0.001, 86400, &o.timeout_s) < 0)
                rc = CLI_EXIT_USAGE;
            break;
        case 'r' + 256:
            if (number("--retries", optv, 0, 10, &d) < 0)
                rc = CLI_EXIT_USAGE;
            else if (d != (int)d)
                rc = bad("upload: --retries '%s' is not a whole number in 0..10", optv);
            else
                o.max_retries = (int)d;
            break;
        case 'h':
            cli_upload_usage(stdout);
            rc = 0;
            break;
        default: /* CLI_OPT_ERROR: said */
            rc = CLI_EXIT_USAGE;
        }
    }
    if (rc < 0 && optind != argc - 1)
        rc = bad("upload: give one LOG_PATH%s (see gpu-profile upload --help)",
                 optind < argc ? ", and only one" : "");
    if (rc < 0) {
        o.log_path = argv[optind];
        o.api_key = key;
        gpufl_upload_result r;
        gpufl_error err;
        gpufl_status st = gpufl_upload_logs(&o, &r, &err);
        bool ok = st == GPUFL_OK || st == GPUFL_DISABLED;
        cli_say("upload: %s", ok ? r.message : err.message);
        rc = ok                                                   ? 0
             : st == GPUFL_ERR_INVALID_ARG || st == GPUFL_ERR_ENV ? CLI_EXIT_USAGE
                                                                  : CLI_EXIT_FAIL;
    }
    /* The copies, wiped once nothing more is said (never freed: every
     * message hid them until now). */
    for (size_t i = 0; i < g_n_keys; i++)
        memset(g_keys[i].copy, 0, strlen(g_keys[i].copy));
    return rc;
}
