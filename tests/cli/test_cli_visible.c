/*
 * test_cli_visible.c - the device-list rules of cli/visible.c, without a
 * process: --device syntax (indices only or with UUIDs, each mistake named),
 * --device resolved strictly (a wrong entry is an error), and
 * CUDA_VISIBLE_DEVICES under CUDA's rules (the first entry that names no
 * device ends the list; a MIG instance the backend does not list is left
 * out with a note; empty means no GPU), and MIG UUIDs resolved against a
 * list with MIG instances.
 */
#include "check.h"
#include "cli.h"
#include "gpu_profile.h"

static gp_device_info devs[3];

static void setup(void)
{
    static const char *uuids[] = {"GPU-aaaaaaaa-0000-0000-0000-000000000000",
                                  "GPU-bbbbbbbb-1111-1111-1111-111111111111",
                                  "GPU-bbbbcccc-2222-2222-2222-222222222222"};
    for (unsigned i = 0; i < 3; i++) {
        devs[i].index = i;
        snprintf(devs[i].name, sizeof devs[i].name, "Fake %u", i);
        snprintf(devs[i].uuid, sizeof devs[i].uuid, "%s", uuids[i]);
    }
}

/* Resolves and renders the list as "2,0" for compact checks. */
static int resolve(const char *spec, enum cli_list_rule rule, char *list, size_t list_len,
                   char *msg, size_t msg_len)
{
    unsigned out[CLI_MAX_DEVICES];
    size_t n = 0;
    int rc = cli_list_resolve(spec, rule, devs, 3, out, CLI_MAX_DEVICES, &n, msg, msg_len);
    list[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(list);
        snprintf(list + used, list_len - used, "%s%u", i ? "," : "", out[i]);
    }
    return rc;
}

static void test_syntax(void)
{
    unsigned out[CLI_MAX_DEVICES];
    size_t n = 0;
    char msg[512];
    CHECK_INT(cli_list_indices_only("0", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), 1);
    CHECK_INT(n, 1);
    CHECK_INT(cli_list_indices_only(" 3 , 1", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), 1);
    CHECK_INT(n, 2);
    CHECK_INT(out[0], 3);
    CHECK_INT(out[1], 1);
    CHECK_INT(cli_list_indices_only("0,GPU-ab", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), 0);
    CHECK_INT(n, 0);

    CHECK_INT(cli_list_indices_only("1,1", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), -1);
    CHECK_STR(msg, "'1,1' names device 1 twice: list each device once");
    CHECK_INT(cli_list_indices_only("0,,1", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), -1);
    CHECK_STR(msg, "'0,,1' has an empty entry: write indices or UUIDs like 0,2");
    CHECK_INT(cli_list_indices_only("-1", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), -1);
    CHECK_STR(msg, "'-1' is not a device: use an index (0), a comma list (0,2), a GPU UUID "
                   "(GPU-...) or all");
    CHECK_INT(cli_list_indices_only("12345", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), -1);
    CHECK_INT(cli_list_indices_only("GPU-", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), -1);
    /* A MIG UUID is resolved against the device list, like a GPU UUID. */
    CHECK_INT(cli_list_indices_only("MIG-1", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), 0);
    CHECK_INT(n, 0);
    CHECK_INT(cli_list_indices_only("MIG-", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), -1);
    CHECK_INT(cli_list_indices_only("", out, CLI_MAX_DEVICES, &n, msg, sizeof msg), -1);
    CHECK_INT(cli_list_indices_only("0,1,2", out, 2, &n, msg, sizeof msg), -1);
    CHECK_STR(msg, "'0,1,2' names more than 2 devices");
}

