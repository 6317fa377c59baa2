/*
 * test_cupti_disasm.c - the sass channel's disassembly (plugin/common/disasm.c,
 * fl_cubin_symbol and fl_cubin_bytes of common/cubins.c):
 *
 *  - the parser over a real nvdisasm capture (CUDA 11.8, -c -fun, the
 *    test kernel: tests/plugin/data/pcsamp_kernel.sass), exact entries;
 *    several functions, directives and line markers in between;
 *  - symbol indices from the checked-in cubins (CUDA 13 and 11.8 builds),
 *    unknown names and broken ELF refused;
 *  - a run through the fake nvdisasm (tests/fakes/fake_nvdisasm.sh): its
 *    arguments (-c -fun <index> <a temporary copy of the cubin>, removed
 *    afterwards), no secret in its environment, one record per sampled
 *    function to the sink with the function's id and the cubin's CRC;
 *  - its failures, each counted with its reason and the fix: exit status,
 *    a signal, the time limit (a grandchild holding the pipe open), output
 *    without end, a tool that cannot be started; no run after four;
 *  - the real nvdisasm on the CUDA 11.8 cubin where one is found
 *    ($GP_TEST_NVDISASM, or nvdisasm in /usr/local/cuda/bin or PATH).
 */
#include "check.h"
#include "engines/pcsamp/pcsamp.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        *n = 0;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *b = malloc((size_t)len + 1);
    *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    if (b)
        b[*n] = '\0';
    fclose(f);
    return b;
}

static char g_src[1024];

