/*
 * test_cli_serve_procs.c - `gpu-profile serve --processes` over the fake
 * NVML and a fake /proc (GPU_PROFILE_TEST_PROC_ROOT):
 *
 *  - GPU 0 with 3 processes (docker cgroup v1, kubepods v2 with
 *    cri-containerd, no container), GPU 1 with 3 (kubepods v1 cgroupfs,
 *    cri-o under a kubepods v2 slice, one absent from /proc whose memory
 *    NVML cannot tell): the exact exposition lines, memory sorted, labels
 *    from comm (a byte that is not ASCII shown as '?': labels are UTF-8)
 *    and cgroup, no memory line for the unknown amount;
 *  - GPU 1 refuses utilisation sampling: no SM share line (never a 0);
 *  - --processes-max 1: the top process and one pid="other" line summing
 *    the rest, none where one of the rest is unknown;
 *  - promtool check metrics on the output;
 *  - bad values exit 125 naming the option; without --processes no line.
 */
#include "harness.h"
#include "serve_http.h"

#include <stdbool.h>
#include <sys/stat.h>

#define HEX64_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX64_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define HEX64_C "aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbccccccccccccccccdddddddddddddddd"
#define HEX64_D "1111111111111111222222222222222233333333333333334444444444444444"
#define POD_V2 "6f2d7a7e_3b6c_4d2e_9a1b_0c2d3e4f5a6b"
#define POD_V2_UID "6f2d7a7e-3b6c-4d2e-9a1b-0c2d3e4f5a6b"
#define POD_V1_UID "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
#define POD_CRIO "11111111_2222_3333_4444_555555555555"
#define POD_CRIO_UID "11111111-2222-3333-4444-555555555555"

static const char *g_procs =
    "device 0 name \"Fake GPU A\" uuid GPU-00000000-0000-0000-0000-0000000000b0\n"
    "device 1 name \"Fake GPU B\" uuid GPU-00000000-0000-0000-0000-0000000000b1\n"
    "driver_version 580.65.06\n"
    "proc 0 4101 mem 2147483648 sm 30\n"
    "proc 0 4102 mem 1073741824 sm 50\n"
    "proc 0 4104 mem 536870912 sm 5\n"
    "proc 1 4103 mem 268435456 sm 7\n"
    "proc 1 4106 mem 1048576 sm 1\n"
    "proc 1 4105 mem -1 sm 12\n"
    "unsupported 1 proc_util\n";

/* The fake /proc: comm and cgroup of each process (4105 has none). */
static void fake_proc(const char *root)
{
    static const struct {
        const char *pid, *comm, *cgroup;
    } p[] = {
        {"4101", "python3\n", "12:devices:/docker/" HEX64_A "\n11:memory:/docker/" HEX64_A "\n"},
        {"4102", "trainer\n",
         "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_V2
         ".slice/cri-containerd-" HEX64_B ".scope\n"},
        {"4104",
         "b\xff"
         "ash\n",
         "0::/user.slice/user-1000.slice/session-3.scope\n"},
        {"4103", "infer \"v2\"\n",
         "5:memory:/kubepods/burstable/pod" POD_V1_UID "/" HEX64_C "\n"
         "4:cpu,cpuacct:/kubepods/burstable/pod" POD_V1_UID "/" HEX64_C "\n"},
        {"4106", "crio-job\n",
         "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_CRIO
         ".slice/crio-" HEX64_D ".scope\n"},
    };
    mkdir(root, 0700);
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s", root, p[i].pid);
        mkdir(path, 0700);
        snprintf(path, sizeof path, "%s/%s/comm", root, p[i].pid);
        h_write_file(path, p[i].comm, strlen(p[i].comm));
        snprintf(path, sizeof path, "%s/%s/cgroup", root, p[i].pid);
        h_write_file(path, p[i].cgroup, strlen(p[i].cgroup));
    }
}

/* The GPU labels of device i as serve writes them, closing quote included. */
static void gpu_labels(char *out, size_t cap, int i, const char *host)
{
    snprintf(out, cap,
             "{gpu=\"%d\",UUID=\"GPU-00000000-0000-0000-0000-0000000000b%d\","
             "pci_bus_id=\"00000000:0%d:00.0\",device=\"nvidia%d\",modelName=\"Fake GPU %c\","
             "Hostname=\"%s\",DCGM_FI_DRIVER_VERSION=\"580.65.06\"",
             i, i, 7 + i, i, 'A' + i, host);
}

