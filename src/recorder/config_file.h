/*
 * recorder/config_file.h - the JSON config file as a layer of the options
 * (config_file.c): read, parsed by jansson and checked key by key, every
 * problem located by line and column so the user can go straight to it.
 */
#ifndef GP_RECORDER_CONFIG_FILE_H
#define GP_RECORDER_CONFIG_FILE_H

#include "config_fields.h"
#include "gpufl.h"

#include <stdbool.h>
#include <stddef.h>

struct json_t;

/* A top-level key of the config text and the byte offset of its opening
 * quote: jansson reports positions only for errors, so problems with valid
 * JSON are located from here. */
typedef struct fl_keypos {
    char *name;
    size_t off;
} fl_keypos;

typedef struct fl_keylist {
    fl_keypos *k;
    size_t n, cap;
} fl_keylist;

/* A config file while the options are resolved: the values applied from
 * it borrow their strings from root, so it lives until they are copied
 * out.  Set path (and hide_quotes: an API key is set in code or the
 * environment, so no text of the file is quoted), zero the rest; the other
 * fields are config_file.c's. */
typedef struct fl_config_file {
    const char *path;
    bool hide_quotes;
    char *text;
    size_t len;
    struct json_t *root;
    fl_keylist keys;
} fl_config_file;

/* A config file larger than this is refused (GPUFL_ERR_CONFIG, naming it
 * and the cap), as is anything that is not a regular file (a FIFO, a
 * device such as /dev/zero, a socket, a directory). */
#define FL_CONFIG_FILE_MAX (1u << 20)

/* Reads, parses and applies the file f->path over v (SRC_CONFIG); from_env:
 * GPUFL_CONFIG_FILE named it (messages say so).  GPUFL_DISABLED when it
 * says "enabled": false (code cannot have said false: that returned
 * earlier). */
gpufl_status fl_config_file_load(fl_config_file *f, bool from_env, fl_fval v[FL_NFIELDS],
                                 gpufl_error *err);
/* The same for a text already in f->text (f->len bytes, NUL after them,
 * malloc'd: fl_config_file_free frees it) named f->path: the parse and the
 * checks alone (the fuzz target's entry). */
gpufl_status fl_config_file_apply_text(fl_config_file *f, fl_fval v[FL_NFIELDS], gpufl_error *err);

/* The file's api_key as it decodes (escapes and all), NULL when it has
 * none or did not parse. */
const char *fl_config_file_api_key(const fl_config_file *f);

void fl_config_file_free(fl_config_file *f); /* the values taken from it go too */

#endif /* GP_RECORDER_CONFIG_FILE_H */
