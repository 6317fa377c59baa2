/*
 * test_render.c - the text, JSON and sparkline renderings.
 *
 * Four fixed summaries (a full H100-like one, the none backend with a
 * fallback note, a device lost mid-run, many throttle reasons and a long
 * name) are rendered as text (Unicode and ASCII) and JSON (compact and
 * pretty) and compared byte for byte with tests/golden/summary_*.  After a
 * deliberate change of a rendering, regenerate them with
 *
 *     GP_UPDATE_GOLDEN=1 ctest -R test_render
 *
 * and review the diff.  Every JSON document produced here also goes
 * through a strict validator (below), and the snprintf contract, escaping,
 * locale independence and "invalid is n/a / null, never 0" are checked.
 */
#include "check.h"
#include "gpu_profile.h"

#include <locale.h>
#include <math.h>

/* ------------------------------------------------------ JSON validator */

/* A strict RFC 8259 recognizer: validation only, no tree.  Duplicate keys
 * in one object are rejected too, since a consumer would silently keep
 * one of them. */
typedef struct jp {
    const char *p, *end;
    int depth;
    const char *why;
} jp;

static int jp_fail(jp *j, const char *why)
{
    if (!j->why)
        j->why = why;
    return 0;
}

static void jp_ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int jp_lit(jp *j, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
        return jp_fail(j, "bad literal");
    j->p += n;
    return 1;
}

static int jp_hex4(jp *j, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        if (j->p >= j->end)
            return jp_fail(j, "short \\u escape");
        char c = *j->p++;
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return jp_fail(j, "bad hex digit in \\u escape");
    }
    *out = v;
    return 1;
}

/* One raw UTF-8 character (not ASCII), well-formed per RFC 3629. */
static int jp_utf8(jp *j)
{
    const unsigned char *u = (const unsigned char *)j->p;
    size_t left = (size_t)(j->end - j->p);
    unsigned c = u[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return jp_fail(j, "invalid UTF-8 lead byte");
    if (left < len || u[1] < lo || u[1] > hi)
        return jp_fail(j, "invalid UTF-8 sequence");
    for (size_t i = 2; i < len; i++)
        if (u[i] < 0x80 || u[i] > 0xBF)
            return jp_fail(j, "invalid UTF-8 continuation");
    j->p += len;
    return 1;
}

static int jp_string(jp *j)
{
    if (j->p >= j->end || *j->p != '"')
        return jp_fail(j, "expected a string");
    j->p++;
    while (j->p < j->end) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '"') {
            j->p++;
            return 1;
        }
        if (c < 0x20)
            return jp_fail(j, "raw control character in a string");
        if (c == '\\') {
            j->p++;
            if (j->p >= j->end)
                return jp_fail(j, "string ends in a backslash");
            char e = *j->p++;
            if (e == 'u') {
                unsigned v;
                if (!jp_hex4(j, &v))
                    return 0;
                if (v >= 0xDC00 && v <= 0xDFFF)
                    return jp_fail(j, "lone low surrogate");
                if (v >= 0xD800 && v <= 0xDBFF) {
                    unsigned w;
                    if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
                        return jp_fail(j, "lone high surrogate");
                    j->p += 2;
                    if (!jp_hex4(j, &w))
                        return 0;
                    if (w < 0xDC00 || w > 0xDFFF)
                        return jp_fail(j, "high surrogate without a low one");
                }
            } else if (!strchr("\"\\/bfnrt", e) || e == '\0') {
                return jp_fail(j, "bad escape");
            }
        } else if (c >= 0x80) {
            if (!jp_utf8(j))
                return 0;
        } else {
            j->p++;
        }
    }
    return jp_fail(j, "unterminated string");
}

static int jp_digits(jp *j)
{
    const char *start = j->p;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > start ? 1 : jp_fail(j, "expected digits");
}

static int jp_number(jp *j)
{
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p < j->end && *j->p == '0') {
        j->p++;
    } else if (j->p < j->end && *j->p >= '1' && *j->p <= '9') {
        jp_digits(j);
    } else {
        return jp_fail(j, "bad number");
    }
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (!jp_digits(j))
            return 0;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (!jp_digits(j))
            return 0;
    }
    return 1;
}

static int jp_value(jp *j);

static int jp_object(jp *j)
{
    enum { MAX_KEYS = 128 };
    const char *key_at[MAX_KEYS];
    size_t key_len[MAX_KEYS];
    size_t n_keys = 0;
    j->p++; /* '{' */
    jp_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return 1;
    }
    for (;;) {
        jp_ws(j);
        const char *k = j->p;
        if (!jp_string(j))
            return 0;
        size_t kl = (size_t)(j->p - k);
        for (size_t i = 0; i < n_keys; i++)
            if (key_len[i] == kl && memcmp(key_at[i], k, kl) == 0)
                return jp_fail(j, "duplicate key");
        if (n_keys < MAX_KEYS) {
            key_at[n_keys] = k;
            key_len[n_keys++] = kl;
        }
        jp_ws(j);
        if (j->p >= j->end || *j->p != ':')
            return jp_fail(j, "expected ':'");
        j->p++;
        if (!jp_value(j))
            return 0;
        jp_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            return 1;
        }
        return jp_fail(j, "expected ',' or '}'");
    }
}

static int jp_array(jp *j)
{
    j->p++; /* '[' */
    jp_ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return 1;
    }
    for (;;) {
        if (!jp_value(j))
            return 0;
        jp_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return 1;
        }
        return jp_fail(j, "expected ',' or ']'");
    }
}

