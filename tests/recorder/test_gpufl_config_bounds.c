/*
 * test_gpufl_config_bounds.c - the config file is read within bounds
 * (src/recorder/config_file.c, issue 16 point 7): only a regular file of at
 * most FL_CONFIG_FILE_MAX (1 MiB) bytes.  /dev/zero (named directly, by
 * GPUFL_CONFIG_FILE, and through a symlink), a FIFO without a writer, a
 * directory and a file one byte over the cap each fail at once with
 * GPUFL_ERR_CONFIG and a message naming the file and what is wrong; a file
 * of exactly the cap is read.  An alarm fails the test if a read blocks
 * or runs on (as it did before the bound).
 */
#include "check.h"
#include "recorder/config.h"
#include "recorder/config_file.h"
#include "gpufl.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "test_gpufl_config_bounds: a config read blocked or ran on (alarm)\n";
    if (write(2, m, sizeof m - 1) < 0)
        _exit(3);
    _exit(3);
}

static gpufl_status resolve_file(const char *path, bool via_env, gpufl_error *e)
{
    unsetenv("GPUFL_CONFIG_FILE");
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "bounds";
    if (via_env)
        setenv("GPUFL_CONFIG_FILE", path, 1);
    else
        o.config_file = path;
    fl_config c;
    memset(e, 0, sizeof *e);
    alarm(20);
    gpufl_status st = fl_config_resolve(&o, &c, e);
    alarm(0);
    if (st == GPUFL_OK)
        fl_config_free(&c);
    unsetenv("GPUFL_CONFIG_FILE");
    return st;
}

/* A file of n bytes: a JSON object padded with spaces. */
static void write_padded(const char *path, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    const char *obj = "{\"app_name\": \"padded\"}";
    size_t k = strlen(obj);
    fwrite(obj, 1, k, f);
    for (size_t i = k; i < n; i++)
        fputc(i + 1 == n ? '\n' : ' ', f);
    fclose(f);
}

static void test_devices(void)
{
    gpufl_error e;
    CHECK_INT(resolve_file("/dev/zero", true, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, "config file \"/dev/zero\" (named by GPUFL_CONFIG_FILE)");
    CHECK_CONTAINS(e.message, "a character device, not a regular file");
    CHECK_INT(resolve_file("/dev/zero", false, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, "not a regular file");

    char link[512];
    snprintf(link, sizeof link, "%s/zero.json", tmpdir);
    CHECK_INT(symlink("/dev/zero", link), 0);
    CHECK_INT(resolve_file(link, true, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, link);
    CHECK_CONTAINS(e.message, "a character device, not a regular file");
    unlink(link);

    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/fifo.json", tmpdir);
    CHECK_INT(mkfifo(fifo, 0600), 0);
    CHECK_INT(resolve_file(fifo, true, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, fifo);
    CHECK_CONTAINS(e.message, "a FIFO, not a regular file");
    unlink(fifo);

    CHECK_INT(resolve_file(tmpdir, false, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, "a directory, not a regular file");
}

static void test_size(void)
{
    gpufl_error e;
    char path[512];
    snprintf(path, sizeof path, "%s/big.json", tmpdir);
    write_padded(path, FL_CONFIG_FILE_MAX + 1);
    CHECK_INT(resolve_file(path, true, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, path);
    CHECK_CONTAINS(e.message, "is 1048577 bytes, more than the 1048576 bytes (1 MiB)");
    /* Exactly the cap is fine. */
    write_padded(path, FL_CONFIG_FILE_MAX);
    CHECK_INT(resolve_file(path, false, &e), GPUFL_OK);
    unlink(path);
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gpufl_cfgb_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    unsetenv("GPUFL_DISABLED");
    test_devices();
    test_size();
    rmdir(tmpdir);
    return check_done("test_gpufl_config_bounds");
}
