/*
 * test_timeline_files.c - what test_timeline_mpi's timeline files must
 * hold, read back after tc_shutdown (the program: test_timeline.c).
 *
 * After tc_shutdown each rank reads its own files (rank 0 also the job-wide
 * ones) through the strict parser of json_check.h (and checks that the
 * parser rejects each file cut short) and checks, per rank:
 *  - the trace structure (pid == rank on every event, ts and dur >= 0: all
 *    this rank's work in a period was submitted after the timeline started,
 *    otherData with the rank, the version, no drops and the event count);
 *  - every event's row is named (thread_name), rows and names are unique;
 *  - each name submitted in the period has a row holding, per submission,
 *    NEGOTIATE, optionally QUEUE, then its collective, in that order and
 *    back to back in time, with exactly the expected args (kind, algo known
 *    for the kind: its MPI algorithm, or shm or cma inside the node; dtype,
 *    op or root, bytes, fused count for a fused one, cycle, status
 *    "success" or the mismatch's status text), besides marks "rank N
 *    ready" / "rank N submitted" for other ranks N;
 *  - rows of names not submitted in the period hold marks only;
 *  - the collectives row holds, per fused group, MEMCPY_IN_FUSION_BUFFER,
 *    MEMCPY_OUT_FUSION_BUFFER and "fused(N) first, ...", nested in time,
 *    with the group's bytes and count, matching exactly the N tensors whose
 *    collective says "ring, fused" (or "shm, fused" and the like inside a
 *    node) with the same start and duration.
 */
#define _GNU_SOURCE
#include "timeline_common.h"

#include "json_check.h"

/* A collective event that says "ring, fused", to match with its group. */
typedef struct {
    double ts, dur;
    int fused;
    int64_t bytes;
    char name[64];
    int matched;
} member_t;

/* The rank whose events are being checked: this one in its own files, each
 * rank in turn in a job-wide file (on rank 0). */
static int g_checked;

static const char *const kind_name[] = {"allreduce", "allgather", "broadcast"};
static const char *const kind_upper[] = {"ALLREDUCE", "ALLGATHER", "BROADCAST"};

#define ALGO_RING "ring"
#define ALGO_FUSED "ring, fused"

/* An allreduce run alone: the ring (or, for float sums with
 * TCOLL_DETERMINISTIC, the ordered reduce-scatter), or inside a node through the segment
 * (shm), reading the other ranks' buffers (cma), or across nodes (hier);
 * or one of those fused. */
static int algo_single(const char *a)
{
    return strcmp(a, ALGO_RING) == 0 || strcmp(a, "ordered") == 0 || strcmp(a, "shm") == 0 ||
           strcmp(a, "cma") == 0 || strcmp(a, "hier") == 0;
}

static int algo_fused(const char *a)
{
    return strcmp(a, ALGO_FUSED) == 0 || strcmp(a, "ordered, fused") == 0 ||
           strcmp(a, "shm, fused") == 0 || strcmp(a, "cma, fused") == 0 ||
           strcmp(a, "hier, fused") == 0;
}

/* A kind other than allreduce: its MPI algorithm, or inside the node. */
static int algo_kind(const char *a, const char *mpi)
{
    return strcmp(a, mpi) == 0 || strcmp(a, "shm") == 0 || strcmp(a, "cma") == 0;
}

#define ALGO_EAGER "eager (inputs in the cycle messages)"
#define ALGO_FAST "shm, fast" /* a cached small one inside a node: src/exec/fast.c */
#define ALGO_NONE "none (failed in negotiation)"
#define ALGO_GATHER "ring allgatherv"
#define ALGO_TREE "binomial tree"

/* s's input bytes on the rank being checked. */
static int64_t sub_bytes(const sub_t *s)
{
    return s->bytes[g_checked];
}

/* ------------------------------------------------------------------------ */
/* Reading the files back                                                    */
/* ------------------------------------------------------------------------ */

static int is_str(const jval_t *v, const char *s)
{
    return jstr_is(v, s, strlen(s));
}

