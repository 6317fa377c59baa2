/*
 * help.c - `gpu-profile help [CMD]`, the subcommand list of `gpu-profile
 * --help`, and `gpu-profile help --options [CMD]` / `--commands`, the
 * machine-readable lists the bash completion reads.
 *
 * Promises: `help CMD` prints exactly what `gpu-profile CMD --help` prints
 * (the same function), on stdout, exit 0; `help` alone is `--help`; an
 * unknown CMD is a usage error (125) naming the nearest subcommand.  The
 * option lists come from the tables the parsers use (cli_opt), so the
 * completion cannot offer an option the parser refuses.
 */
#include "cli.h"

#include <string.h>

static void help_usage(FILE *f)
{
    fputs("usage: gpu-profile help [CMD]\n"
          "       gpu-profile help --options [CMD]\n"
          "       gpu-profile help --commands\n"
          "\n"
          "Prints the page of CMD (the same as gpu-profile CMD --help), or without CMD the\n"
          "page of the run form (gpu-profile --help).  --options: CMD's options, one a line\n"
          "(\"--name<TAB>VALUE<TAB>choices\"; run: the run form); --commands: the\n"
          "subcommands.  Both are what the bash completion reads.  -h, --help: this text.\n",
          f);
}

enum { K_OPTIONS = 256, K_COMMANDS };
static const cli_opt help_opts[] = {
    {"options", K_OPTIONS, 0, NULL, NULL, NULL},
    {"commands", K_COMMANDS, 0, NULL, NULL, NULL},
    {"help", 'h', 0, NULL, NULL, NULL},
};
static const size_t help_n_opts = sizeof help_opts / sizeof help_opts[0];

typedef struct sub {
    const char *name, *summary, *example;
    void (*usage)(FILE *);
    const cli_opt *opts;
    const size_t *n_opts;
} sub;

static const sub subs[] = {
    {"devices", "list the GPUs a backend sees", "gpu-profile devices --json", cli_devices_usage,
     cli_devices_opts, &cli_devices_n_opts},
    {"report", "the report of a recorded session", "gpu-profile report --format json logs",
     cli_report_usage, cli_logs_opts, &cli_logs_n_opts},
    {"export", "a session as a Perfetto trace or CSV",
     "gpu-profile export --format chrome-trace -o trace.json logs", cli_export_usage,
     cli_export_opts, &cli_export_n_opts},
    {"metrics", "the hardware metrics of a chip", "gpu-profile metrics list --chip GH100",
     cli_metrics_usage, cli_metrics_opts, &cli_metrics_n_opts},
    {"serve", "a Prometheus exporter of the GPUs", "gpu-profile serve --listen :9400",
     cli_serve_usage, cli_serve_opts, &cli_serve_n_opts},
    {"help", "a subcommand's page", "gpu-profile help report", help_usage, help_opts, &help_n_opts},
    {"upload", "send sessions to a GPUFlight backend",
     "gpu-profile upload --backend-url https://host logs", cli_upload_usage, cli_upload_opts,
     &cli_upload_n_opts},
};
#define N_SUBS (sizeof subs / sizeof subs[0])

static void subcommands(FILE *f)
{
    fputs("subcommands (gpu-profile help CMD, or CMD --help, for each one's page):\n", f);
    for (size_t i = 0; i < N_SUBS; i++)
        fprintf(f, "  %-8s %-38s %s\n", subs[i].name, subs[i].summary, subs[i].example);
}

void cli_help_top(FILE *f)
{
    cli_usage(f);
    subcommands(f);
}

static const sub *find(const char *name)
{
    for (size_t i = 0; i < N_SUBS; i++)
        if (strcmp(subs[i].name, name) == 0)
            return &subs[i];
    return NULL;
}

static void list_options(const cli_opt *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *arg = t[i].has_arg ? t[i].arg : "-";
        const char *ch = t[i].choices ? t[i].choices : "";
        printf("--%s\t%s\t%s\n", t[i].name, arg, ch);
        if (t[i].key > 0 && t[i].key < 128)
            printf("-%c\t%s\t%s\n", t[i].key, arg, ch);
    }
}

const char *cli_sub_nearest(const char *word)
{
    /* The nearest subcommand, as for options. */
    cli_opt names[N_SUBS];
    for (size_t i = 0; i < N_SUBS; i++)
        names[i] = (cli_opt){subs[i].name, 0, 0, NULL, NULL, NULL};
    return word[0] == '-' ? NULL : cli_opt_nearest(names, N_SUBS, word);
}

static int unknown_sub(const char *name)
{
    const char *near = cli_sub_nearest(name);
    if (near)
        cli_say("help: no subcommand '%s'; did you mean '%s'? (see gpu-profile --help)", name,
                near);
    else
        cli_say("help: no subcommand '%s': devices, report, export, metrics, serve, help or "
                "upload (see gpu-profile --help)",
                name);
    return CLI_EXIT_USAGE;
}

int cli_help_main(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, "help", help_opts, help_n_opts, 0);
    const char *v;
    int key, options = 0, commands = 0;
    while ((key = cli_getopt_next(&g, argc, argv, &v)) != -1) {
        if (key == CLI_OPT_ERROR)
            return CLI_EXIT_USAGE;
        if (key == 'h') {
            help_usage(stdout);
            return fflush(stdout) == 0 ? 0 : cli_stdout_failed("help");
        }
        options |= key == K_OPTIONS;
        commands |= key == K_COMMANDS;
    }
    if (argc - optind > 1) {
        cli_say("help: one CMD only ('%s' and '%s')", argv[optind], argv[optind + 1]);
        return CLI_EXIT_USAGE;
    }
    const char *name = optind < argc ? argv[optind] : NULL;
    const sub *s = name && strcmp(name, "run") != 0 ? find(name) : NULL;
    if (name && strcmp(name, "run") != 0 && !s)
        return unknown_sub(name);
    if (commands) {
        for (size_t i = 0; i < N_SUBS; i++)
            printf("%s\n", subs[i].name);
    } else if (options) {
        if (s)
            list_options(s->opts, *s->n_opts);
        else
            list_options(cli_run_opts, cli_run_n_opts);
    } else if (s) {
        s->usage(stdout);
    } else {
        cli_help_top(stdout);
    }
    return fflush(stdout) == 0 ? 0 : cli_stdout_failed("help");
}
