/*
 * devices.c - `gpu-profile devices [--json] [--backend B]`: the devices a
 * backend sees (index, name, UUID, memory; for a MIG instance its profile,
 * GPU / compute instance ids and parent), the driver version and which
 * backend answered, on stdout as an aligned table or one
 * "gpu-profile.devices" JSON object.  Every device the backend sees is
 * listed; CUDA_VISIBLE_DEVICES does not filter the list.  Exit status 0
 * when a backend answered (even with no device), 1 when none could be
 * opened (the message says why for each), 125 for a bad option.
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

enum { K_JSON = 256 };
/* One option a line, as in the other tables. */
/* clang-format off */
const cli_opt cli_devices_opts[] = {
    {"json", K_JSON, 0, NULL, NULL, NULL},
    {CLI_ROW_BACKEND},
    {"help", 'h', 0, NULL, NULL, NULL},
    {CLI_ROW_NVML_LIBRARY},
    {CLI_ROW_SMI_PATH},
    {CLI_ROW_ROCM_SMI_LIBRARY},
};
/* clang-format on */
const size_t cli_devices_n_opts = sizeof cli_devices_opts / sizeof cli_devices_opts[0];

void cli_devices_usage(FILE *f)
{
    fputs("usage: gpu-profile devices [--json] [--backend auto|nvml|smi|amd|none]\n"
          "                           [--nvml-library FILE] [--smi-path FILE]\n"
          "                           [--rocm-smi-library FILE]\n"
          "\n"
          "Lists the GPUs the backend sees: index, name, UUID, memory, driver version\n"
          "and the backend that answered; MIG instances after the GPUs, their parent\n"
          "named.  Exit status 1 when no backend answers.\n"
          "--nvml-library / --smi-path / --rocm-smi-library: the NVML, nvidia-smi or\n"
          "ROCm SMI to use instead of the default ones.  -h, --help: this text.\n",
          f);
}

/* The "mig" column of a MIG instance: "3g.40gb GI 2 CI 0 of GPU 0" (an
 * unknown part as n/a); "-" for a whole GPU. */
static void mig_cell(const gp_device_info *d, char *buf, size_t cap)
{
    const gp_mig_info *m = &d->mig;
    if (!m->is_mig) {
        snprintf(buf, cap, "-");
        return;
    }
    char gi[16] = "n/a", ci[16] = "n/a";
    if (m->gpu_instance_id >= 0)
        snprintf(gi, sizeof gi, "%d", (int)m->gpu_instance_id);
    if (m->compute_instance_id >= 0)
        snprintf(ci, sizeof ci, "%d", (int)m->compute_instance_id);
    snprintf(buf, cap, "%s GI %s CI %s of GPU %" PRIu32, m->profile[0] ? m->profile : "n/a", gi, ci,
             m->parent_index);
}

static void write_text(const gp_device_info *d, size_t n, const char *driver, const char *be)
{
    int any_mig = 0, any_pci = 0;
    for (size_t i = 0; i < n; i++) {
        any_mig |= d[i].mig.is_mig != 0;
        any_pci |= d[i].pci_bus_id[0] != 0;
    }
    if (n == 0) {
        printf("no GPU found (backend %s%s%s)\n", be, driver[0] ? ", driver " : "", driver);
        return;
    }
    int wn = (int)strlen("name"), wu = (int)strlen("uuid"), wp = (int)strlen("n/a");
    for (size_t i = 0; i < n; i++) {
        int a = (int)strlen(d[i].name), b = (int)strlen(d[i].uuid),
            c = (int)strlen(d[i].pci_bus_id);
        wn = a > wn ? a : wn;
        wu = b > wu ? b : wu;
        wp = c > wp ? c : wp;
    }
    /* The mig column only when a MIG instance is listed; the pci column
     * only when the backend gives bus ids (NVML, amd; not nvidia-smi's CSV). */
    char head[GP_PCI_BUS_ID_MAX + 8] = "";
    if (any_pci)
        snprintf(head, sizeof head, "  %-*s", any_mig ? wp : 0, "pci");
    printf("%-5s  %-*s  %-*s  %-*s%s%s\n", "index", wn, "name", wu, "uuid",
           any_mig || any_pci ? 10 : 0, "memory", head, any_mig ? "  mig" : "");
    for (size_t i = 0; i < n; i++) {
        char mem[32] = "n/a", mig[GP_MIG_PROFILE_MAX + 64] = "";
        if (d[i].valid & GP_M_MEM_TOTAL)
            snprintf(mem, sizeof mem, "%.2f GiB",
                     (double)d[i].mem_total_bytes / (1024.0 * 1024.0 * 1024.0));
        if (any_mig)
            mig_cell(&d[i], mig, sizeof mig);
        char pci[GP_PCI_BUS_ID_MAX + 4] = "";
        if (any_pci)
            snprintf(pci, sizeof pci, "  %-*s", any_mig ? wp : 0,
                     d[i].pci_bus_id[0] ? d[i].pci_bus_id : "n/a");
        printf("%-5" PRIu32 "  %-*s  %-*s  %-*s%s%s%s\n", d[i].index, wn, d[i].name, wu, d[i].uuid,
               any_mig || any_pci ? 10 : 0, mem, pci, any_mig ? "  " : "", mig);
    }
    printf("backend %s, driver %s\n", be, driver[0] ? driver : "n/a");
}

/* ,"mig":null for a whole GPU, else the summary's "mig" object
 * (docs/json-schema.md). */