static int jp_value(jp *j)
{
    jp_ws(j);
    if (j->p >= j->end)
        return jp_fail(j, "expected a value");
    if (++j->depth > 64)
        return jp_fail(j, "nested too deep");
    int ok;
    switch (*j->p) {
    case '{':
        ok = jp_object(j);
        break;
    case '[':
        ok = jp_array(j);
        break;
    case '"':
        ok = jp_string(j);
        break;
    case 't':
        ok = jp_lit(j, "true");
        break;
    case 'f':
        ok = jp_lit(j, "false");
        break;
    case 'n':
        ok = jp_lit(j, "null");
        break;
    default:
        ok = jp_number(j);
    }
    j->depth--;
    return ok;
}

/* Whole document: one value, nothing after it but whitespace. */
static const char *json_invalid(const char *text, size_t len)
{
    jp j = {text, text + len, 0, NULL};
    if (!jp_value(&j))
        return j.why ? j.why : "invalid";
    jp_ws(&j);
    if (j.p != j.end)
        return "trailing characters";
    return NULL;
}

/* The validator itself must reject what it should. */
static void validator_self_test(void)
{
    static const char *good[] = {"{}",
                                 "[]",
                                 "0",
                                 "-0.5e+3",
                                 "\"\\u00e9\\ud83d\\ude00\"",
                                 "{\"a\":[1,null,true,false]}",
                                 " {\"a\" : {\"b\" : []} } ",
                                 "\"\xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80\""};
    static const char *bad[] = {"",
                                "{",
                                "{\"a\":1,}",
                                "[1,]",
                                "01",
                                "1.",
                                ".5",
                                "-",
                                "+1",
                                "nul",
                                "\"\x01\"",
                                "\"\\x\"",
                                "\"\\ud800\"",
                                "\"\xff\"",
                                "\"\xc0\x80\"",
                                "{\"a\":1,\"a\":2}",
                                "{} {}",
                                "{a:1}",
                                "NaN",
                                "\"\xed\xa0\x80\""};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        const char *why = json_invalid(good[i], strlen(good[i]));
        if (why)
            fprintf(stderr, "validator rejected %s: %s\n", good[i], why);
        CHECK(why == NULL);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = json_invalid(bad[i], strlen(bad[i]));
        if (!why)
            fprintf(stderr, "validator accepted %s\n", bad[i]);
        CHECK(why != NULL);
    }
}

/* ------------------------------------------------------------ helpers */

typedef size_t (*render_fn)(const gp_summary *, unsigned, char *, size_t);

/* Renders into a fresh malloc'd buffer through the measuring call. */
static char *render(render_fn fn, const gp_summary *s, unsigned flags, size_t *len_out)
{
    size_t len = fn(s, flags, NULL, 0);
    char *buf = malloc(len + 1);
    size_t again = fn(s, flags, buf, len + 1);
    CHECK_U64(again, len);
    CHECK_U64(strlen(buf), len);
    if (len_out)
        *len_out = len;
    return buf;
}

static void check_json_valid(const char *json, const char *what)
{
    const char *why = json_invalid(json, strlen(json));
    if (why)
        fprintf(stderr, "%s: invalid JSON (%s):\n%s\n", what, why, json);
    CHECK(why == NULL);
}

/* The text after `"key":` in compact JSON, up to the next ',' or '}' at
 * depth 0 (enough for scalars and flat arrays). */
static char *json_get(const char *json, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    const char *e = p;
    int depth = 0, in_str = 0;
    for (; *e; e++) {
        if (in_str) {
            if (*e == '\\' && e[1])
                e++;
            else if (*e == '"')
                in_str = 0;
        } else if (*e == '"') {
            in_str = 1;
        } else if (*e == '[' || *e == '{') {
            depth++;
        } else if (*e == ']' || *e == '}') {
            if (depth == 0)
                break;
            depth--;
        } else if (*e == ',' && depth == 0) {
            break;
        }
    }
    size_t n = (size_t)(e - p);
    char *v = malloc(n + 1);
    memcpy(v, p, n);
    v[n] = '\0';
    return v;
}

#define CHECK_JSON_KEY(json, key, want)                                                            \
    do {                                                                                           \
        char *got_ = json_get((json), (key));                                                      \
        CHECK_STR(got_, (want));                                                                   \
        if (!got_ || strcmp(got_, (want)) != 0)                                                    \
            fprintf(stderr, "  (key %s)\n", (key));                                                \
        free(got_);                                                                                \
    } while (0)

/* The value column of the text line labelled `label` ("  label   value"). */
static char *text_value(const char *text, const char *label)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n  %s ", label);
    const char *p = strstr(text, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char *v = malloc(n + 1);
    memcpy(v, p, n);
    v[n] = '\0';
    return v;
}

#define CHECK_TEXT_VALUE(text, label, want)                                                        \
    do {                                                                                           \
        char *got_ = text_value((text), (label));                                                  \
        CHECK_STR(got_, (want));                                                                   \
        free(got_);                                                                                \
    } while (0)

/* ------------------------------------------------------------ summaries */

static gp_summary base(unsigned index, const char *name, const char *uuid, const char *backend)
{
    gp_summary s;
    memset(&s, 0, sizeof s);
    s.device_index = index;
    snprintf(s.name, sizeof s.name, "%s", name);
    snprintf(s.uuid, sizeof s.uuid, "%s", uuid);
    snprintf(s.backend, sizeof s.backend, "%s", backend);
    memset(s.spark, GP_SPARK_NONE, sizeof s.spark);
    return s;
}

