/*
 * sampler/backends/smi_parse.h - parsing nvidia-smi's `--format=csv,noheader,nounits` rows.
 *
 * Pure functions, no I/O, so the tests can feed them every spelling
 * nvidia-smi uses.  A cell that says "no value" ([N/A], [Not Supported],
 * [Insufficient Permissions], any other [...], N/A, empty) leaves its metric
 * invalid; a cell that is neither a number nor such a spelling makes the whole
 * line malformed (GP_ERR_PARSE), so a half-understood row never becomes a
 * sample.
 */
#ifndef GP_SMI_PARSE_H
#define GP_SMI_PARSE_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The streaming query, in the column order gp_smi_parse_sample() expects. */
#define SMI_SAMPLE_FIELDS                                                                          \
    "index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,"                \
    "temperature.gpu,clocks.current.sm,clocks.current.memory,clocks_event_reasons.active"
#define SMI_SAMPLE_NFIELDS 10

/* The one-shot discovery query, in the column order gp_smi_parse_device() expects. */
#define SMI_DEVICE_FIELDS "index,name,uuid,memory.total,driver_version"

typedef enum smi_cell {
    SMI_CELL_VALUE = 0,   /* a number: *out is set */
    SMI_CELL_MISSING = 1, /* a "no value" spelling: the metric is invalid */
    SMI_CELL_BAD = 2      /* garbage: the line is malformed */
} smi_cell;

/* True for the spellings nvidia-smi prints instead of a value. */
bool gp_smi_cell_is_missing(const char *cell);

/* A decimal integer in [0, max], optionally followed by " <unit>" (unit may
 * be NULL). */
smi_cell gp_smi_parse_uint(const char *cell, const char *unit, uint64_t max, uint64_t *out);
/* A decimal integer in [min, max] with an optional sign. */
smi_cell gp_smi_parse_int(const char *cell, const char *unit, int64_t min, int64_t max,
                          int64_t *out);
/* A decimal number with up to 3 fraction digits kept exactly ("631.95" ->
 * 631950), further digits rounded half up; result in [0, max]. */
smi_cell gp_smi_parse_milli(const char *cell, const char *unit, uint64_t max, uint64_t *out);
/* A hexadecimal mask, "0x" prefix optional, at most 16 digits. */
smi_cell gp_smi_parse_hex(const char *cell, uint64_t *out);

/* Splits line in place at ',' and trims blanks (and a trailing '\r') from
 * every cell.  Returns the number of cells, which may exceed max (then only
 * the first max are stored). */
size_t gp_smi_split(char *line, char **cells, size_t max);

/* One row of SMI_SAMPLE_FIELDS, modified in place.  GP_OK with *index and
 * *out (valid bits for the cells that had values; energy and PCIe are never
 * valid: nvidia-smi has no energy counter and we do not ask for PCIe), or
 * GP_ERR_PARSE for a malformed line. */
gp_status gp_smi_parse_sample(char *line, unsigned *index, gp_device_sample *out);

/* One row of SMI_DEVICE_FIELDS.  The name may contain commas (it is every
 * cell between the index and the last three).  GP_OK or GP_ERR_PARSE. */
gp_status gp_smi_parse_device(const char *line, gp_device_info *out, char *driver,
                              size_t driver_len);

/*
 * MIG instances, which --query-gpu does not list: `nvidia-smi -L` names
 * them under their GPU ("  MIG 1g.10gb     Device  2: (UUID: MIG-...)")
 * and the default table's "MIG devices:" section gives their GPU / compute
 * instance ids and memory ("|  0    9   0   2  |  9MiB /  9984MiB  | ...").
 */
typedef struct smi_mig_row {
    unsigned gpu;     /* nvidia-smi's index of the parent GPU */
    unsigned mig_dev; /* the instance's MIG device index under it */
    char profile[GP_MIG_PROFILE_MAX];
    char uuid[GP_NAME_MAX];
    int32_t gi, ci; /* -1 until the table names them */
    bool have_mem;
    uint64_t mem_total_bytes;
} smi_mig_row;

/* The MIG rows of `nvidia-smi -L` output, in order, at most cap (the count
 * found is returned, which may exceed cap).  Lines that are neither a GPU
 * nor a MIG line are skipped. */
size_t gp_smi_parse_mig_list(const char *text, smi_mig_row *rows, size_t cap);
/* Fills gi, ci and the memory of rows[0..n) from the default table's "MIG
 * devices:" section (matched by GPU and MIG device index).  Returns how many
 * rows it filled. */
size_t gp_smi_parse_mig_table(const char *text, smi_mig_row *rows, size_t n);

#endif /* GP_SMI_PARSE_H */
