/*
 * upload.c - `gpu-profile upload [--backend-url URL] [--api-key KEY]
 * [--api-path P] [--session ID] [--force] [--timeout S] [--retries N]
 * LOG_PATH`: gpufl_upload_logs() on a session directory or a log
 * directory (docs/cli.md, "gpu-profile upload").  One line on stderr says
 * what was sent or why not.  Exit status 0 when the upload went through
 * (or the kill switch skipped it), 1 when it failed, 125 for a bad option.
 * The key given on the command line is wiped from argv at once, so the
 * process listing (/proc/PID/cmdline) shows it only for that instant;
 * GPUFL_API_KEY keeps it out of the listing altogether.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

void cli_upload_usage(FILE *f)
{
    fputs("usage: gpu-profile upload [--backend-url URL] [--api-key KEY] [--api-path P]\n"
          "                          [--session ID] [--force] [--timeout S] [--retries N]\n"
          "                          LOG_PATH\n"
          "\n"
          "Uploads the finished sessions at LOG_PATH (a session directory or a log\n"
          "directory) to a GPUFlight backend.  URL, KEY and P default to\n"
          "GPUFL_BACKEND_URL, GPUFL_API_KEY and GPUFL_API_PATH (else /api/v1).\n"
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

/* The key out of argv: copied, then its bytes in argv overwritten. */
static char *take_key(char *arg)
{
    char *k = strdup(arg);
    memset(arg, 'x', strlen(arg));
    return k;
}

const cli_opt cli_upload_opts[] = {
    {"backend-url", 'u' + 256, 1, "URL", "the backend's URL (e.g. https://host)", NULL},
    {"api-key", 'k' + 256, 1, "KEY", "an API key", NULL},
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
            free(key);
            key = take_key((char *)optv); /* optv is argv's own text: wiped there */
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
    if (rc >= 0) {
        free(key);
        return rc;
    }
    o.log_path = argv[optind];
    o.api_key = key;
    gpufl_upload_result r;
    gpufl_error err;
    gpufl_status st = gpufl_upload_logs(&o, &r, &err);
    if (key) {
        memset(key, 0, strlen(key));
        free(key);
    }
    if (st == GPUFL_OK || st == GPUFL_DISABLED) {
        cli_say("upload: %s", r.message);
        return 0;
    }
    cli_say("upload: %s", err.message);
    return st == GPUFL_ERR_INVALID_ARG || st == GPUFL_ERR_ENV ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}
