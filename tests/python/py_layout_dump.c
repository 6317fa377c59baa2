/* Prints the size and field offsets of the structs the Python package
 * mirrors with ctypes (python/gpu_profile, python/gpufl), one "struct.field
 * offset" line each plus "struct size N", for tests/python/test_gpu_profile.py. */
#include <stddef.h>
#include <stdio.h>

#include "gpu_profile.h"
#include "gpufl.h"

#define SIZE(T) printf(#T " size %zu\n", sizeof(T))
#define OFF(T, f) printf(#T "." #f " %zu\n", offsetof(T, f))

int main(void)
{
    SIZE(gp_error);
    OFF(gp_error, status);
    OFF(gp_error, message);

    SIZE(gp_device_sample);
    OFF(gp_device_sample, valid);
    OFF(gp_device_sample, util_gpu_pct);
    OFF(gp_device_sample, util_mem_pct);
    OFF(gp_device_sample, mem_used_bytes);
    OFF(gp_device_sample, mem_total_bytes);
    OFF(gp_device_sample, power_mw);
    OFF(gp_device_sample, energy_mj);
    OFF(gp_device_sample, temp_c);
    OFF(gp_device_sample, clock_sm_mhz);
    OFF(gp_device_sample, clock_mem_mhz);
    OFF(gp_device_sample, throttle_reasons);
    OFF(gp_device_sample, pcie_tx_kbps);
    OFF(gp_device_sample, pcie_rx_kbps);
    OFF(gp_device_sample, gpm);
    OFF(gp_device_sample, proc_mem_used_bytes);
    OFF(gp_device_sample, proc_all_mem_used_bytes);
    OFF(gp_device_sample, proc_count);
    OFF(gp_device_sample, proc_all_count);
    OFF(gp_device_sample, proc_sm_pct);
    OFF(gp_device_sample, proc_mem_pct);
    OFF(gp_device_sample, proc_all_sm_pct);
    OFF(gp_device_sample, proc_all_mem_pct);

    SIZE(gp_sample);
    OFF(gp_sample, t_mono_ns);
    OFF(gp_sample, t_wall_ns);
    OFF(gp_sample, slot);
    OFF(gp_sample, device_index);
    OFF(gp_sample, m);

    SIZE(gp_summary);
    OFF(gp_summary, device_index);
    OFF(gp_summary, name);
    OFF(gp_summary, uuid);
    OFF(gp_summary, backend);
    OFF(gp_summary, note);
    OFF(gp_summary, duration_s);
    OFF(gp_summary, interval_s);
    OFF(gp_summary, warmup_s);
    OFF(gp_summary, sample_count);
    OFF(gp_summary, samples_warmup);
    OFF(gp_summary, interval_mean_s);
    OFF(gp_summary, valid);
    OFF(gp_summary, util_gpu_mean);
    OFF(gp_summary, util_gpu_p50);
    OFF(gp_summary, util_gpu_p95);
    OFF(gp_summary, util_gpu_max);
    OFF(gp_summary, util_mem_mean);
    OFF(gp_summary, util_mem_max);
    OFF(gp_summary, mem_used_max_bytes);
    OFF(gp_summary, mem_total_bytes);
    OFF(gp_summary, power_mean_mw);
    OFF(gp_summary, power_max_mw);
    OFF(gp_summary, energy_j);
    OFF(gp_summary, energy_source);
    OFF(gp_summary, temp_max_c);
    OFF(gp_summary, clock_sm_mean_mhz);
    OFF(gp_summary, clock_mem_mean_mhz);
    OFF(gp_summary, throttle_reasons_seen);
    OFF(gp_summary, busy_time_est_s);
    OFF(gp_summary, spark);
    OFF(gp_summary, spark_len);
    OFF(gp_summary, device_status);
    OFF(gp_summary, device_error);
    OFF(gp_summary, device_error_at_s);
    OFF(gp_summary, gpm_mean);
    OFF(gp_summary, gpm_p95);
    OFF(gp_summary, gpm_max);
    OFF(gp_summary, energy_span_s);
    OFF(gp_summary, proc_requested);
    OFF(gp_summary, proc_count_max);
    OFF(gp_summary, proc_mem_used_mean_bytes);
    OFF(gp_summary, proc_mem_used_max_bytes);
    OFF(gp_summary, proc_all_mem_used_max_bytes);
    OFF(gp_summary, proc_sm_mean_pct);
    OFF(gp_summary, proc_sm_max_pct);
    OFF(gp_summary, proc_mem_mean_pct);
    OFF(gp_summary, proc_mem_max_pct);
    OFF(gp_summary, proc_all_sm_mean_pct);
    OFF(gp_summary, mig);
    OFF(gp_summary, util_gpu_min);
    OFF(gp_summary, util_gpu_p5);
    OFF(gp_summary, util_gpu_p99);
    OFF(gp_summary, util_gpu_std);
    OFF(gp_summary, util_gpu_idle_pct);
    OFF(gp_summary, util_gpu_active_pct);
    OFF(gp_summary, mem_used_mean_bytes);
    OFF(gp_summary, temp_mean_c);
    OFF(gp_summary, clock_sm_max_mhz);
    SIZE(gp_run_stats);
    OFF(gp_run_stats, n);
    OFF(gp_run_stats, n_unknown);
    OFF(gp_run_stats, mean);
    OFF(gp_run_stats, std);
    OFF(gp_run_stats, min);
    OFF(gp_run_stats, max);
    SIZE(gp_mig_info);
    OFF(gp_mig_info, is_mig);
    OFF(gp_mig_info, parent_index);
    OFF(gp_mig_info, parent_uuid);
    OFF(gp_mig_info, parent_name);
    OFF(gp_mig_info, profile);
    OFF(gp_mig_info, gpu_instance_id);
    OFF(gp_mig_info, compute_instance_id);
    SIZE(gp_device_info);
    OFF(gp_device_info, index);
    OFF(gp_device_info, name);
    OFF(gp_device_info, uuid);
    OFF(gp_device_info, valid);
    OFF(gp_device_info, mem_total_bytes);
    OFF(gp_device_info, mig);
    OFF(gp_device_info, pci_bus_id);

    SIZE(gp_options);
    OFF(gp_options, device);
    OFF(gp_options, devices);
    OFF(gp_options, n_devices);
    OFF(gp_options, interval_s);
    OFF(gp_options, backend);
    OFF(gp_options, strict);
    OFF(gp_options, sync_fn);
    OFF(gp_options, sync_user);
    OFF(gp_options, warmup_s);
    OFF(gp_options, keep_samples);
    OFF(gp_options, sample_pcie);
    OFF(gp_options, report);
    OFF(gp_options, report_file);
    OFF(gp_options, report_flags);
    OFF(gp_options, report_fn);
    OFF(gp_options, report_user);
    OFF(gp_options, nvml_library);
    OFF(gp_options, smi_path);
    OFF(gp_options, backend_timeout_s);
    OFF(gp_options, on_sample);
    OFF(gp_options, on_sample_user);
    OFF(gp_options, pids);
    OFF(gp_options, n_pids);
    OFF(gp_options, pid_tree);
    OFF(gp_options, rocm_smi_library);
    SIZE(gpufl_error);
    OFF(gpufl_error, status);
    OFF(gpufl_error, message);

    SIZE(gpufl_init_options);
    OFF(gpufl_init_options, app_name);
    OFF(gpufl_init_options, log_path);
    OFF(gpufl_init_options, backend_url);
    OFF(gpufl_init_options, api_key);
    OFF(gpufl_init_options, api_path);
    OFF(gpufl_init_options, remote_upload);
    OFF(gpufl_init_options, enable_stack_trace);
    OFF(gpufl_init_options, enable_source_collection);
    OFF(gpufl_init_options, enable_external_correlation);
    OFF(gpufl_init_options, enable_synchronization);
    OFF(gpufl_init_options, enable_memory_tracking);
    OFF(gpufl_init_options, enable_cuda_graphs_tracking);
    OFF(gpufl_init_options, system_sample_rate_ms);
    OFF(gpufl_init_options, kernel_sample_rate_ms);
    OFF(gpufl_init_options, continuous_system_sampling);
    OFF(gpufl_init_options, backend);
    OFF(gpufl_init_options, profiling_engine);
    OFF(gpufl_init_options, config_file);
    OFF(gpufl_init_options, flush_logs_always);
    OFF(gpufl_init_options, enable_debug_output);
    OFF(gpufl_init_options, enabled);
    OFF(gpufl_init_options, log_fn);
    OFF(gpufl_init_options, log_user);
    OFF(gpufl_init_options, cupti_buffer_kib);
    OFF(gpufl_init_options, cupti_max_buffers);
    OFF(gpufl_init_options, compact_kernel_details);
    OFF(gpufl_init_options, pc_sampling_period);
    OFF(gpufl_init_options, pm_sampling_metrics);
    OFF(gpufl_init_options, pm_sampling_interval_us);
    OFF(gpufl_init_options, pm_sampling_max_samples);
    OFF(gpufl_init_options, metrics);
    OFF(gpufl_init_options, range_per_kernel);
    OFF(gpufl_init_options, sass_all_kernels);
    OFF(gpufl_init_options, capture_range);
    OFF(gpufl_init_options, capture_range_end);
    OFF(gpufl_init_options, capture_delay_ms);
    OFF(gpufl_init_options, capture_duration_ms);
    OFF(gpufl_init_options, rotate_size);
    OFF(gpufl_init_options, rotate_interval_ms);
    OFF(gpufl_init_options, max_disk);

    SIZE(gpufl_scope);
    OFF(gpufl_scope, instance_id);
    OFF(gpufl_scope, start_ticks);
    OFF(gpufl_scope, name_id);
    OFF(gpufl_scope, generation);
    OFF(gpufl_scope, depth);
    OFF(gpufl_scope, reserved_);

    SIZE(gpufl_report_options);
    OFF(gpufl_report_options, session_id);
    OFF(gpufl_report_options, log_prefix);
    OFF(gpufl_report_options, top_n);
    OFF(gpufl_report_options, format);
    OFF(gpufl_report_options, sections);

    SIZE(gpufl_upload_options);
    OFF(gpufl_upload_options, log_path);
    OFF(gpufl_upload_options, backend_url);
    OFF(gpufl_upload_options, api_key);
    OFF(gpufl_upload_options, api_path);
    OFF(gpufl_upload_options, session_id);
    OFF(gpufl_upload_options, force);
    OFF(gpufl_upload_options, enabled);
    OFF(gpufl_upload_options, timeout_s);
    OFF(gpufl_upload_options, connect_timeout_s);
    OFF(gpufl_upload_options, max_retries);
    OFF(gpufl_upload_options, retry_delay_ms);

    SIZE(gpufl_upload_result);
    OFF(gpufl_upload_result, success);
    OFF(gpufl_upload_result, events_uploaded);
    OFF(gpufl_upload_result, events_rejected);
    OFF(gpufl_upload_result, files_processed);
    OFF(gpufl_upload_result, files_skipped_by_cursor);
    OFF(gpufl_upload_result, bytes_uploaded);
    OFF(gpufl_upload_result, sessions_uploaded);
    OFF(gpufl_upload_result, sessions_skipped);
    OFF(gpufl_upload_result, http_status);
    OFF(gpufl_upload_result, message);

    return 0;
}
