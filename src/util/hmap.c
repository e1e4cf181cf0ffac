/*
 * hmap.c - chained hash map with FNV-1a hashing. Never frees values.
 */
#define _GNU_SOURCE
#include "util/hmap.h"

#include <stdlib.h>
#include <string.h>

uint64_t tc__hash_bytes(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

void tc__hmap_init(tc_hmap_t *m)
{
    m->buckets = NULL;
    m->nbuckets = 0;
    m->count = 0;
}

void tc__hmap_destroy(tc_hmap_t *m)
{
    size_t i;

    for (i = 0; i < m->nbuckets; i++) {
        tc_hmap_node_t *n = m->buckets[i];
        while (n != NULL) {
            tc_hmap_node_t *next = n->next;
            free(n);
            n = next;
        }
    }
    free(m->buckets);
    tc__hmap_init(m);
}

static tc_hmap_node_t **find(const tc_hmap_t *m, const char *key, size_t len, uint64_t h)
{
    tc_hmap_node_t **pp = &m->buckets[h & (m->nbuckets - 1)];

    while (*pp != NULL) {
        if ((*pp)->hash == h && (*pp)->len == len && memcmp((*pp)->key, key, len) == 0) {
            return pp;
        }
        pp = &(*pp)->next;
    }
    return pp;
}

void *tc__hmap_get(const tc_hmap_t *m, const char *key, size_t len)
{
    tc_hmap_node_t **pp;

    if (m->count == 0) {
        return NULL;
    }
    pp = find(m, key, len, tc__hash_bytes(key, len));
    return *pp != NULL ? (*pp)->val : NULL;
}

static int grow(tc_hmap_t *m)
{
    size_t n = m->nbuckets == 0 ? 16 : m->nbuckets * 2;
    tc_hmap_node_t **b = calloc(n, sizeof(*b));
    size_t i;

    if (b == NULL) {
        return -1;
    }
    for (i = 0; i < m->nbuckets; i++) {
        tc_hmap_node_t *node = m->buckets[i];
        while (node != NULL) {
            tc_hmap_node_t *next = node->next;
            node->next = b[node->hash & (n - 1)];
            b[node->hash & (n - 1)] = node;
            node = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
    return 0;
}

int tc__hmap_put(tc_hmap_t *m, const char *key, size_t len, void *val)
{
    tc_hmap_node_t *node;
    uint64_t h = tc__hash_bytes(key, len);

    if (m->count >= m->nbuckets && grow(m) != 0 && m->nbuckets == 0) {
        return -1; /* a failed grow of a non-empty table only costs speed */
    }
    node = malloc(sizeof(*node) + len + 1);
    if (node == NULL) {
        return -1;
    }
    node->hash = h;
    node->len = len;
    node->val = val;
    memcpy(node->key, key, len);
    node->key[len] = '\0';
    node->next = m->buckets[h & (m->nbuckets - 1)];
    m->buckets[h & (m->nbuckets - 1)] = node;
    m->count++;
    return 0;
}

void *tc__hmap_remove(tc_hmap_t *m, const char *key, size_t len)
{
    tc_hmap_node_t **pp, *node;
    void *val;

    if (m->count == 0) {
        return NULL;
    }
    pp = find(m, key, len, tc__hash_bytes(key, len));
    node = *pp;
    if (node == NULL) {
        return NULL;
    }
    *pp = node->next;
    val = node->val;
    free(node);
    m->count--;
    return val;
}

void tc__hmap_foreach(const tc_hmap_t *m,
                      void (*fn)(const char *key, size_t len, void *val, void *arg), void *arg)
{
    size_t i;

    for (i = 0; i < m->nbuckets; i++) {
        const tc_hmap_node_t *n;
        for (n = m->buckets[i]; n != NULL; n = n->next) {
            fn(n->key, n->len, n->val, arg);
        }
    }
}
