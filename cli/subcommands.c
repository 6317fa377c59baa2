/*
 * subcommands.c - the command's subcommands, one row each (cli_sub): the
 * word that names it, its main, its line in `gpu-profile --help`, its
 * page and its options.
 *
 * Promises: this is the one list of subcommands.  main.c dispatches the
 * first word from it, help.c prints `--help`'s list, `help CMD`,
 * `help --commands` and `help --options CMD` (what the bash completion
 * reads) and suggests the nearest name from it; a row added here is run,
 * listed, paged and completed, in the order of the rows.  Data only, so
 * that help.c reads it without a call circle.
 */
#include "cli.h"

const cli_sub cli_subs[] = {
    {"devices", cli_devices_main, "list the GPUs a backend sees", "gpu-profile devices --json",
     cli_devices_usage, cli_devices_opts, &cli_devices_n_opts, 0},
    {"report", cli_report_main, "the report of a recorded session",
     "gpu-profile report --format json logs", cli_report_usage, cli_logs_opts, &cli_logs_n_opts, 0},
    {"export", cli_export_main, "a session as a Perfetto trace or CSV",
     "gpu-profile export --format chrome-trace -o trace.json logs", cli_export_usage,
     cli_export_opts, &cli_export_n_opts, 0},
    {"metrics", cli_metrics_main, "the hardware metrics of a chip",
     "gpu-profile metrics list --chip GH100", cli_metrics_usage, cli_metrics_opts,
     &cli_metrics_n_opts, 0},
    /* serve writes to sockets, never stdout: its SIGPIPE stays. */
    {"serve", cli_serve_main, "a Prometheus exporter of the GPUs",
     "gpu-profile serve --listen :9400", cli_serve_usage, cli_serve_opts, &cli_serve_n_opts, 1},
    {"help", cli_help_main, "a subcommand's page", "gpu-profile help report", cli_help_usage,
     cli_help_opts, &cli_help_n_opts, 0},
    {"upload", cli_upload_main, "send sessions to a GPUFlight backend",
     "gpu-profile upload --backend-url https://host logs", cli_upload_usage, cli_upload_opts,
     &cli_upload_n_opts, 0},
};
const size_t cli_n_subs = sizeof cli_subs / sizeof cli_subs[0];
