/*
 * util/env.h - the environment our child processes get (env.c): the
 * library's one place that knows which variables are secrets of ours and
 * keeps them from every program we start (nvidia-smi today).
 */
#ifndef GP_UTIL_ENV_H
#define GP_UTIL_ENV_H

#include <stdbool.h>
#include <stddef.h>

/* The variable that holds the API key (the recorder's api_key option). */
#define GP_API_KEY_ENV "GPUFL_API_KEY"

/* Whether the environment entry "NAME=value" (or a bare name) is a secret
 * of ours that no child may inherit: GPUFL_API_KEY. */
bool gp_env_is_secret(const char *entry);

/* In a child of fork(), before exec: removes our secrets from environ, in
 * place.  Async-signal-safe (no allocation, no lock), so a child forked by
 * a threaded program may call it; the parent's environment is untouched
 * (the child has its own copy).  exec*() without an explicit environment
 * then passes the rest on unchanged. */
void gp_child_env_scrub(void);

#endif /* GP_UTIL_ENV_H */