static gp_summary full_h100(void)
{
    gp_summary s =
        base(0, "NVIDIA H100 80GB HBM3", "GPU-1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718", "nvml");
    s.duration_s = 12.3456;
    s.interval_s = 0.2;
    s.warmup_s = 0.5;
    s.sample_count = 59;
    s.samples_warmup = 3;
    s.interval_mean_s = 0.2003448;
    s.valid = GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER |
              GP_M_ENERGY | GP_M_TEMP | GP_M_CLOCK_SM | GP_M_CLOCK_MEM | GP_M_THROTTLE;
    s.util_gpu_mean = 87.288135593;
    s.util_gpu_p50 = 92;
    s.util_gpu_p95 = 99;
    s.util_gpu_max = 100;
    s.util_mem_mean = 41.050847;
    s.util_mem_max = 63;
    s.mem_used_max_bytes = 76450000000ull;
    s.mem_total_bytes = 85520809984ull;
    s.power_mean_mw = 512345.62711864;
    s.power_max_mw = 698123;
    s.energy_j = 6324.512;
    s.energy_source = GP_ENERGY_COUNTER;
    s.energy_span_s = s.duration_s - s.interval_s; /* first to last reading */
    s.temp_max_c = 71;
    s.clock_sm_mean_mhz = 1755.423729;
    s.clock_mem_mean_mhz = 2619;
    s.util_gpu_min = 0;
    s.util_gpu_p5 = 12;
    s.util_gpu_p99 = 100;
    s.util_gpu_std = 24.318204;
    s.util_gpu_idle_pct = 3.389831; /* 2 of 59 */
    s.util_gpu_active_pct = 91.525424;
    s.mem_used_mean_bytes = 70123456789.5;
    s.temp_mean_c = 64.745763;
    s.clock_sm_max_mhz = 1980;
    s.throttle_reasons_seen = GP_THROTTLE_SW_POWER_CAP;
    s.busy_time_est_s = s.duration_s * s.util_gpu_mean / 100.0;
    static const uint8_t cells[GP_SPARK_WIDTH] = {
        3,   12,  40,  77,  95, 99, 100, 100, 100, 98, 97,  100, 100, 100, 99, 96,
        100, 100, 100, 100, 88, 64, 100, 100, 100, 99, 100, 100, 97,  80,  35, 5};
    memcpy(s.spark, cells, sizeof cells);
    s.spark_len = GP_SPARK_WIDTH;
    return s;
}

static gp_summary none_backend(void)
{
    gp_summary s = base(0, "", "", "none");
    snprintf(s.note, sizeof s.note, "%s",
             "nvml: cannot load libnvidia-ml.so.1: libnvidia-ml.so.1: cannot open shared object "
             "file: No such file or directory; smi: nvidia-smi was not found in PATH; using the "
             "none backend because strict is off");
    s.duration_s = 1.5;
    s.interval_s = 0.2;
    return s;
}

static gp_summary lost_device(void)
{
    gp_summary s =
        base(1, "NVIDIA GeForce RTX 4080 SUPER", "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9", "smi");
    s.duration_s = 8.0125;
    s.interval_s = 0.5;
    s.sample_count = 7;
    s.interval_mean_s = 0.5001;
    s.valid = GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER |
              GP_M_ENERGY | GP_M_TEMP | GP_M_CLOCK_SM | GP_M_THROTTLE;
    s.util_gpu_mean = 61.5;
    s.util_gpu_p50 = 70;
    s.util_gpu_p95 = 97;
    s.util_gpu_max = 97;
    s.util_mem_mean = 12.25;
    s.util_mem_max = 30;
    s.mem_used_max_bytes = 3758096384ull;
    s.mem_total_bytes = 17171480576ull;
    s.power_mean_mw = 187250;
    s.power_max_mw = 301500;
    s.energy_j = 0.5625;
    s.energy_source = GP_ENERGY_POWER_INTEGRAL;
    s.energy_span_s = 3.0; /* its power readings until the loss at 3.2125 s */
    s.temp_max_c = 58;
    s.clock_sm_mean_mhz = 2610.5;
    s.util_gpu_min = 0;
    s.util_gpu_p5 = 0;
    s.util_gpu_p99 = 97;
    s.util_gpu_std = 35.5;
    s.util_gpu_idle_pct = 14.285714;
    s.util_gpu_active_pct = 71.428571;
    s.mem_used_mean_bytes = 3221225472.0;
    s.temp_mean_c = 55;
    s.clock_sm_max_mhz = 2625;
    s.throttle_reasons_seen = 0;
    s.busy_time_est_s = 3.2125 * s.util_gpu_mean / 100.0; /* live until the loss */
    static const uint8_t cells[7] = {0, 35, 70, GP_SPARK_NONE, 97, 96, 62};
    memcpy(s.spark, cells, sizeof cells);
    s.spark_len = 7;
    s.device_status = GP_ERR_DEVICE_LOST;
    snprintf(s.device_error, sizeof s.device_error, "%s",
             "nvidia-smi: Unable to determine the device handle for GPU 00000000:01:00.0: GPU is "
             "lost. Reboot the system to recover this GPU");
    s.device_error_at_s = 3.2125;
    return s;
}

