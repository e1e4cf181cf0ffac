/*
 * json_check.h - a strict JSON parser and Chrome-trace reader for tcoll's
 * tests (header-only; every function is static inline, so a test uses what
 * it needs and the rest costs nothing).
 *
 * The parser (jparse) accepts exactly RFC 8259 JSON and builds a small tree
 * (jval_t): objects, arrays, strings with every escape (\uXXXX with
 * surrogate pairs decoded to UTF-8), numbers, true/false/null. It rejects
 * trailing commas, raw control characters and invalid UTF-8 in strings
 * (overlong forms, surrogates, code points above U+10FFFF, cut sequences),
 * unknown escapes, lone surrogates, leading zeros, "1." / ".5" / "1e",
 * duplicate keys in one object, nesting deeper than 64, and anything after
 * the top value. Its UTF-8 table is written independently of the library's.
 *
 * On top of it, for the timeline files (Chrome "Trace Event Format"):
 * load_trace() parses a file and checks the structure every tcoll trace
 * must have (a traceEvents array of events with name, ph, ts, pid == the
 * rank, tid; "X" events with a non-negative dur; "M" events with args; an
 * otherData object naming the rank); load_job_trace() does the same for a
 * job-wide trace (pids 0..n-1, otherData with the ranks' summaries) and
 * trace_view_pid() picks one rank's events out of it; find_row() finds a
 * row's tid by its thread_name; jget/jstr_is/num_of read members.
 *
 * Failures in the trace helpers (and out of memory anywhere) go through
 * check.h's CHECK macros: they print the rank and abort. jparse itself
 * returns -1 with a message, so tests can feed it bad documents.
 *
 * Used by tests/unit/test_timeline*.c (the writer alone, through
 * timeline_testutil.h) and tests/mpi/test_timeline*.c (the engine's
 * timelines under MPI: test_timeline_files.c reads them back).
 */
#ifndef TC_TEST_JSON_CHECK_H
#define TC_TEST_JSON_CHECK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------------------ */
/* Reading a file                                                            */
/* ------------------------------------------------------------------------ */

/* The whole file at path, NUL-terminated (the NUL is not counted in
 * *len_p); free() it. Fails the test if the file cannot be opened. */
static inline char *read_all(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0, n;

    CHECK_MSG(f != NULL, "cannot open %s: %s", path, strerror(errno));
    for (;;) {
        if (cap - len < 65536) {
            cap = cap * 2 + 65536;
            buf = realloc(buf, cap + 1);
            CHECK(buf != NULL);
        }
        n = fread(buf + len, 1, cap - len, f);
        if (n == 0) {
            break;
        }
        len += n;
    }
    fclose(f);
    buf[len] = '\0';
    *len_p = len;
    return buf;
}

/* ------------------------------------------------------------------------ */
/* A strict JSON parser building a small tree                                */
/* ------------------------------------------------------------------------ */

/* A parsed value: type says which fields apply. Strings (values and keys)
 * are decoded and may contain NUL bytes: compare with their length. */
typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;

typedef struct jval jval_t;
typedef struct jmember jmember_t;

struct jval {
    jtype_t type;
    int b;
    double num;
    char *str; /* J_STR: decoded UTF-8, NUL-terminated; len bytes */
    size_t len;
    jval_t *items;      /* J_ARR */
    jmember_t *members; /* J_OBJ */
    size_t n;
};

struct jmember {
    char *key;
    size_t klen;
    jval_t val;
};

typedef struct {
    const unsigned char *start, *p, *end;
    char err[160];
    int depth;
} jparser_t;

static inline int jfail(jparser_t *ps, const char *what)
{
    if (ps->err[0] == '\0') {
        snprintf(ps->err, sizeof(ps->err), "%s at byte %zu", what, (size_t)(ps->p - ps->start));
    }
    return -1;
}

static inline void jskip_ws(jparser_t *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
        ps->p++;
    }
}

/* Length of a valid UTF-8 sequence at p, 0 if invalid (written independently
 * of the library's: RFC 3629 table). */
