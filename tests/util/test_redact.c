/*
 * test_redact.c - util/text.h's redaction (issue 16): every whole
 * occurrence of every secret replaced, back-to-back copies as one, parts of
 * longer words left alone (issue 32: a short key "k" once gave
 * "chec<redacted>"); the mask "<redacted>"
 * unless a secret could be made with it (a '<' or '>' in a secret, or a
 * secret inside the mask), then a run of a character no secret holds;
 * truncation to the buffer; and whatever the secrets, the result never
 * holds one.  Also the JSON string literals of the same header: each ASCII
 * byte's escape, which UTF-8 sequences are well-formed, and an ill-formed
 * byte as U+FFFD.
 */
#include "check.h"
#include "util/text.h"

static void redact(char *buf, size_t cap, const char *text, const char *a, const char *b)
{
    const char *secrets[2] = {a, b};
    snprintf(buf, cap, "%s", text);
    gp_redact_in_place(buf, cap, secrets, 2);
}

static void test_cases(void)
{
    char b[128];
    redact(b, sizeof b, "key k3y in k3y.", "k3y", NULL);
    CHECK_STR(b, "key <redacted> in <redacted>.");
    redact(b, sizeof b, "aa aaaa", "aa", NULL);
    CHECK_STR(b, "<redacted> <redacted>");
    /* Parts of longer words stay: a short key mangles no message. */
    redact(b, sizeof b, "aaaaa", "aa", NULL);
    CHECK_STR(b, "aaaaa");
    redact(b, sizeof b, "check the key k, (k) and k3 or k_ or ks", "k", NULL);
    CHECK_STR(b, "check the key <redacted>, (<redacted>) and k3 or k_ or ks");
    redact(b, sizeof b, "ftp://host/gpfl_k3y?x=gpfl_k3y&gpfl_k3yz", "gpfl_k3y", NULL);
    CHECK_STR(b, "ftp://host/<redacted>?x=<redacted>&gpfl_k3yz");
    redact(b, sizeof b, "--timeout 'gpfl-k3y-1' is not a number", "gpfl-k3y-1", NULL);
    CHECK_STR(b, "--timeout '<redacted>' is not a number");
    /* A secret whose end is no word byte is whole wherever it stands. */
    redact(b, sizeof b, "a-b--c", "--", NULL);
    CHECK_STR(b, "a-b<redacted>c");
    redact(b, sizeof b, "caf\xc3\xa9 \xc3\xa9", "\xc3\xa9", NULL);
    CHECK_STR(b, "caf\xc3\xa9 <redacted>");
    redact(b, sizeof b, "x abc y abcd z", "abc", "abcd");
    CHECK_STR(b, "x <redacted> y <redacted> z");
    redact(b, sizeof b, "nothing here", "", NULL);
    CHECK_STR(b, "nothing here");
    redact(b, sizeof b, "nothing here", "k3y", NULL);
    CHECK_STR(b, "nothing here");
    /* A secret that could be made with the mask's ends: another mask. */
    redact(b, sizeof b, "a y>x b", "y>x", NULL);
    CHECK_STR(b, "a !!! b");
    redact(b, sizeof b, "the act", "act", NULL);
    CHECK_STR(b, "the !!!");
    redact(b, sizeof b, "! and act", "act", "!");
    CHECK_STR(b, "\"\"\" and \"\"\"");
    /* Truncated to the buffer, never past it. */
    char small[12];
    redact(small, sizeof small, "ab ab ab", "ab", NULL);
    CHECK_STR(small, "<redacted> ");
    /* True only when a secret was there. */
    const char *s1[1] = {"zz"};
    char t[16] = "no secret";
    CHECK(!gp_redact_in_place(t, sizeof t, s1, 1));
    CHECK(gp_redact_in_place(strcpy(t, "a zz"), sizeof t, s1, 1));
}

/* A secret that holds every byte leaves no mask: pieces are joined, and
 * redacted again until none is left ("a--b": "--" goes, then "ab" is a
 * whole word of its own). */
static void test_every_byte(void)
{
    char every[256];
    for (int i = 1; i < 256; i++)
        every[i - 1] = (char)i;
    every[255] = '\0';
    const char *secrets[3] = {every, "ab", "--"};
    char b[64] = "a--b";
    CHECK(gp_redact_in_place(b, sizeof b, secrets, 3));
    CHECK_STR(b, "");
    strcpy(b, "aabb");
    CHECK(!gp_redact_in_place(b, sizeof b, secrets, 3));
    CHECK_STR(b, "aabb");
}

static void append(void *ctx, const char *p, size_t n)
{
    char *out = ctx;
    size_t len = strlen(out);
    memcpy(out + len, p, n);
    out[len + n] = '\0';
}

/* Every ASCII byte alone between quotes: the one-letter escapes, \u00XX
 * for the other controls and DEL, the rest as it is; then a stray
 * continuation byte. */
static void test_json_quote(void)
{
    for (unsigned c = 0; c < 0x80; c++) {
        char got[16] = "", want[16];
        char in = (char)c;
        gp_json_quote(&in, 1, append, got);
        const char *letters = "\"\"\\\\\bb\ff\nn\rr\tt";
        const char *l = c ? strchr(letters, (int)c) : NULL;
        if (l && (l - letters) % 2 == 0)
            snprintf(want, sizeof want, "\"\\%c\"", l[1]);
        else if (c < 0x20 || c == 0x7F)
            snprintf(want, sizeof want, "\"\\u%04x\"", c);
        else
            snprintf(want, sizeof want, "\"%c\"", (int)c);
        CHECK_STR(got, want);
    }
    /* The edges of each lead byte's second byte (Unicode's table 3-7). */
    static const struct {
        const char *s;
        size_t len;
    } seq[] = {
        {"\xc1\xbf", 0},         {"\xc2\x80", 2},         {"\xdf\xc0", 0},
        {"\xe0\x9f\xbf", 0},     {"\xe0\xa0\x80", 3},     {"\xed\x9f\xbf", 3},
        {"\xed\xa0\x80", 0},     {"\xee\x80\x7f", 0},     {"\xf0\x8f\xbf\xbf", 0},
        {"\xf0\x90\x80\x80", 4}, {"\xf4\x8f\xbf\xbf", 4}, {"\xf4\x90\x80\x80", 0},
        {"\xf5\x80\x80\x80", 0}, {"\xe1\x80", 0},
    };
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
        CHECK_INT(gp_utf8_len((const unsigned char *)seq[i].s, strlen(seq[i].s)), seq[i].len);
    char got[32] = "";
    gp_json_quote("a\x80\xc3\xa9", 4, append, got);
    CHECK_STR(got, "\"a\\ufffd\xc3\xa9\"");
}

int main(void)
{
    test_json_quote();
    test_cases();
    test_every_byte();
    return check_done("test_redact");
}
