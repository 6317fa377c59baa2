/*
 * help.c - `gpu-profile help [CMD]`, the subcommand list of `gpu-profile
 * --help`, and `gpu-profile help --options [CMD]` / `--commands`, the
 * machine-readable lists the bash completion reads: all of them from the
 * subcommand table (subcommands.c), which main.c dispatches from too.
 *
 * Promises: `help CMD` prints exactly what `gpu-profile CMD --help` prints
 * (the same function), on stdout, exit 0; `help` alone is `--help`; an
 * unknown CMD is a usage error (125) naming the nearest subcommand.  The
 * option lists come from the tables the parsers use (cli_opt), so the
 * completion cannot offer an option the parser refuses.
 */
#include "cli.h"

#include <string.h>

void cli_help_usage(FILE *f)
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
const cli_opt cli_help_opts[] = {
    {"options", K_OPTIONS, 0, NULL, NULL, NULL},
    {"commands", K_COMMANDS, 0, NULL, NULL, NULL},
    {"help", 'h', 0, NULL, NULL, NULL},
};
const size_t cli_help_n_opts = sizeof cli_help_opts / sizeof cli_help_opts[0];

static void subcommands(FILE *f)
{
    fputs("subcommands (gpu-profile help CMD, or CMD --help, for each one's page):\n", f);
    for (size_t i = 0; i < cli_n_subs; i++)
        fprintf(f, "  %-8s %-38s %s\n", cli_subs[i].name, cli_subs[i].summary, cli_subs[i].example);
}

void cli_help_top(FILE *f)
{
    cli_usage(f);
    subcommands(f);
}

const cli_sub *cli_sub_find(const char *name)
{
    for (size_t i = 0; i < cli_n_subs; i++)
        if (strcmp(cli_subs[i].name, name) == 0)
            return &cli_subs[i];
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
    cli_opt names[32];
    size_t n = cli_n_subs < 32 ? cli_n_subs : 32;
    for (size_t i = 0; i < n; i++)
        names[i] = (cli_opt){cli_subs[i].name, 0, 0, NULL, NULL, NULL};
    return word[0] == '-' ? NULL : cli_opt_nearest(names, n, word);
}

static int unknown_sub(const char *name)
{
    const char *near = cli_sub_nearest(name);
    if (near) {
        cli_say("help: no subcommand '%s'; did you mean '%s'? (see gpu-profile --help)", name,
                near);
        return CLI_EXIT_USAGE;
    }
    /* "a, b, ... or z", from the table. */
    char all[512] = "";
    size_t len = 0;
    for (size_t i = 0; i < cli_n_subs && len < sizeof all; i++) {
        const char *sep = i == 0 ? "" : i + 1 < cli_n_subs ? ", " : " or ";
        len += (size_t)snprintf(all + len, sizeof all - len, "%s%s", sep, cli_subs[i].name);
    }
    cli_say("help: no subcommand '%s': %s (see gpu-profile --help)", name, all);
    return CLI_EXIT_USAGE;
}

int cli_help_main(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, "help", cli_help_opts, cli_help_n_opts, 0);
    const char *v;
    int key, options = 0, commands = 0;
    while ((key = cli_getopt_next(&g, argc, argv, &v)) != -1) {
        if (key == CLI_OPT_ERROR)
            return CLI_EXIT_USAGE;
        if (key == 'h') {
            cli_help_usage(stdout);
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
    const cli_sub *s = name && strcmp(name, "run") != 0 ? cli_sub_find(name) : NULL;
    if (name && strcmp(name, "run") != 0 && !s)
        return unknown_sub(name);
    if (commands) {
        for (size_t i = 0; i < cli_n_subs; i++)
            printf("%s\n", cli_subs[i].name);
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