static const char *data(const char *name)
{
    static char path[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/plugin/data/%s", g_src, name);
    return path[k];
}

/* ------------------------------------------------------------- parser */

typedef struct seen {
    int functions;
    char name[4][64];
    size_t n[4];
    uint32_t pc0[4], pc6[4], last_pc[4];
    char ins0[4][64], ins6[4][64], last[4][64];
} seen;

static void on_fn(void *user, const char *name, const fl_sass_entry *e, size_t n)
{
    seen *s = user;
    int k = s->functions++;
    if (k >= 4)
        return;
    snprintf(s->name[k], sizeof s->name[k], "%s", name);
    s->n[k] = n;
    s->pc0[k] = e[0].pc_offset;
    snprintf(s->ins0[k], sizeof s->ins0[k], "%s", e[0].sass);
    if (n > 6) {
        s->pc6[k] = e[6].pc_offset;
        snprintf(s->ins6[k], sizeof s->ins6[k], "%s", e[6].sass);
    }
    s->last_pc[k] = e[n - 1].pc_offset;
    snprintf(s->last[k], sizeof s->last[k], "%s", e[n - 1].sass);
}

static void test_parse_capture(void)
{
    size_t n;
    char *t = read_file(data("pcsamp_kernel.sass"), &n);
    CHECK(t != NULL);
    if (!t)
        return;
    seen s = {0};
    CHECK_INT(fl_disasm_parse(t, n, on_fn, &s), 1);
    CHECK_STR(s.name[0], "_Z5chasePKjPji");
    CHECK_INT(s.n[0], 112); /* 0x0000 .. 0x06f0, every 16 bytes */
    CHECK_INT(s.pc0[0], 0);
    CHECK_STR(s.ins0[0], "LDC R1, c[0x0][0x28]");
    CHECK_INT(s.pc6[0], 0x60);
    CHECK_STR(s.ins6[0], "@!P0 BRA `(.L_x_0)");
    CHECK_INT(s.last_pc[0], 0x6f0);
    CHECK_STR(s.last[0], "NOP");
    free(t);
}

static void test_parse_shapes(void)
{
    /* Two functions, a data section's directives, -g's line markers,
     * labels, a line without an end; CRLF endings. */
    char t[] = "\t.headerflags\t@\"EF_CUDA_SM90\"\n"
               "\t.section\t.nv.constant0._Z1av,\"a\",@progbits\n"
               "        /*0000*/ \t.byte\t0x00, 0x01\n"
               "\t.section\t.text._Z1av,\"ax\",@progbits\n"
               "_Z1av:\n"
               "\t//## File \"/tmp/a.cu\", line 3\n"
               "        /*0000*/                   MOV R1, c[0x0][0x28] ;\r\n"
               ".L_x_0:\n"
               "        /*0010*/                   EXIT ;\n"
               "\t.section\t.text._Z1bPi,\"ax\",@progbits\n"
               "        /*0000*/                   BRA `(.L_x_1)";
    seen s = {0};
    CHECK_INT(fl_disasm_parse(t, strlen(t), on_fn, &s), 2);
    CHECK_STR(s.name[0], "_Z1av");
    CHECK_INT(s.n[0], 2);
    CHECK_STR(s.ins0[0], "MOV R1, c[0x0][0x28]");
    CHECK_INT(s.last_pc[0], 0x10);
    CHECK_STR(s.last[0], "EXIT");
    CHECK_STR(s.name[1], "_Z1bPi");
    CHECK_INT(s.n[1], 1);
    CHECK_STR(s.ins0[1], "BRA `(.L_x_1)");
    /* Nothing that looks like code: no function. */
    char none[] = "nvdisasm fatal   : something\n/*zz*/ X ;\n";
    seen z = {0};
    CHECK_INT(fl_disasm_parse(none, strlen(none), on_fn, &z), 0);
    char empty[] = "";
    CHECK_INT(fl_disasm_parse(empty, 0, on_fn, &z), 0);
}

/* ------------------------------------------------------------- symbols */

static void test_symbols(void)
{
    size_t n13, n118;
    char *c13 = read_file(data("pcsamp_lines.cubin"), &n13);
    char *c118 = read_file(data("pcsamp_cuda118.cubin"), &n118);
    uint32_t idx = 0;
    CHECK(fl_cubin_symbol(c13, n13, "_Z5chasePKjPji", &idx));
    CHECK_INT(idx, 11);
    CHECK(fl_cubin_symbol(c118, n118, "_Z5chasePKjPji", &idx));
    CHECK_INT(idx, 6);
    CHECK(!fl_cubin_symbol(c13, n13, "_Z5chasePKjP", &idx));    /* a prefix */
    CHECK(!fl_cubin_symbol(c13, n13, "_Z5chasePKjPjiX", &idx)); /* longer */
    CHECK(!fl_cubin_symbol(c13, n13, ".text._Z5chasePKjPji", &idx));
    CHECK(!fl_cubin_symbol(c13, 100, "_Z5chasePKjPji", &idx)); /* cut */
    CHECK(!fl_cubin_symbol("not an elf", 10, "_Z5chasePKjPji", &idx));
    CHECK(!fl_cubin_symbol(NULL, 0, "x", &idx));
    /* Every cut of the file: refused or found, never read past it. */
    for (size_t cut = 0; cut < n13; cut += 61) {
        char *p = malloc(cut ? cut : 1);
        memcpy(p, c13, cut);
        (void)fl_cubin_symbol(p, cut, "_Z5chasePKjPji", &idx);
        free(p);
    }
    free(c13);
    free(c118);
}

/* ------------------------------------------------------------ the runs */

typedef struct got {
    int records;
    uint64_t crc;
    uint32_t function_id;
    char name[64];
    size_t n;
    char ins6[64];
} got;

static void on_disassembly(void *user, uint64_t crc, uint32_t function_id, const char *name,
                           const fl_sass_entry *e, size_t n)
{
    got *g = user;
    g->records++;
    g->crc = crc;
    g->function_id = function_id;
    snprintf(g->name, sizeof g->name, "%s", name);
    g->n = n;
    if (n > 6)
        snprintf(g->ins6, sizeof g->ins6, "%s", e[6].sass);
}

static char g_tmp[256];
static char g_log[300];
static uint64_t g_crc;

static uint64_t crc_of(const void *cubin, size_t n)
{
    CUpti_GetCubinCrcParams c;
    memset(&c, 0, sizeof c);
    c.size = CUpti_GetCubinCrcParamsSize;
    c.cubin = cubin;
    c.cubinSize = n;
    return cuptiGetCubinCrc(&c) == CUPTI_SUCCESS ? c.cubinCrc : 0;
}

/* One drain's worth: the test kernel (function id 7) and a function the
 * cubin does not have (8), both sampled for the first time. */
static got run_once(const char *tool, const char *mode, uint32_t run_ms, fl_trace_stats *st)
{
    setenv("FAKE_NVDISASM_MODE", mode, 1);
    fl_disasm_start(tool, run_ms);
    fl_agg_fn fns[2] = {{g_crc, 7, false, strdup("_Z5chasePKjPji")},
                        {g_crc, 8, false, strdup("_Z7missingv")}};
    got g = {0};
    fl_trace_sink sink = {.user = &g, .disassembly = on_disassembly};
    fl_disasm_functions(&sink, fns, 2);
    free(fns[0].name);
    free(fns[1].name);
    memset(st, 0, sizeof *st);
    fl_disasm_stats(st);
    return g;
}

static bool temp_cubins_left(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls %s/gpufl-cubin-* >/dev/null 2>&1", g_tmp);
    return system(cmd) == 0;
}

static void test_runs(const char *fake)
{
    size_t n;
    char *cubin = read_file(data("pcsamp_lines.cubin"), &n);
    fl_cubin_keep(cubin, n);
    g_crc = crc_of(cubin, n);
    CHECK(g_crc != 0);
    size_t kept = 0;
    CHECK(fl_cubin_bytes(g_crc, &kept) != NULL);
    CHECK_INT(kept, n);
    CHECK(fl_cubin_bytes(g_crc + 1, &kept) == NULL);

    setenv("GPUFL_API_KEY", "sekrit-key", 1);
    fl_trace_stats st;
    got g = run_once(fake, "ok", 0, &st);
    CHECK_INT(g.records, 1);
    CHECK_U64(g.crc, g_crc);
    CHECK_INT(g.function_id, 7);
    CHECK_STR(g.name, "_Z5chasePKjPji");
    CHECK_INT(g.n, 112);
    CHECK_STR(g.ins6, "@!P0 BRA `(.L_x_0)");
    CHECK_INT(st.disasm_runs, 1);
    CHECK_INT(st.disasm_failed, 0);
    CHECK_INT(st.disasm_functions, 1);
    CHECK_INT(st.disasm_skipped, 1); /* _Z7missingv: no such symbol */
    CHECK_STR(st.disasm_msg, "");
    size_t ln;
    char *log = read_file(g_log, &ln);
    CHECK(log != NULL);
    if (log) {
        char want[400];
        snprintf(want, sizeof want, "args: -c -fun 11 %s/gpufl-cubin-", g_tmp);
        CHECK_CONTAINS(log, want);
        CHECK_CONTAINS(log, "elf: yes");
        CHECK_CONTAINS(log, "secret: no");
    }
    free(log);
    CHECK(!temp_cubins_left());
    unsetenv("GPUFL_API_KEY");

    /* Failures: each counted with its reason; the temporary file goes. */
    struct {
        const char *mode;
        uint32_t run_ms;
        const char *msg;
    } bad[] = {
        {"fail", 0, "exit status 3: nvdisasm fatal   : Elf file '"},
        {"crash", 0, "killed by signal 11"},
        {"hang", 300, "ran past its time limit and was stopped"},
        {"flood", 0, "wrote more than 64 MiB and was stopped"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        g = run_once(fake, bad[i].mode, bad[i].run_ms, &st);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        CHECK_INT(g.records, 0);
        CHECK_INT(st.disasm_runs, 1);
        CHECK_INT(st.disasm_failed, 1);
        CHECK_INT(st.disasm_functions, 0);
        CHECK_INT(st.disasm_skipped, 2);
        CHECK_CONTAINS(st.disasm_msg, bad[i].msg);
        CHECK_CONTAINS(st.disasm_msg, "set GPUFL_NVDISASM to a working nvdisasm");
        CHECK(!temp_cubins_left());
        if (strcmp(bad[i].mode, "hang") == 0) /* not the grandchild's 30 s */
            CHECK(t1.tv_sec - t0.tv_sec < 10);
    }
    g = run_once("/nonexistent/nvdisasm", "ok", 0, &st);
    CHECK_INT(g.records, 0);
    CHECK_CONTAINS(st.disasm_msg, "/nonexistent/nvdisasm could not be started");

    /* After four failures the disassembler is not run again. */
    fl_disasm_start(fake, 0);
    setenv("FAKE_NVDISASM_MODE", "fail", 1);
    for (int i = 0; i < 6; i++) {
        fl_agg_fn f = {g_crc, 7, false, strdup("_Z5chasePKjPji")};
        fl_disasm_functions(NULL, &f, 1);
        free(f.name);
    }
    memset(&st, 0, sizeof st);
    fl_disasm_stats(&st);
    CHECK_INT(st.disasm_runs, 4);
    CHECK_INT(st.disasm_failed, 4);
    CHECK_INT(st.disasm_skipped, 6);
    /* No disassembler: nothing runs, the functions are skipped. */
    fl_disasm_start(NULL, 0);
    fl_agg_fn f = {g_crc, 7, false, strdup("_Z5chasePKjPji")};
    fl_disasm_functions(NULL, &f, 1);
    free(f.name);
    memset(&st, 0, sizeof st);
    fl_disasm_stats(&st);
    CHECK_INT(st.disasm_runs, 0);
    CHECK_INT(st.disasm_skipped, 1);
    fl_cubin_reset();
    free(cubin);
}

/* The aggregator hands each function over once, with its dictionary id. */
static void test_aggregator_functions(void)
{
    fl_agg_config c = {.disasm = true};
    fl_agg *p = fl_agg_create(&c);
    CUpti_PCSamplingStallReason sr = {.pcSamplingStallReasonIndex = 2, .samples = 3};
    CUpti_PCSamplingPCData pcs[3] = {{.size = sizeof(CUpti_PCSamplingPCData),
                                      .pcOffset = 0x10,
                                      .functionName = "_Z1av",
                                      .cubinCrc = 5,
                                      .stallReasonCount = 1,
                                      .stallReason = &sr},
                                     {.size = sizeof(CUpti_PCSamplingPCData),
                                      .pcOffset = 0x20,
                                      .functionName = "_Z1av",
                                      .cubinCrc = 5,
                                      .stallReasonCount = 1,
                                      .stallReason = &sr},
                                     {.size = sizeof(CUpti_PCSamplingPCData),
                                      .pcOffset = 0x10,
                                      .functionName = "_Z1bv",
                                      .cubinCrc = 6,
                                      .stallReasonCount = 1,
                                      .stallReason = &sr}};
    CUpti_PCSamplingData d = {
        .size = sizeof d, .collectNumPcs = 3, .totalNumPcs = 3, .pPcData = pcs};
    fl_agg_feed(p, NULL, &d, 0, 1);
    fl_agg_fn *f = NULL;
    size_t n = fl_agg_take_functions(p, &f);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(f[0].name, "_Z1av");
        CHECK_U64(f[0].crc, 5);
        CHECK_INT(f[0].function_id, 1);
        CHECK_STR(f[1].name, "_Z1bv");
        CHECK_U64(f[1].crc, 6);
        CHECK_INT(f[1].function_id, 2);
    }
    fl_agg_free_functions(f, n);
    fl_agg_feed(p, NULL, &d, 0, 2); /* the same functions: nothing new */
    CHECK_INT(fl_agg_take_functions(p, &f), 0);
    fl_agg_destroy(p);
    /* Without a disassembler nothing is kept. */
    fl_agg_config off = {.disasm = false};
    p = fl_agg_create(&off);
    fl_agg_feed(p, NULL, &d, 0, 1);
    CHECK_INT(fl_agg_take_functions(p, &f), 0);
    fl_agg_destroy(p);
}

/* The real nvdisasm, where there is one, on the CUDA 11.8 cubin. */
static void test_real_nvdisasm(void)
{
    const char *tool = getenv("GP_TEST_NVDISASM");
    const char *cands[] = {"/usr/local/cuda/bin/nvdisasm", "/usr/bin/nvdisasm"};
    for (size_t i = 0; (!tool || !*tool) && i < 2; i++)
        if (access(cands[i], X_OK) == 0)
            tool = cands[i];
    if (!tool || !*tool) {
        printf("test_real_nvdisasm: skipped: no nvdisasm (set GP_TEST_NVDISASM to one)\n");
        return;
    }
    size_t n;
    char *cubin = read_file(data("pcsamp_cuda118.cubin"), &n);
    uint32_t idx = 0;
    CHECK(fl_cubin_symbol(cubin, n, "_Z5chasePKjPji", &idx));
    fl_disasm_start(tool, 0);
    size_t len = 0;
    char *text = fl_disasm_run(tool, cubin, n, &idx, 1, &len);
    CHECK(text != NULL);
    if (text) {
        seen s = {0};
        CHECK_INT(fl_disasm_parse(text, len, on_fn, &s), 1);
        CHECK_STR(s.name[0], "_Z5chasePKjPji");
        CHECK_INT(s.n[0], 112);
        CHECK_STR(s.ins0[0], "LDC R1, c[0x0][0x28]");
        printf("test_real_nvdisasm: %s: %zu instructions\n", tool, s.n[0]);
    }
    free(text);
    free(cubin);
}

int main(void)
{
    const char *src = getenv("GP_TEST_SOURCE_DIR");
    snprintf(g_src, sizeof g_src, "%s", src ? src : "tests");
    char fake[1200];
    snprintf(fake, sizeof fake, "%s/fakes/fake_nvdisasm.sh", g_src);
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_test_disasm.XXXXXX");
    if (!mkdtemp(g_tmp))
        return 2;
    setenv("TMPDIR", g_tmp, 1);
    snprintf(g_log, sizeof g_log, "%s/calls.log", g_tmp);
    setenv("FAKE_NVDISASM_LOG", g_log, 1);
    setenv("FAKE_NVDISASM_OUT", data("pcsamp_kernel.sass"), 1);

    test_parse_capture();
    test_parse_shapes();
    test_symbols();
    test_aggregator_functions();
    test_runs(fake);
    test_real_nvdisasm();

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_tmp);
    return check_done("test_cupti_disasm");
}