static char ph_of(const jval_t *e)
{
    return jget(e, "ph")->str[0];
}

static const char *name_of(const jval_t *e)
{
    const jval_t *n = jget(e, "name");
    return n != NULL ? n->str : "";
}

/* The string member key of args (must be there). */
static const char *arg_str(const char *path, const jval_t *e, const char *key)
{
    const jval_t *v = jget(jget(e, "args"), key);
    CHECK_MSG(v != NULL && v->type == J_STR, "%s: event '%s' at ts %.3f: no string arg '%s'", path,
              name_of(e), num_of(e, "ts"), key);
    return v->str;
}

/* The integer member key of args (must be there). */
static int64_t arg_int(const char *path, const jval_t *e, const char *key)
{
    const jval_t *v = jget(jget(e, "args"), key);
    CHECK_MSG(v != NULL && v->type == J_NUM && v->num == (double)(int64_t)v->num,
              "%s: event '%s' at ts %.3f: no integer arg '%s'", path, name_of(e), num_of(e, "ts"),
              key);
    return (int64_t)v->num;
}

static size_t nargs(const jval_t *e)
{
    const jval_t *a = jget(e, "args");
    return a != NULL && a->type == J_OBJ ? a->n : 0;
}

/* "rank N ready" / "rank N submitted" for another rank N: 1; 0 if the name
 * is not of that form (fails if it is, with a bad N). */
static int is_mark(const char *path, const jval_t *e)
{
    char word[16], tail;
    int n;

    if (ph_of(e) != 'i' || sscanf(name_of(e), "rank %d %15s%c", &n, word, &tail) != 2 ||
        (strcmp(word, "ready") != 0 && strcmp(word, "submitted") != 0)) {
        return 0;
    }
    CHECK_MSG(n >= 0 && n < g_size && n != g_checked, "%s: rank %d's mark '%s' names a bad rank",
              path, g_checked, name_of(e));
    CHECK_MSG(is_str(jget(e, "cat"), "negotiation"), "%s: mark '%s' without cat negotiation", path,
              name_of(e));
    CHECK_MSG(is_str(jget(e, "s"), "t"), "%s: mark '%s' is not thread-scoped", path, name_of(e));
    /* "submitted" only reaches rank 0 (the others' requests) */
    CHECK_MSG(strcmp(word, "ready") == 0 || g_checked == 0, "%s: '%s' on rank %d", path, name_of(e),
              g_checked);
    return 1;
}

static const sub_t *find_sub(int period, const char *name)
{
    for (int i = 0; i < g_nsubs[period]; i++) {
        if (strcmp(g_subs[period][i].name, name) == 0) {
            return &g_subs[period][i];
        }
    }
    return NULL;
}

/* The args NEGOTIATE and the collective share: kind, dtype, bytes, cycle,
 * op (allreduce) or root (broadcast). Returns how many keys that is. */
static size_t check_common_args(const char *path, const jval_t *e, const sub_t *s)
{
    size_t n = 4;

    CHECK_MSG(strcmp(arg_str(path, e, "kind"), kind_name[s->kind]) == 0,
              "%s: %s '%s': kind '%s', want '%s'", path, s->name, name_of(e),
              arg_str(path, e, "kind"), kind_name[s->kind]);
    CHECK_MSG(strcmp(arg_str(path, e, "dtype"), tt_dtype_str(s->dt)) == 0,
              "%s: %s '%s': dtype '%s', want '%s'", path, s->name, name_of(e),
              arg_str(path, e, "dtype"), tt_dtype_str(s->dt));
    CHECK_MSG(arg_int(path, e, "bytes") == sub_bytes(s),
              "%s: rank %d: %s '%s': bytes %lld, want %lld", path, g_checked, s->name, name_of(e),
              (long long)arg_int(path, e, "bytes"), (long long)sub_bytes(s));
    CHECK_MSG(arg_int(path, e, "cycle") >= 0, "%s: %s: negative cycle", path, s->name);
    if (s->kind == TT_ALLREDUCE) {
        CHECK_MSG(strcmp(arg_str(path, e, "op"), tt_op_str(s->op)) == 0,
                  "%s: %s '%s': op '%s', want '%s'", path, s->name, name_of(e),
                  arg_str(path, e, "op"), tt_op_str(s->op));
        n++;
    } else {
        CHECK_MSG(jget(jget(e, "args"), "op") == NULL, "%s: %s: an op on a %s", path, s->name,
                  kind_name[s->kind]);
    }
    if (s->kind == TT_BROADCAST) {
        CHECK_MSG(arg_int(path, e, "root") == s->root, "%s: %s: root %lld, want %d", path, s->name,
                  (long long)arg_int(path, e, "root"), s->root);
        n++;
    } else {
        CHECK_MSG(jget(jget(e, "args"), "root") == NULL, "%s: %s: a root on a %s", path, s->name,
                  kind_name[s->kind]);
    }
    return n;
}

