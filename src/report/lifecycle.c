/*
 * report/lifecycle.c - GPUFlight 1.3's run lifecycle in the report: the
 * identity its job_start carries (run_id, segment_index, roll_chain_id,
 * part_index, previous_run_id, analysis_id, pass_index / pass_count), its
 * segment_start / segment_end / run_end records, and what its deep-window
 * rules and counter checks said at the end (deep_window_rule_summary,
 * counter_data_quality_summary).  Shown in the section "capture", JSON
 * "lifecycle"; a key the writer left out is null, never 0.
 *
 * GPUFlight writes the lifecycle records to every channel: a record equal
 * to one kept already is the same record read again.  At most MAX_CONFIGS
 * of each type are kept whole (charged to the report's bytes), the rest
 * counted in lifecycle.more_records.
 */
#include "report_int.h"
#include "json_write.h"
#include "units.h"
#include "../util/buf.h"

#include <inttypes.h>
#include <string.h>

/* job_start's keys of a segmented, rolled or multi-pass run. */
static const char *const ident_keys[] = {"run_id",     "segment_index",   "roll_chain_id",
                                         "part_index", "previous_run_id", "analysis_id",
                                         "pass_index", "pass_count"};
#define N_IDENT (sizeof ident_keys / sizeof *ident_keys)

static json_t **list_of(fl_report *r, fl_type t)
{
    switch (t) {
    case FL_T_SEGMENT_START:
        return &r->lc_seg_start;
    case FL_T_SEGMENT_END:
        return &r->lc_seg_end;
    case FL_T_RUN_END:
        return &r->lc_run_end;
    case FL_T_DEEP_WINDOW_RULE_SUMMARY:
        return &r->lc_rules;
    case FL_T_COUNTER_DATA_QUALITY_SUMMARY:
        return &r->lc_quality;
    default:
        return NULL;
    }
}

static void keep(fl_report *r, json_t **list, const json_t *rec)
{
    if (!*list && !(*list = json_array())) {
        r->oom = true;
        return;
    }
    for (size_t i = 0; i < json_array_size(*list); i++)
        if (json_equal(json_array_get(*list, i), (json_t *)rec))
            return; /* the same record on another channel */
    if (json_array_size(*list) >= MAX_CONFIGS) {
        r->lc_more++;
        return;
    }
    if (!fl_keys_charge(&r->m->keys, 256 + json_dumpb(rec, NULL, 0, JSON_COMPACT))) {
        r->oom = true;
        return;
    }
    if (json_array_append_new(*list, json_deep_copy(rec)) != 0)
        r->oom = true;
}

/* job_start's identity: the first job_start that has any of its keys. */
static void job_ident(fl_report *r, const json_t *rec)
{
    if (r->lc_ident)
        return;
    json_t *id = NULL;
    for (size_t i = 0; i < N_IDENT; i++) {
        json_t *v = json_object_get(rec, ident_keys[i]);
        if (!v)
            continue;
        if ((!id && !(id = json_object())) || json_object_set(id, ident_keys[i], v) != 0) {
            r->oom = true;
            break;
        }
    }
    r->lc_ident = id;
}

void fl_report_lifecycle(fl_report *r, fl_type t, const json_t *rec)
{
    if (t == FL_T_JOB_START) {
        job_ident(r, rec);
        return;
    }
    json_t **list = list_of(r, t);
    if (list)
        keep(r, list, rec);
}

void fl_report_lifecycle_free(fl_report *r)
{
    json_decref(r->lc_ident);
    json_decref(r->lc_seg_start);
    json_decref(r->lc_seg_end);
    json_decref(r->lc_run_end);
    json_decref(r->lc_rules);
    json_decref(r->lc_quality);
}

static bool any(const fl_report *r)
{
    return r->lc_ident || r->lc_seg_start || r->lc_seg_end || r->lc_run_end || r->lc_rules ||
           r->lc_quality;
}

/* ================================================================ JSON */

/* Each key of keys from rec, as the record has it; null when absent. */
static void j_keys(jw *w, const json_t *rec, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        j_raw_json(w, keys[i], json_object_get(rec, keys[i]));
}

static void j_records(jw *w, const char *name, const json_t *list, const char *const *keys,
                      size_t n)
{
    if (!list) {
        j_str(w, name, NULL);
        return;
    }
    j_open(w, name, '[');
    for (size_t i = 0; i < json_array_size(list); i++) {
        j_open(w, NULL, '{');
        j_keys(w, json_array_get(list, i), keys, n);
        j_close(w, '}');
    }
    j_close(w, ']');
}

#define KEYS(a) a, sizeof a / sizeof *a

static const char *const seg_start_keys[] = {"run_id",
                                             "segment_index",
                                             "session_id",
                                             "actual_start_ns",
                                             "previous_session_id",
                                             "requested_boundary_ns",
                                             "boundary_delay_ns",
                                             "deferred_by"};
static const char *const seg_end_keys[] = {
    "run_id",        "segment_index",         "session_id",
    "actual_end_ns", "requested_boundary_ns", "boundary_delay_ns",
    "end_reason",    "deferred_by",           "records_outside_segment_window"};
static const char *const run_end_keys[] = {
    "run_id",     "session_id",      "final_segment_index",   "ended_ns",
    "end_reason", "rollover_reason", "requested_rollover_ns", "actual_rollover_ns"};