static gp_summary throttled(void)
{
    gp_summary s = base(3, "NVIDIA A100-SXM4-80GB MIG 3g.40gb Device (a long name from a driver)",
                        "MIG-5c1d2e3f-4a5b-5c6d-8e7f-9a0b1c2d3e4f", "nvml");
    s.duration_s = 600.25;
    s.interval_s = 1;
    s.sample_count = 601;
    s.interval_mean_s = 0.99875;
    s.valid = GP_M_UTIL_GPU | GP_M_MEM_TOTAL | GP_M_POWER | GP_M_ENERGY | GP_M_TEMP |
              GP_M_CLOCK_SM | GP_M_CLOCK_MEM | GP_M_THROTTLE;
    s.util_gpu_mean = 99.5;
    s.util_gpu_p50 = 100;
    s.util_gpu_p95 = 100;
    s.util_gpu_max = 100;
    s.mem_total_bytes = 512ull * 1024 * 1024;
    s.power_mean_mw = 399999.5;
    s.power_max_mw = 400000;
    s.energy_j = 240100.0;
    s.energy_source = GP_ENERGY_COUNTER;
    s.energy_span_s = s.duration_s - s.interval_s; /* first to last reading */
    s.temp_max_c = 92;
    s.clock_sm_mean_mhz = 1005.25;
    s.clock_mem_mean_mhz = 1593;
    s.util_gpu_min = 50;
    s.util_gpu_p5 = 100;
    s.util_gpu_p99 = 100;
    s.util_gpu_std = NAN; /* as with one reading: n/a, null */
    s.util_gpu_active_pct = 100;
    s.temp_mean_c = 90.25;
    s.clock_sm_max_mhz = 1410;
    s.throttle_reasons_seen = GP_THROTTLE_GPU_IDLE | GP_THROTTLE_APP_CLOCKS |
                              GP_THROTTLE_SW_POWER_CAP | GP_THROTTLE_HW_SLOWDOWN |
                              GP_THROTTLE_SYNC_BOOST | GP_THROTTLE_SW_THERMAL |
                              GP_THROTTLE_HW_THERMAL | GP_THROTTLE_HW_POWER_BRAKE |
                              GP_THROTTLE_DISPLAY_CLOCK | 0x1000ull | (1ull << 63);
    s.busy_time_est_s = s.duration_s * s.util_gpu_mean / 100.0;
    for (int i = 0; i < GP_SPARK_WIDTH; i++)
        s.spark[i] = (uint8_t)(i < 2 ? 50 : 100);
    s.spark_len = GP_SPARK_WIDTH;
    return s;
}

/* An H100 with GPM: every GPM metric but the DFMA and IMMA tensor pipes. */
static gp_summary gpm_h100(void)
{
    gp_summary s = full_h100();
    s.util_gpu_mean = 94.2;
    s.busy_time_est_s = s.duration_s * s.util_gpu_mean / 100.0;
    static const double mean[GP_GPM_COUNT] = {38.25, 24.5,   12.4, 0,      12.4,  0, 61.0,
                                              0.5,   20.125, 4.75, 1.25e9, 3.5e9, 0, 512e6};
    static const double p95[GP_GPM_COUNT] = {41.5, 30, 15.1, 0,   15.1,   0, 70.2,
                                             1.1,  25, 6,    2e9, 4.99e9, 0, 999.5e6};
    static const double max[GP_GPM_COUNT] = {42.0, 31.6, 16,   0,     16,  0, 72.9,
                                             1.2,  25.5, 6.25, 2.1e9, 5e9, 0, 1e9};
    for (int i = 0; i < GP_GPM_COUNT; i++) {
        if (i == GP_GPM_TENSOR_DFMA || i == GP_GPM_TENSOR_IMMA)
            continue;
        s.valid |= GP_M_GPM(i);
        s.gpm_mean[i] = mean[i];
        s.gpm_p95[i] = p95[i];
        s.gpm_max[i] = max[i];
    }
    return s;
}

/* A MIG instance over the nvml backend: its own memory, nothing else
 * (utilisation, power, temperature and clocks are n/a on an instance). */
static gp_summary mig_instance(void)
{
    gp_summary s = base(4, "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
                        "MIG-00000002-0000-0000-0000-000000000002", "nvml");
    s.duration_s = 5.0;
    s.interval_s = 0.1;
    s.sample_count = 50;
    s.interval_mean_s = 0.1;
    s.valid = GP_M_MEM_USED | GP_M_MEM_TOTAL;
    s.mem_used_max_bytes = 9437184;
    s.mem_total_bytes = 10468982784ull;
    s.spark_len = 0;
    s.mig.is_mig = 1;
    s.mig.parent_index = 0;
    snprintf(s.mig.parent_uuid, sizeof s.mig.parent_uuid, "%s",
             "GPU-00000000-0000-0000-0000-000000000000");
    snprintf(s.mig.parent_name, sizeof s.mig.parent_name, "%s", "NVIDIA H100 80GB HBM3");
    snprintf(s.mig.profile, sizeof s.mig.profile, "%s", "1g.10gb");
    s.mig.gpu_instance_id = 9;
    s.mig.compute_instance_id = 0;
    return s;
}

typedef struct named {
    const char *name;
    gp_summary (*make)(void);
} named;

static const named cases[] = {
    {"full_h100", full_h100}, {"none_backend", none_backend}, {"lost_device", lost_device},
    {"throttled", throttled}, {"gpm_h100", gpm_h100},         {"mig_instance", mig_instance},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* -------------------------------------------------------------- golden */

static void golden(const char *file, const char *got)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s%s", "", file);
    check_golden(rel, got, "test_render");
}

static void goldens(void)
{
    for (size_t k = 0; k < N_CASES; k++) {
        gp_summary s = cases[k].make();
        char file[128];
        char *t;

        t = render(gp_summary_format, &s, 0, NULL);
        snprintf(file, sizeof file, "summary_%s.txt", cases[k].name);
        golden(file, t);
        free(t);

        t = render(gp_summary_format, &s, GP_FMT_ASCII, NULL);
        snprintf(file, sizeof file, "summary_%s.ascii.txt", cases[k].name);
        golden(file, t);
        /* ASCII mode is ASCII all through for these (ASCII) names. */
        for (const char *p = t; *p; p++)
            if ((unsigned char)*p >= 0x80) {
                CHECK(!"non-ASCII byte in ASCII text");
                break;
            }
        free(t);

        t = render(gp_summary_to_json, &s, 0, NULL);
        snprintf(file, sizeof file, "summary_%s.json", cases[k].name);
        golden(file, t);
        check_json_valid(t, file);
        CHECK(strchr(t, '\n') == NULL);
        free(t);

        t = render(gp_summary_to_json, &s, GP_FMT_PRETTY, NULL);
        snprintf(file, sizeof file, "summary_%s.pretty.json", cases[k].name);
        golden(file, t);
        check_json_valid(t, file);
        free(t);
    }
}

