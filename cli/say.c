/*
 * say.c - the command's own messages: one line each on stderr (or the
 * report's stream), "gpu-profile: " first, written with one write.  Text
 * the message quotes - nvidia-smi's words inside a library message, a
 * path, CMD, a session's contents - reaches a terminal only as printable
 * text: every control character (bytes below 0x20, and 0x7F) is shown as
 * '?', so no escape sequence of another program is ever sent on by us.
 * Bytes from 0x80 (UTF-8) pass unchanged.  A secret the command was given
 * (cli_say_hide: upload's API key) never appears in a line.  Also which
 * codeset the user's locale asks for, so that the report's own non-ASCII
 * signs are written only to a UTF-8 terminal.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cli_clean_text(char *s)
{
    for (unsigned char *p = (unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            *p = '?';
}

/* The library's messages name gp_options / gpufl_init_options fields
 * (nvml_library, smi_path, log_path, "backend none"); a command-line user
 * has flags.  Specific phrases first, then the bare field names. */
static const char *const lib_words[][2] = {
    {"set nvml_library to its path", "give --nvml-library PATH"},
    {"check the nvml_library path", "check --nvml-library PATH"},
    {"or set smi_path", "or give --smi-path PATH"},
    {"set rocm_smi_library to its path", "give --rocm-smi-library PATH"},
    {"check the rocm_smi_library path", "check --rocm-smi-library PATH"},
    {"or fix smi_path", "or fix --smi-path PATH"},
    {"use backend none", "use --backend none"},
    {"a writable log_path", "a writable --log-dir"},
    {"a log_path you can read", "a --log-dir you can read"},
    /* upload's (the library names its fields, then our flag in brackets) */
    {"pass backend_url (--backend-url)", "give --backend-url URL"},
    {"pass api_key (--api-key)", "give --api-key KEY"},
    {"check api_key (--api-key, GPUFL_API_KEY)", "check --api-key or GPUFL_API_KEY"},
    {"api_path is wrong (api_path, --api-path, GPUFL_API_PATH; default /api/v1)",
     "--api-path is wrong (or GPUFL_API_PATH; default /api/v1)"},
    {"set force (--force)", "give --force"},
    {"backend_url", "--backend-url"},
    {"api_path", "--api-path"},
    {"nvml_library", "--nvml-library"},
    {"smi_path", "--smi-path"},
    {"rocm_smi_library", "--rocm-smi-library"},
    {"log_path", "--log-dir"},
    {"capture_range_end", "--capture-range-end"},
    {"capture_range", "--capture-range"},
};

/* "--log-dir: ... (--log-dir): ...": a flag the line starts with is not
 * said again in brackets (the library names its field there). */
static void drop_repeated_flag(char *s)
{
    const char *end = strstr(s, ": ");
    if (!end || strncmp(s, "--", 2) != 0 || (size_t)(end - s) > 40)
        return;
    char rep[48];
    snprintf(rep, sizeof rep, " (%.*s)", (int)(end - s), s);
    char *at;
    while ((at = strstr(end, rep)) != NULL)
        memmove(at, at + strlen(rep), strlen(at + strlen(rep)) + 1);
}

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* The length of the "($PATH)" that follows "not found in PATH " at p, or 0:
 * up to the ")" before ": " (a PATH entry may hold parentheses). */
static size_t path_dump_len(const char *p)
{
    if (p[0] != '(')
        return 0;
    const char *end = strstr(p, "): ");
    if (!end)
        end = strrchr(p, ')');
    return end ? (size_t)(end - p) + 1 : 0;
}