/* serve with args (NULL-ended, after --interval), one scrape's body into
 * a, then SIGTERM. */
static void scrape(const char *const *args, char *a, size_t cap, const char *tag)
{
    char err[512], out[512], name[128];
    snprintf(name, sizeof name, "%s.out", tag);
    h_path(out, sizeof out, name);
    snprintf(name, sizeof name, "%s.err", tag);
    h_path(err, sizeof err, name);
    const char *argv[16] = {h_cli, "serve", "--listen", "127.0.0.1:0", "--interval", "0.05"};
    size_t n = 6;
    for (size_t i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = h_spawn(argv, NULL, NULL, out, err);
    CHECK(h_wait_for(cond_port, err, 20));
    int port = read_port(err);
    a[0] = '\0';
    if (port > 0)
        CHECK_INT(get(port, "GET", "/metrics", a, cap), 200);
    kill(pid, SIGTERM);
    int st = h_wait(pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

/* The body from the first process family on. */
static const char *procs_part(const char *a)
{
    const char *at = strstr(body_of(a), "# HELP gpu_profile_processes ");
    return at ? at : "";
}

static void test_exposition(const char *host)
{
    char g0[512], g1[512];
    gpu_labels(g0, sizeof g0, 0, host);
    gpu_labels(g1, sizeof g1, 1, host);
    static char a[1 << 16], want[1 << 14];
    const char *args[] = {"--processes", NULL};
    scrape(args, a, sizeof a, "procs");
    snprintf(want, sizeof want,
             "# HELP gpu_profile_processes Compute processes using the GPU (NVML's list).\n"
             "# TYPE gpu_profile_processes gauge\n"
             "gpu_profile_processes%s} 3\n"
             "gpu_profile_processes%s} 3\n"
             "# HELP gpu_profile_process_memory_bytes GPU memory used by the process (in bytes).\n"
             "# TYPE gpu_profile_process_memory_bytes gauge\n"
             "gpu_profile_process_memory_bytes%s,pid=\"4101\",process_name=\"python3\","
             "container_id=\"" HEX64_A "\"} 2147483648\n"
             "gpu_profile_process_memory_bytes%s,pid=\"4102\",process_name=\"trainer\","
             "container_id=\"" HEX64_B "\",pod_uid=\"" POD_V2_UID "\"} 1073741824\n"
             "gpu_profile_process_memory_bytes%s,pid=\"4104\",process_name=\"b?ash\"} 536870912\n"
             "gpu_profile_process_memory_bytes%s,pid=\"4103\",process_name=\"infer \\\"v2\\\"\","
             "container_id=\"" HEX64_C "\",pod_uid=\"" POD_V1_UID "\"} 268435456\n"
             "gpu_profile_process_memory_bytes%s,pid=\"4106\",process_name=\"crio-job\","
             "container_id=\"" HEX64_D "\",pod_uid=\"" POD_CRIO_UID "\"} 1048576\n"
             "# HELP gpu_profile_process_sm_util_percent The process's share of the SMs over the "
             "driver's newest sample (in %%).\n"
             "# TYPE gpu_profile_process_sm_util_percent gauge\n"
             "gpu_profile_process_sm_util_percent%s,pid=\"4101\",process_name=\"python3\","
             "container_id=\"" HEX64_A "\"} 30\n"
             "gpu_profile_process_sm_util_percent%s,pid=\"4102\",process_name=\"trainer\","
             "container_id=\"" HEX64_B "\",pod_uid=\"" POD_V2_UID "\"} 50\n"
             "gpu_profile_process_sm_util_percent%s,pid=\"4104\",process_name=\"b?ash\"} 5\n",
             g0, g1, g0, g0, g0, g1, g1, g0, g0, g0);
    CHECK_STR(procs_part(a), want);
    /* promtool: the whole exposition parses (lint advice aside). */
    if (system("command -v promtool >/dev/null 2>&1") == 0) {
        char path[512], out[512], cmd[1200];
        h_path(path, sizeof path, "procs-metrics.txt");
        h_path(out, sizeof out, "procs-promtool.out");
        h_write_file(path, body_of(a), strlen(body_of(a)));
        snprintf(cmd, sizeof cmd, "promtool check metrics < %s > %s 2>&1", path, out);
        int st = system(cmd);
        CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3));
        char *text = check_read_file(out, NULL);
        for (char *l = text ? strtok(text, "\n") : NULL; l; l = strtok(NULL, "\n"))
            if (!strstr(l, "snake_case") && !strstr(l, "counter metrics should have"))
                CHECK_STR(l, "");
        free(text);
    } else {
        printf("promtool: skipped: no promtool (Debian package prometheus)\n");
    }
}

static void test_top_n(const char *host)
{
    char g0[512], g1[512];
    gpu_labels(g0, sizeof g0, 0, host);
    gpu_labels(g1, sizeof g1, 1, host);
    static char a[1 << 16], want[1 << 14];
    const char *args[] = {"--processes", "--processes-max", "1", NULL};
    scrape(args, a, sizeof a, "procs-top");
    snprintf(want, sizeof want,
             "# HELP gpu_profile_processes Compute processes using the GPU (NVML's list).\n"
             "# TYPE gpu_profile_processes gauge\n"
             "gpu_profile_processes%s} 3\n"
             "gpu_profile_processes%s} 3\n"
             "# HELP gpu_profile_process_memory_bytes GPU memory used by the process (in "
             "bytes).\n"
             "# TYPE gpu_profile_process_memory_bytes gauge\n"
             "gpu_profile_process_memory_bytes%s,pid=\"4101\",process_name=\"python3\","
             "container_id=\"" HEX64_A "\"} 2147483648\n"
             "gpu_profile_process_memory_bytes%s,pid=\"other\"} 1610612736\n"
             "gpu_profile_process_memory_bytes%s,pid=\"4103\",process_name=\"infer \\\"v2\\\"\","
             "container_id=\"" HEX64_C "\",pod_uid=\"" POD_V1_UID "\"} 268435456\n"
             "# HELP gpu_profile_process_sm_util_percent The process's share of the SMs over the "
             "driver's newest sample (in %%).\n"
             "# TYPE gpu_profile_process_sm_util_percent gauge\n"
             "gpu_profile_process_sm_util_percent%s,pid=\"4101\",process_name=\"python3\","
             "container_id=\"" HEX64_A "\"} 30\n"
             "gpu_profile_process_sm_util_percent%s,pid=\"other\"} 55\n",
             g0, g1, g0, g0, g1, g0, g0);
    CHECK_STR(procs_part(a), want);
}

static void test_options(void)
{
    static char a[1 << 16];
    const char *none[] = {NULL};
    scrape(none, a, sizeof a, "procs-off");
    CHECK(strstr(a, "DCGM_FI_DEV_GPU_UTIL{") != NULL);
    CHECK(strstr(a, "gpu_profile_process") == NULL);
    const char *bad[][4] = {
        {"--processes", "--processes-max", "0",
         "serve: --processes-max '0' is not a whole number from 1 to 256"},
        {"--processes", "--processes-max", "2.5",
         "serve: --processes-max '2.5' is not a whole number from 1 to 256"},
        {"--processes", "--processes-max", "x",
         "serve: --processes-max 'x' is not a whole number from 1 to 256"},
        {"--processes-max", "3", NULL, "serve: --processes-max needs --processes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[] = {h_cli, "serve", bad[i][0], bad[i][1], bad[i][2], NULL};
        h_result r;
        h_run(args, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 125);
        CHECK_CONTAINS(r.err, bad[i][3]);
        h_result_free(&r);
    }
    /* A backend that cannot list processes: 1, saying so. */
    const char *smi[] = {h_cli, "serve", "--processes", "--backend", "none", NULL};
    h_result r;
    h_run(smi, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "serve: the none backend cannot list the processes on a GPU (NVML can)");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    char root[512], host[256] = "";
    h_path(root, sizeof root, "proc");
    fake_proc(root);
    setenv("GPU_PROFILE_TEST_PROC_ROOT", root, 1);
    gethostname(host, sizeof host - 1);
    h_scenario(g_procs);
    test_exposition(host);
    test_top_n(host);
    test_options();
    h_cleanup();
    return check_done("test_cli_serve_procs");
}