/* Every text line fits in 80 columns (code points), except a single word
 * too long to wrap, which none of the cases has. */
static void widths(void)
{
    for (size_t k = 0; k < N_CASES; k++) {
        gp_summary s = cases[k].make();
        for (unsigned flags = 0; flags <= GP_FMT_ASCII; flags++) {
            char *t = render(gp_summary_format, &s, flags, NULL);
            size_t cols = 0, widest = 0;
            for (const char *p = t; *p; p++) {
                if (*p == '\n') {
                    cols = 0;
                    continue;
                }
                if (((unsigned char)*p & 0xC0) != 0x80)
                    cols++;
                if (cols > widest)
                    widest = cols;
            }
            if (widest > 80)
                fprintf(stderr, "%s: a line is %zu columns wide\n", cases[k].name, widest);
            CHECK(widest <= 80);
            CHECK(t[strlen(t) - 1] == '\n');
            free(t);
        }
    }
}

/* -------------------------------------------------- snprintf contract */

static void contract_one(render_fn fn, const gp_summary *s, unsigned flags, const char *what)
{
    size_t len = fn(s, flags, NULL, 0);
    char *full = malloc(len + 1);
    fn(s, flags, full, len + 1);
    size_t room = len + 16;
    char *buf = malloc(room);
    int bad = 0;
    for (size_t cap = 0; cap <= len + 2; cap++) {
        memset(buf, 0x7E, room);
        size_t r = fn(s, flags, buf, cap);
        if (r != len)
            bad++;
        if (cap > 0) {
            size_t kept = cap - 1 < len ? cap - 1 : len;
            if (memcmp(buf, full, kept) != 0 || buf[kept] != '\0')
                bad++;
            for (size_t i = kept + 1; i < room; i++)
                if (buf[i] != 0x7E) {
                    bad++;
                    break;
                }
        } else {
            for (size_t i = 0; i < room; i++)
                if (buf[i] != 0x7E) {
                    bad++;
                    break;
                }
        }
    }
    if (bad)
        fprintf(stderr, "snprintf contract broken for %s (%d cases)\n", what, bad);
    CHECK_INT(bad, 0);
    /* cap 0 with a non-NULL buffer measures without writing. */
    memset(buf, 0x7E, room);
    CHECK_U64(fn(s, flags, buf, 0), len);
    CHECK(buf[0] == 0x7E);
    free(buf);
    free(full);
}

static void contract(void)
{
    for (size_t k = 0; k < N_CASES; k++) {
        gp_summary s = cases[k].make();
        contract_one(gp_summary_format, &s, 0, "format");
        contract_one(gp_summary_format, &s, GP_FMT_ASCII, "format ascii");
        contract_one(gp_summary_to_json, &s, 0, "json");
        contract_one(gp_summary_to_json, &s, GP_FMT_PRETTY, "json pretty");
        contract_one(gp_summary_sparkline, &s, 0, "sparkline");
        contract_one(gp_summary_sparkline, &s, GP_FMT_ASCII, "sparkline ascii");
    }

    /* NULL summary: the empty string, no crash. */
    char buf[8];
    memset(buf, 'x', sizeof buf);
    CHECK_U64(gp_summary_format(NULL, 0, buf, sizeof buf), 0);
    CHECK(buf[0] == '\0');
    memset(buf, 'x', sizeof buf);
    CHECK_U64(gp_summary_to_json(NULL, 0, buf, sizeof buf), 0);
    CHECK(buf[0] == '\0');
    memset(buf, 'x', sizeof buf);
    CHECK_U64(gp_summary_sparkline(NULL, 0, buf, sizeof buf), 0);
    CHECK(buf[0] == '\0');
    CHECK_U64(gp_summary_format(NULL, 0, NULL, 0), 0);
    CHECK_U64(gp_summary_to_json(NULL, GP_FMT_PRETTY, NULL, 0), 0);
    /* A NULL buffer with a capacity is only measured. */
    gp_summary s = full_h100();
    CHECK(gp_summary_format(&s, 0, NULL, 100) > 100);
}

/* ------------------------------------------------------------ sparkline */

static void sparkline(void)
{
    gp_summary s = base(0, "", "", "nvml");
    static const uint8_t cells[] = {0, 7, 8, 50, 100, GP_SPARK_NONE, 200, 21};
    memcpy(s.spark, cells, sizeof cells);
    s.spark_len = sizeof cells;
    char buf[128];
    /* Levels (v*7+50)/100: 0 0 1 4 7 none 7(clamped) 1. */
    gp_summary_sparkline(&s, 0, buf, sizeof buf);
    CHECK_STR(buf, "\xe2\x96\x81\xe2\x96\x81\xe2\x96\x82\xe2\x96\x85\xe2\x96\x88 "
                   "\xe2\x96\x88\xe2\x96\x82");
    gp_summary_sparkline(&s, GP_FMT_ASCII, buf, sizeof buf);
    CHECK_STR(buf, "__.=# #.");

    /* Every level once, in order. */
    for (int i = 0; i < 8; i++)
        s.spark[i] = (uint8_t)((i * 100 + 3) / 7);
    s.spark_len = 8;
    gp_summary_sparkline(&s, 0, buf, sizeof buf);
    CHECK_STR(buf, "\xe2\x96\x81\xe2\x96\x82\xe2\x96\x83\xe2\x96\x84\xe2\x96\x85\xe2\x96\x86"
                   "\xe2\x96\x87\xe2\x96\x88");
    gp_summary_sparkline(&s, GP_FMT_ASCII, buf, sizeof buf);
    CHECK_STR(buf, "_.-:=+*#");

    /* No cells: empty; a bogus length is clamped to the array. */
    s.spark_len = 0;
    CHECK_U64(gp_summary_sparkline(&s, 0, buf, sizeof buf), 0);
    CHECK_STR(buf, "");
    s.spark_len = 1000;
    CHECK_U64(gp_summary_sparkline(&s, GP_FMT_ASCII, NULL, 0), GP_SPARK_WIDTH);
}

