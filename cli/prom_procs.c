/*
 * prom_procs.c - the per-process series of `gpu-profile serve --processes`
 * (serve.c): per GPU, gpu_profile_processes (how many), and for the top
 * --processes-max by memory gpu_profile_process_memory_bytes and
 * gpu_profile_process_sm_util_percent, labelled with the GPU's
 * dcgm-exporter labels (prom.c) plus pid, process_name, container_id and
 * pod_uid (from PROC/PID/comm and PROC/PID/cgroup: docker, containerd,
 * cri-o, podman and kubepods, cgroup v1 and v2 paths).
 *
 * Promises: the processes past the top N are summed into one pid="other"
 * line per family (memory only when every one's memory is known, SM share
 * only when every one's share is), so a scrape has at most N + 1 lines per
 * GPU and family; a label that cannot be read is left out (a process in
 * another PID namespace, one that just ended), a value that is unknown has
 * no line (never a 0); a GPU whose sample is stale or whose list the driver
 * refused has none of these lines.  Reads only /proc files, no NVML call.
 */
#include "cli.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CID_MAX 72 /* 64 hex digits and room */
#define POD_MAX 40 /* a UUID */

/* What /proc tells of one process ("" unknown). */
typedef struct proc_labels {
    char name[64], container_id[CID_MAX], pod_uid[POD_MAX];
} proc_labels;

