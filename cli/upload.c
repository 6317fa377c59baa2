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

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: gpu-profile upload [--backend-url URL] [--api-key KEY] [--api-path P]\n"
          "                          [--session ID] [--force] [--timeout S] [--retries N]\n"
          "                          LOG_PATH\n"
          "\n"
          "Uploads the finished sessions at LOG_PATH (a session directory or a log\n"
          "directory) to a GPUFlight backend.  URL, KEY and P default to\n"
          "GPUFL_BACKEND_URL, GPUFL_API_KEY and GPUFL_API_PATH (else /api/v1).\n"
          "A re-run resumes where a failed upload stopped.  --force also sends\n"
          "sessions still recording or crashed.  Exit status 0 uploaded, 1 failed.\n",
          f);
}

static int bad(const char *fmt, const char *v)
{
    cli_say(fmt, v);
    return CLI_EXIT_PROFILER;
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

int cli_upload_main(int argc, char **argv)
{
    static const struct option longs[] = {{"backend-url", required_argument, NULL, 'u'},
                                          {"api-key", required_argument, NULL, 'k'},
                                          {"api-path", required_argument, NULL, 'p'},
                                          {"session", required_argument, NULL, 's'},
                                          {"force", no_argument, NULL, 'f'},
                                          {"timeout", required_argument, NULL, 't'},
                                          {"retries", required_argument, NULL, 'r'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    gpufl_upload_options o;
    gpufl_upload_options_init(&o);
    char *key = NULL;
    double d;
    int c, rc = -1;
    opterr = 0;
    optind = 1;
    while (rc < 0 && (c = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
        switch (c) {
        case 'u':
            o.backend_url = optarg;
            break;
        case 'k':
            free(key);
            key = take_key(optarg);
            break;
        case 'p':
            o.api_path = optarg;
            break;
        case 's':
            o.session_id = optarg;
            break;
        case 'f':
            o.force = true;
            break;
        case 't':
            if (number("--timeout", optarg, 0.001, 86400, &o.timeout_s) < 0)
                rc = CLI_EXIT_PROFILER;
            break;
        case 'r':
            if (number("--retries", optarg, 0, 10, &d) < 0)
                rc = CLI_EXIT_PROFILER;
            else if (d != (int)d)
                rc = bad("upload: --retries '%s' is not a whole number in 0..10", optarg);
            else
                o.max_retries = (int)d;
            break;
        case 'h':
            usage(stdout);
            rc = 0;
            break;
        default:
            rc = bad("upload: unknown or incomplete option '%s' (see gpu-profile upload --help)",
                     argv[optind - 1]);
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
    return st == GPUFL_ERR_INVALID_ARG || st == GPUFL_ERR_ENV ? CLI_EXIT_PROFILER : 1;
}