/* util.gpu's spread (issue 33): its own lines under util.gpu; a standard
 * deviation that is unknown (NaN: fewer than 2 readings) is n/a and null,
 * never 0. */
static void spread_lines(void)
{
    gp_summary s = full_h100();
    char *t = render(gp_summary_format, &s, 0, NULL);
    CHECK(strstr(t, "\n  util.gpu          mean 87.3%  p50 92%  p95 99%  max 100%\n"
                    "                    min 0%  p5 12%  p99 100%  std 24.3%\n"
                    "                    idle (<5%) 3.4%  active (>=50%) 91.5%\n") != NULL);
    CHECK_TEXT_VALUE(t, "clocks", "SM mean 1755 MHz (max 1980 MHz)  mem mean 2619 MHz");
    CHECK_TEXT_VALUE(t, "memory used", "max 71.20 GiB of 79.65 GiB (89.4%)  mean 65.31 GiB");
    free(t);
    s.util_gpu_std = NAN;
    t = render(gp_summary_format, &s, GP_FMT_ASCII, NULL);
    CHECK(strstr(t, "p99 100%  std n/a\n") != NULL);
    free(t);
    char *j = render(gp_summary_to_json, &s, 0, NULL);
    CHECK_JSON_KEY(j, "util_gpu_std_pct", "null");
    CHECK_JSON_KEY(j, "util_gpu_p5_pct", "12");
    CHECK_JSON_KEY(j, "util_gpu_idle_pct", "3.389831");
    CHECK_JSON_KEY(j, "clock_sm_max_mhz", "1980");
    free(j);
}

/* --------------------------------------------------- invalid is null */

static void invalid_is_null(void)
{
    /* Stale values everywhere, no valid bit: none of them may show. */
    gp_summary s = base(2, "Test GPU", "GPU-x", "nvml");
    s.duration_s = 2.0;
    s.interval_s = 0.2;
    s.sample_count = 1;
    s.interval_mean_s = 0.123;
    s.valid = 0;
    s.util_gpu_mean = 55.5;
    s.util_gpu_p50 = 66;
    s.util_gpu_p95 = 77;
    s.util_gpu_max = 88;
    s.util_mem_mean = 44.4;
    s.util_mem_max = 33;
    s.mem_used_max_bytes = 12345678;
    s.mem_total_bytes = 87654321;
    s.power_mean_mw = 222222.2;
    s.power_max_mw = 333333;
    s.energy_j = 999.9;
    s.energy_source = GP_ENERGY_NONE;
    s.temp_max_c = 81;
    s.clock_sm_mean_mhz = 1111;
    s.clock_mem_mean_mhz = 2222;
    s.throttle_reasons_seen = GP_THROTTLE_SW_POWER_CAP;
    s.busy_time_est_s = 9.87;
    s.device_error_at_s = 4.5;
    s.util_gpu_min = 61;
    s.util_gpu_p5 = 62;
    s.util_gpu_p99 = 63;
    s.util_gpu_std = 6.54;
    s.util_gpu_idle_pct = 12.34;
    s.util_gpu_active_pct = 43.21;
    s.mem_used_mean_bytes = 7654321;
    s.temp_mean_c = 71.7;
    s.clock_sm_max_mhz = 3333;

    char *j = render(gp_summary_to_json, &s, 0, NULL);
    check_json_valid(j, "invalid_is_null");
    static const char *const null_keys[] = {"interval_mean_s",
                                            "util_gpu_mean_pct",
                                            "util_gpu_p50_pct",
                                            "util_gpu_p95_pct",
                                            "util_gpu_max_pct",
                                            "util_gpu_min_pct",
                                            "util_gpu_p5_pct",
                                            "util_gpu_p99_pct",
                                            "util_gpu_std_pct",
                                            "util_gpu_idle_pct",
                                            "util_gpu_active_pct",
                                            "mem_used_mean_bytes",
                                            "temp_mean_c",
                                            "clock_sm_max_mhz",
                                            "util_mem_mean_pct",
                                            "util_mem_max_pct",
                                            "mem_used_max_bytes",
                                            "mem_total_bytes",
                                            "power_mean_mw",
                                            "power_max_mw",
                                            "energy_j",
                                            "temp_max_c",
                                            "clock_sm_mean_mhz",
                                            "clock_mem_mean_mhz",
                                            "throttle_reasons",
                                            "throttle_reasons_mask",
                                            "busy_time_est_s",
                                            "device_error",
                                            "device_error_at_s",
                                            "note",
                                            "gpm"};
    for (size_t i = 0; i < sizeof null_keys / sizeof null_keys[0]; i++)
        CHECK_JSON_KEY(j, null_keys[i], "null");
    CHECK_JSON_KEY(j, "energy_source", "\"none\"");
    CHECK_JSON_KEY(j, "valid_mask", "0");
    CHECK_JSON_KEY(j, "sample_count", "1");
    CHECK_JSON_KEY(j, "sparkline", "[]");
    CHECK_JSON_KEY(j, "device_status", "\"ok\"");
    free(j);

    char *t = render(gp_summary_format, &s, 0, NULL);
    CHECK_TEXT_VALUE(t, "interval", "0.200 s requested, n/a achieved");
    CHECK_TEXT_VALUE(t, "util.gpu", "n/a");
    CHECK_TEXT_VALUE(t, "util.mem", "n/a");
    CHECK_TEXT_VALUE(t, "memory used", "n/a");
    CHECK_TEXT_VALUE(t, "power", "n/a");
    CHECK_TEXT_VALUE(t, "energy", "n/a");
    CHECK_TEXT_VALUE(t, "temperature", "n/a");
    CHECK_TEXT_VALUE(t, "clocks", "SM mean n/a  mem mean n/a");
    CHECK_TEXT_VALUE(t, "throttle reasons", "n/a");
    CHECK_TEXT_VALUE(t, "busy time est.", "n/a");
    CHECK_TEXT_VALUE(t, "util.gpu trace", "n/a");
    static const char *const stale[] = {
        "55.5", "66%",  "77%",  "88%",          "44.4", "33%",   "222.2",        "333.3", "999.9",
        "81",   "1111", "2222", "sw_power_cap", "9.87", "0.123", "device error", "61%",   "62%",
        "63%",  "6.5",  "12.3", "43.2",         "7.3",  "71.7",  "3333",         "idle"};
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
        if (strstr(t, stale[i]))
            fprintf(stderr, "stale value %s in text:\n%s", stale[i], t);
        CHECK(strstr(t, stale[i]) == NULL);
    }
    free(t);

    /* Partly valid: used memory unknown but the total known; throttle
     * reported and empty is "none" / [], not null. */
    s.valid = GP_M_MEM_TOTAL | GP_M_THROTTLE;
    s.throttle_reasons_seen = 0;
    s.mem_total_bytes = 2048ull * 1024 * 1024;
    t = render(gp_summary_format, &s, 0, NULL);
    CHECK_TEXT_VALUE(t, "memory used", "max n/a of 2.00 GiB");
    CHECK_TEXT_VALUE(t, "throttle reasons", "none");
    free(t);
    j = render(gp_summary_to_json, &s, 0, NULL);
    CHECK_JSON_KEY(j, "mem_used_max_bytes", "null");
    CHECK_JSON_KEY(j, "mem_total_bytes", "2147483648");
    CHECK_JSON_KEY(j, "throttle_reasons", "[]");
    CHECK_JSON_KEY(j, "throttle_reasons_mask", "0");
    free(j);
}

