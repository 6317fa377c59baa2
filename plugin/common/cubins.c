/*
 * cubins.c - the loaded cubins, kept for source correlation.
 *
 * Promises: the module-load callback only copies bytes under a mutex (no
 * CUPTI call: CUPTI holds its own locks there); the copies stay within
 * FL_PCS_CUBIN_BYTES_MAX in all, a cubin beyond it is counted, not kept,
 * and one seen twice (the same bytes at the same address) is kept once;
 * CRCs (cuptiGetCubinCrc, the value CUPTI's PC records carry) are worked
 * out on the writer thread, once per cubin, the first time a CRC is looked
 * up (whether a cubin has line information is read from its ELF sections
 * at the copy); a copy is freed only by
 * fl_cubin_reset, so a lookup uses it outside the mutex.
 */
#include "cubins.h"

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CUBINS 4096u

typedef struct cubin {
    const void *src; /* where CUDA had it (to skip a second callback) */
    uint8_t *p;
    size_t bytes;
    uint64_t crc;
    bool crc_done, lines;
} cubin;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static cubin cubins[MAX_CUBINS];
static size_t n_cubins;
static uint64_t bytes_kept;
static uint32_t n_over, n_no_lines;

void fl_cubin_keep(const void *src, size_t bytes)
{
    if (!src || bytes == 0)
        return;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n_cubins; i++)
        if (cubins[i].src == src && cubins[i].bytes == bytes &&
            memcmp(cubins[i].p, src, bytes < 64 ? bytes : 64) == 0) {
            pthread_mutex_unlock(&mu);
            return;
        }
    uint8_t *copy = NULL;
    if (n_cubins < MAX_CUBINS && bytes_kept + bytes <= FL_PCS_CUBIN_BYTES_MAX)
        copy = malloc(bytes);
    if (!copy) {
        n_over++;
        pthread_mutex_unlock(&mu);
        return;
    }
    memcpy(copy, src, bytes);
    bool lines = fl_cubin_has_lines(copy, bytes);
    cubins[n_cubins++] = (cubin){.src = src, .p = copy, .bytes = bytes, .lines = lines};
    bytes_kept += bytes;
    n_no_lines += lines ? 0 : 1;
    pthread_mutex_unlock(&mu);
}

/* --------------------------------------------------------------- ELF */

static uint64_t rd(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

bool fl_cubin_has_lines(const void *elf, size_t bytes)
{
    const uint8_t *e = elf;
    /* ELF64, little-endian: cubins are. */
    if (!e || bytes < 64 || memcmp(e, "\177ELF", 4) != 0 || e[4] != 2 || e[5] != 1)
        return false;
    uint64_t shoff = rd(e + 0x28, 8);
    uint64_t shentsize = rd(e + 0x3a, 2), shnum = rd(e + 0x3c, 2), shstrndx = rd(e + 0x3e, 2);
    if (shentsize < 64 || shnum == 0 || shstrndx >= shnum || shoff > bytes ||
        shnum * shentsize > bytes - shoff)
        return false;
    const uint8_t *strsh = e + shoff + shstrndx * shentsize;
    uint64_t str_off = rd(strsh + 0x18, 8), str_size = rd(strsh + 0x20, 8);
    if (str_off > bytes || str_size > bytes - str_off)
        return false;
    const char *names = (const char *)e + str_off;
    for (uint64_t i = 0; i < shnum; i++) {
        uint64_t name = rd(e + shoff + i * shentsize, 4);
        if (name >= str_size)
            continue;
        const char *n = names + name;
        size_t room = (size_t)(str_size - name);
        if (strnlen(n, room) < room &&
            (strcmp(n, ".debug_line") == 0 || strcmp(n, ".nv_debug_line_sass") == 0))
            return true;
    }
    return false;
}

/* The bounds-checked section header i of e (NULL when out of range). */
static const uint8_t *section(const uint8_t *e, size_t bytes, uint64_t i)
{
    uint64_t shoff = rd(e + 0x28, 8), shentsize = rd(e + 0x3a, 2), shnum = rd(e + 0x3c, 2);
    if (shentsize < 64 || i >= shnum || shoff > bytes || shnum * shentsize > bytes - shoff)
        return NULL;
    return e + shoff + i * shentsize;
}

bool fl_cubin_symbol(const void *elf, size_t bytes, const char *name, uint32_t *index)
{
    const uint8_t *e = elf;
    if (!e || !name || bytes < 64 || memcmp(e, "\177ELF", 4) != 0 || e[4] != 2 || e[5] != 1)
        return false;
    uint64_t shnum = rd(e + 0x3c, 2);
    size_t nl = strlen(name);
    for (uint64_t i = 0; i < shnum; i++) {
        const uint8_t *sh = section(e, bytes, i);
        if (!sh || rd(sh + 4, 4) != 2 /* SHT_SYMTAB */)
            continue;
        const uint8_t *strsh = section(e, bytes, rd(sh + 0x28, 4));
        uint64_t off = rd(sh + 0x18, 8), size = rd(sh + 0x20, 8), ent = rd(sh + 0x38, 8);
        if (!strsh || ent < 24 || off > bytes || size > bytes - off)
            continue;
        uint64_t str_off = rd(strsh + 0x18, 8), str_size = rd(strsh + 0x20, 8);
        if (str_off > bytes || str_size > bytes - str_off)
            continue;
        for (uint64_t k = 0; k < size / ent && k <= UINT32_MAX; k++) {
            const uint8_t *sym = e + off + k * ent;
            uint64_t at = rd(sym, 4);
            if ((sym[4] & 0xf) != 2 /* STT_FUNC */ || at >= str_size || str_size - at <= nl)
                continue;
            const char *n = (const char *)e + str_off + at;
            if (memcmp(n, name, nl) == 0 && n[nl] == '\0') {
                *index = (uint32_t)k;
                return true;
            }
        }
    }
    return false;
}

/* ------------------------------------------------------------- lookup */

/* CRCs of the cubins that have none yet (writer thread, mu not held
 * during CUPTI's call: the copies are never freed but by reset). */
static void compute_crcs(void)
{
    pthread_mutex_lock(&mu);
    size_t n = n_cubins;
    pthread_mutex_unlock(&mu);
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&mu);
        bool done = cubins[i].crc_done;
        uint8_t *p = cubins[i].p;
        size_t bytes = cubins[i].bytes;
        pthread_mutex_unlock(&mu);
        if (done)
            continue;
        CUpti_GetCubinCrcParams c;
        memset(&c, 0, sizeof c);
        c.size = CUpti_GetCubinCrcParamsSize;
        c.cubin = p;
        c.cubinSize = bytes;
        uint64_t crc = cuptiGetCubinCrc(&c) == CUPTI_SUCCESS ? c.cubinCrc : 0;
        pthread_mutex_lock(&mu);
        cubins[i].crc = crc;
        cubins[i].crc_done = true;
        pthread_mutex_unlock(&mu);
    }
}

