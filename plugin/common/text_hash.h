/*
 * text_hash.h - FNV-1a of a text: the one hash of the plugin's
 * dictionaries (the aggregator's, the activity decoder's kernel names, the
 * SASS decoder's functions), so equal texts hash alike everywhere.
 */
#ifndef GP_PLUGIN_COMMON_TEXT_HASH_H
#define GP_PLUGIN_COMMON_TEXT_HASH_H

#include <stdint.h>

static inline uint64_t fl_text_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

#endif /* GP_PLUGIN_COMMON_TEXT_HASH_H */
