/*
 * report/export_csv.h - the kernels CSV's header and rows
 * (report/export_csv.c), written by report/export.c.
 */
#ifndef FL_EXPORT_CSV_H
#define FL_EXPORT_CSV_H

#include "../util/buf.h"
#include "model.h"

extern const char fl_export_csv_header[];
/* Appends one kernel's row (its line break included) to b. */
void fl_export_csv_row(fl_buf *b, const fl_model *m, const fl_krow *k);

#endif /* FL_EXPORT_CSV_H */