/* A CRC matches a cubin's; one of 32 bits (the SASS metrics API's
 * cubinCrc) matches the low half of CUPTI's 64-bit value. */
static bool crc_is(const cubin *c, uint64_t crc)
{
    return c->crc == crc || (crc <= 0xffffffffu && (c->crc & 0xffffffffu) == crc);
}

static const cubin *find(uint64_t crc)
{
    const cubin *hit = NULL;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n_cubins && !hit; i++)
        if (cubins[i].crc_done && crc_is(&cubins[i], crc))
            hit = &cubins[i];
    bool pending = false;
    for (size_t i = 0; i < n_cubins && !hit && !pending; i++)
        pending = !cubins[i].crc_done;
    pthread_mutex_unlock(&mu);
    if (hit || !pending)
        return hit;
    compute_crcs();
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n_cubins && !hit; i++)
        if (crc_is(&cubins[i], crc))
            hit = &cubins[i];
    pthread_mutex_unlock(&mu);
    return hit;
}

bool fl_cubin_line(uint64_t crc, const char *fn, uint64_t pc_offset, char *file, size_t cap,
                   uint32_t *line)
{
    *line = 0;
    if (cap)
        file[0] = '\0';
    const cubin *c = crc && fn ? find(crc) : NULL;
    if (!c || !c->lines)
        return false;
    CUpti_GetSassToSourceCorrelationParams q;
    memset(&q, 0, sizeof q);
    q.size = CUpti_GetSassToSourceCorrelationParamsSize;
    q.cubin = c->p;
    q.cubinSize = c->bytes;
    q.functionName = fn;
    q.pcOffset = pc_offset;
    if (cuptiGetSassToSourceCorrelation(&q) != CUPTI_SUCCESS)
        return false;
    bool ok = q.fileName && q.fileName[0] && q.lineNumber > 0;
    if (ok && cap) {
        size_t dl = q.dirName ? strlen(q.dirName) : 0;
        if (dl)
            snprintf(file, cap, "%s%s%s", q.dirName, q.dirName[dl - 1] == '/' ? "" : "/",
                     q.fileName);
        else
            snprintf(file, cap, "%s", q.fileName);
        *line = q.lineNumber;
    }
    /* CUPTI allocates both strings for the caller. */
    free(q.fileName);
    free(q.dirName);
    return ok;
}

const void *fl_cubin_bytes(uint64_t crc, size_t *bytes)
{
    const cubin *c = crc ? find(crc) : NULL;
    *bytes = c ? c->bytes : 0;
    return c ? c->p : NULL;
}

void fl_cubin_stats(fl_trace_stats *out)
{
    pthread_mutex_lock(&mu);
    out->cubins = (uint32_t)n_cubins;
    out->cubins_no_lines = n_no_lines;
    out->cubins_over = n_over;
    out->cubin_bytes = bytes_kept;
    pthread_mutex_unlock(&mu);
}

void fl_cubin_reset(void)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n_cubins; i++)
        free(cubins[i].p);
    memset(cubins, 0, n_cubins * sizeof *cubins);
    n_cubins = 0;
    bytes_kept = 0;
    n_over = n_no_lines = 0;
    pthread_mutex_unlock(&mu);
}
