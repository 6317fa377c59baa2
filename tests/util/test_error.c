/*
 * test_error.c - the library's one error convention (src/util/error.h):
 * every status of both enums has its own text, the one gp_status ->
 * gpufl_status mapping gives each sampler, reader or plugin failure the
 * recorder's status for the same meaning, and an error copied across keeps
 * its message behind the prefix.
 */
#include "check.h"
#include "util/error.h"

#include <string.h>

static void test_strings(void)
{
    for (int s = GP_OK; s <= GP_ERR_CUPTI; s++)
        CHECK(strcmp(gp_strerror((gp_status)s), "unknown status") != 0);
    CHECK_STR(gp_strerror((gp_status)99), "unknown status");
    for (int s = GPUFL_OK; s <= GPUFL_ERR_NOT_SUPPORTED; s++)
        CHECK(strcmp(gpufl_strerror((gpufl_status)s), "unknown status") != 0);
    CHECK_STR(gpufl_strerror((gpufl_status)99), "unknown status");
    CHECK_STR(gp_strerror(GP_ERR_IO), "I/O error");
    CHECK_STR(gpufl_strerror(GPUFL_ERR_IO), "cannot read or write the session logs");
}

/* The stable names records carry (device_lost_event's status). */
static void test_status_ids(void)
{
    CHECK_STR(gp_status_id(GP_OK), "ok");
    CHECK_STR(gp_status_id(GP_ERR_DEVICE_LOST), "device_lost");
    CHECK_STR(gp_status_id(GP_ERR_BACKEND), "backend");
    CHECK_STR(gp_status_id(GP_ERR_TIMEOUT), "timeout");
    CHECK_STR(gp_status_id(GP_ERR_CUPTI), "cupti");
    CHECK_STR(gp_status_id((gp_status)99), "unknown");
    CHECK_STR(gp_status_id((gp_status)-1), "unknown");
}

static void test_mapping(void)
{
    static const struct {
        gp_status gp;
        gpufl_status fl;
    } map[] = {
        {GP_OK, GPUFL_OK},
        {GP_ERR_INVALID_ARG, GPUFL_ERR_INVALID_ARG},
        {GP_ERR_NO_MEMORY, GPUFL_ERR_NO_MEMORY},
        {GP_ERR_BACKEND_UNAVAILABLE, GPUFL_ERR_BACKEND},
        {GP_ERR_BACKEND, GPUFL_ERR_BACKEND},
        {GP_ERR_DEVICE_NOT_FOUND, GPUFL_ERR_BACKEND},
        {GP_ERR_DEVICE_LOST, GPUFL_ERR_BACKEND},
        {GP_ERR_TIMEOUT, GPUFL_ERR_BACKEND},
        {GP_ERR_STATE, GPUFL_ERR_STATE},
        {GP_ERR_THREAD, GPUFL_ERR_THREAD},
        {GP_ERR_IO, GPUFL_ERR_IO},
        {GP_ERR_NOT_SUPPORTED, GPUFL_ERR_NOT_SUPPORTED},
        {GP_ERR_PARSE, GPUFL_ERR_BACKEND},
        {GP_ERR_CUPTI, GPUFL_ERR_BACKEND},
    };
    /* Every gp_status is in the table above. */
    CHECK_INT(sizeof map / sizeof map[0], GP_ERR_CUPTI + 1);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        CHECK_INT(fl_status_from_gp(map[i].gp), map[i].fl);
    CHECK_INT(fl_status_from_gp((gp_status)77), GPUFL_ERR_BACKEND);
}

static void test_copy_across(void)
{
    gp_error ge;
    gp_error_set(&ge, GP_ERR_IO, "no session under \"%s\"", "/tmp/x");
    gpufl_error fe;
    CHECK_INT(fl_error_from_gp(&fe, &ge, "cannot read the session"), GPUFL_ERR_IO);
    CHECK_INT(fe.status, GPUFL_ERR_IO);
    CHECK_STR(fe.message, "cannot read the session: no session under \"/tmp/x\"");
    CHECK_INT(fl_error_from_gp(&fe, &ge, NULL), GPUFL_ERR_IO);
    CHECK_STR(fe.message, "no session under \"/tmp/x\"");
    CHECK_INT(fl_error_from_gp(NULL, &ge, "x"), GPUFL_ERR_IO);
    gp_error_prefix(&ge, "read %d", 2);
    CHECK_STR(ge.message, "read 2: no session under \"/tmp/x\"");
    gp_error_clear(&ge);
    CHECK_INT(ge.status, GP_OK);
    CHECK_STR(ge.message, "");
    CHECK_INT(gp_error_set(NULL, GP_ERR_STATE, "x"), GP_ERR_STATE);
}

int main(void)
{
    test_strings();
    test_status_ids();
    test_mapping();
    test_copy_across();
    return check_done("test_error");
}
