/*
 * fuzz_config.c - fuzz target of the recorder's option parsers
 * (src/recorder/config_file.c, config_env.c): the input is a config file's
 * text, parsed and checked key by key (fl_config_file_apply_text, the
 * path after the file is read); and its first line, cut at the first
 * '\n', is the value of one GPUFL_* variable (chosen by the input's first
 * byte) for the environment layer and the kill switch.
 *
 * Driven by tests/fuzz/driver.c (gcc, CTest) or libFuzzer (GP_LIBFUZZER);
 * docs/test-doubles.md, "Fuzzing".
 */
#include "recorder/config_env.h"
#include "recorder/config_file.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FL_CONFIG_FILE_MAX)
        return 0;
    fl_config_file f;
    memset(&f, 0, sizeof f);
    f.path = "fuzz.json";
    f.hide_quotes = size && (data[0] & 1);
    f.text = malloc(size + 1);
    if (!f.text)
        return 0;
    if (size)
        memcpy(f.text, data, size);
    f.text[size] = '\0';
    f.len = size;
    fl_fval v[FL_NFIELDS];
    memset(v, 0, sizeof v);
    gpufl_error err;
    gpufl_status st = fl_config_file_apply_text(&f, v, &err);
    size_t sum = st == GPUFL_OK ? 0 : strlen(err.message);
    for (int i = 0; i < FL_NFIELDS; i++)
        sum += v[i].s ? strlen(v[i].s) : (size_t)v[i].i;
    const char *key = fl_config_file_api_key(&f);
    sum += key ? strlen(key) : 0;
    fl_config_file_free(&f);

    /* One variable of the environment layer. */
    if (size) {
        const fl_field *fd = &fl_config_fields[data[0] % FL_NFIELDS];
        const char *name = fd->env ? fd->env : "GPUFL_DISABLED";
        size_t n = 0;
        while (n + 1 < size && n < 512 && data[1 + n] != '\n' && data[1 + n] != '\0')
            n++;
        char val[520];
        memcpy(val, data + 1, n);
        val[n] = '\0';
        setenv(name, val, 1);
        memset(v, 0, sizeof v);
        if (fl_config_env_layer(v, &err) != GPUFL_OK)
            sum += strlen(err.message);
        if (fl_config_env_kill_switch(&err) != GPUFL_OK)
            sum += strlen(err.message);
        unsetenv(name);
    }
    return sum == (size_t)-1;
}
