/*
 * test_smi_parse.c - the nvidia-smi row parser on its own: every "no value"
 * spelling leaves exactly its metric invalid, numbers are exact (watts to
 * milliwatts without float rounding), and malformed lines are refused.
 */
#include "check.h"
#include "sampler/backends/smi_parse.h"
#include "gpu_profile.h"

#include <string.h>

#define ALL_SMI_METRICS                                                                            \
    (GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER | GP_M_TEMP |     \
     GP_M_CLOCK_SM | GP_M_CLOCK_MEM | GP_M_THROTTLE)
#define MIB (1024ull * 1024ull)

/* The H100 "load" row as nvidia-smi prints it with nounits. */
static const char *const h100_cells[SMI_SAMPLE_NFIELDS] = {
    "0", "100", "11", "19818", "81559", "631.95", "59", "1980", "2619", "0x0000000000000000"};

static const uint32_t cell_bit[SMI_SAMPLE_NFIELDS] = {
    0,          GP_M_UTIL_GPU, GP_M_UTIL_MEM, GP_M_MEM_USED,  GP_M_MEM_TOTAL,
    GP_M_POWER, GP_M_TEMP,     GP_M_CLOCK_SM, GP_M_CLOCK_MEM, GP_M_THROTTLE};

static void join_row(char *buf, size_t cap, const char *const cells[], size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", cells[i]);
    }
}

static void test_h100_row(void)
{
    char line[512];
    join_row(line, sizeof line, h100_cells, SMI_SAMPLE_NFIELDS);
    unsigned idx = 99;
    gp_device_sample s;
    CHECK_INT(gp_smi_parse_sample(line, &idx, &s), GP_OK);
    CHECK_INT(idx, 0);
    CHECK_U64(s.valid, ALL_SMI_METRICS);
    CHECK_INT(s.util_gpu_pct, 100);
    CHECK_INT(s.util_mem_pct, 11);
    CHECK_U64(s.mem_used_bytes, 19818ull * MIB);
    CHECK_U64(s.mem_total_bytes, 81559ull * MIB);
    CHECK_INT(s.power_mw, 631950);
    CHECK_INT(s.temp_c, 59);
    CHECK_INT(s.clock_sm_mhz, 1980);
    CHECK_INT(s.clock_mem_mhz, 2619);
    CHECK_U64(s.throttle_reasons, 0);
    CHECK_U64(s.energy_mj, 0);
}

static void test_units_tolerated(void)
{
    /* The same row with units (a caller that forgot nounits still parses). */
    char line[] = "3, 7 %, 2 %, 1474 MiB, 16376 MiB, 84.24 W, 46, 2805 MHz, 11251 MHz, "
                  "0x0000000000000001\r\n";
    unsigned idx;
    gp_device_sample s;
    CHECK_INT(gp_smi_parse_sample(line, &idx, &s), GP_OK);
    CHECK_INT(idx, 3);
    CHECK_U64(s.valid, ALL_SMI_METRICS);
    CHECK_INT(s.util_gpu_pct, 7);
    CHECK_U64(s.mem_used_bytes, 1474ull * MIB);
    CHECK_INT(s.power_mw, 84240);
    CHECK_INT(s.clock_mem_mhz, 11251);
    CHECK_U64(s.throttle_reasons, GP_THROTTLE_GPU_IDLE);
}

static void test_every_missing_spelling(void)
{
    static const char *const spellings[] = {"[N/A]",
                                            "N/A",
                                            "[Not Supported]",
                                            "[Insufficient Permissions]",
                                            "[Unknown Error]",
                                            "[Requested functionality has been deprecated]",
                                            "[GPU requires reset]",
                                            "",
                                            "Not Supported"};
    for (size_t sp = 0; sp < sizeof spellings / sizeof spellings[0]; sp++) {
        CHECK(gp_smi_cell_is_missing(spellings[sp]));
        for (size_t f = 1; f < SMI_SAMPLE_NFIELDS; f++) {
            const char *cells[SMI_SAMPLE_NFIELDS];
            memcpy(cells, h100_cells, sizeof cells);
            cells[f] = spellings[sp];
            char line[512];
            join_row(line, sizeof line, cells, SMI_SAMPLE_NFIELDS);
            unsigned idx;
            gp_device_sample s;
            gp_status st = gp_smi_parse_sample(line, &idx, &s);
            CHECK_INT(st, GP_OK);
            if (st != GP_OK) {
                fprintf(stderr, "  spelling \"%s\" in cell %zu\n", spellings[sp], f);
                continue;
            }
            /* Exactly that metric is invalid, never read as 0. */
            CHECK_U64(s.valid, ALL_SMI_METRICS & ~cell_bit[f]);
        }
    }
    CHECK(!gp_smi_cell_is_missing("0"));
    CHECK(!gp_smi_cell_is_missing("[N/A"));
}

