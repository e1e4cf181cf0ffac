/*
 * test_config_agree.c - the pure half of tc_init's check that the knobs which
 * must agree across ranks do (util/config.h): which knobs the table marks,
 * the values a rank contributes, the verdict and the message on tables of
 * 1 to 5000 "ranks" built here, without MPI. The message is compared in full
 * where it is short, and bounded where ranks or values are many. The README
 * must mark the same knobs as the table.
 */
#define _GNU_SOURCE
#include "check.h"
#include "util/config.h"

#include <stdlib.h>

#define M TC_CONFIG_AGREE_MAX

/* The slot of the must-agree knob with this name in a rank's array. */
static size_t slot_of(const char *name)
{
    size_t i, slot = 0;

    for (i = 0; i < tc__config_count(); i++) {
        tc_knob_desc_t d;
        CHECK_EQ(tc__config_describe(i, &d), 0);
        if (strcmp(d.name, name) == 0) {
            CHECK_MSG(d.must_agree, "%s is not marked must-agree", name);
            return slot;
        }
        slot += (size_t)d.must_agree;
    }
    TC_CHECK_FAIL("no knob %s", name);
    return 0;
}

/* nranks copies of the default values. */
static int *table(int nranks)
{
    tc_config_t cfg;
    int *all = calloc((size_t)nranks * M, sizeof(int)), r;

    CHECK(all != NULL);
    tc__config_defaults(&cfg);
    for (r = 0; r < nranks; r++) {
        tc__config_agree_values(&cfg, &all[(size_t)r * M]);
    }
    return all;
}

static void set(int *all, int rank, const char *name, int v)
{
    all[(size_t)rank * M + slot_of(name)] = v;
}

/* Runs the check and compares the whole message. */
static void expect(const int *all, int nranks, int ndiff, const char *want)
{
    char msg[1024];

    memset(msg, 'x', sizeof(msg));
    CHECK_EQ(tc__config_agree_check(all, nranks, msg, sizeof(msg)), ndiff);
    CHECK_MSG(strcmp(msg, want) == 0, "message\n  '%s'\nwant\n  '%s'", msg, want);
}

/* Which knobs are marked, and what a rank contributes. */
static void test_table(void)
{
    static const char *const agree[] = {"TCOLL_RING_CHUNK_KB",
                                        "TCOLL_FUSION_THRESHOLD_KB",
                                        "TCOLL_FUSION_BUFFER_KB",
                                        "TCOLL_EAGER_BYTES",
                                        "TCOLL_CACHE_CAPACITY",
                                        "TCOLL_SHM",
                                        "TCOLL_SHM_SLOT_KB",
                                        "TCOLL_SHM_SLOTS",
                                        "TCOLL_ALLREDUCE_ALGO",
                                        "TCOLL_SHM_DIRECT_KB",
                                        "TCOLL_SHM_FAST_BYTES",
                                        "TCOLL_SHM_FAST_NAMES",
                                        "TCOLL_SHM_P2P_CELL_KB",
                                        "TCOLL_DETERMINISTIC",
                                        "TCOLL_RANKS_PER_NODE",
                                        "TCOLL_CUDA_IPC",
                                        "TCOLL_CUDA_IPC_MIN_KB",
                                        "TCOLL_SHM_FAST_LARGE_BYTES",
                                        "TCOLL_SHM_FAST_LARGE_NAMES",
                                        "TCOLL_CUDA_STAGE_CHUNK_KB",
                                        "TCOLL_MPI_CUDA"};
    tc_config_t cfg;
    int vals[M];
    size_t i, n = 0;
    char err[256];

    for (i = 0; i < tc__config_count(); i++) {
        tc_knob_desc_t d;
        size_t j;
        int listed = 0;
        CHECK_EQ(tc__config_describe(i, &d), 0);
        for (j = 0; j < sizeof(agree) / sizeof(agree[0]); j++) {
            listed |= strcmp(agree[j], d.name) == 0;
        }
        CHECK_MSG(d.must_agree == listed, "%s: must_agree is %d", d.name, d.must_agree);
        /* Only integers and choices (stored as their index) are compared as ints. */
        CHECK_MSG(!d.must_agree || strcmp(d.type, "int") == 0 || strcmp(d.type, "choice") == 0,
                  "%s is a %s", d.name, d.type);
        n += (size_t)d.must_agree;
    }
    CHECK_EQ(n, tc__config_agree_count());
    CHECK_LE(n, M);

    /* Defaults, in table order; the unused slots are zero. */
    tc__config_defaults(&cfg);
    memset(vals, 0x5a, sizeof(vals));
    tc__config_agree_values(&cfg, vals);
    CHECK_EQ(vals[slot_of("TCOLL_RING_CHUNK_KB")], 256);
    CHECK_EQ(vals[slot_of("TCOLL_FUSION_THRESHOLD_KB")], 64);
    CHECK_EQ(vals[slot_of("TCOLL_FUSION_BUFFER_KB")], 4096);
    CHECK_EQ(vals[slot_of("TCOLL_EAGER_BYTES")], 16384);
    CHECK_EQ(vals[slot_of("TCOLL_CACHE_CAPACITY")], 1024);
    CHECK_EQ(vals[slot_of("TCOLL_SHM")], 0); /* auto */
    CHECK_EQ(vals[slot_of("TCOLL_SHM_SLOT_KB")], 128);
    CHECK_EQ(vals[slot_of("TCOLL_SHM_SLOTS")], 4);
    CHECK_EQ(vals[slot_of("TCOLL_ALLREDUCE_ALGO")], 0); /* auto */
    for (i = n; i < M; i++) {
        CHECK_EQ(vals[i], 0);
    }
    CHECK_LT(slot_of("TCOLL_RING_CHUNK_KB"), slot_of("TCOLL_FUSION_BUFFER_KB"));

    /* A changed value shows; a local knob changes nothing. */
    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_RING_CHUNK_KB", "128", err, sizeof(err)), 0);
    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_SPIN", "64", err, sizeof(err)), 0);
    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_PEER_TIMEOUT_S", "5", err, sizeof(err)), 0);
    tc__config_agree_values(&cfg, vals);
    CHECK_EQ(vals[slot_of("TCOLL_RING_CHUNK_KB")], 128);
    {
        tc_config_t def;
        int dvals[M];
        tc__config_defaults(&def);
        tc__config_agree_values(&def, dvals);
        dvals[slot_of("TCOLL_RING_CHUNK_KB")] = 128;
        CHECK(memcmp(vals, dvals, sizeof(vals)) == 0);
    }
}

