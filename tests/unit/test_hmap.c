/*
 * test_hmap.c - the hash map: put/get/remove across growth, binary keys,
 * keys that are prefixes of each other, foreach visiting each entry once.
 */
#include "check.h"
#include "tc_test.h"
#include "util/hmap.h"

static void count_entry(const char *key, size_t len, void *val, void *arg)
{
    (void)key;
    (void)len;
    (void)val;
    (*(int *)arg)++;
}

/* 5000 keys across growth, half removed; a prefix of a key is another key;
 * binary keys with zero and high bytes; foreach visits each entry once. */
TC_CASE(put_get_remove)
{
    tc_hmap_t m;
    char key[32];
    int i, visited = 0;
    static int vals[5000];

    tc__hmap_init(&m);
    CHECK(tc__hmap_get(&m, "a", 1) == NULL);
    CHECK(tc__hmap_remove(&m, "a", 1) == NULL);
    for (i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof(key), "grad/%d", i);
        vals[i] = i;
        CHECK_EQ(tc__hmap_put(&m, key, (size_t)n, &vals[i]), 0);
    }
    CHECK_EQ(m.count, 5000);
    for (i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof(key), "grad/%d", i);
        int *v = tc__hmap_get(&m, key, (size_t)n);
        CHECK(v != NULL);
        CHECK_EQ(*v, i);
    }
    /* "grad/1" is a prefix of "grad/10": lengths must be compared too */
    CHECK(tc__hmap_get(&m, "grad/1", 5) == NULL);
    tc__hmap_foreach(&m, count_entry, &visited);
    CHECK_EQ(visited, 5000);
    for (i = 0; i < 5000; i += 2) {
        int n = snprintf(key, sizeof(key), "grad/%d", i);
        CHECK(tc__hmap_remove(&m, key, (size_t)n) == &vals[i]);
        CHECK(tc__hmap_remove(&m, key, (size_t)n) == NULL);
    }
    CHECK_EQ(m.count, 2500);
    for (i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof(key), "grad/%d", i);
        CHECK((tc__hmap_get(&m, key, (size_t)n) != NULL) == (i % 2 == 1));
    }
    /* binary keys with embedded zero bytes and high bytes */
    {
        const char k1[] = {'x', 0, 'y'}, k2[] = {'x', 0, 'z'}, k3[] = {(char)0xff};
        CHECK_EQ(tc__hmap_put(&m, k1, 3, &vals[1]), 0);
        CHECK_EQ(tc__hmap_put(&m, k2, 3, &vals[2]), 0);
        CHECK_EQ(tc__hmap_put(&m, k3, 1, &vals[3]), 0);
        CHECK(tc__hmap_get(&m, k1, 3) == &vals[1]);
        CHECK(tc__hmap_get(&m, k2, 3) == &vals[2]);
        CHECK(tc__hmap_get(&m, k3, 1) == &vals[3]);
        CHECK(tc__hmap_get(&m, k1, 1) == NULL);
    }
    tc__hmap_destroy(&m);
    CHECK_EQ(m.count, 0);
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_hmap: ok\n");
    return 0;
}