/* The collective event of s: exact args; counts the algorithm. */
static void check_collective(const char *path, const jval_t *e, const sub_t *s, stats_t *st,
                             member_t *members, int *nmembers, int *mismatches)
{
    size_t n = check_common_args(path, e, s);
    const char *algo = arg_str(path, e, "algo");
    const char *status = arg_str(path, e, "status");
    int failed = strcmp(status, tc_status_string(TC_ERR_MISMATCH)) == 0;

    n += 2;
    CHECK_MSG(is_str(jget(e, "cat"), "collective"), "%s: %s: collective without cat", path,
              s->name);
    CHECK_MSG(failed || strcmp(status, "success") == 0, "%s: %s: status '%s'", path, s->name,
              status);
    *mismatches += failed;
    if (failed) {
        CHECK_MSG(strcmp(algo, ALGO_NONE) == 0, "%s: %s failed with algo '%s'", path, s->name,
                  algo);
        st->failed++;
    } else if (s->kind == TT_ALLGATHER) {
        CHECK_MSG(algo_kind(algo, ALGO_GATHER), "%s: %s: allgather algo '%s'", path, s->name, algo);
        st->gather++;
    } else if (s->kind == TT_BROADCAST) {
        CHECK_MSG(algo_kind(algo, ALGO_TREE), "%s: %s: broadcast algo '%s'", path, s->name, algo);
        st->bcast++;
    } else if (algo_single(algo)) {
        st->ring++;
    } else if (strcmp(algo, ALGO_EAGER) == 0 || strcmp(algo, ALGO_FAST) == 0) {
        st->eager++;
    } else if (algo_fused(algo)) {
        member_t *m;
        CHECK(*nmembers < 4 * MAX_SUBS * NROUNDS);
        m = &members[(*nmembers)++];
        m->ts = num_of(e, "ts");
        m->dur = num_of(e, "dur");
        m->fused = (int)arg_int(path, e, "fused");
        m->bytes = sub_bytes(s);
        m->matched = 0;
        snprintf(m->name, sizeof m->name, "%s", s->name);
        CHECK_MSG(m->fused >= 2, "%s: %s: fused count %d", path, s->name, m->fused);
        n++;
        st->fused++;
    } else {
        TC_CHECK_FAIL("%s: %s: unknown allreduce algo '%s'", path, s->name, algo);
    }
    if (!algo_fused(algo)) {
        CHECK_MSG(jget(jget(e, "args"), "fused") == NULL, "%s: %s: a fused count with '%s'", path,
                  s->name, algo);
    }
    CHECK_MSG(nargs(e) == n, "%s: %s: collective has %zu args, want %zu", path, s->name, nargs(e),
              n);
}

#define EPS_US 0.002 /* the file has nanosecond digits; sums of doubles round */

/* The row of s: per submission NEGOTIATE, [QUEUE], collective, in order and
 * back to back; marks for other ranks anywhere; nothing else. */
