/*
 * reader/cell.h - one cell of a batch row as the reader gives it: the type
 * the scanner (scan.h) writes and the reader's consumers (read.h) read.
 */
#ifndef GP_READER_CELL_H
#define GP_READER_CELL_H

#include <stdint.h>

/* One cell of a batch row: JSON numbers become int (exact integers up to
 * 2^64-1 / down to -2^63) or real; null stays null (a metric the device
 * did not report); anything else in a row is an error of that row. */
typedef enum fl_cell_kind {
    FL_CELL_NULL = 0,
    FL_CELL_INT,
    FL_CELL_UINT,
    FL_CELL_REAL
} fl_cell_kind;
typedef struct fl_cell {
    uint8_t kind; /* fl_cell_kind; FL_CELL_UINT: above INT64_MAX, in u */
    union {
        int64_t i;
        uint64_t u;
        double d;
    };
} fl_cell;

#endif /* GP_READER_CELL_H */