/* Small tables: the exact texts. */
static void test_messages(void)
{
    int *all;

    /* One rank, and ranks that agree (on defaults or not): no message. */
    all = table(1);
    expect(all, 1, 0, "");
    free(all);
    all = table(4);
    expect(all, 4, 0, "");
    set(all, 0, "TCOLL_EAGER_BYTES", 0);
    set(all, 1, "TCOLL_EAGER_BYTES", 0);
    set(all, 2, "TCOLL_EAGER_BYTES", 0);
    set(all, 3, "TCOLL_EAGER_BYTES", 0);
    expect(all, 4, 0, "");

    /* The example of the issue. */
    set(all, 1, "TCOLL_RING_CHUNK_KB", 128);
    expect(all, 4, 1,
           "TCOLL_RING_CHUNK_KB differs across ranks: 256 on ranks 0,2-3, 128 on rank 1 "
           "(must be the same on every rank)");

    /* Two knobs, in table order whatever the ranks; values in order of the
     * lowest rank that has each (here rank 0's is not the default). */
    set(all, 0, "TCOLL_FUSION_BUFFER_KB", 1);
    set(all, 3, "TCOLL_FUSION_BUFFER_KB", 2);
    expect(all, 4, 2,
           "TCOLL_RING_CHUNK_KB differs across ranks: 256 on ranks 0,2-3, 128 on rank 1; "
           "TCOLL_FUSION_BUFFER_KB differs across ranks: 1 on rank 0, 4096 on ranks 1-2, "
           "2 on rank 3 (must be the same on every rank)");
    free(all);

    /* Two ranks, the smallest disagreement. */
    all = table(2);
    set(all, 1, "TCOLL_CACHE_CAPACITY", 0);
    expect(all, 2, 1,
           "TCOLL_CACHE_CAPACITY differs across ranks: 1024 on rank 0, 0 on rank 1 "
           "(must be the same on every rank)");
    free(all);

    /* A choice knob names its values. */
    all = table(3);
    set(all, 2, "TCOLL_ALLREDUCE_ALGO", 1);
    expect(all, 3, 1,
           "TCOLL_ALLREDUCE_ALGO differs across ranks: auto on ranks 0-1, ring on rank 2 "
           "(must be the same on every rank)");
    free(all);

    /* More than three values: the rest are counted. */
    all = table(6);
    set(all, 1, "TCOLL_FUSION_THRESHOLD_KB", 1);
    set(all, 2, "TCOLL_FUSION_THRESHOLD_KB", 2);
    set(all, 3, "TCOLL_FUSION_THRESHOLD_KB", 3);
    set(all, 4, "TCOLL_FUSION_THRESHOLD_KB", 1);
    set(all, 5, "TCOLL_FUSION_THRESHOLD_KB", 4);
    expect(all, 6, 1,
           "TCOLL_FUSION_THRESHOLD_KB differs across ranks: 64 on rank 0, 1 on ranks 1,4, "
           "2 on rank 2, other values on 2 ranks (must be the same on every rank)");
    free(all);
}