static inline size_t test_utf8_len(const unsigned char *p, size_t avail)
{
    static const struct {
        unsigned char lo0, hi0, lo1, hi1;
        size_t n;
    } t[] = {
        {0xC2, 0xDF, 0x80, 0xBF, 2}, {0xE0, 0xE0, 0xA0, 0xBF, 3}, {0xE1, 0xEC, 0x80, 0xBF, 3},
        {0xED, 0xED, 0x80, 0x9F, 3}, {0xEE, 0xEF, 0x80, 0xBF, 3}, {0xF0, 0xF0, 0x90, 0xBF, 4},
        {0xF1, 0xF3, 0x80, 0xBF, 4}, {0xF4, 0xF4, 0x80, 0x8F, 4},
    };
    size_t i, j;

    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (p[0] < t[i].lo0 || p[0] > t[i].hi0) {
            continue;
        }
        if (avail < t[i].n || p[1] < t[i].lo1 || p[1] > t[i].hi1) {
            return 0;
        }
        for (j = 2; j < t[i].n; j++) {
            if (p[j] < 0x80 || p[j] > 0xBF) {
                return 0;
            }
        }
        return t[i].n;
    }
    return 0;
}

static inline void put_utf8(char *out, size_t *len, uint32_t cp)
{
    if (cp < 0x80) {
        out[(*len)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*len)++] = (char)(0xC0 | (cp >> 6));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*len)++] = (char)(0xE0 | (cp >> 12));
        out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*len)++] = (char)(0xF0 | (cp >> 18));
        out[(*len)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static inline int jhex4(jparser_t *ps, uint32_t *v)
{
    int i;

    *v = 0;
    if (ps->end - ps->p < 4) {
        return jfail(ps, "short \\u escape");
    }
    for (i = 0; i < 4; i++) {
        unsigned c = *ps->p++;
        *v <<= 4;
        if (c >= '0' && c <= '9') {
            *v |= c - '0';
        } else if (c >= 'a' && c <= 'f') {
            *v |= c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            *v |= c - 'A' + 10;
        } else {
            return jfail(ps, "bad hex digit in \\u escape");
        }
    }
    return 0;
}

/* At the opening quote. The decoded string is never longer than the raw one. */
static inline int jparse_string(jparser_t *ps, char **out_p, size_t *len_p)
{
    const unsigned char *q;
    char *out;
    size_t len = 0, n;

    ps->p++;
    for (q = ps->p; q < ps->end && *q != '"'; q++) {
        if (*q == '\\') {
            q++;
        }
    }
    out = malloc((size_t)(q - ps->p) + 1);
    CHECK(out != NULL);
    for (;;) {
        unsigned c;
        if (ps->p >= ps->end) {
            free(out);
            return jfail(ps, "unterminated string");
        }
        c = *ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            free(out);
            return jfail(ps, "raw control character in a string");
        }
        if (c >= 0x80) {
            n = test_utf8_len(ps->p, (size_t)(ps->end - ps->p));
            if (n == 0) {
                free(out);
                return jfail(ps, "invalid UTF-8 in a string");
            }
            memcpy(out + len, ps->p, n);
            len += n;
            ps->p += n;
            continue;
        }
        ps->p++;
        if (c != '\\') {
            out[len++] = (char)c;
            continue;
        }
        if (ps->p >= ps->end) {
            free(out);
            return jfail(ps, "unterminated escape");
        }
        c = *ps->p++;
        switch (c) {
        case '"': out[len++] = '"'; break;
        case '\\': out[len++] = '\\'; break;
        case '/': out[len++] = '/'; break;
        case 'b': out[len++] = '\b'; break;
        case 'f': out[len++] = '\f'; break;
        case 'n': out[len++] = '\n'; break;
        case 'r': out[len++] = '\r'; break;
        case 't': out[len++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (jhex4(ps, &cp) != 0) {
                free(out);
                return -1;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(out);
                return jfail(ps, "lone low surrogate");
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    free(out);
                    return jfail(ps, "high surrogate without a low one");
                }
                ps->p += 2;
                if (jhex4(ps, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
                    free(out);
                    return jfail(ps, "bad low surrogate");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(out, &len, cp);
            break;
        }
        default: free(out); return jfail(ps, "unknown escape");
        }
    }
    out[len] = '\0';
    *out_p = out;
    *len_p = len;
    return 0;
}

static inline int jdigits(jparser_t *ps)
{
    const unsigned char *s = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        ps->p++;
    }
    return ps->p > s ? 0 : jfail(ps, "digit expected");
}

static inline int jparse_number(jparser_t *ps, double *v)
{
    const unsigned char *s = ps->p;
    char buf[64];

    if (*ps->p == '-') {
        ps->p++;
    }
    if (ps->p < ps->end && *ps->p == '0') {
        ps->p++;
    } else if (jdigits(ps) != 0) {
        return -1;
    }
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (jdigits(ps) != 0) {
            return -1;
        }
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) {
            ps->p++;
        }
        if (jdigits(ps) != 0) {
            return -1;
        }
    }
    if ((size_t)(ps->p - s) >= sizeof(buf)) {
        return jfail(ps, "number too long for this test");
    }
    memcpy(buf, s, (size_t)(ps->p - s));
    buf[ps->p - s] = '\0';
    *v = strtod(buf, NULL);
    return 0;
}

