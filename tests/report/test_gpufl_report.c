/*
 * test_gpufl_report.c - gpufl_generate_report(): nothing recorded yet is
 * GPUFL_ERR_STATE; the active session is flushed and reported as far as it
 * reached the disk; after shutdown the last session is reported, to a file
 * or to standard output; a path that cannot be written is GPUFL_ERR_IO
 * naming it.
 */
#include "fl_log.h"
#include "gpufl.h"

#include <fcntl.h>
#include <unistd.h>

static char g_tmp[256];

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_gpufl_report_%d", (int)getpid());
    gpufl_error err;
    char path[512];
    snprintf(path, sizeof path, "%s/r.txt", g_tmp);
    CHECK_INT(gpufl_generate_report(path, &err), GPUFL_ERR_STATE);
    CHECK_CONTAINS(err.message, "no session was recorded in this process");

    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "report_test";
    o.log_path = g_tmp;
    o.backend = GPUFL_BACKEND_NONE;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    for (int i = 0; i < 3; i++) {
        gpufl_scope s = gpufl_scope_begin("epoch");
        gpufl_scope t = gpufl_scope_begin("step");
        gpufl_scope_end(&t);
        gpufl_scope_end(&s);
    }
    /* Active: what reached the disk, and no shutdown yet. */
    CHECK_INT(gpufl_generate_report(path, &err), GPUFL_OK);
    char *text = check_read_file(path, NULL);
    CHECK(text && strstr(text, "report  report_test  session "));
    CHECK(text && strstr(text, "epoch"));
    CHECK(text && strstr(text, "the session is still recording: the report covers what reached "
                               "the disk so far"));
    free(text);
    gpufl_shutdown();

    /* After shutdown: the last session, complete. */
    CHECK_INT(gpufl_generate_report(path, &err), GPUFL_OK);
    text = check_read_file(path, NULL);
    CHECK(text && strstr(text, "(shutdown)"));
    CHECK(text && strstr(text, "step"));
    CHECK(text && !strstr(text, "did not shut down"));
    free(text);

    /* NULL: standard output. */
    char out[512];
    snprintf(out, sizeof out, "%s/stdout.txt", g_tmp);
    fflush(stdout);
    int saved = dup(1);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    close(fd);
    CHECK_INT(gpufl_generate_report(NULL, &err), GPUFL_OK);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    text = check_read_file(out, NULL);
    CHECK(text && strstr(text, "report  report_test"));
    free(text);

    CHECK_INT(gpufl_generate_report("/nonexistent/dir/r.txt", &err), GPUFL_ERR_IO);
    CHECK_CONTAINS(err.message, "cannot create \"/nonexistent/dir/r.txt\"");
    CHECK_INT(gpufl_generate_report("/nonexistent/dir/r.txt", NULL), GPUFL_ERR_IO);
    fl_rmtree(g_tmp);
    return check_done("test_gpufl_report");
}
