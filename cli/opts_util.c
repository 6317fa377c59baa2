/*
 * opts_util.c - the option parsing every subcommand and the run form share:
 * the C library's getopt_long over a table of cli_opt (cli.h), so short
 * options bundle (-qo FILE) and take attached values (-oFILE), long ones
 * take --opt VALUE and --opt=VALUE, and unique prefixes of long names are
 * accepted as getopt does.  getopt's own messages are off: every mistake
 * is one line of ours that names the option and what it needs, and an
 * unknown option names the nearest known one when one is close.
 */
#include "cli.h"

#include <getopt.h>
#include <string.h>

/* The name as the user typed it: "--name" or "-c". */
static void shown_name(const cli_opt *op, int as_short, char *buf, size_t len)
{
    if (as_short && op->key > 0 && op->key < 128)
        snprintf(buf, len, "-%c", op->key);
    else
        snprintf(buf, len, "--%s", op->name);
}

void cli_getopt_init(cli_getopt *g, const char *cmd, const cli_opt *tab, size_t n, int stop_at_cmd)
{
    memset(g, 0, sizeof *g);
    g->cmd = cmd;
    g->tab = tab;
    g->n = n > CLI_MAX_OPTS ? CLI_MAX_OPTS : n;
    size_t s = 0;
    if (stop_at_cmd)
        g->shorts[s++] = '+'; /* options end at the first word that is not one */
    g->shorts[s++] = ':';     /* a missing value is ':', told apart from unknown '?' */
    for (size_t i = 0; i < g->n; i++) {
        g->lo[i] = (struct option){tab[i].name, tab[i].has_arg ? required_argument : no_argument,
                                   NULL, tab[i].key};
        if (tab[i].key > 0 && tab[i].key < 128) {
            g->shorts[s++] = (char)tab[i].key;
            if (tab[i].has_arg)
                g->shorts[s++] = ':';
        }
    }
    g->shorts[s] = '\0';
    memset(&g->lo[g->n], 0, sizeof g->lo[g->n]);
    optind = 0; /* glibc: a full restart, whatever parsed before */
    opterr = 0;
}

static const cli_opt *by_key(const cli_getopt *g, int key)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->tab[i].key == key)
            return &g->tab[i];
    return NULL;
}

/* Edits from a[0..la) to b: insertions, deletions, substitutions and
 * swaps of two neighbours (the usual typos), each one. */
static size_t edit_distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    unsigned char d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (unsigned char)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (unsigned char)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            unsigned best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1u < best)
                best = d[i - 1][j] + 1u;
            if (d[i][j - 1] + 1u < best)
                best = d[i][j - 1] + 1u;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1u < best)
                best = d[i - 2][j - 2] + 1u;
            d[i][j] = (unsigned char)best;
        }
    return d[la][lb];
}

const char *cli_opt_nearest(const cli_opt *tab, size_t n, const char *word)
{
    while (*word == '-')
        word++;
    size_t len = strcspn(word, "=");
    if (len == 0)
        return NULL;
    const char *best = NULL;
    size_t best_d = 99;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, len, tab[i].name);
        if (d < best_d) {
            best_d = d;
            best = tab[i].name;
        }
    }
    /* Close means a typo or two, not a different word that happens to be short. */
    return best && best_d <= 2 && best_d * 3 <= len + 1 ? best : NULL;
}

static void say_unknown(const cli_getopt *g, const char *word)
{
    char w[128];
    snprintf(w, sizeof w, "%.*s", (int)strcspn(word, "="), word);
    const char *near = w[1] == '-' ? cli_opt_nearest(g->tab, g->n, w) : NULL;
    /* A prefix of several long names is getopt's "ambiguous", not unknown. */
    size_t matches = 0;
    if (w[1] == '-' && w[2])
        for (size_t i = 0; i < g->n; i++)
            matches += strncmp(g->tab[i].name, w + 2, strlen(w + 2)) == 0;
    const char *sp = g->cmd ? " " : "";
    const char *pre = g->cmd ? g->cmd : "";
    const char *colon = g->cmd ? ": " : "";
    if (matches > 1)
        cli_say("%s%sambiguous option '%s': it starts %zu option names; type more of it (see "
                "gpu-profile%s%s --help)",
                pre, colon, w, matches, sp, pre);
    else if (near)
        cli_say("%s%sunknown option '%s'; did you mean '--%s'? (see gpu-profile%s%s --help)", pre,
                colon, w, near, sp, pre);
    else
        cli_say("%s%sunknown option '%s' (see gpu-profile%s%s --help)", pre, colon, w, sp, pre);
}

int cli_getopt_next(cli_getopt *g, int argc, char **argv, const char **value)
{
    *value = NULL;
    int c = getopt_long(argc, argv, g->shorts, g->lo, NULL);
    if (c == -1)
        return -1;
    const char *pre = g->cmd ? g->cmd : "", *colon = g->cmd ? ": " : "";
    const char *sp = g->cmd ? " " : "";
    const char *last = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    int long_word = last[0] == '-' && last[1] == '-';
    char name[96];
    if (c == ':') {
        const cli_opt *op = by_key(g, optopt);
        if (!op)
            return CLI_OPT_ERROR;
        shown_name(op, !long_word, name, sizeof name);
        cli_say("%s%s%s needs a value: %s", pre, colon, name, op->what ? op->what : "a value");
        return CLI_OPT_ERROR;
    }
    if (c == '?') {
        /* optopt 0: an unknown or ambiguous long option; a known key: a
         * long option given a value it does not take; else an unknown
         * short letter. */
        const cli_opt *op = optopt ? by_key(g, optopt) : NULL;
        if (op && long_word && strchr(last, '=')) {
            shown_name(op, 0, name, sizeof name);
            cli_say("%s%s%s takes no value (see gpu-profile%s%s --help)", pre, colon, name, sp,
                    pre);
        } else if (optopt && optopt < 128 && !op) {
            char w[3] = {'-', (char)optopt, '\0'};
            say_unknown(g, w);
        } else {
            say_unknown(g, last);
        }
        return CLI_OPT_ERROR;
    }
    const cli_opt *op = by_key(g, c);
    if (op && op->has_arg) {
        *value = optarg ? optarg : "";
        if (!(*value)[0]) {
            shown_name(op, !long_word, name, sizeof name);
            cli_say("%s%s%s: the value is empty: give %s", pre, colon, name,
                    op->what ? op->what : "a value");
            return CLI_OPT_ERROR;
        }
    }
    return c;
}

int cli_getopt_each(const char *cmd, const cli_opt *tab, size_t n, int operands, int argc,
                    char **argv, void (*usage)(FILE *f),
                    int (*apply)(void *ctx, int key, const char *value), void *ctx)
{
    cli_getopt g;
    cli_getopt_init(&g, cmd, tab, n, operands == CLI_OPERANDS_CMD);
    const char *v;
    int key;
    while ((key = cli_getopt_next(&g, argc, argv, &v)) != -1) {
        if (key == CLI_OPT_ERROR)
            return -1;
        if (key == 'h' && usage) {
            usage(stdout);
            return 1;
        }
        int r = apply(ctx, key, v);
        if (r != 0)
            return r > 0 ? 1 : -1;
    }
    if (operands == CLI_OPERANDS_NONE && optind < argc) {
        cli_say("%s: unknown argument '%s' (see gpu-profile %s --help)", cmd, argv[optind], cmd);
        return -1;
    }
    return 0;
}

const cli_opt *cli_opt_of(const cli_opt *tab, size_t n, int key)
{
    for (size_t i = 0; i < n; i++)
        if (tab[i].key == key)
            return &tab[i];
    return NULL;
}