static inline int jparse_value(jparser_t *ps, jval_t *v);

static inline int jparse_array(jparser_t *ps, jval_t *v)
{
    size_t cap = 0;

    ps->p++;
    jskip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap * 2 + 8;
            v->items = realloc(v->items, cap * sizeof(*v->items));
            CHECK(v->items != NULL);
        }
        memset(&v->items[v->n], 0, sizeof(v->items[0]));
        v->n++; /* owned from here: freed with the array even if half parsed */
        if (jparse_value(ps, &v->items[v->n - 1]) != 0) {
            return -1;
        }
        jskip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue; /* jparse_value rejects the ']' of a trailing comma */
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return 0;
        }
        return jfail(ps, "',' or ']' expected");
    }
}

static inline int jparse_object(jparser_t *ps, jval_t *v)
{
    size_t cap = 0, i;

    ps->p++;
    jskip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        jmember_t *m;
        jskip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            return jfail(ps, "key string expected");
        }
        if (v->n == cap) {
            cap = cap * 2 + 8;
            v->members = realloc(v->members, cap * sizeof(*v->members));
            CHECK(v->members != NULL);
        }
        m = &v->members[v->n];
        memset(m, 0, sizeof(*m));
        if (jparse_string(ps, &m->key, &m->klen) != 0) {
            return -1;
        }
        v->n++; /* owned from here, freed with the object */
        for (i = 0; i + 1 < v->n; i++) {
            if (v->members[i].klen == m->klen && memcmp(v->members[i].key, m->key, m->klen) == 0) {
                return jfail(ps, "duplicate key");
            }
        }
        jskip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            return jfail(ps, "':' expected");
        }
        ps->p++;
        if (jparse_value(ps, &m->val) != 0) {
            return -1;
        }
        jskip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return 0;
        }
        return jfail(ps, "',' or '}' expected");
    }
}

static inline int jliteral(jparser_t *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
        return jfail(ps, "unexpected character");
    }
    ps->p += n;
    return 0;
}

static inline int jparse_value(jparser_t *ps, jval_t *v)
{
    int rc;

    jskip_ws(ps);
    if (ps->p >= ps->end) {
        return jfail(ps, "value expected, end of input found");
    }
    if (++ps->depth > 64) {
        return jfail(ps, "nested too deep");
    }
    switch (*ps->p) {
    case '{':
        v->type = J_OBJ;
        rc = jparse_object(ps, v);
        break;
    case '[':
        v->type = J_ARR;
        rc = jparse_array(ps, v);
        break;
    case '"':
        v->type = J_STR;
        rc = jparse_string(ps, &v->str, &v->len);
        break;
    case 't':
        v->type = J_BOOL;
        v->b = 1;
        rc = jliteral(ps, "true");
        break;
    case 'f':
        v->type = J_BOOL;
        rc = jliteral(ps, "false");
        break;
    case 'n':
        v->type = J_NULL;
        rc = jliteral(ps, "null");
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
            v->type = J_NUM;
            rc = jparse_number(ps, &v->num);
        } else {
            rc = jfail(ps, "unexpected character");
        }
    }
    ps->depth--;
    return rc;
}

/* Frees what v owns (not v itself) and zeroes it. */
static inline void jfree(jval_t *v)
{
    size_t i;

    if (v->type == J_ARR) {
        for (i = 0; i < v->n; i++) {
            jfree(&v->items[i]);
        }
        free(v->items);
    } else if (v->type == J_OBJ) {
        for (i = 0; i < v->n; i++) {
            free(v->members[i].key);
            jfree(&v->members[i].val);
        }
        free(v->members);
    } else if (v->type == J_STR) {
        free(v->str);
    }
    memset(v, 0, sizeof(*v));
}

/* Parses text[0..len) as one JSON document. 0 and the tree in *root_p
 * (release it with jfree) on a valid document; -1 otherwise, with nothing
 * to free and a message with the byte offset in err. */