/* ------------------------------------------------------------ escaping */

static void escaping(void)
{
    gp_summary s = base(0, "", "GPU-\"quoted\"", "nvml");
    /* Quote, backslash, control characters, valid multi-byte UTF-8, then
     * a stray byte and a sequence cut short. */
    snprintf(s.name, sizeof s.name, "%s",
             "a\"b\\c\n\t\x01\x1f\x7f \xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80 \xff\xe2\x82");
    snprintf(s.note, sizeof s.note, "%s", "line1\r\nline2 /slash\b\f");
    char *j = render(gp_summary_to_json, &s, 0, NULL);
    check_json_valid(j, "escaping");
    CHECK_JSON_KEY(j, "name",
                   "\"a\\\"b\\\\c\\n\\t\\u0001\\u001f\\u007f \xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80 "
                   "\\ufffd\\ufffd\\ufffd\"");
    CHECK_JSON_KEY(j, "uuid", "\"GPU-\\\"quoted\\\"\"");
    CHECK_JSON_KEY(j, "note", "\"line1\\r\\nline2 /slash\\b\\f\"");
    free(j);
    j = render(gp_summary_to_json, &s, GP_FMT_PRETTY, NULL);
    check_json_valid(j, "escaping pretty");
    free(j);

    /* In text the same name cannot break the layout or the terminal. */
    char *t = render(gp_summary_format, &s, 0, NULL);
    const char *head = "GPU 0  a\"b\\c????? \xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80 ???  GPU-";
    CHECK(strncmp(t, head, strlen(head)) == 0);
    CHECK(strchr(t, '\r') == NULL && strchr(t, '\x01') == NULL && strchr(t, '\x7f') == NULL);
    CHECK_TEXT_VALUE(t, "note", "line1??line2 /slash??");
    free(t);

    /* Strings that fill their array without a NUL are read to its end. */
    memset(s.name, 'x', sizeof s.name);
    memset(s.uuid, 'y', sizeof s.uuid);
    memset(s.backend, 'z', sizeof s.backend);
    memset(s.note, 'n', sizeof s.note);
    memset(s.device_error, 'e', sizeof s.device_error);
    s.device_status = GP_ERR_BACKEND;
    j = render(gp_summary_to_json, &s, GP_FMT_PRETTY, NULL);
    check_json_valid(j, "unterminated strings");
    char want[GP_NAME_MAX + 3];
    want[0] = '"';
    memset(want + 1, 'x', GP_NAME_MAX);
    want[GP_NAME_MAX + 1] = '"';
    want[GP_NAME_MAX + 2] = '\0';
    CHECK(strstr(j, want) != NULL);
    free(j);
    t = render(gp_summary_format, &s, 0, NULL);
    CHECK(strstr(t, "backend error") != NULL);
    free(t);
}

/* ------------------------------------------------------------- numbers */

