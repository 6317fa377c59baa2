/*
 * report/sections.c - the report's sections as rows {bit, text parts, json parts},
 * made from report_int.h's FL_REPORT_SECTIONS in its order.
 *
 * Promises: this is the one list both renderings loop over (text.c,
 * json.c); the rows' bits are distinct and together GPUFL_SECTION_ALL
 * (tests/report/test_report.c).  Data only, so that the renderings read
 * it without a call circle.
 */
#include "report_int.h"
#include "gpufl.h"

/* (a, b) -> {a, b}: a row's parenthesised parts as an array's braces. */
#define FL_SECTION_PARTS_(...)                                                                     \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }
#define FL_REPORT_SECTION_ROW_(b, text, json) {b, FL_SECTION_PARTS_ text, FL_SECTION_PARTS_ json},
const fl_report_section fl_report_sections[] = {FL_REPORT_SECTIONS(FL_REPORT_SECTION_ROW_)};
const size_t fl_report_n_sections = sizeof fl_report_sections / sizeof fl_report_sections[0];
