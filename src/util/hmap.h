/*
 * hmap.h - a small hash map from byte-string keys to pointers.
 *
 * Chained buckets that double when the load passes 1; keys are copied in. Not
 * thread-safe: the owner serializes access. Used for the per-rank table of
 * names in flight and the coordinator's message table.
 */
#ifndef TC_UTIL_HMAP_H
#define TC_UTIL_HMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tc_hmap_node {
    struct tc_hmap_node *next;
    uint64_t hash;
    size_t len;
    void *val;
    char key[]; /* len bytes + NUL */
} tc_hmap_node_t;

typedef struct {
    tc_hmap_node_t **buckets;
    size_t nbuckets; /* power of two, or 0 before the first put */
    size_t count;
} tc_hmap_t;

void tc__hmap_init(tc_hmap_t *m);
/* Frees the nodes (not the values). */
void tc__hmap_destroy(tc_hmap_t *m);
void *tc__hmap_get(const tc_hmap_t *m, const char *key, size_t len);
/* Inserts key (which must be absent). 0, or -1 when out of memory (map unchanged). */
int tc__hmap_put(tc_hmap_t *m, const char *key, size_t len, void *val);
/* Removes key; returns its value or NULL if absent. */
void *tc__hmap_remove(tc_hmap_t *m, const char *key, size_t len);
/* Calls fn for every entry (fn must not change the map). */
void tc__hmap_foreach(const tc_hmap_t *m,
                      void (*fn)(const char *key, size_t len, void *val, void *arg), void *arg);
uint64_t tc__hash_bytes(const void *data, size_t len);

#endif