static void test_mig_row(void)
{
    char line[] = "0, [N/A], [N/A], 11125, 81559, 433.78, 53, 1980, 2619, 0x0000000000000000";
    unsigned idx;
    gp_device_sample s;
    CHECK_INT(gp_smi_parse_sample(line, &idx, &s), GP_OK);
    CHECK_U64(s.valid & (GP_M_UTIL_GPU | GP_M_UTIL_MEM), 0);
    CHECK_U64(s.valid, ALL_SMI_METRICS & ~(GP_M_UTIL_GPU | GP_M_UTIL_MEM));
    CHECK_U64(s.mem_used_bytes, 11125ull * MIB);
    CHECK_INT(s.power_mw, 433780);
}

static void test_malformed_lines(void)
{
    static const char *const bad[] = {
        "",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        "0, 100, 11, 19818, 81559, 631.95, 59, 1980, 2619",                        /* 9 */
        "0, 100, 11, 19818, 81559, 631.95, 59, 1980, 2619, 0x0, 1",                /* 11 */
        "0, 12x.5, 11, 19818, 81559, 631.95, 59, 1980, 2619, 0x0",                 /* number */
        "x, 100, 11, 19818, 81559, 631.95, 59, 1980, 2619, 0x0",                   /* index */
        "[N/A], 100, 11, 19818, 81559, 631.95, 59, 1980, 2619, 0x0",               /* no index */
        "0, 101, 11, 19818, 81559, 631.95, 59, 1980, 2619, 0x0",                   /* > 100 % */
        "0, -1, 11, 19818, 81559, 631.95, 59, 1980, 2619, 0x0",                    /* negative */
        "0, 100, 11, 19818 GiB, 81559, 631.95, 59, 1980, 2619, 0x0",               /* unit */
        "0, 100, 11, 19818, 81559, 631.95.1, 59, 1980, 2619, 0x0",                 /* power */
        "0, 100, 11, 19818, 81559, 631.95, 59, 1980, 2619, 0xZZ",                  /* mask */
        "0, 100, 11, 99999999999999999999999, 81559, 631.95, 59, 1980, 2619, 0x0", /* overflow */
        "0, 100, 11, 19818, 81559, 631.95, 59, 1980, 2619, 0x00000000000000001",   /* 17 digits */
        "0, 100, 11, 19818, 81559, 631.95, 59, 1980, 99999999999, 0x0",            /* > 32 bit */
        "#!%& fake nvidia-smi garbage, not a row",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, "%s", bad[i]);
        unsigned idx;
        gp_device_sample s;
        gp_status st = gp_smi_parse_sample(line, &idx, &s);
        CHECK_INT(st, GP_ERR_PARSE);
        if (st != GP_ERR_PARSE)
            fprintf(stderr, "  accepted: \"%s\"\n", bad[i]);
    }
}

