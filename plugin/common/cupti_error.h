/*
 * cupti_error.h - the one CUPTI error explainer (cupti_error.c): a CUPTI
 * result to the FL_PC_* status every engine reports, and the message with
 * the fix ("<what> failed: <CUPTI's text> (<code>): <why and what to do>;
 * the session runs Trace").  The why of a status is the engine's own
 * (fl_cupti_fixes: PC sampling and PM sampling name different needs); the
 * mapping and the message's form are shared.
 */
#ifndef GP_PLUGIN_COMMON_CUPTI_ERROR_H
#define GP_PLUGIN_COMMON_CUPTI_ERROR_H

#include "../../src/abi/trace_abi.h"

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An engine's words for the statuses whose fix depends on the engine
 * (NULL: PC sampling's, which the Profiler API's engines share); mig_own:
 * a MIG instance is FL_PC_MIG, not FL_PC_NOT_SUPPORTED. */
typedef struct fl_cupti_fixes {
    const char *no_permission, *not_supported, *conflict, *mig;
    bool mig_own;
} fl_cupti_fixes;

/* The FL_PC_* status of a CUPTI result (f NULL: the PC sampling mapping). */
uint32_t fl_cupti_status(CUptiResult r, const fl_cupti_fixes *f);
/* The why and what to do of a status, in f's words. */
const char *fl_cupti_fix(uint32_t status, const fl_cupti_fixes *f);
/* CUPTI's name of r ("unknown CUPTI error" when it has none). */
const char *fl_cupti_name(CUptiResult r);
/* "<what> failed: <CUPTI's name> (<code>): <fix>; the session runs Trace". */
void fl_cupti_explain(CUptiResult r, const char *what, const fl_cupti_fixes *f, char *out,
                      size_t len);

/* PC sampling's words (the Profiler API's engines use them too). */
extern const fl_cupti_fixes fl_pcs_fixes;

/* The FL_PC_* status of a CUPTI error, and its message with the fix, in PC
 * sampling's words. */
uint32_t fl_pcs_status_of(CUptiResult r);
const char *fl_pcs_fix(uint32_t status); /* the why and what to do of a status */
void fl_pcs_explain(CUptiResult r, const char *what, char *out, size_t len);

/* The Profiler API's late start (SASS metrics, the range profiler, Deep):
 * late is "a CUDA context was current when the session started" (CUDA
 * work came before gpufl_init).  fl_profiler_status: the FL_PC_* status
 * of a refusal, FL_RP_LATE_INIT for one without a specific cause when
 * late; fl_late_init_advice: the seed's advice to append to its message
 * ("" when not late). */
uint32_t fl_profiler_status(CUptiResult r, bool late);
const char *fl_late_init_advice(bool late);

#endif /* GP_PLUGIN_COMMON_CUPTI_ERROR_H */
