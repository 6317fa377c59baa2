/*
 * util/util.h - the utilities as one header, for code outside the library
 * that embeds them (the gpu-profile command): the buffer and number
 * writers, directories, text, clocks and the error convention.  The
 * library's own modules include the one they use.
 */
#ifndef GP_UTIL_UTIL_H
#define GP_UTIL_UTIL_H

#include "buf.h"
#include "clock.h"
#include "error.h"
#include "fs.h"
#include "text.h"

#endif /* GP_UTIL_UTIL_H */