static inline int jparse(const char *text, size_t len, jval_t *root_p, char *err, size_t errlen)
{
    jparser_t ps;

    memset(&ps, 0, sizeof(ps));
    memset(root_p, 0, sizeof(*root_p));
    ps.start = ps.p = (const unsigned char *)text;
    ps.end = ps.start + len;
    if (jparse_value(&ps, root_p) == 0) {
        jskip_ws(&ps);
        if (ps.p != ps.end) {
            jfail(&ps, "trailing data after the top value");
        }
    }
    if (ps.err[0] != '\0') {
        snprintf(err, errlen, "%s", ps.err);
        jfree(root_p);
        return -1;
    }
    return 0;
}

/* Member key of object obj; NULL if obj is NULL, not an object, or has no
 * such member. */
static inline const jval_t *jget(const jval_t *obj, const char *key)
{
    size_t i;

    if (obj == NULL || obj->type != J_OBJ) {
        return NULL;
    }
    for (i = 0; i < obj->n; i++) {
        if (obj->members[i].klen == strlen(key) &&
            memcmp(obj->members[i].key, key, obj->members[i].klen) == 0) {
            return &obj->members[i].val;
        }
    }
    return NULL;
}

/* 1 if v is a string of exactly these len bytes. */
static inline int jstr_is(const jval_t *v, const char *s, size_t len)
{
    return v != NULL && v->type == J_STR && v->len == len && memcmp(v->str, s, len) == 0;
}

/* ------------------------------------------------------------------------ */
/* Reading a trace back                                                      */
/* ------------------------------------------------------------------------ */

static inline double num_of(const jval_t *e, const char *key);

/* A parsed trace file. */
typedef struct {
    jval_t root;
    const jval_t *events; /* the traceEvents array */
    const jval_t *other;  /* otherData */
} trace_t;

/* Parses path (failing the test if it is not valid JSON) and checks the
 * structure every trace must have, with every pid in pid_lo..pid_hi.
 * Release *t with free_trace. */
static inline void load_trace_pids(const char *path, int pid_lo, int pid_hi, trace_t *t)
{
    char err[200];
    size_t len, i;
    char *text = read_all(path, &len);

    CHECK_MSG(jparse(text, len, &t->root, err, sizeof(err)) == 0, "%s is not valid JSON: %s", path,
              err);
    free(text);
    CHECK(t->root.type == J_OBJ);
    t->events = jget(&t->root, "traceEvents");
    CHECK_MSG(t->events != NULL && t->events->type == J_ARR, "%s: no traceEvents array", path);
    t->other = jget(&t->root, "otherData");
    CHECK(t->other != NULL && t->other->type == J_OBJ);
    for (i = 0; i < t->events->n; i++) {
        const jval_t *e = &t->events->items[i];
        const jval_t *name = jget(e, "name"), *ph = jget(e, "ph"), *ts = jget(e, "ts");
        const jval_t *pid = jget(e, "pid"), *tid = jget(e, "tid");

        CHECK_MSG(e->type == J_OBJ, "%s: event %zu is not an object", path, i);
        CHECK_MSG(ph != NULL && ph->type == J_STR && ph->len == 1 && ph->str[0] != '\0' &&
                      strchr("BEXiM", ph->str[0]) != NULL,
                  "%s: event %zu has no valid ph", path, i);
        CHECK_MSG((name != NULL && name->type == J_STR) || ph->str[0] == 'E',
                  "%s: event %zu has no name", path, i);
        CHECK_MSG(ts != NULL && ts->type == J_NUM, "%s: event %zu has no ts", path, i);
        CHECK_MSG(pid != NULL && pid->type == J_NUM && pid->num >= pid_lo && pid->num <= pid_hi &&
                      pid->num == (double)(int)pid->num,
                  "%s: event %zu: pid is not %d..%d", path, i, pid_lo, pid_hi);
        CHECK_MSG(tid != NULL && tid->type == J_NUM && tid->num >= 0, "%s: event %zu has no tid",
                  path, i);
        if (ph->str[0] == 'X') {
            const jval_t *dur = jget(e, "dur");
            CHECK_MSG(dur != NULL && dur->type == J_NUM && dur->num >= 0,
                      "%s: event %zu: X without dur", path, i);
        }
        if (ph->str[0] == 'M') {
            const jval_t *args = jget(e, "args");
            CHECK(args != NULL && args->type == J_OBJ);
            CHECK(jget(args, "name") != NULL || jget(args, "sort_index") != NULL);
        }
    }
}