static void write_json_mig(fl_buf *b, const gp_mig_info *m)
{
    if (!m->is_mig) {
        fl_buf_puts(b, ",\"mig\":null");
        return;
    }
    fl_buf_puts(b, ",\"mig\":{\"profile\":");
    fl_buf_str(b, m->profile[0] ? m->profile : NULL);
    if (m->gpu_instance_id >= 0)
        fl_buf_printf(b, ",\"gpu_instance_id\":%d", (int)m->gpu_instance_id);
    else
        fl_buf_puts(b, ",\"gpu_instance_id\":null");
    if (m->compute_instance_id >= 0)
        fl_buf_printf(b, ",\"compute_instance_id\":%d", (int)m->compute_instance_id);
    else
        fl_buf_puts(b, ",\"compute_instance_id\":null");
    fl_buf_printf(b, ",\"parent_index\":%" PRIu32 ",\"parent_uuid\":", m->parent_index);
    fl_buf_str(b, m->parent_uuid[0] ? m->parent_uuid : NULL);
    fl_buf_puts(b, ",\"parent_name\":");
    fl_buf_str(b, m->parent_name[0] ? m->parent_name : NULL);
    fl_buf_puts(b, "}");
}

/* error: NULL when the list is the backend's answer; else why there is
 * none (the list is then empty and the backend "none"): a consumer of
 * --json always gets a document, never an empty stdout. */
static int write_json(const gp_device_info *d, size_t n, const char *driver, const char *be,
                      const char *error)
{
    fl_buf b = {0};
    fl_buf_puts(&b, "{\"schema\":\"gpu-profile.devices\",\"schema_version\":1,\"backend\":");
    fl_buf_str(&b, be);
    fl_buf_puts(&b, ",\"driver_version\":");
    fl_buf_str(&b, driver[0] ? driver : NULL);
    fl_buf_puts(&b, ",\"devices\":[");
    for (size_t i = 0; i < n; i++) {
        fl_buf_printf(&b, "%s{\"index\":%" PRIu32 ",\"name\":", i ? "," : "", d[i].index);
        fl_buf_str(&b, d[i].name[0] ? d[i].name : NULL);
        fl_buf_puts(&b, ",\"uuid\":");
        fl_buf_str(&b, d[i].uuid[0] ? d[i].uuid : NULL);
        if (d[i].valid & GP_M_MEM_TOTAL)
            fl_buf_printf(&b, ",\"mem_total_bytes\":%" PRIu64, d[i].mem_total_bytes);
        else
            fl_buf_puts(&b, ",\"mem_total_bytes\":null");
        write_json_mig(&b, &d[i].mig);
        fl_buf_puts(&b, ",\"pci_bus_id\":");
        fl_buf_str(&b, d[i].pci_bus_id[0] ? d[i].pci_bus_id : NULL);
        fl_buf_puts(&b, "}");
    }
    fl_buf_puts(&b, "],\"error\":");
    fl_buf_str(&b, error);
    fl_buf_puts(&b, "}\n");
    int bad = b.oom || fwrite(b.p, 1, b.len, stdout) != b.len;
    fl_buf_free(&b);
    return bad ? -1 : 0;
}

/* What the options fill. */
typedef struct devices_args {
    gp_options o;
    int json;
} devices_args;

/* One option; -1 after a message. */
static int apply(void *ctx, int key, const char *v)
{
    devices_args *a = ctx;
    if (key == K_JSON) {
        a->json = 1;
        return 0;
    }
    return cli_backend_option(&a->o, key, v) < 0 ? -1 : 0; /* its rows are all it has left */
}

int cli_devices_main(int argc, char **argv)
{
    devices_args a = {.json = 0};
    gp_options_init(&a.o);
    a.o.strict = 1;
    int p = cli_getopt_each("devices", cli_devices_opts, cli_devices_n_opts, CLI_OPERANDS_NONE,
                            argc, argv, cli_devices_usage, apply, &a);
    if (p != 0)
        return p > 0 ? 0 : CLI_EXIT_USAGE;
    gp_device_info *devs = NULL;
    size_t n = 0;
    char driver[96] = "";
    const char *be = NULL;
    gp_error err;
    if (gp_list_devices(&a.o, &devs, &n, driver, sizeof driver, &be, &err) != GP_OK) {
        cli_say("devices: %s", err.message);
        /* The same words as the line on stderr: flags, not $PATH. */
        char why[sizeof err.message + 256];
        cli_flag_words(err.message, why, sizeof why);
        if (a.json && (write_json(NULL, 0, "", "none", why) < 0 || fflush(stdout) != 0))
            cli_stdout_failed("devices");
        return CLI_EXIT_FAIL;
    }
    int rc = 0;
    if (a.json) {
        rc = write_json(devs, n, driver, be ? be : "none", NULL); /* JSON escapes them */
    } else {
        /* Names come from the driver or nvidia-smi's output: no control
         * character of theirs reaches the terminal. */
        for (size_t i = 0; i < n; i++) {
            cli_clean_text(devs[i].name);
            cli_clean_text(devs[i].uuid);
            cli_clean_text(devs[i].mig.profile);
        }
        cli_clean_text(driver);
        write_text(devs, n, driver, be ? be : "none");
    }
    gp_devices_free(devs);
    if (fflush(stdout) != 0 || rc < 0)
        return cli_stdout_failed("devices");
    return 0;
}
