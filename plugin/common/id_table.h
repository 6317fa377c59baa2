/*
 * id_table.h - the open-addressed (key, id) tables of the plugin's
 * dictionaries (the aggregator's, the activity decoder's kernel names):
 * linear probing over a power-of-two capacity, a NULL key an empty slot.
 * id_table.c grows them; lookups and inserts stay with their owners.
 */
#ifndef GP_PLUGIN_COMMON_ID_TABLE_H
#define GP_PLUGIN_COMMON_ID_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_id_slot {
    const void *key; /* a text (by_text), or a pointer compared as such */
    uint32_t id;
} fl_id_slot;

/* A pointer key's hash (its address, mixed). */
static inline uint64_t fl_ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* Doubles *tab (an empty one gets first slots, a power of two) and places
 * every key again, hashed as a text (fl_text_hash) when by_text, else as a
 * pointer; false when out of memory, the table as it was. */
bool fl_id_table_grow(fl_id_slot **tab, size_t *cap, size_t first, bool by_text);

#endif /* GP_PLUGIN_COMMON_ID_TABLE_H */