static void check_tensor_row(const char *path, const trace_t *t, const sub_t *s, stats_t *st,
                             member_t *members, int *nmembers)
{
    int tid = find_row(t, s->name, strlen(s->name));
    int state = 0, nneg = 0, ncoll = 0, mismatches = 0;
    double end = 0;

    CHECK_MSG(tid >= 0, "%s: no row for '%s' (submitted %d times)", path, s->name, s->nsub);
    for (size_t i = 0; i < t->events->n; i++) {
        const jval_t *e = &t->events->items[i];
        const char *nm = name_of(e);

        if (ph_of(e) == 'M' || num_of(e, "tid") != tid) {
            continue;
        }
        if (is_mark(path, e)) {
            st->marks++;
            continue;
        }
        CHECK_MSG(ph_of(e) == 'X', "%s: %s: unexpected '%c' event '%s'", path, s->name, ph_of(e),
                  nm);
        if (strcmp(nm, "NEGOTIATE") == 0) {
            CHECK_MSG(state == 0, "%s: %s: NEGOTIATE #%d follows an unfinished one", path, s->name,
                      nneg + 1);
            CHECK(is_str(jget(e, "cat"), "negotiation"));
            CHECK_MSG(nargs(e) == check_common_args(path, e, s), "%s: %s: NEGOTIATE has %zu args",
                      path, s->name, nargs(e));
            end = num_of(e, "ts") + num_of(e, "dur");
            nneg++;
            state = 1;
        } else if (strcmp(nm, "QUEUE") == 0) {
            CHECK_MSG(state == 1, "%s: %s: QUEUE not right after NEGOTIATE", path, s->name);
            CHECK(is_str(jget(e, "cat"), "negotiation"));
            CHECK_MSG(jget(e, "args") == NULL, "%s: %s: QUEUE with args", path, s->name);
            CHECK_MSG(num_of(e, "ts") >= end - EPS_US && num_of(e, "ts") <= end + EPS_US,
                      "%s: %s: QUEUE starts at %.3f, NEGOTIATE ended at %.3f", path, s->name,
                      num_of(e, "ts"), end);
            end = num_of(e, "ts") + num_of(e, "dur");
            state = 2;
        } else if (strcmp(nm, kind_upper[s->kind]) == 0) {
            CHECK_MSG(state != 0, "%s: %s: %s #%d without a NEGOTIATE before it", path, s->name, nm,
                      ncoll + 1);
            CHECK_MSG(num_of(e, "ts") >= end - EPS_US && num_of(e, "ts") <= end + EPS_US,
                      "%s: %s: %s starts at %.3f, not where the negotiation/queue ended "
                      "(%.3f)",
                      path, s->name, nm, num_of(e, "ts"), end);
            check_collective(path, e, s, st, members, nmembers, &mismatches);
            ncoll++;
            state = 0;
        } else {
            TC_CHECK_FAIL("%s: %s: unexpected event '%s' on its row", path, s->name, nm);
        }
    }
    CHECK_MSG(state == 0, "%s: %s: the row ends in a negotiation", path, s->name);
    CHECK_MSG(ncoll == s->nsub && nneg == s->nsub,
              "%s: %s: %d NEGOTIATE and %d %s events, want %d of each", path, s->name, nneg, ncoll,
              kind_upper[s->kind], s->nsub);
    CHECK_MSG(mismatches == s->nmismatch, "%s: %s: %d mismatches in the file, want %d", path,
              s->name, mismatches, s->nmismatch);
}

/* The collectives row: per group MEMCPY_IN, MEMCPY_OUT, "fused(N) ...",
 * each matching N member events. */
