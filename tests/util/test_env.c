/*
 * test_env.c - the environment our children get (util/env.h, issue 16):
 * GPUFL_API_KEY is a secret and nothing else is; a forked child scrubs it
 * from its own environ (the parent keeps it) and exec passes the rest on;
 * and end to end, the nvidia-smi the sampler starts - here a script that
 * writes its environment to a file - sees every variable but the key.
 */
#include "check.h"
#include "util/env.h"
#include "gpu_profile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_tmp[256];

static void test_is_secret(void)
{
    CHECK(gp_env_is_secret("GPUFL_API_KEY=abc"));
    CHECK(gp_env_is_secret("GPUFL_API_KEY="));
    CHECK(gp_env_is_secret("GPUFL_API_KEY"));
    CHECK(!gp_env_is_secret("GPUFL_API_KEYS=abc"));
    CHECK(!gp_env_is_secret("GPUFL_API_PATH=/api"));
    CHECK(!gp_env_is_secret("XGPUFL_API_KEY=abc"));
    CHECK(!gp_env_is_secret(NULL));
}

/* A forked child scrubs, then runs env(1) into a file. */
static void test_child_scrub(void)
{
    char out[400];
    snprintf(out, sizeof out, "%s/env.txt", g_tmp);
    setenv("GPUFL_API_KEY", "gpfl_CHILD_SECRET", 1);
    setenv("GP_TEST_KEEP", "kept", 1);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(100);
        gp_child_env_scrub();
        execl("/usr/bin/env", "env", (char *)NULL);
        _exit(101);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *text = check_read_file(out, NULL);
    CHECK(text != NULL);
    CHECK(text && !strstr(text, "GPUFL_API_KEY"));
    CHECK(text && !strstr(text, "gpfl_CHILD_SECRET"));
    CHECK(text && strstr(text, "GP_TEST_KEEP=kept\n"));
    free(text);
    /* The parent's own environment is untouched. */
    CHECK_STR(getenv("GPUFL_API_KEY"), "gpfl_CHILD_SECRET");
    unsetenv("GPUFL_API_KEY");
}

/* The smi backend's child: an nvidia-smi that only writes its environment
 * (and fails, so the monitor is not made). */
static void test_smi_child(void)
{
    char script[400], dump[400];
    snprintf(script, sizeof script, "%s/nvidia-smi", g_tmp);
    snprintf(dump, sizeof dump, "%s/smi_env.txt", g_tmp);
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "#!/bin/sh\nenv > '%s'\nexit 9\n", dump);
    fclose(f);
    CHECK_INT(chmod(script, 0755), 0);
    setenv("GPUFL_API_KEY", "gpfl_SMI_SECRET", 1);
    setenv("GP_TEST_KEEP", "kept", 1);
    gp_options o;
    gp_options_init(&o);
    o.backend = GP_BACKEND_SMI;
    o.smi_path = script;
    gp_monitor *m = NULL;
    gp_error err;
    CHECK(gp_monitor_create(&o, &m, &err) != GP_OK);
    gp_monitor_destroy(m);
    char *text = check_read_file(dump, NULL);
    CHECK(text != NULL); /* it ran */
    CHECK(text && !strstr(text, "GPUFL_API_KEY"));
    CHECK(text && !strstr(text, "gpfl_SMI_SECRET"));
    CHECK(text && strstr(text, "GP_TEST_KEEP=kept\n"));
    free(text);
    CHECK_STR(getenv("GPUFL_API_KEY"), "gpfl_SMI_SECRET");
    unsetenv("GPUFL_API_KEY");
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_env_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_is_secret();
    test_child_scrub();
    test_smi_child();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", g_tmp);
    return check_done("test_env");
}
