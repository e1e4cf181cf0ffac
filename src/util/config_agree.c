/*
 * config_agree.c - the pure half of tc_init's check that the knobs marked
 * "must agree" (KNOB_AGREE in config.c's table) have the same value on every
 * rank: which values are exchanged, and the message naming each knob that
 * differs, its values and their ranks. The exchange is engine/agree.c's.
 */
#define _GNU_SOURCE
#include "util/config.h"
#include "util/config_table.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Knobs that must agree across ranks                                        */
/* ------------------------------------------------------------------------ */

#define AGREE_VALUES_SHOWN 3 /* values listed per knob; the rest are counted */
#define AGREE_RANKS_TEXT 40  /* characters of rank list per value */
#define AGREE_PART_MAX 384   /* one knob's text: name, 3 values, their ranks */
#define AGREE_TAIL " (must be the same on every rank)"
#define AGREE_RESERVE 64 /* room kept for the tail and "; and N more knobs differ" */

/* Appends the formatted text at buf + *used if all of it fits in len bytes
 * (NUL included): 0. Otherwise -1, and buf keeps its old text. */
static int __attribute__((format(printf, 4, 5)))
append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*used >= len) {
        return -1;
    }
    va_start(ap, fmt);
    n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len - *used) {
        buf[*used] = '\0';
        return -1;
    }
    *used += (size_t)n;
    return 0;
}

size_t tc__config_agree_count(void)
{
    const knob_t *k;
    size_t i, n = 0;

    for (i = 0; (k = tc__config_knob(i)) != NULL; i++) {
        n += k->scope == KNOB_AGREE;
    }
    return n;
}

/* The knob in slot `slot` of the exchanged array: the slot-th must-agree
 * knob in table order. */
static const knob_t *agree_knob(size_t slot)
{
    const knob_t *k;
    size_t i;

    for (i = 0; (k = tc__config_knob(i)) != NULL; i++) {
        if (k->scope == KNOB_AGREE && slot-- == 0) {
            return k;
        }
    }
    return NULL;
}

void tc__config_agree_values(const tc_config_t *cfg, int vals[TC_CONFIG_AGREE_MAX])
{
    const knob_t *k;
    size_t i, n = 0;

    memset(vals, 0, TC_CONFIG_AGREE_MAX * sizeof(*vals));
    for (i = 0; (k = tc__config_knob(i)) != NULL && n < TC_CONFIG_AGREE_MAX; i++) {
        if (k->scope == KNOB_AGREE) {
            vals[n++] = KNOB_INT_AT(cfg, k); /* integer and choice knobs only */
        }
    }
}

/* Writes the ranks whose value in `slot` is v: "rank 3", "ranks 0,2-3", or,
 * when the list passes AGREE_RANKS_TEXT characters, "17 ranks (0,2,4,...)".
 * Returns how many ranks have v. */
static int ranks_with(const int *all, int nranks, size_t slot, int v, char *out, size_t outlen)
{
    char list[AGREE_RANKS_TEXT + 1] = "";
    size_t used = 0;
    int r = 0, count = 0, cut = 0;

#define AGREE_VAL(rank) (all[(size_t)(rank)*TC_CONFIG_AGREE_MAX + slot])
    while (r < nranks) {
        int j = r;
        if (AGREE_VAL(r) != v) {
            r++;
            continue;
        }
        while (j + 1 < nranks && AGREE_VAL(j + 1) == v) {
            j++;
        }
        count += j - r + 1;
        if (!cut) {
            cut = j == r ? append(list, sizeof(list), &used, "%s%d", used > 0 ? "," : "", r)
                         : append(list, sizeof(list), &used, "%s%d-%d", used > 0 ? "," : "", r, j);
        }
        r = j + 1;
    }
#undef AGREE_VAL
    if (cut) {
        snprintf(out, outlen, "%d ranks (%s,...)", count, list);
    } else {
        snprintf(out, outlen, "rank%s %s", count == 1 ? "" : "s", list);
    }
    return count;
}

/* Writes knob slot's part of the message into part when its value differs
 * across ranks; returns 1 then, else 0. */
static int agree_part(const int *all, int nranks, size_t slot, char *part, size_t len)
{
    const knob_t *k = agree_knob(slot);
    int shown[AGREE_VALUES_SHOWN], nshown = 0, others = nranks, r, i;
    char ranks[AGREE_RANKS_TEXT + 32];
    size_t used = 0;

    /* The first few values, in the order of the lowest rank that has each. */
    for (r = 0; r < nranks; r++) {
        int v = all[(size_t)r * TC_CONFIG_AGREE_MAX + slot];
        for (i = 0; i < nshown && shown[i] != v; i++) {
        }
        if (i == nshown) {
            if (nshown == AGREE_VALUES_SHOWN) {
                break; /* more values than we list: the rest are counted */
            }
            shown[nshown++] = v;
        }
    }
    if (nshown <= 1) {
        return 0;
    }
    part[0] = '\0';
    (void)append(part, len, &used, "%s differs across ranks: ", k != NULL ? k->name : "?");
    for (i = 0; i < nshown; i++) {
        others -= ranks_with(all, nranks, slot, shown[i], ranks, sizeof(ranks));
        if (k != NULL && k->type == KNOB_CHOICE) {
            (void)append(part, len, &used, "%s%s on %s", i > 0 ? ", " : "",
                         tc__config_choice_name(k, shown[i]), ranks);
        } else {
            (void)append(part, len, &used, "%s%d on %s", i > 0 ? ", " : "", shown[i], ranks);
        }
    }
    if (others > 0) {
        (void)append(part, len, &used, ", other values on %d rank%s", others,
                     others == 1 ? "" : "s");
    }
    return 1;
}

int tc__config_agree_check(const int *all, int nranks, char *msg, size_t len)
{
    char part[AGREE_PART_MAX];
    size_t n = tc__config_agree_count(), cap, used = 0, slot;
    int ndiff = 0, nlisted = 0;

    if (n > TC_CONFIG_AGREE_MAX) {
        n = TC_CONFIG_AGREE_MAX;
    }
    cap = len < TC_CONFIG_AGREE_MSG_MAX ? len : TC_CONFIG_AGREE_MSG_MAX;
    if (cap > 0) {
        msg[0] = '\0';
    }
    for (slot = 0; slot < n; slot++) {
        if (!agree_part(all, nranks, slot, part, sizeof(part))) {
            continue;
        }
        ndiff++;
        /* Whole parts only, in table order; once one does not fit, the rest
         * are counted. */
        if (ndiff == nlisted + 1 && cap > AGREE_RESERVE &&
            append(msg, cap - AGREE_RESERVE, &used, "%s%s", nlisted > 0 ? "; " : "", part) == 0) {
            nlisted++;
        }
    }
    if (ndiff == 0) {
        return 0;
    }
    if (nlisted < ndiff) {
        int more = ndiff - nlisted;
        if (nlisted > 0) {
            (void)append(msg, cap, &used, "; and %d more knob%s differ%s", more,
                         more == 1 ? "" : "s", more == 1 ? "s" : "");
        } else {
            (void)append(msg, cap, &used, "%d knob%s differ%s across ranks", more,
                         more == 1 ? "" : "s", more == 1 ? "s" : "");
        }
    }
    (void)append(msg, cap, &used, "%s", AGREE_TAIL);
    return ndiff;
}