static void check_collectives_row(const char *path, const trace_t *t, int tid, stats_t *st,
                                  member_t *members, int nmembers)
{
    const jval_t *in = NULL, *out = NULL;

    for (size_t i = 0; i < t->events->n; i++) {
        const jval_t *e = &t->events->items[i];
        const char *nm = name_of(e);
        char first[TC_MAX_NAME_LEN + 1];
        int n, pos = -1, matched = 0;
        int64_t bytes = 0;
        double ts, dur;

        if (ph_of(e) == 'M' || num_of(e, "tid") != tid) {
            continue;
        }
        CHECK_MSG(ph_of(e) == 'X', "%s: collectives row: '%c' event '%s'", path, ph_of(e), nm);
        ts = num_of(e, "ts");
        dur = num_of(e, "dur");
        if (strcmp(nm, "MEMCPY_IN_FUSION_BUFFER") == 0) {
            CHECK_MSG(in == NULL && out == NULL, "%s: MEMCPY_IN out of order", path);
            in = e;
            continue;
        }
        if (strcmp(nm, "MEMCPY_OUT_FUSION_BUFFER") == 0) {
            CHECK_MSG(in != NULL && out == NULL, "%s: MEMCPY_OUT without a MEMCPY_IN", path);
            out = e;
            continue;
        }
        if (sscanf(nm, "fused(%d) %n", &n, &pos) != 1 || pos < 0 || strlen(nm) < (size_t)pos + 5 ||
            strcmp(nm + strlen(nm) - 5, ", ...") != 0) {
            TC_CHECK_FAIL("%s: collectives row: unexpected event '%s'", path, nm);
        }
        snprintf(first, sizeof first, "%.*s", (int)(strlen(nm) - (size_t)pos - 5), nm + pos);
        CHECK_MSG(in != NULL && out != NULL, "%s: '%s' without MEMCPY_IN and _OUT before it", path,
                  nm);
        CHECK_MSG(n >= 2, "%s: '%s': a group of %d", path, nm, n);
        CHECK(is_str(jget(e, "cat"), "collective"));
        CHECK(strcmp(arg_str(path, e, "kind"), "allreduce") == 0);
        CHECK(algo_fused(arg_str(path, e, "algo")));
        CHECK(strcmp(arg_str(path, e, "status"), "success") == 0);
        CHECK_EQ(arg_int(path, e, "fused"), n);
        CHECK(arg_int(path, e, "cycle") >= 0);
        CHECK_EQ(nargs(e), 6);
        /* the copies: inside the group's span, in before out, same size */
        CHECK(is_str(jget(in, "cat"), "fusion") && is_str(jget(out, "cat"), "fusion"));
        CHECK_EQ(nargs(in), 2);
        CHECK_EQ(nargs(out), 2);
        CHECK_EQ(arg_int(path, in, "fused"), n);
        CHECK_EQ(arg_int(path, out, "fused"), n);
        CHECK_EQ(arg_int(path, in, "bytes"), arg_int(path, e, "bytes"));
        CHECK_EQ(arg_int(path, out, "bytes"), arg_int(path, e, "bytes"));
        CHECK_MSG(num_of(in, "ts") >= ts &&
                      num_of(in, "ts") + num_of(in, "dur") <= num_of(out, "ts") + EPS_US &&
                      num_of(out, "ts") + num_of(out, "dur") <= ts + dur + EPS_US,
                  "%s: '%s' [%.3f, +%.3f]: the copies [%.3f, +%.3f] and [%.3f, +%.3f] are not "
                  "inside, in order",
                  path, nm, ts, dur, num_of(in, "ts"), num_of(in, "dur"), num_of(out, "ts"),
                  num_of(out, "dur"));
        /* the members: same span, same count; bytes add up; first among them */
        int first_seen = 0;
        for (int k = 0; k < nmembers; k++) {
            member_t *m = &members[k];
            if (m->ts == ts && m->dur == dur) {
                CHECK_MSG(!m->matched, "%s: %s is in two groups", path, m->name);
                CHECK_EQ(m->fused, n);
                m->matched = 1;
                matched++;
                bytes += m->bytes;
                first_seen |= strcmp(m->name, first) == 0;
            }
        }
        CHECK_MSG(matched == n, "%s: '%s': %d tensors say they were in it", path, nm, matched);
        CHECK_MSG(bytes == arg_int(path, e, "bytes"), "%s: '%s': %lld bytes, members have %lld",
                  path, nm, (long long)arg_int(path, e, "bytes"), (long long)bytes);
        CHECK_MSG(first_seen, "%s: '%s' names '%s', not one of its tensors", path, nm, first);
        st->groups++;
        in = out = NULL;
    }
    CHECK_MSG(in == NULL && out == NULL, "%s: a fusion copy without its group", path);
    for (int k = 0; k < nmembers; k++) {
        CHECK_MSG(members[k].matched,
                  "%s: %s says fused but no group on the collectives row "
                  "matches it",
                  path, members[k].name);
    }
}