/* A rank's own trace: every pid is rank, and otherData names it. */
static inline void load_trace(const char *path, int rank, trace_t *t)
{
    load_trace_pids(path, rank, rank, t);
    CHECK_MSG(jget(t->other, "rank") != NULL && jget(t->other, "rank")->type == J_NUM &&
                  jget(t->other, "rank")->num == rank,
              "%s: otherData.rank is not %d", path, rank);
}

/* A job-wide trace of ranks 0..nranks-1: pids in that range, and otherData
 * with "job": true and a "ranks" array of one object per rank in the file
 * (rank, start_unix_us, events, dropped_events, complete), in rank order. */
static inline void load_job_trace(const char *path, int nranks, trace_t *t)
{
    const jval_t *job, *ranks;
    size_t i;

    load_trace_pids(path, 0, nranks - 1, t);
    job = jget(t->other, "job");
    CHECK_MSG(job != NULL && job->type == J_BOOL && job->b, "%s: otherData.job is not true", path);
    CHECK_MSG(jget(t->other, "rank") == NULL, "%s: a job-wide trace names a rank", path);
    ranks = jget(t->other, "ranks");
    CHECK_MSG(ranks != NULL && ranks->type == J_ARR && ranks->n <= (size_t)nranks,
              "%s: otherData.ranks is not an array of at most %d", path, nranks);
    for (i = 0; i < ranks->n; i++) {
        const jval_t *r = &ranks->items[i];
        const jval_t *c = jget(r, "complete");
        CHECK(r->type == J_OBJ && r->n == 5);
        CHECK(num_of(r, "rank") >= 0 && num_of(r, "rank") < nranks);
        CHECK(i == 0 || num_of(r, "rank") > num_of(&ranks->items[i - 1], "rank"));
        CHECK(num_of(r, "events") >= 0 && num_of(r, "dropped_events") >= 0);
        (void)num_of(r, "start_unix_us");
        CHECK(c != NULL && c->type == J_BOOL);
    }
}

/* otherData.ranks' entry for rank in a job-wide trace; NULL if none. */
static inline const jval_t *job_rank_info(const trace_t *t, int rank)
{
    const jval_t *ranks = jget(t->other, "ranks");
    size_t i;

    for (i = 0; ranks != NULL && i < ranks->n; i++) {
        if (num_of(&ranks->items[i], "rank") == rank) {
            return &ranks->items[i];
        }
    }
    return NULL;
}

/* A view of one pid's events of t (same otherData), e.g. to check a rank's
 * part of a job-wide trace like a file of its own. The events are shallow
 * copies: release the view with free_trace_view, before t. */
static inline void trace_view_pid(const trace_t *t, int pid, trace_t *view)
{
    jval_t *arr = calloc(1, sizeof(*arr));
    size_t i, n = 0;

    CHECK(arr != NULL);
    arr->type = J_ARR;
    arr->items = calloc(t->events->n + 1, sizeof(*arr->items));
    CHECK(arr->items != NULL);
    for (i = 0; i < t->events->n; i++) {
        if (jget(&t->events->items[i], "pid")->num == pid) {
            arr->items[n++] = t->events->items[i];
        }
    }
    arr->n = n;
    memset(&view->root, 0, sizeof(view->root));
    view->events = arr;
    view->other = t->other;
}

static inline void free_trace_view(trace_t *view)
{
    jval_t *arr = (jval_t *)view->events;

    free(arr->items);
    free(arr);
    view->events = NULL;
}

/* Releases what load_trace built. */
static inline void free_trace(trace_t *t)
{
    jfree(&t->root);
}

/* The tid the file names name (a thread_name metadata event); -1 if none. */
static inline int find_row(const trace_t *t, const char *name, size_t len)
{
    int tid = -1;
    size_t i;

    for (i = 0; i < t->events->n; i++) {
        const jval_t *e = &t->events->items[i];
        if (jget(e, "ph")->str[0] == 'M' && jstr_is(jget(e, "name"), "thread_name", 11) &&
            jstr_is(jget(jget(e, "args"), "name"), name, len)) {
            CHECK_MSG(tid < 0, "row \"%.*s\" is named twice", (int)len, name);
            tid = (int)jget(e, "tid")->num;
        }
    }
    return tid;
}

/* The number member key of object e; fails the test if it is missing or
 * not a number. */
static inline double num_of(const jval_t *e, const char *key)
{
    const jval_t *v = jget(e, key);
    CHECK_MSG(v != NULL && v->type == J_NUM, "no number \"%s\"", key);
    return v->num;
}

#endif
