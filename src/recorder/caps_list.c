/*
 * recorder/caps_list.c - the edits of a session's capture_capabilities
 * list that capabilities.c and caps_engines.c share (caps_int.h).
 *
 * Promises: an entry is added once (dropped, not overrun, when the list is
 * full); a loss is the final word (partial keeps its first reason, later
 * messages follow it).
 */
#include "caps_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fl_caps_add(session *s, const char *feature, bool requested, fl_cap_status status,
                 const char *reason_code, const char *fmt, ...)
{
    if (s->n_caps == MAX_CAPS)
        return;
    size_t i = s->n_caps++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->cap_msg[i], sizeof s->cap_msg[i], fmt, ap);
    va_end(ap);
    s->caps[i] = (fl_capability){.feature = feature,
                                 .requested = requested,
                                 .status = status,
                                 .mode = "",
                                 .reason_code = reason_code,
                                 .message = s->cap_msg[i]};
}

/* The final word on a feature that lost data: partial, with the reason;
 * a feature already partial keeps its first reason and gets this message
 * after its own. */
void fl_caps_mark_partial(session *s, const char *feature, const char *reason, const char *fmt, ...)
{
    for (size_t i = 0; i < s->n_caps; i++) {
        if (strcmp(s->caps[i].feature, feature) != 0)
            continue;
        char *msg = s->cap_msg[i];
        size_t at = 0;
        if (s->caps[i].status == FL_CAP_PARTIAL && msg[0]) {
            at = strlen(msg);
            at += (size_t)snprintf(msg + at, sizeof s->cap_msg[i] - at, "; ");
            if (at >= sizeof s->cap_msg[i])
                return;
        } else {
            s->caps[i].status = FL_CAP_PARTIAL;
            s->caps[i].reason_code = reason;
        }
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + at, sizeof s->cap_msg[i] - at, fmt, ap);
        va_end(ap);
    }
}

bool fl_caps_is_collected(const session *s, const char *feature)
{
    for (size_t i = 0; i < s->n_caps; i++)
        if (strcmp(s->caps[i].feature, feature) == 0 && s->caps[i].status == FL_CAP_COLLECTED)
            return true;
    return false;
}

/* A feature's status and message set anew (its first word replaced). */
void fl_caps_set(session *s, const char *feature, fl_cap_status status, const char *reason,
                 const char *fmt, ...)
{
    for (size_t i = 0; i < s->n_caps; i++) {
        if (strcmp(s->caps[i].feature, feature) != 0)
            continue;
        s->caps[i].status = status;
        s->caps[i].reason_code = reason;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->cap_msg[i], sizeof s->cap_msg[i], fmt, ap);
        va_end(ap);
    }
}