/* The validator must reject the file cut short anywhere. */
static void check_cut_rejected(const char *path)
{
    size_t len;
    char *text = read_all(path, &len);
    char err[200];
    jval_t v;

    CHECK_MSG(len > 2 && memcmp(text + len - 2, "}\n", 2) == 0, "%s does not end in \"}\\n\"",
              path);
    for (size_t k = 0; k <= 8; k++) {
        size_t keep = k < 8 ? len * k / 8 : len - 2; /* the last: all but the closing brace */
        CHECK_MSG(jparse(text, keep, &v, err, sizeof err) != 0,
                  "%s cut to %zu of %zu bytes still parses", path, keep, len);
    }
    CHECK_MSG(jparse(text, len, &v, err, sizeof err) == 0, "%s: %s", path, err);
    jfree(&v);
    free(text);
}

/* The events of rank g_checked in period: t is that rank's own file, or its
 * pid's view of a job-wide file. */
static void check_trace(const char *path, const trace_t *tp, int period, stats_t *st)
{
    static member_t members[4 * MAX_SUBS * NROUNDS];
    int nmembers = 0, tids[4096 + 16], ntids = 0;
    int fixed[3];
    trace_t t = *tp;
    const jval_t *counts;
    char pname[32];
    int nonmeta = 0;

    memset(st, 0, sizeof *st);

    /* otherData (a job-wide file: its entry for the rank); the process and
     * fixed rows */
    CHECK(is_str(jget(t.other, "tool"), "tcoll"));
    CHECK(is_str(jget(t.other, "version"), tc_version()));
    counts = jget(t.other, "job") != NULL ? job_rank_info(&t, g_checked) : t.other;
    CHECK_MSG(counts != NULL, "%s: otherData has nothing on rank %d", path, g_checked);
    CHECK_MSG(num_of(counts, "dropped_events") == 0, "%s: rank %d: %g events dropped", path,
              g_checked, num_of(counts, "dropped_events"));
    snprintf(pname, sizeof pname, "rank %d", g_checked);
    fixed[0] = find_row(&t, "negotiation", 11);
    fixed[1] = find_row(&t, "collectives", 11);
    fixed[2] = find_row(&t, "other tensors", 13);
    CHECK_MSG(fixed[0] >= 0 && fixed[1] >= 0 && fixed[2] >= 0, "%s: a fixed row is missing", path);
    int have_pname = 0;
    for (size_t i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        if (ph_of(e) != 'M') {
            nonmeta++;
            CHECK_MSG(num_of(e, "ts") >= 0,
                      "%s: event '%s' (row %g) at ts %.3f: before the timeline started", path,
                      name_of(e), num_of(e, "tid"), num_of(e, "ts"));
            if (ph_of(e) == 'X') {
                CHECK(num_of(e, "dur") >= 0);
            }
            continue;
        }
        if (is_str(jget(e, "name"), "process_name")) {
            CHECK(is_str(jget(jget(e, "args"), "name"), pname));
            have_pname++;
        } else if (is_str(jget(e, "name"), "thread_name")) {
            int tid = (int)num_of(e, "tid");
            const jval_t *rn = jget(jget(e, "args"), "name");
            CHECK(rn != NULL && rn->type == J_STR);
            for (int k = 0; k < ntids; k++) {
                CHECK_MSG(tids[k] != tid, "%s: row %d is named twice", path, tid);
            }
            CHECK((size_t)ntids < sizeof tids / sizeof tids[0]);
            tids[ntids++] = tid;
            (void)find_row(&t, rn->str, rn->len); /* fails if the name has two rows */
        }
    }
    CHECK_EQ(have_pname, 1);
    CHECK_MSG(num_of(counts, "events") == nonmeta,
              "%s: rank %d: otherData says %g events, the file has %d", path, g_checked,
              num_of(counts, "events"), nonmeta);
    /* every event is on a named row */
    for (size_t i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        int tid = (int)num_of(e, "tid"), k;
        if (ph_of(e) == 'M') {
            continue;
        }
        for (k = 0; k < ntids && tids[k] != tid; k++) {
        }
        CHECK_MSG(k < ntids, "%s: event '%s' on row %d, which has no name", path, name_of(e), tid);
    }

    /* the tensors this rank submitted in the period */
    for (int i = 0; i < g_nsubs[period]; i++) {
        check_tensor_row(path, &t, &g_subs[period][i], st, members, &nmembers);
    }
    /* the other rows: marks only (another rank's report on a name this rank
     * ran in another period, or not yet) */
    for (size_t i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        const jval_t *rn = jget(jget(e, "args"), "name");
        int tid;
        if (ph_of(e) != 'M' || !is_str(jget(e, "name"), "thread_name")) {
            continue;
        }
        tid = (int)num_of(e, "tid");
        if (tid == fixed[0] || tid == fixed[1] || tid == fixed[2]) {
            continue;
        }
        st->rows++;
        if (find_sub(period, rn->str) != NULL) {
            continue;
        }
        for (size_t j = 0; j < t.events->n; j++) {
            const jval_t *f = &t.events->items[j];
            if (ph_of(f) != 'M' && num_of(f, "tid") == tid) {
                CHECK_MSG(is_mark(path, f),
                          "%s: '%s' on the row of '%s', not submitted by "
                          "this rank in this period",
                          path, name_of(f), rn->str);
                st->marks++;
            }
        }
    }
    check_collectives_row(path, &t, fixed[1], st, members, nmembers);
    /* nothing on the negotiation and other-tensors rows */
    for (size_t i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        if (ph_of(e) != 'M' && (num_of(e, "tid") == fixed[0] || num_of(e, "tid") == fixed[2])) {
            TC_CHECK_FAIL("%s: unexpected event '%s' on row %g", path, name_of(e),
                          num_of(e, "tid"));
        }
    }
    st->events = nonmeta;
}

