/*
 * test_gpufl_secret.c - the API key never appears in a message of the
 * option layers (issue 16), whatever layer set it and however its key was
 * spelt: a config file whose key is written "api\u005fkey" with a short
 * secret and a syntax error in its value (jansson quotes the text near an
 * error), a bad value elsewhere equal to the key (an enum, an unknown key,
 * a boolean variable, app_name), from code, the environment or the file.
 * Each message still says where and what; the secret is "<redacted>".
 */
#include "check.h"
#include "recorder/config.h"
#include "gpufl.h"

#include <unistd.h>

static char tmpdir[256];

static const char *cfg(const char *name, const char *text)
{
    static char paths[32][512];
    static int n;
    char *path = paths[n++ % 32];
    snprintf(path, sizeof paths[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    return path;
}

/* Resolves o; the status must be want, the message must not hold secret
 * and must hold each of the needles (NULL-terminated). */
static void check_hidden(const gpufl_init_options *o, gpufl_status want, const char *secret,
                         const char *needle1, const char *needle2)
{
    fl_config c;
    gpufl_error e;
    memset(&e, 0, sizeof e);
    CHECK_INT(fl_config_resolve(o, &c, &e), want);
    if (strstr(e.message, secret))
        fprintf(stderr, "  leaked \"%s\" in: %s\n", secret, e.message);
    CHECK(strstr(e.message, secret) == NULL);
    if (needle1)
        CHECK_CONTAINS(e.message, needle1);
    if (needle2)
        CHECK_CONTAINS(e.message, needle2);
    fl_config_free(&c);
}

static gpufl_init_options with_file(const char *path)
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.config_file = path;
    return o;
}

/* The file's own key, spelt with an escape, its short value cut by a
 * syntax error: jansson's "near" text would quote it. */
static void test_file_syntax(void)
{
    gpufl_init_options o = with_file(cfg("unterminated.json", "{\"api\\u005fkey\": \"k3y"));
    check_hidden(&o, GPUFL_ERR_CONFIG, "k3y", "line 1, column", "malformed JSON");
    o = with_file(cfg("ctrl.json", "{\"api\\u005fkey\": \"Qx7\t!\"}"));
    check_hidden(&o, GPUFL_ERR_CONFIG, "Qx7", "malformed JSON", NULL);
    o = with_file(cfg("nocolon.json", "{\"api_\\u006bey\" \"Zk8\"}"));
    check_hidden(&o, GPUFL_ERR_CONFIG, "Zk8", "malformed JSON", NULL);
    /* A key from the environment, quoted by a syntax error of the file. */
    setenv("GPUFL_API_KEY", "Hh5", 1);
    o = with_file(cfg("env_near.json", "{\"app_name\": \"Hh5"));
    check_hidden(&o, GPUFL_ERR_CONFIG, "Hh5", "malformed JSON", NULL);
    unsetenv("GPUFL_API_KEY");
}

/* Well-formed files whose messages quote a value or a key equal to the
 * key's value (decoded: "s\u0033c" is "s3c"). */
static void test_file_values(void)
{
    gpufl_init_options o = with_file(
        cfg("enum.json", "{\"api\\u005fkey\": \"s\\u0033c\", \"profiling_engine\": \"s3c\"}"));
    check_hidden(&o, GPUFL_ERR_CONFIG, "s3c", "has an unknown value \"<redacted>\"", NULL);
    o = with_file(cfg("key.json", "{\"api_key\": \"Yy1\", \"Yy1\": 1}"));
    check_hidden(&o, GPUFL_ERR_CONFIG, "Yy1", "unknown key \"<redacted>\"", NULL);
    o = with_file(cfg("backend.json", "{\"backend\": \"Tt4\"}"));
    o.api_key = "Tt4"; /* code's key */
    check_hidden(&o, GPUFL_ERR_CONFIG, "Tt4", "key \"backend\"", NULL);
}

/* The environment's and code's keys in the other layers' messages. */
static void test_env_and_code(void)
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    setenv("GPUFL_API_KEY", "Ww2", 1);
    setenv("GPUFL_REMOTE_UPLOAD", "Ww2", 1);
    check_hidden(&o, GPUFL_ERR_ENV, "Ww2", "GPUFL_REMOTE_UPLOAD=\"<redacted>\"", NULL);
    unsetenv("GPUFL_REMOTE_UPLOAD");
    setenv("GPUFL_DISABLED", "Ww2", 1);
    check_hidden(&o, GPUFL_ERR_ENV, "Ww2", "GPUFL_DISABLED", NULL);
    unsetenv("GPUFL_DISABLED");
    unsetenv("GPUFL_API_KEY");

    gpufl_init_options_init(&o);
    o.api_key = "Pk2";
    o.app_name = "Pk2/x";
    check_hidden(&o, GPUFL_ERR_INVALID_ARG, "Pk2", "app_name \"<redacted>/x\"", "contains '/'");
}

/* A resolved config's debug text does not carry the key either, even
 * inside another option's value. */
static void test_provenance(void)
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.api_key = "gpfl_Prov9";
    o.backend_url = "https://example.invalid/?k=gpfl_Prov9";
    fl_config c;
    gpufl_error e;
    CHECK_INT(fl_config_resolve(&o, &c, &e), GPUFL_OK);
    CHECK_STR(c.api_key, "gpfl_Prov9"); /* the value itself is kept */
    CHECK(c.provenance && !strstr(c.provenance, "gpfl_Prov9"));
    CHECK_CONTAINS(c.provenance, "backend_url = https://example.invalid/?k=<redacted> (code)");
    CHECK_CONTAINS(c.provenance, "api_key = <set> (code)");
    fl_config_free(&c);
}

int main(void)
{
    const char *vars[] = {"GPUFL_DISABLED", "GPUFL_API_KEY", "GPUFL_CONFIG_FILE",
                          "GPUFL_REMOTE_UPLOAD", "GPUFL_PROFILING_ENGINE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gpufl_secret_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_file_syntax();
    test_file_values();
    test_env_and_code();
    test_provenance();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    return check_done("test_gpufl_secret");
}