static void test_numbers(void)
{
    static const struct {
        const char *text;
        smi_cell kind;
        uint64_t milli;
    } milli[] = {
        {"631.95", SMI_CELL_VALUE, 631950},
        {"69.85", SMI_CELL_VALUE, 69850},
        {"0.001", SMI_CELL_VALUE, 1},
        {"700", SMI_CELL_VALUE, 700000},
        {"700.00 W", SMI_CELL_VALUE, 700000},
        {".5", SMI_CELL_VALUE, 500},
        {"5.", SMI_CELL_VALUE, 5000},
        {"1.2345", SMI_CELL_VALUE, 1235},
        {"1.23449", SMI_CELL_VALUE, 1234},
        {"0.0004", SMI_CELL_VALUE, 0},
        {"[N/A]", SMI_CELL_MISSING, 0},
        {"", SMI_CELL_MISSING, 0},
        {"-1", SMI_CELL_BAD, 0},
        {"abc", SMI_CELL_BAD, 0},
        {".", SMI_CELL_BAD, 0},
        {"1e3", SMI_CELL_BAD, 0},
        {"4294967.295", SMI_CELL_VALUE, 4294967295ull},
        {"4294967.296", SMI_CELL_BAD, 0},
    };
    for (size_t i = 0; i < sizeof milli / sizeof milli[0]; i++) {
        uint64_t v = 0;
        smi_cell k = gp_smi_parse_milli(milli[i].text, "W", UINT32_MAX, &v);
        CHECK_INT(k, milli[i].kind);
        if (k == SMI_CELL_VALUE)
            CHECK_U64(v, milli[i].milli);
        if (k != milli[i].kind)
            fprintf(stderr, "  milli \"%s\"\n", milli[i].text);
    }

    uint64_t u;
    CHECK_INT(gp_smi_parse_uint("100 %", "%", 100, &u), SMI_CELL_VALUE);
    CHECK_U64(u, 100);
    CHECK_INT(gp_smi_parse_uint("100%", "%", 100, &u), SMI_CELL_VALUE);
    CHECK_INT(gp_smi_parse_uint("18446744073709551615", NULL, UINT64_MAX, &u), SMI_CELL_VALUE);
    CHECK_U64(u, UINT64_MAX);
    CHECK_INT(gp_smi_parse_uint("18446744073709551616", NULL, UINT64_MAX, &u), SMI_CELL_BAD);
    CHECK_INT(gp_smi_parse_uint("1 2", NULL, 100, &u), SMI_CELL_BAD);

    int64_t t;
    CHECK_INT(gp_smi_parse_int("-5", NULL, -273, 1000, &t), SMI_CELL_VALUE);
    CHECK_INT(t, -5);
    CHECK_INT(gp_smi_parse_int("-274", NULL, -273, 1000, &t), SMI_CELL_BAD);
    CHECK_INT(gp_smi_parse_int("-", NULL, -273, 1000, &t), SMI_CELL_BAD);

    CHECK_INT(gp_smi_parse_hex("0x0000000000000001", &u), SMI_CELL_VALUE);
    CHECK_U64(u, 1);
    CHECK_INT(gp_smi_parse_hex("0x00000000000001FF", &u), SMI_CELL_VALUE);
    CHECK_U64(u, 0x1ff);
    CHECK_INT(gp_smi_parse_hex("FFFFFFFFFFFFFFFF", &u), SMI_CELL_VALUE);
    CHECK_U64(u, UINT64_MAX);
    CHECK_INT(gp_smi_parse_hex("0x", &u), SMI_CELL_BAD);
    CHECK_INT(gp_smi_parse_hex("[Not Supported]", &u), SMI_CELL_MISSING);
}

static void test_split(void)
{
    char line[] = " a , b,,c \r";
    char *cells[8];
    CHECK_INT(gp_smi_split(line, cells, 8), 4);
    CHECK_STR(cells[0], "a");
    CHECK_STR(cells[1], "b");
    CHECK_STR(cells[2], "");
    CHECK_STR(cells[3], "c");
    char many[] = "1,2,3";
    CHECK_INT(gp_smi_split(many, cells, 2), 3);
}

static void test_device_rows(void)
{
    gp_device_info d;
    char drv[64];
    CHECK_INT(
        gp_smi_parse_device("0, NVIDIA H100 80GB HBM3, GPU-00000000-0000-0000-0000-000000000000, "
                            "81559, 590.48.01",
                            &d, drv, sizeof drv),
        GP_OK);
    CHECK_INT(d.index, 0);
    CHECK_STR(d.name, "NVIDIA H100 80GB HBM3");
    CHECK_STR(d.uuid, "GPU-00000000-0000-0000-0000-000000000000");
    CHECK_U64(d.valid, GP_M_MEM_TOTAL);
    CHECK_U64(d.mem_total_bytes, 81559ull * MIB);
    CHECK_STR(drv, "590.48.01");

    /* A name with commas keeps them. */
    CHECK_INT(gp_smi_parse_device("2, Vendor, Model X, GPU-1, [N/A], 1.0\n", &d, drv, sizeof drv),
              GP_OK);
    CHECK_INT(d.index, 2);
    CHECK_STR(d.name, "Vendor, Model X");
    CHECK_U64(d.valid, 0);
    CHECK_STR(drv, "1.0");

    CHECK_INT(gp_smi_parse_device("x, name, uuid, 1, 1.0", &d, drv, sizeof drv), GP_ERR_PARSE);
    CHECK_INT(gp_smi_parse_device("0, name, uuid, lots, 1.0", &d, drv, sizeof drv), GP_ERR_PARSE);
    CHECK_INT(gp_smi_parse_device("0, uuid, 1, 1.0", &d, drv, sizeof drv), GP_ERR_PARSE);
    CHECK_INT(gp_smi_parse_device("No devices were found", &d, drv, sizeof drv), GP_ERR_PARSE);
}

/* `nvidia-smi -L` and the default table of the MIG capture
 * (tests/fixtures/nvidia-smi/linux-x86_64__nvidia-h100-mig__590.48.01.txt). */
