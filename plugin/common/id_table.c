/*
 * id_table.c - growing the plugin's (key, id) tables (id_table.h).
 *
 * Promises: every key is kept with its id, probed from its hash as the
 * owners probe it; on failure nothing changes.
 */
#include "id_table.h"
#include "text_hash.h"

#include <stdlib.h>

bool fl_id_table_grow(fl_id_slot **tab, size_t *cap, size_t first, bool by_text)
{
    size_t nc = *cap ? *cap * 2 : first;
    fl_id_slot *n = calloc(nc, sizeof *n);
    if (!n)
        return false;
    for (size_t i = 0; i < *cap; i++) {
        const fl_id_slot *e = &(*tab)[i];
        if (!e->key)
            continue;
        uint64_t h = by_text ? fl_text_hash(e->key) : fl_ptr_hash(e->key);
        size_t j = h & (nc - 1);
        while (n[j].key)
            j = (j + 1) & (nc - 1);
        n[j] = *e;
    }
    free(*tab);
    *tab = n;
    *cap = nc;
    return true;
}