/* This rank's own file. */
void check_file(const char *path, int period, stats_t *st)
{
    trace_t t;

    g_checked = g_rank;
    load_trace(path, g_rank, &t);
    check_trace(path, &t, period, st);
    free_trace(&t);
    check_cut_rejected(path);
}

/* The job-wide file (rank 0, after its tc_shutdown wrote it): one process
 * row per rank, each rank's events checked as in a file of its own, every
 * rank's part complete. */
void check_job_file(const char *path, int period, stats_t *st)
{
    const jval_t *ranks;
    trace_t t, v;

    load_job_trace(path, g_size, &t);
    ranks = jget(t.other, "ranks");
    CHECK_MSG(ranks->n == (size_t)g_size, "%s: otherData lists %zu ranks, want %d", path, ranks->n,
              g_size);
    for (int r = 0; r < g_size; r++) {
        const jval_t *info = job_rank_info(&t, r);
        CHECK_MSG(info != NULL && jget(info, "complete")->b, "%s: rank %d's part is %s", path, r,
                  info == NULL ? "missing" : "incomplete");
        g_checked = r;
        trace_view_pid(&t, r, &v);
        check_trace(path, &v, period, &st[r]);
        free_trace_view(&v);
    }
    g_checked = g_rank;
    {
        int total = 0;
        for (int r = 0; r < g_size; r++) {
            total += st[r].events;
        }
        CHECK_MSG(num_of(t.other, "events") == total,
                  "%s: otherData says %g events, the ranks "
                  "have %d",
                  path, num_of(t.other, "events"), total);
    }
    free_trace(&t);
    check_cut_rejected(path);
}
