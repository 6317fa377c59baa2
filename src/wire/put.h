/*
 * wire/put.h - the pieces of JSON every record writer of wire/ shares
 * (put.c): keys, booleans, the envelope's opening from the vocabulary.
 * Private to wire/.
 */
#ifndef GP_WIRE_PUT_H
#define GP_WIRE_PUT_H

#include "../util/buf.h"
#include "vocab.h"

#include <stdbool.h>
#include <stdint.h>

void fl_put_bool(fl_buf *b, bool v);
/* The empty string, not null, where the format wants a string always. */
void fl_put_str_or_empty(fl_buf *b, const char *s);
/* ,"key": - keys are program constants, so they need no escaping. */
void fl_put_key(fl_buf *b, const char *key);
/* {"version":V,"type":"T" - "version" left out for a type of version 0
 * (shutdown); V and T from the vocabulary. */
void fl_put_open(fl_buf *b, fl_type t);
/* fl_put_open, then ,"session_id":S - the opening most records share. */
void fl_put_head(fl_buf *b, fl_type t, const char *session_id);

#endif /* GP_WIRE_PUT_H */