static void test_strict(void)
{
    char list[128], msg[512];
    CHECK_INT(resolve("2,0", CLI_LIST_STRICT, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "2,0");
    CHECK_STR(msg, "");
    CHECK_INT(resolve("GPU-aaaa,GPU-bbbbc", CLI_LIST_STRICT, list, sizeof list, msg, sizeof msg),
              0);
    CHECK_STR(list, "0,2");
    /* A full UUID, in another case: UUIDs compare without case. */
    CHECK_INT(resolve("gpu-BBBBBBBB-1111-1111-1111-111111111111", CLI_LIST_STRICT, list,
                      sizeof list, msg, sizeof msg),
              0);
    CHECK_STR(list, "1");

    CHECK_INT(resolve("0,3", CLI_LIST_STRICT, list, sizeof list, msg, sizeof msg), -1);
    CHECK_STR(msg, "'3': no such device (the backend sees 3: 0-2)");
    CHECK_INT(resolve("GPU-bbbb", CLI_LIST_STRICT, list, sizeof list, msg, sizeof msg), -1);
    CHECK_STR(msg, "'GPU-bbbb': more than one GPU has this UUID prefix");
    CHECK_INT(resolve("GPU-ffff", CLI_LIST_STRICT, list, sizeof list, msg, sizeof msg), -1);
    CHECK_STR(msg, "'GPU-ffff': no GPU has this UUID");
    CHECK_INT(resolve("1,GPU-bbbbb", CLI_LIST_STRICT, list, sizeof list, msg, sizeof msg), -1);
    CHECK_STR(msg, "'GPU-bbbbb' names device 1 a second time");
}

static void test_cuda(void)
{
    char list[128], msg[512];
    CHECK_INT(resolve("2,0", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "2,0");
    CHECK_STR(msg, "");

    /* The first bad entry ends the list; what came before stays. */
    CHECK_INT(resolve("1,7,2", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "1");
    CHECK_STR(msg, "CUDA_VISIBLE_DEVICES: '7': no such device (the backend sees 3: 0-2): it and "
                   "the entries after it are ignored, as CUDA does");
    CHECK_INT(resolve("-1", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "");
    CHECK_STR(msg, "CUDA_VISIBLE_DEVICES: '-1' is not a device index or GPU UUID: it and the "
                   "entries after it are ignored, as CUDA does");
    CHECK_INT(resolve("0,GPU-bbbb,1", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "0");
    CHECK_INT(resolve("2,2,1", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "2");
    CHECK_CONTAINS(msg, "'2' names device 2 a second time");

    CHECK_INT(resolve("", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "");
    CHECK_STR(msg, "CUDA_VISIBLE_DEVICES is empty: no GPU is visible to the command");
    CHECK_INT(resolve("  ", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(msg, "CUDA_VISIBLE_DEVICES is empty: no GPU is visible to the command");

    CHECK_INT(resolve("MIG-4f1c,1", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "1");
    CHECK_STR(msg, "CUDA_VISIBLE_DEVICES: MIG-4f1c is a MIG instance, not sampled: the backend "
                   "lists no MIG instance with this UUID (see gpu-profile devices)");
    CHECK_INT(resolve("MIG-4f1c", CLI_LIST_CUDA, list, sizeof list, msg, sizeof msg), 0);
    CHECK_STR(list, "");

    unsigned out[4];
    size_t n = 0;
    CHECK_INT(cli_list_resolve("0,1,2", CLI_LIST_CUDA, devs, 0, out, 4, &n, msg, sizeof msg), 0);
    CHECK_INT(n, 0);
    CHECK_STR(msg, "CUDA_VISIBLE_DEVICES: '0': the backend sees no device: it and the entries "
                   "after it are ignored, as CUDA does");
}

/* A backend that lists MIG instances: GPU 0 and its instances 1 and 2. */
static void test_mig(void)
{
    gp_device_info mig[3];
    memset(mig, 0, sizeof mig);
    static const char *uuids[] = {"GPU-aaaaaaaa-0000-0000-0000-000000000000",
                                  "MIG-11111111-0000-0000-0000-000000000000",
                                  "MIG-11112222-0000-0000-0000-000000000000"};
    for (unsigned i = 0; i < 3; i++) {
        mig[i].index = i;
        snprintf(mig[i].uuid, sizeof mig[i].uuid, "%s", uuids[i]);
        mig[i].mig.is_mig = i > 0;
    }
    unsigned out[CLI_MAX_DEVICES];
    size_t n = 0;
    char msg[512];
    CHECK_INT(cli_list_resolve("MIG-11112222,0", CLI_LIST_STRICT, mig, 3, out, CLI_MAX_DEVICES, &n,
                               msg, sizeof msg),
              0);
    CHECK_INT(n, 2);
    CHECK_INT(out[0], 2);
    CHECK_INT(out[1], 0);
    CHECK_INT(cli_list_resolve("mig-11111111-0000-0000-0000-000000000000", CLI_LIST_CUDA, mig, 3,
                               out, CLI_MAX_DEVICES, &n, msg, sizeof msg),
              0);
    CHECK_INT(n, 1);
    CHECK_INT(out[0], 1);
    CHECK_STR(msg, "");
    CHECK_INT(cli_list_resolve("MIG-1111", CLI_LIST_STRICT, mig, 3, out, CLI_MAX_DEVICES, &n, msg,
                               sizeof msg),
              -1);
    CHECK_STR(msg, "'MIG-1111': more than one MIG instance has this UUID prefix");
    CHECK_INT(cli_list_resolve("MIG-9", CLI_LIST_STRICT, mig, 3, out, CLI_MAX_DEVICES, &n, msg,
                               sizeof msg),
              -1);
    CHECK_STR(msg, "'MIG-9': no MIG instance has this UUID (gpu-profile devices lists the ones "
                   "the backend sees; or name the parent GPU's index or UUID)");
}

int main(void)
{
    setup();
    test_syntax();
    test_strict();
    test_cuda();
    test_mig();
    return check_done("test_cli_visible");
}
