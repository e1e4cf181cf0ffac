/*
 * config_table.h - the knob table's row type, shared by the files of the
 * configuration: config.c (the table, its parser and the loader) and
 * config_agree.c (the knobs that must agree across ranks), which reads
 * the table through tc__config_knob.
 */
#ifndef TCOLL_UTIL_CONFIG_TABLE_H
#define TCOLL_UTIL_CONFIG_TABLE_H

#include <stddef.h>

/* Knob values are read (never written) through these: string fields are
 * bytes at an offset, the others ints. */
#define KNOB_INT_AT(cfg, k) (*(const int *)((const char *)(cfg) + (k)->offset))

/* KNOB_CHOICE: one of the names in the row's choices (NULL-terminated),
 * stored as its index: an integer, so a choice can be AGREE. */
typedef enum { KNOB_INT, KNOB_LEVEL, KNOB_STRING, KNOB_CHOICE } knob_type_t;

/* Whether a knob must have the same value on every rank: AGREE when every
 * rank uses its own value to decide what it sends and receives, or how work
 * is grouped and scheduled (tc_init compares them, see tc__config_agree_*);
 * LOCAL when it only changes how this rank waits, logs or keeps memory.
 * Only integer and choice knobs can be AGREE. */
typedef enum { KNOB_LOCAL, KNOB_AGREE } knob_scope_t;

typedef struct {
    const char *name;
    knob_type_t type;
    size_t offset;
    const char *def;
    long min, max; /* integers: the range; strings: max is the field size */
    knob_scope_t scope;
    const char *doc;
    const char *const *choices; /* KNOB_CHOICE: the names, NULL-terminated */
} knob_t;

/* Row i of the table (i < tc__config_count()), else NULL. */
const knob_t *tc__config_knob(size_t i);

/* The name of a choice knob's value v ("?" for none). */
const char *tc__config_choice_name(const knob_t *k, int v);

#endif
