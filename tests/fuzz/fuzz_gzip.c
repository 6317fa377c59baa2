/*
 * fuzz_gzip.c - fuzz target of the reader's gzipped windows
 * (src/reader/files.c over zlib): the input is written as the bytes of a
 * session's device.1.log.gz (a broken, truncated or concatenated stream, a
 * bomb) and read with fl_read_session, small caps on lines and bytes so
 * that a bomb costs little; then gzipped itself (valid gzip of arbitrary
 * text) as scope.1.log.gz and read again.  The session lives in a
 * temporary directory made at the first input.
 *
 * Driven by tests/fuzz/driver.c (gcc, CTest) or libFuzzer (GP_LIBFUZZER);
 * docs/test-doubles.md, "Fuzzing".
 */
#include "fuzz_session.h"

#include <zlib.h>

static void read_it(const char *dir, uint64_t *sum)
{
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.max_file_lines = 1u << 16;
    o.max_file_bytes = 8u << 20;
    fuzz_read_session(dir, &o, sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = fuzz_dir("gzip");
    if (!dir)
        return 0;
    uint64_t sum = 0;
    fuzz_clear(dir);
    fuzz_put(dir, "device.1.log.gz", data, size);
    read_it(dir, &sum);

    fuzz_clear(dir);
    char path[600];
    snprintf(path, sizeof path, "%s/scope.1.log.gz", dir);
    gzFile z = gzopen(path, "wb1");
    if (z) {
        if (size)
            gzwrite(z, data, (unsigned)size);
        gzclose(z);
        read_it(dir, &sum);
    }
    return sum == UINT64_MAX;
}