static const char *const mig_list =
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
    "  MIG 3g.40gb     Device  0: (UUID: MIG-00000000-0000-0000-0000-000000000000)\n"
    "  MIG 2g.20gb     Device  1: (UUID: MIG-00000001-0000-0000-0000-000000000001)\n"
    "  MIG 1g.10gb     Device  2: (UUID: MIG-00000002-0000-0000-0000-000000000002)\n"
    "  MIG 1g.10gb     Device  3: (UUID: MIG-00000003-0000-0000-0000-000000000003)\n"
    "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-11111111-0000-0000-0000-000000000000)\n"
    "  MIG 7g.80gb     Device  0: (UUID: MIG-77777777-0000-0000-0000-000000000000)\n"
    "  MIG broken line without a device\n";

static const char *const mig_table =
    "+-----------------------------------------------------------------------------------------+\n"
    "| MIG devices:                                                                            |\n"
    "+------------------+----------------------------------+-----------+-----------------------+\n"
    "| GPU  GI  CI  MIG |              Shared Memory-Usage |        Vol|        Shared         |\n"
    "|      ID  ID  Dev |                Shared BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |\n"
    "|                  |                                  |        ECC|                       |\n"
    "|==================+==================================+===========+=======================|\n"
    "|  0    2   0   0  |           11091MiB / 40448MiB    | 60      0 |  3   0    3    0    3 |\n"
    "|                  |               0MiB / 24739MiB    |           |                       |\n"
    "+------------------+----------------------------------+-----------+-----------------------+\n"
    "|  0    3   0   1  |              17MiB / 20096MiB    | 32      0 |  2   0    2    0    2 |\n"
    "|  0    9   0   2  |               9MiB /  9984MiB    | 16      0 |  1   0    1    0    1 |\n"
    "|  0   10   0   3  |               9MiB /  9984MiB    | 16      0 |  1   0    1    0    1 |\n"
    "+------------------+----------------------------------+-----------+-----------------------+\n"
    "| Processes:                                                                              |\n"
    "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n"
    "|    0    2    0            21180      C   /root/tools/memhog                     2296MiB |\n";

static void test_mig_list_and_table(void)
{
    smi_mig_row rows[8];
    size_t n = gp_smi_parse_mig_list(mig_list, rows, 8);
    CHECK_INT(n, 5);
    static const struct {
        unsigned gpu, dev;
        const char *profile, *uuid;
        int gi;
        uint64_t mem_mib;
    } want[5] = {
        {0, 0, "3g.40gb", "MIG-00000000-0000-0000-0000-000000000000", 2, 40448},
        {0, 1, "2g.20gb", "MIG-00000001-0000-0000-0000-000000000001", 3, 20096},
        {0, 2, "1g.10gb", "MIG-00000002-0000-0000-0000-000000000002", 9, 9984},
        {0, 3, "1g.10gb", "MIG-00000003-0000-0000-0000-000000000003", 10, 9984},
        {1, 0, "7g.80gb", "MIG-77777777-0000-0000-0000-000000000000", -1, 0},
    };
    for (size_t i = 0; i < 5 && i < n; i++) {
        CHECK_INT(rows[i].gpu, want[i].gpu);
        CHECK_INT(rows[i].mig_dev, want[i].dev);
        CHECK_STR(rows[i].profile, want[i].profile);
        CHECK_STR(rows[i].uuid, want[i].uuid);
        CHECK_INT(rows[i].gi, -1);
        CHECK_INT(rows[i].ci, -1);
        CHECK(!rows[i].have_mem);
    }
    /* The table fills the H100's four; GPU 1's instance is not in it. */
    CHECK_INT(gp_smi_parse_mig_table(mig_table, rows, n), 4);
    for (size_t i = 0; i < 5 && i < n; i++) {
        CHECK_INT(rows[i].gi, want[i].gi);
        CHECK_INT(rows[i].ci, want[i].gi >= 0 ? 0 : -1);
        CHECK(rows[i].have_mem == (want[i].mem_mib != 0));
        CHECK_U64(rows[i].mem_total_bytes, want[i].mem_mib * 1048576ull);
    }
    /* Only the count past cap; no instance before a GPU line (the H100's
     * are skipped without theirs, the A100's is kept). */
    CHECK_INT(gp_smi_parse_mig_list(mig_list, rows, 2), 5);
    CHECK_INT(gp_smi_parse_mig_list(strchr(mig_list, '\n') + 1, rows, 8), 1);
    CHECK_STR(rows[0].profile, "7g.80gb");
    CHECK_INT(gp_smi_parse_mig_list("", rows, 8), 0);
    /* A table without the MIG section fills nothing. */
    CHECK_INT(gp_smi_parse_mig_table(strstr(mig_table, "| Processes:"), rows, n), 0);
}

int main(void)
{
    test_h100_row();
    test_units_tolerated();
    test_every_missing_spelling();
    test_mig_row();
    test_malformed_lines();
    test_numbers();
    test_split();
    test_device_rows();
    test_mig_list_and_table();
    return check_done("test_smi_parse");
}