void cli_flag_words(const char *in, char *out, size_t cap)
{
    static const char not_found[] = "not found in PATH ";
    size_t o = 0;
    if (cap == 0)
        return;
    for (const char *p = in; *p && o + 1 < cap;) {
        if (strncmp(p, not_found, sizeof not_found - 1) == 0 &&
            path_dump_len(p + sizeof not_found - 1)) {
            /* "not found in PATH" says it; the whole $PATH is noise. */
            size_t k = sizeof not_found - 2;
            size_t w = k < cap - 1 - o ? k : cap - 1 - o;
            memcpy(out + o, p, w);
            o += w;
            p += sizeof not_found - 1 + path_dump_len(p + sizeof not_found - 1);
            continue;
        }
        size_t i = 0;
        size_t n_words = sizeof lib_words / sizeof lib_words[0];
        for (; i < n_words; i++) {
            size_t k = strlen(lib_words[i][0]);
            if (strncmp(p, lib_words[i][0], k) == 0 && (p == in || !word_char(p[-1])) &&
                !word_char(p[k]))
                break;
        }
        if (i < n_words) {
            const char *to = lib_words[i][1];
            size_t k = strlen(to);
            size_t w = k < cap - 1 - o ? k : cap - 1 - o;
            memcpy(out + o, to, w);
            o += w;
            p += strlen(lib_words[i][0]);
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
    drop_repeated_flag(out);
}

static const char *g_hidden[8];
static size_t g_n_hidden;

void cli_say_hide(const char *secret)
{
    if (secret && *secret && g_n_hidden < sizeof g_hidden / sizeof g_hidden[0])
        g_hidden[g_n_hidden++] = secret;
}

/* line (p + n bytes) with the hidden secrets masked: a new line (the mask
 * may be longer than a secret), or line itself. */
static char *hide(char *line, size_t p, int *n)
{
    size_t cap = p + 10 * (size_t)*n + 2; /* a 1-byte secret as "<redacted>" */
    char *out = g_n_hidden ? malloc(cap) : NULL;
    if (!out)
        return line;
    memcpy(out, line, p + (size_t)*n + 1);
    if (!gp_redact_in_place(out + p, cap - p - 1, g_hidden, g_n_hidden)) {
        free(out);
        return line;
    }
    free(line);
    *n = (int)strlen(out + p);
    return out;
}

static void vsay(FILE *f, const char *fmt, va_list ap)
{
    static const char prefix[] = "gpu-profile: ";
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return;
    size_t p = sizeof prefix - 1;
    char *line = malloc(p + (size_t)n + 2);
    if (!line) {
        fputs("gpu-profile: out of memory\n", f);
        return;
    }
    memcpy(line, prefix, p);
    vsnprintf(line + p, (size_t)n + 1, fmt, ap);
    line = hide(line, p, &n);
    cli_clean_text(line + p);
    /* Each rewrite adds at most 16 bytes to a phrase of 8 or more. */
    size_t cap = p + 3 * (size_t)n + 2;
    char *flags = malloc(cap);
    if (flags) {
        memcpy(flags, prefix, p);
        cli_flag_words(line + p, flags + p, cap - p - 1);
        free(line);
        line = flags;
        n = (int)strlen(line + p);
    }
    line[p + (size_t)n] = '\n';
    fwrite(line, 1, p + (size_t)n + 1, f);
    fflush(f);
    free(line);
}

void cli_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(stderr, fmt, ap);
    va_end(ap);
}

void cli_fsay(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(f, fmt, ap);
    va_end(ap);
}

int cli_stdout_failed(const char *cmd)
{
    /* A reader that stopped reading (`| head`) is no error to report: the
     * end `cat` has when SIGPIPE is ignored, without its message. */
    if (errno != EPIPE)
        cli_say("%s: cannot write to stdout: %s", cmd, strerror(errno ? errno : EIO));
    return CLI_EXIT_FAIL;
}

void cli_pipe_default(void)
{
    /* The subcommands write to stdout for a pipe: a closed one ends them
     * as it ends cat, by SIGPIPE's default action (the shell's 141),
     * whatever disposition or mask the process was started with. */
    signal(SIGPIPE, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
}

int cli_locale_utf8(void)
{
    /* The variables' order of precedence for LC_CTYPE (POSIX); read, not
     * setlocale(): the answer must not depend on which locales are
     * installed, only on what the user asked for. */
    static const char *const vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    const char *v = NULL;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0] && !v; i++) {
        const char *e = getenv(vars[i]);
        if (e && *e)
            v = e;
    }
    const char *dot = v ? strchr(v, '.') : NULL;
    if (!dot)
        return 0; /* unset, "C", "POSIX", "en_US": not UTF-8 */
    char cs[16];
    size_t n = 0;
    for (const char *p = dot + 1; *p && *p != '@' && n + 1 < sizeof cs; p++)
        if (*p != '-')
            cs[n++] = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
    cs[n] = '\0';
    return strcmp(cs, "utf8") == 0;
}