/* Whether s[0..n) is n >= min hex digits. */
static bool all_hex(const char *s, size_t n, size_t min)
{
    if (n < min)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

static void put_id(char *dst, size_t cap, const char *s, size_t n, bool dashes)
{
    if (n >= cap)
        return;
    for (size_t i = 0; i < n; i++)
        dst[i] = dashes && s[i] == '_' ? '-' : s[i];
    dst[n] = '\0';
}

/* A UUID as the kubelet writes it into a cgroup name: 32 hex digits with
 * dashes (cgroupfs) or underscores (systemd). */
static bool is_pod_uid(const char *s, size_t n)
{
    if (n < 32 || n >= POD_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
            return false;
    return true;
}

/* One path component of a cgroup path: a container's id (the innermost
 * wins: the caller goes outwards in) or a pod's UID. */
static void component(const char *c, size_t n, proc_labels *l)
{
    static const char *const scopes[] = {"docker-", "cri-containerd-", "crio-", "libpod-",
                                         "containerd-"};
    const char *dot = n > 6 && memcmp(c + n - 6, ".scope", 6) == 0 ? c + n - 6 : NULL;
    for (size_t k = 0; dot && k < sizeof scopes / sizeof scopes[0]; k++) {
        size_t p = strlen(scopes[k]);
        if (n > p + 6 && memcmp(c, scopes[k], p) == 0 && all_hex(c + p, (size_t)(dot - c) - p, 12))
            put_id(l->container_id, sizeof l->container_id, c + p, (size_t)(dot - c) - p, false);
    }
    if (n == 64 && all_hex(c, n, 64)) /* cgroupfs: /docker/<id>, /kubepods/.../pod<uid>/<id> */
        put_id(l->container_id, sizeof l->container_id, c, n, false);
    if (n > 3 && memcmp(c, "pod", 3) == 0 && is_pod_uid(c + 3, n - 3)) /* cgroupfs */
        put_id(l->pod_uid, sizeof l->pod_uid, c + 3, n - 3, true);
    const char *pod = n > 6 && memcmp(c + n - 6, ".slice", 6) == 0 ? strstr(c, "-pod") : NULL;
    if (pod && pod < c + n - 6 && is_pod_uid(pod + 4, (size_t)(c + n - 6 - (pod + 4))))
        put_id(l->pod_uid, sizeof l->pod_uid, pod + 4, (size_t)(c + n - 6 - (pod + 4)), true);
}

/* The container and pod of a cgroup file's lines ("ID:CONTROLLERS:PATH",
 * v1 one per hierarchy, v2 "0::PATH"). */
static void cgroup_parse(const char *text, char *container_id, size_t cid_cap, char *pod_uid,
                         size_t pod_cap)
{
    proc_labels l = {{0}};
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *c1 = memchr(line, ':', len);
        const char *path = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (path) {
            path++;
            const char *stop = line + len;
            while (path < stop) {
                const char *slash = memchr(path, '/', (size_t)(stop - path));
                const char *ce = slash ? slash : stop;
                if (ce > path)
                    component(path, (size_t)(ce - path), &l);
                path = ce + 1;
            }
        }
        line = end ? end + 1 : NULL;
    }
    snprintf(container_id, cid_cap, "%s", l.container_id);
    snprintf(pod_uid, pod_cap, "%s", l.pod_uid);
}

/* A small /proc file, whole; NULL when it cannot be read. */
static char *slurp(const char *root, int32_t pid, const char *what, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%" PRId32 "/%s", root, pid, what);
    FILE *f = fopen(path, "r");
    char *buf = f ? malloc(cap) : NULL;
    size_t n = buf ? fread(buf, 1, cap - 1, f) : 0;
    if (f)
        fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static void read_labels(const char *root, int32_t pid, proc_labels *l)
{
    memset(l, 0, sizeof *l);
    char *comm = slurp(root, pid, "comm", sizeof l->name);
    if (comm) {
        comm[strcspn(comm, "\n")] = '\0';
        /* A label value must be UTF-8; a name is any bytes the process chose. */
        for (char *c = comm; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                *c = '?';
        snprintf(l->name, sizeof l->name, "%s", comm);
        free(comm);
    }
    char *cg = slurp(root, pid, "cgroup", 16384);
    if (cg)
        cgroup_parse(cg, l->container_id, sizeof l->container_id, l->pod_uid, sizeof l->pod_uid);
    free(cg);
}

/* Most memory first (an unknown amount last), then the lower PID. */
static int by_memory(const void *a, const void *b)
{
    const gp_process_use *x = a, *y = b;
    if (x->mem_known != y->mem_known)
        return x->mem_known ? -1 : 1;
    if (x->mem_known && x->mem_used_bytes != y->mem_used_bytes)
        return x->mem_used_bytes > y->mem_used_bytes ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

enum { F_COUNT, F_MEM, F_SM, F_N };
static const char *const fam[F_N][2] = {
    {"gpu_profile_processes", "Compute processes using the GPU (NVML's list)."},
    {"gpu_profile_process_memory_bytes", "GPU memory used by the process (in bytes)."},
    {"gpu_profile_process_sm_util_percent",
     "The process's share of the SMs over the driver's newest sample (in %)."},
};

static void line(fl_buf *b, int f, bool *head, const cli_prom_device *d, const char *host,
                 const char *driver)
{
    if (!*head)
        fl_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", fam[f][0], fam[f][1], fam[f][0]);
    *head = true;
    fl_buf_puts(b, fam[f][0]);
    cli_prom_labels_open(b, d, host, driver);
}

static void proc_line(fl_buf *b, int f, bool *head, const cli_prom_device *d, const char *host,
                      const char *driver, const gp_process_use *u, const proc_labels *l)
{
    line(b, f, head, d, host, driver);
    fl_buf_printf(b, ",pid=\"%" PRId32 "\"", u->pid);
    const char *names[] = {"process_name", "container_id", "pod_uid"};
    const char *vals[] = {l->name, l->container_id, l->pod_uid};
    for (int k = 0; k < 3; k++)
        if (vals[k][0]) {
            fl_buf_printf(b, ",%s=\"", names[k]);
            cli_prom_label_value(b, vals[k]);
            fl_buf_puts(b, "\"");
        }
    if (f == F_MEM)
        fl_buf_printf(b, "} %" PRIu64 "\n", u->mem_used_bytes);
    else
        fl_buf_printf(b, "} %" PRIu32 "\n", u->sm_pct);
}

/* One family over every device; the processes are sorted already. */
static void family(fl_buf *b, int f, const cli_prom_device *devs, size_t n, const char *host,
                   const char *driver, size_t max, const char *root)
{
    bool head = false;
    for (size_t i = 0; i < n; i++) {
        const cli_prom_device *d = &devs[i];
        if (!d->procs_have)
            continue;
        if (f == F_COUNT) {
            line(b, f, &head, d, host, driver);
            fl_buf_printf(b, "} %zu\n", d->n_procs);
            continue;
        }
        uint64_t rest = 0;
        bool rest_known = true;
        for (size_t k = 0; k < d->n_procs; k++) {
            const gp_process_use *u = &d->procs[k];
            bool known = f == F_MEM ? u->mem_known : u->sm_known;
            if (k >= max) {
                rest += f == F_MEM ? u->mem_used_bytes : u->sm_pct;
                rest_known = rest_known && known;
            } else if (known) {
                proc_labels l;
                read_labels(root, u->pid, &l);
                proc_line(b, f, &head, d, host, driver, u, &l);
            }
        }
        if (d->n_procs > max && rest_known) {
            line(b, f, &head, d, host, driver);
            fl_buf_printf(b, ",pid=\"other\"} %" PRIu64 "\n", rest);
        }
    }
}

void cli_prom_format_procs(fl_buf *b, cli_prom_device *devs, size_t n, const char *host,
                           const char *driver, size_t max, const char *proc_root,
                           uint64_t now_wall_ns, uint64_t stale_ns)
{
    for (size_t i = 0; i < n; i++) {
        const gp_sample *sm = &devs[i].sample;
        bool stale = now_wall_ns > sm->t_wall_ns && now_wall_ns - sm->t_wall_ns > stale_ns;
        if (!devs[i].have || stale || devs[i].amd)
            devs[i].procs_have = false;
        if (devs[i].procs_have)
            qsort(devs[i].procs, devs[i].n_procs, sizeof devs[i].procs[0], by_memory);
    }
    for (int f = 0; f < F_N; f++)
        family(b, f, devs, n, host, driver, max, proc_root ? proc_root : "/proc");
}
