/*
 * fuzz_smi_rows.c - fuzz target of the nvidia-smi row parsers
 * (src/sampler/backends/smi_parse.c): every line of the input (split at
 * '\n') as a sample row (gp_smi_parse_sample), a device row
 * (gp_smi_parse_device), split into cells (gp_smi_split) whose cells go
 * through each cell parser; the whole input also as `nvidia-smi -L` output
 * and the default table (the MIG parsers).  Each line is copied to a buffer of its exact
 * length (+ NUL), so a sanitizer sees a read past it.
 *
 * Driven by tests/fuzz/driver.c (gcc, CTest) or libFuzzer (GP_LIBFUZZER);
 * docs/test-doubles.md, "Fuzzing".
 */
#include "sampler/backends/smi_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t one_line(const char *p, size_t len)
{
    uint64_t sum = 0;
    char *line = malloc(len + 1);
    if (!line)
        return 0;
    memcpy(line, p, len);
    line[len] = '\0';
    unsigned idx = 0;
    gp_device_sample s;
    memset(&s, 0, sizeof s);
    if (gp_smi_parse_sample(line, &idx, &s) == GP_OK)
        sum += idx + s.valid;
    memcpy(line, p, len);
    line[len] = '\0';
    gp_device_info d;
    memset(&d, 0, sizeof d);
    char driver[64];
    if (gp_smi_parse_device(line, &d, driver, sizeof driver) == GP_OK)
        sum += strlen(d.name) + strlen(driver);
    char *cells[16];
    size_t n = gp_smi_split(line, cells, 16);
    for (size_t i = 0; i < n && i < 16; i++) {
        uint64_t u = 0;
        int64_t v = 0;
        sum += gp_smi_cell_is_missing(cells[i]);
        sum += gp_smi_parse_uint(cells[i], i & 1 ? "MiB" : NULL, UINT32_MAX, &u) + u;
        sum += gp_smi_parse_int(cells[i], i & 2 ? "C" : NULL, -1000, 1000, &v) + (uint64_t)v;
        sum += gp_smi_parse_milli(cells[i], i & 4 ? "W" : NULL, UINT64_MAX / 2, &u) + u;
        sum += gp_smi_parse_hex(cells[i], &u) + u;
    }
    free(line);
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    uint64_t sum = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        sum += one_line(p, len);
        if (!nl)
            break;
        p = nl + 1;
    }
    /* The whole input as `nvidia-smi -L` output and as the default table
     * (the MIG parsers take text, not lines), copied to its exact length. */
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
        smi_mig_row rows[8];
        size_t n = gp_smi_parse_mig_list(text, rows, 8);
        sum += n + gp_smi_parse_mig_table(text, rows, n < 8 ? n : 8);
        free(text);
    }
    return sum == UINT64_MAX;
}