static const char *const rule_keys[] = {"rule_id",
                                        "expression",
                                        "state",
                                        "outcome",
                                        "reason",
                                        "metric_state",
                                        "samples_seen",
                                        "windows_opened",
                                        "truncated_samples",
                                        "metric_quality_resets",
                                        "last_quality_reason",
                                        "state_sequence",
                                        "last_value",
                                        "last_observed_ns",
                                        "emitted_ns"};
static const char *const quality_keys[] = {"source",
                                           "schema_version",
                                           "tracked_counters",
                                           "samples_observed",
                                           "registration_rejected",
                                           "unknown_id_samples",
                                           "unavailable_samples",
                                           "negative_delta_samples",
                                           "rate_windows_discarded",
                                           "emitted_ns"};

void fl_json_lifecycle(const fl_section_in *in, jw *w)
{
    const fl_report *r = in->r;
    if (!j_open_if(w, "lifecycle", any(r), '{'))
        return;
    j_open(w, "run", '{');
    j_keys(w, r->lc_ident, ident_keys, N_IDENT);
    j_close(w, '}');
    j_records(w, "segment_starts", r->lc_seg_start, KEYS(seg_start_keys));
    j_records(w, "segment_ends", r->lc_seg_end, KEYS(seg_end_keys));
    j_records(w, "run_ends", r->lc_run_end, KEYS(run_end_keys));
    j_records(w, "deep_window_rules", r->lc_rules, KEYS(rule_keys));
    j_records(w, "counter_data_quality", r->lc_quality, KEYS(quality_keys));
    j_u64(w, "more_records", r->lc_more);
    j_close(w, '}');
}

/* ================================================================ text */

static void t_str(fl_buf *b, const json_t *rec, const char *label, const char *key)
{
    const char *s = json_string_value(json_object_get(rec, key));
    if (!s || !s[0])
        return;
    fl_buf_printf(b, "  %s ", label);
    fl_put_line(b, s, 60);
}

static void t_num(fl_buf *b, const json_t *rec, const char *label, const char *key)
{
    const json_t *v = json_object_get(rec, key);
    if (json_is_integer(v))
        fl_buf_printf(b, "  %s %" PRId64, label, (int64_t)json_integer_value(v));
    else if (json_is_real(v))
        fl_buf_printf(b, "  %s %g", label, json_real_value(v));
}

static void t_list(fl_buf *b, const json_t *list, const char *head, const char *name_key,
                   const char *const *str_keys, const char *const *num_keys)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *rec = json_array_get(list, i);
        fl_buf_puts(b, head);
        t_str(b, rec, "", name_key);
        for (size_t k = 0; str_keys[k]; k++)
            t_str(b, rec, str_keys[k], str_keys[k]);
        for (size_t k = 0; num_keys[k]; k++)
            t_num(b, rec, num_keys[k], num_keys[k]);
        fl_buf_puts(b, "\n");
    }
}

void fl_text_lifecycle(const fl_section_in *in, fl_buf *b)
{
    const fl_report *r = in->r;
    if (!any(r))
        return;
    if (r->lc_ident) {
        static const char *const s[] = {"run_id", "roll_chain_id", "previous_run_id", "analysis_id",
                                        NULL};
        static const char *const n[] = {"segment_index", "part_index", "pass_index", "pass_count",
                                        NULL};
        const json_t *l = json_pack("[O]", r->lc_ident);
        t_list(b, l, "  run              ", "", s, n);
        json_decref((json_t *)l);
    }
    static const char *const ss[] = {"run_id", "previous_session_id", "deferred_by", NULL};
    static const char *const sn[] = {"segment_index", "actual_start_ns", "boundary_delay_ns", NULL};
    t_list(b, r->lc_seg_start, "  segment start    ", "", ss, sn);
    static const char *const es[] = {"run_id", "end_reason", "deferred_by", NULL};
    static const char *const en[] = {"segment_index", "actual_end_ns",
                                     "records_outside_segment_window", NULL};
    t_list(b, r->lc_seg_end, "  segment end      ", "", es, en);
    static const char *const rs[] = {"run_id", "end_reason", "rollover_reason", NULL};
    static const char *const rn[] = {"final_segment_index", "ended_ns", NULL};
    t_list(b, r->lc_run_end, "  run end          ", "", rs, rn);
    static const char *const ws[] = {"expression", "state",        "outcome",
                                     "reason",     "metric_state", NULL};
    static const char *const wn[] = {"samples_seen",          "windows_opened", "truncated_samples",
                                     "metric_quality_resets", "last_value",     NULL};
    t_list(b, r->lc_rules, "  deep window rule ", "rule_id", ws, wn);
    static const char *const qs[] = {NULL};
    static const char *const qn[] = {"tracked_counters",       "samples_observed",
                                     "registration_rejected",  "unknown_id_samples",
                                     "unavailable_samples",    "negative_delta_samples",
                                     "rate_windows_discarded", NULL};
    t_list(b, r->lc_quality, "  counter quality  ", "source", qs, qn);
    if (r->lc_more)
        fl_buf_printf(b, "  (%" PRIu64 " more lifecycle records)\n", r->lc_more);
}
