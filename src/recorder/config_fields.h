/*
 * recorder/config_fields.h - the one table of the recorder's options
 * (config_fields.c), shared by the layers that fill them (config_file.c,
 * config_env.c) and the resolution (config.c), so that a new option is one
 * row, known to the file, the environment, the checks and the provenance
 * at once.
 */
#ifndef GP_RECORDER_CONFIG_FIELDS_H
#define GP_RECORDER_CONFIG_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

enum ftype { FT_STR, FT_BOOL, FT_INT, FT_BACKEND, FT_ENGINE };
enum fsrc { SRC_DEFAULT, SRC_CONFIG, SRC_ENV, SRC_CODE };

#define NO_OUT ((size_t)-1)

/* One row per option, in the struct's order, so the known-key list and the
 * provenance read like the documentation.  config_file and enabled are rows
 * too (for code and the key list) but take special paths. */
typedef struct fl_field {
    const char *name;
    enum ftype type;
    size_t opt_off; /* in gpufl_init_options */
    size_t out_off; /* in fl_config; NO_OUT: not carried into it (enabled) */
    const char *env;
} fl_field;

enum { FL_NFIELDS = 38 };
extern const fl_field fl_config_fields[];

/* A field's value while the layers are applied.  Strings are borrowed (from
 * opts, the environment or the parsed JSON) until they are copied out. */
typedef struct fl_fval {
    enum fsrc src;
    const char *s;
    bool b;
    int i;
} fl_fval;

/* The row named name; -1 if none. */
int fl_config_field_index(const char *name);

/* The accepted names of the enum options, for messages. */
extern const char *const fl_config_backend_list;
extern const char *const fl_config_engine_list;

#endif /* GP_RECORDER_CONFIG_FIELDS_H */