/* Many ranks: rank lists are cut, the message stays bounded, and every
 * differing knob is at least counted. */
static void test_bounds(void)
{
    const int n = 5000;
    int *all = table(n), r, ndiff;
    char msg[TC_CONFIG_AGREE_MSG_MAX + 100], small[120], *p;
    size_t k, nk = tc__config_agree_count();

    /* Odd ranks disagree: no run of ranks longer than one. */
    for (r = 1; r < n; r += 2) {
        set(all, r, "TCOLL_RING_CHUNK_KB", 512);
    }
    expect(all, n, 1,
           "TCOLL_RING_CHUNK_KB differs across ranks: 256 on 2500 ranks "
           "(0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,...), 512 on 2500 ranks "
           "(1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,...) (must be the same on every rank)");

    /* Every must-agree knob differs, with thousands of values each. */
    for (r = 0; r < n; r++) {
        for (k = 0; k < nk; k++) {
            all[(size_t)r * M + k] = r * 7 + (int)k;
        }
    }
    memset(msg, 'x', sizeof(msg));
    ndiff = tc__config_agree_check(all, n, msg, sizeof(msg));
    CHECK_EQ(ndiff, (int)nk);
    CHECK_LT(strlen(msg), TC_CONFIG_AGREE_MSG_MAX);
    {
        const char *head = "TCOLL_RING_CHUNK_KB differs across ranks: 0 on rank 0, 7 on rank 1, "
                           "14 on rank 2, other values on 4997 ranks; ";
        CHECK_MSG(strncmp(msg, head, strlen(head)) == 0, "%s", msg);
    }
    p = strstr(msg, " more knobs differ (must be the same on every rank)");
    CHECK_MSG(p != NULL && strcmp(p, " more knobs differ (must be the same on every rank)") == 0,
              "%s", msg);
    CHECK_STR_CONTAINS(msg, "TCOLL_FUSION_THRESHOLD_KB differs across ranks: 1 on rank 0");

    /* The same input gives the same text (what every rank relies on). */
    {
        char again[sizeof(msg)];
        CHECK_EQ(tc__config_agree_check(all, n, again, sizeof(again)), ndiff);
        CHECK(strcmp(again, msg) == 0);
    }

    /* A short buffer: cut, still terminated, still counting. */
    memset(small, 'x', sizeof(small));
    CHECK_EQ(tc__config_agree_check(all, n, small, sizeof(small)), ndiff);
    CHECK_LT(strlen(small), sizeof(small));
    {
        char want[120];
        snprintf(want, sizeof(want),
                 "%zu knobs differ across ranks (must be the same on every rank)", nk);
        CHECK_MSG(strcmp(small, want) == 0, "%s", small);
    }
    CHECK_EQ(tc__config_agree_check(all, n, small, 1), ndiff);
    CHECK_EQ(small[0], '\0');
    free(all);
}

/* The README's knob table marks the same knobs (its last column). */
static void test_readme(void)
{
    static char text[1 << 20]; /* the whole README, with room to grow */
    FILE *readme = fopen(TCOLL_SOURCE_DIR "/README.md", "r");
    size_t i, n;

    CHECK(readme != NULL);
    n = fread(text, 1, sizeof(text) - 1, readme);
    CHECK_MSG(n < sizeof(text) - 1, "README.md is larger than this test reads");
    text[n] = '\0';
    fclose(readme);
    for (i = 0; i < tc__config_count(); i++) {
        tc_knob_desc_t d;
        char key[96];
        const char *row, *end, *want;
        CHECK_EQ(tc__config_describe(i, &d), 0);
        want = d.must_agree ? "| yes |" : "| no |";
        snprintf(key, sizeof(key), "\n| `%s` |", d.name);
        row = strstr(text, key);
        CHECK_MSG(row != NULL, "README.md has no table row for %s", d.name);
        end = strchr(row + 1, '\n');
        CHECK(end != NULL);
        CHECK_MSG((size_t)(end - row) > strlen(want) &&
                      strncmp(end - strlen(want), want, strlen(want)) == 0,
                  "README.md: the row of %s must end with '%s'", d.name, want);
    }
}

int main(void)
{
    test_table();
    test_messages();
    test_bounds();
    test_readme();
    printf("test_config_agree: ok\n");
    return 0;
}