static void numbers(void)
{
    gp_summary s = base(0, "", "", "nvml");
    s.valid = GP_M_POWER;
    s.sample_count = 2;

    static const struct {
        double v;
        const char *json;
    } cases[] = {
        {0.1, "0.1"},
        {12.3456789, "12.345679"},
        {1e-7, "0"},
        {-1e-7, "0"},
        {-2.5, "-2.5"},
        {3.0, "3"},
        {1234567.0000004, "1234567"},
        {1e20, "100000000000000000000"},
        {NAN, "null"},
        {INFINITY, "null"},
        {-INFINITY, "null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s.duration_s = cases[i].v;
        s.interval_mean_s = cases[i].v;
        s.power_mean_mw = cases[i].v;
        char *j = render(gp_summary_to_json, &s, 0, NULL);
        check_json_valid(j, "numbers");
        CHECK_JSON_KEY(j, "duration_s", cases[i].json);
        CHECK_JSON_KEY(j, "interval_mean_s", cases[i].json);
        CHECK_JSON_KEY(j, "power_mean_mw", cases[i].json);
        free(j);
        /* The text never prints "nan" or "inf". */
        char *t = render(gp_summary_format, &s, 0, NULL);
        CHECK(strstr(t, "nan") == NULL && strstr(t, "inf") == NULL);
        free(t);
    }

    /* Large integers are exact, and the top throttle bit gets a hex name. */
    s.valid = GP_M_MEM_USED | GP_M_THROTTLE;
    s.mem_used_max_bytes = UINT64_MAX;
    s.throttle_reasons_seen = 1ull << 63;
    char *j = render(gp_summary_to_json, &s, 0, NULL);
    CHECK_JSON_KEY(j, "mem_used_max_bytes", "18446744073709551615");
    CHECK_JSON_KEY(j, "throttle_reasons", "[\"0x8000000000000000\"]");
    CHECK_JSON_KEY(j, "throttle_reasons_mask", "9223372036854775808");
    free(j);

    /* Energy sources by name, and an out-of-range one. */
    CHECK_STR(gp_energy_source_name(GP_ENERGY_NONE), "none");
    CHECK_STR(gp_energy_source_name(GP_ENERGY_COUNTER), "counter");
    CHECK_STR(gp_energy_source_name(GP_ENERGY_POWER_INTEGRAL), "power_integral");
    CHECK_STR(gp_energy_source_name((gp_energy_source)42), "none");
}

/* The output does not depend on LC_NUMERIC (a host program may have
 * called setlocale).  Skipped where no comma-decimal locale exists. */
static void locale_independence(void)
{
    static const char *const locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8",
                                          "ru_RU.UTF-8"};
    gp_summary s = full_h100();
    char *json_c = render(gp_summary_to_json, &s, GP_FMT_PRETTY, NULL);
    char *text_c = render(gp_summary_format, &s, 0, NULL);
    for (size_t i = 0; i < sizeof locales / sizeof locales[0]; i++) {
        if (!setlocale(LC_NUMERIC, locales[i]))
            continue;
        char *json_l = render(gp_summary_to_json, &s, GP_FMT_PRETTY, NULL);
        char *text_l = render(gp_summary_format, &s, 0, NULL);
        CHECK_STR(json_l, json_c);
        CHECK_STR(text_l, text_c);
        free(json_l);
        free(text_l);
        setlocale(LC_NUMERIC, "C");
        break;
    }
    free(json_c);
    free(text_c);
}

/* --------------------------------------------------------------- print */

static void print(void)
{
    gp_summary s = lost_device();
    gp_error err;

    memset(&err, 0, sizeof err);
    CHECK_INT(gp_summary_print(&s, NULL, 0, &err), GP_ERR_INVALID_ARG);
    CHECK_INT(err.status, GP_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "NULL");
    CHECK_INT(gp_summary_print(NULL, stdout, 0, &err), GP_ERR_INVALID_ARG);
    CHECK_INT(gp_summary_print(NULL, NULL, 0, NULL), GP_ERR_INVALID_ARG);

    /* What is printed is exactly the formatted text. */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK_INT(gp_summary_print(&s, f, GP_FMT_ASCII, &err), GP_OK);
        long n = ftell(f);
        rewind(f);
        char *want = render(gp_summary_format, &s, GP_FMT_ASCII, NULL);
        char *got = calloc(1, (size_t)n + 1);
        CHECK_U64(fread(got, 1, (size_t)n, f), strlen(want));
        CHECK_STR(got, want);
        free(got);
        free(want);
        fclose(f);
    }

    /* A write that fails is an I/O error, not silence. */
    f = fopen("/dev/full", "w");
    if (f) {
        memset(&err, 0, sizeof err);
        CHECK_INT(gp_summary_print(&s, f, 0, &err), GP_ERR_IO);
        CHECK_INT(err.status, GP_ERR_IO);
        CHECK(err.message[0] != '\0');
        fclose(f);
    }
}

/* One vocabulary with the report (issue 32, point 20): temperature in
 * "C" whatever the flags, an achieved interval under a millisecond in ms
 * (never "0.000 s"), and a warmup longer than the region said as such. */
static void vocabulary(void)
{
    gp_summary s = full_h100();
    for (unsigned flags = 0; flags <= GP_FMT_ASCII; flags += GP_FMT_ASCII) {
        char *t = render(gp_summary_format, &s, flags, NULL);
        CHECK_TEXT_VALUE(t, "temperature", "max 71 C  mean 64.7 C");
        free(t);
    }
    s.duration_s = 0.3;
    s.warmup_s = 10;
    s.sample_count = 2;
    s.samples_warmup = 2;
    s.interval_mean_s = 0.000412;
    char *t = render(gp_summary_format, &s, 0, NULL);
    CHECK_TEXT_VALUE(t, "samples",
                     "2 (+2 dropped: the whole 0.300 s fell within the 10.000 s warmup)");
    CHECK_TEXT_VALUE(t, "interval", "0.200 s requested, 0.412 ms achieved");
    free(t);
    char *j = render(gp_summary_to_json, &s, 0, NULL);
    CHECK(strstr(j, "\"interval_mean_s\":0.000412,") != NULL);
    free(j);
}

int main(void)
{
    validator_self_test();
    goldens();
    widths();
    contract();
    sparkline();
    invalid_is_null();
    spread_lines();
    escaping();
    numbers();
    locale_independence();
    print();
    vocabulary();
    return check_done("test_render");
}
