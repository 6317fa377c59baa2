/*
 * util/env.c - the environment our children get (env.h): every variable
 * but our secrets, removed in the child itself so that no allocation or
 * lock is needed between fork and exec.
 */
#include "env.h"

#include <string.h>

extern char **environ;

/* The variables a child must never see (docs/gpufl.md, api_key). */
static const char *const secrets[] = {GP_API_KEY_ENV};

bool gp_env_is_secret(const char *entry)
{
    if (!entry)
        return false;
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
        size_t n = strlen(secrets[i]);
        if (strncmp(entry, secrets[i], n) == 0 && (entry[n] == '=' || entry[n] == '\0'))
            return true;
    }
    return false;
}

void gp_child_env_scrub(void)
{
    char **env = environ;
    if (!env)
        return;
    size_t w = 0;
    for (size_t r = 0; env[r]; r++)
        if (!gp_env_is_secret(env[r]))
            env[w++] = env[r];
    env[w] = NULL;
}
