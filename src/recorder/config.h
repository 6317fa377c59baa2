/*
 * recorder/config.h - the flight recorder's options, resolved (config.c):
 * defaults, config_file (JSON, jansson: config_file.c), GPUFL_* environment
 * (config_env.c), code, their precedence and validation -> fl_config.
 */
#ifndef GP_RECORDER_CONFIG_H
#define GP_RECORDER_CONFIG_H

#include "config_types.h"
#include "gpufl.h"

/*
 * Resolves opts (NULL = defaults) into out.  Order of the checks:
 *  1. GPUFL_DISABLED (1/true/yes/on, any case: disabled; 0/false/no/off or
 *     empty: not; anything else: GPUFL_ERR_ENV naming the variable and the
 *     accepted values) - before any file is read;
 *  2. opts->enabled == false -> GPUFL_DISABLED, nothing read;
 *  3. config file (code's config_file, else GPUFL_CONFIG_FILE): applied over
 *     the defaults; its "enabled": false -> GPUFL_DISABLED (if code left
 *     enabled at its default);
 *  4. environment over config, code over environment, field by field;
 *  5. validation (rates >= 0, enum ranges, app_name usable in a path).
 * Returns GPUFL_OK, GPUFL_DISABLED (out is then empty but safe to free) or
 * an error with a message naming the input and the fix.
 */
gpufl_status fl_config_resolve(const gpufl_init_options *opts, fl_config *out, gpufl_error *err);
void fl_config_free(fl_config *c); /* NULL-safe, idempotent */

#endif /* GP_RECORDER_CONFIG_H */
