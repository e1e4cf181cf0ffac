/*
 * test_timeline_merge.c - the job-wide timeline without MPI: a rank's
 * events recorded as a part (errors, one part per run, a file of its own
 * still possible meanwhile), three ranks' parts merged into one trace (fed
 * whole, byte by byte and in odd pieces; each rank on its own pid with its
 * own rows), exact time shifts, parts cut short or malformed, a part saved
 * alone, and a full buffer's drops. Part of test_timeline (main in
 * test_timeline.c); no MPI.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "timeline_testutil.h"

#define NPARTS 3

/* Records rank r's events into the running timeline; returns how many. */
static int record_part_events(int r)
{
    tc_tl_args_t a = TC_TL_ARGS_INIT;
    char longname[200], own[32];
    uint64_t t = tc__now_ns();
    int row = tc__tl_track(S("tensor/a")), n;

    a.kind = "allreduce";
    a.algo = "ring";
    a.dtype = TC_FLOAT32;
    a.op = TC_SUM;
    a.bytes = 4096 * (r + 1);
    a.cycle = 7;
    a.status = TC_OK;
    a.fused = 2;
    tc__tl_complete(row, S("ALLREDUCE"), "collective", t, 1500, &a);
    tc__tl_instant(row, S("q\"uote\n\xff"), "negotiation", t + 10, NULL);
    tc__tl_begin(TC_TL_TRACK_COLLECTIVES, S("span"), NULL, t + 20, NULL);
    tc__tl_end(TC_TL_TRACK_COLLECTIVES, NULL, 0, NULL, t + 30, NULL);
    memset(longname, 'n', sizeof(longname));
    tc__tl_instant(tc__tl_track(longname, sizeof(longname)), longname, sizeof(longname), NULL,
                   t + 40, NULL);
    n = snprintf(own, sizeof(own), "rank%d/only", r);
    tc__tl_instant(tc__tl_track(own, (size_t)n), S("mine"), "test", t + 50, NULL);
    return 6;
}

/* Feeds part's bytes to m in pieces of piece bytes (0: all at once). */
static void feed_part(tc_tl_merge_t *m, tc_tl_part_t *part, size_t piece, uint64_t upto)
{
    const tc_tl_part_info_t *info = tc__tl_part_info(part);
    char err[512], *buf = malloc(info->bytes + 1);
    uint64_t off;

    CHECK(buf != NULL);
    CHECK_OK(tc__tl_part_read(part, 0, buf, info->bytes, err, sizeof(err)));
    for (off = 0; off < upto;) {
        size_t n = piece == 0 || upto - off < piece ? (size_t)(upto - off) : piece;
        CHECK_OK(tc__tl_merge_feed(m, buf + off, n, err, sizeof(err)));
        off += n;
    }
    free(buf);
}

/* Starting parts: errors; one part per run; a file may still be written
 * while a part waits; nothing at the path yet. Fills parts[0..NPARTS). */
static void test_part_record(tc_tl_part_t **parts, int *nevents)
{
    char err[512], *tmpdir = getenv("TMPDIR") != NULL ? strdup(getenv("TMPDIR")) : NULL;
    const tc_tl_part_info_t *info;
    trace_t t;
    int r;

    CHECK(tc__tl_part_take() == NULL);
    CHECK_STATUS(tc__tl_start_part("/nonexistent-tcoll-dir/job.json", 0, err, sizeof(err)),
                 TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "/nonexistent-tcoll-dir/job.json");
    CHECK_STR_CONTAINS(err, strerror(ENOENT));
    setenv("TMPDIR", "/nonexistent-tcoll-dir", 1);
    CHECK_STATUS(tc__tl_start_part(tmp_path("job.json"), 0, err, sizeof(err)), TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "temporary file in /nonexistent-tcoll-dir");
    if (tmpdir != NULL) {
        setenv("TMPDIR", tmpdir, 1);
        free(tmpdir);
    } else {
        unsetenv("TMPDIR");
    }
    CHECK_EQ(tc__tl_active(), 0);

    for (r = 0; r < NPARTS; r++) {
        CHECK_OK(tc__tl_start_part(tmp_path("job.json"), r, err, sizeof(err)));
        CHECK_EQ(tc__tl_active(), 1);
        CHECK_STATUS(tc__tl_start(tmp_path("side.%r.json"), r, err, sizeof(err)), TC_ERR_STATE);
        CHECK_STR_CONTAINS(err, "already");
        nevents[r] = record_part_events(r);
        CHECK_OK(tc__tl_stop());
        CHECK_STATUS(tc__tl_stop(), TC_ERR_STATE);
        if (r == 0) {
            /* one part per run: it waits to be taken */
            CHECK_STATUS(tc__tl_start_part(tmp_path("job2.json"), r, err, sizeof(err)),
                         TC_ERR_STATE);
            CHECK_STR_CONTAINS(err, "already recorded");
            CHECK_STR_CONTAINS(err, tmp_path("job.json"));
            /* a file of its own still works meanwhile */
            CHECK_OK(tc__tl_start(tmp_path("side.%r.json"), r, err, sizeof(err)));
            tc__tl_instant(TC_TL_TRACK_OTHER, S("side"), NULL, tc__now_ns(), NULL);
            CHECK_OK(tc__tl_stop());
            load_trace(tmp_path("side.0.json"), 0, &t);
            CHECK(find_event(&t, 'i', S("side")) != NULL);
            free_trace(&t);
        }
        parts[r] = tc__tl_part_take();
        CHECK(parts[r] != NULL);
        CHECK(tc__tl_part_take() == NULL);
        info = tc__tl_part_info(parts[r]);
        CHECK_EQ(info->rank, r);
        CHECK_EQ(info->events, nevents[r]);
        CHECK_EQ(info->dropped, 0);
        CHECK_GT(info->bytes, 0);
        CHECK(strcmp(info->path, tmp_path("job.json")) == 0);
        CHECK(access(tmp_path("job.json"), F_OK) != 0); /* written by the merge only */
    }
}

/* Three ranks' parts, fed whole, byte by byte and in 7-byte pieces: one
 * trace, each rank on its own pid with its own rows and events. */
static void test_merge_ranks(tc_tl_part_t **parts, const int *nevents)
{
    const char *path = tmp_path("job.json");
    char err[512], own[32];
    int64_t origin = INT64_MAX;
    tc_tl_merge_t *m;
    trace_t t, v;
    int r, k, total = 0;

    for (r = 0; r < NPARTS; r++) {
        int64_t st = tc__tl_part_info(parts[r])->start_unix_ns;
        origin = st < origin ? st : origin;
    }
    CHECK_STATUS(tc__tl_merge_open("/nonexistent-tcoll-dir/job.json", origin, &m, err, sizeof(err)),
                 TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "/nonexistent-tcoll-dir/job.json");
    CHECK_OK(tc__tl_merge_open(path, origin, &m, err, sizeof(err)));
    for (r = 0; r < NPARTS; r++) {
        static const size_t piece[NPARTS] = {0, 1, 7};
        tc__tl_merge_rank(m, tc__tl_part_info(parts[r]));
        feed_part(m, parts[r], piece[r], tc__tl_part_info(parts[r])->bytes);
        CHECK_EQ(tc__tl_merge_rank_end(m, 1), 1);
    }
    CHECK_OK(tc__tl_merge_close(m, err, sizeof(err)));

    load_job_trace(path, NPARTS, &t);
    CHECK_EQ(jget(t.other, "ranks")->n, NPARTS);
    for (r = 0; r < NPARTS; r++) {
        const jval_t *info = job_rank_info(&t, r), *e, *a;
        int nonmeta = 0, pnames = 0;
        char pname[16];

        trace_view_pid(&t, r, &v);
        snprintf(pname, sizeof(pname), "rank %d", r);
        for (size_t i = 0; i < v.events->n; i++) {
            e = &v.events->items[i];
            if (jget(e, "ph")->str[0] != 'M') {
                nonmeta++;
                CHECK(num_of(e, "ts") >= 0);
            } else if (jstr_is(jget(e, "name"), S("process_name"))) {
                CHECK(jstr_is(jget(jget(e, "args"), "name"), pname, strlen(pname)));
                pnames++;
            }
        }
        CHECK_EQ(pnames, 1);
        CHECK_EQ(nonmeta, nevents[r]);
        CHECK(info != NULL);
        CHECK_EQ(num_of(info, "events"), nevents[r]);
        CHECK(jget(info, "complete")->b);
        CHECK_EQ(num_of(info, "start_unix_us"),
                 (double)(tc__tl_part_info(parts[r])->start_unix_ns / 1000));
        total += nonmeta;
        /* the rows: fixed, shared names, the rank's own */
        CHECK_EQ(find_row(&v, S("collectives")), TC_TL_TRACK_COLLECTIVES);
        CHECK_EQ(find_row(&v, S("tensor/a")), TC_TL_TRACK_FIRST);
        for (k = 0; k < NPARTS; k++) {
            int n = snprintf(own, sizeof(own), "rank%d/only", k);
            CHECK_EQ(find_row(&v, own, (size_t)n) >= 0, k == r);
        }
        e = find_event(&v, 'X', S("ALLREDUCE"));
        CHECK(e != NULL && jstr_is(jget(e, "cat"), S("collective")));
        CHECK_EQ(num_of(e, "dur"), 1.5);
        a = jget(e, "args");
        CHECK(jstr_is(jget(a, "kind"), S("allreduce")) && jstr_is(jget(a, "algo"), S("ring")));
        CHECK(jstr_is(jget(a, "dtype"), S("float32")) && jstr_is(jget(a, "op"), S("sum")));
        CHECK(jstr_is(jget(a, "status"), S("success")));
        CHECK_EQ(num_of(a, "bytes"), 4096 * (r + 1));
        CHECK_EQ(num_of(a, "cycle"), 7);
        CHECK_EQ(num_of(a, "fused"), 2);
        CHECK(jget(a, "root") == NULL);
        CHECK(find_event(&v, 'i', S("q\"uote\n\xc3\xbf")) != NULL);
        e = find_event(&v, 'B', S("span"));
        CHECK(e != NULL && jget(e, "cat") == NULL);
        for (size_t i = 0; i < v.events->n; i++) {
            e = &v.events->items[i];
            if (jget(e, "ph")->str[0] == 'E') {
                CHECK(jget(e, "name") == NULL);
            }
        }
        {
            char cut[TC_TL_NAME_MAX + 3];
            memset(cut, 'n', TC_TL_NAME_MAX);
            memcpy(cut + TC_TL_NAME_MAX, "...", 3);
            CHECK(find_event(&v, 'i', cut, sizeof(cut)) != NULL);
        }
        free_trace_view(&v);
    }
    CHECK_EQ(num_of(t.other, "events"), total);
    CHECK_EQ(num_of(t.other, "dropped_events"), 0);
    CHECK_EQ(num_of(t.other, "start_unix_us"), (double)(origin / 1000));
    free_trace(&t);
}

/* A rank's times move by its start's distance from the origin, exactly:
 * the same part merged as three ranks that started 0, 1 and 2.5 ms apart. */
static void test_merge_shift(tc_tl_part_t *part)
{
    static const int64_t delay_ns[NPARTS] = {0, 1000000, 2500000};
    const char *path = tmp_path("shift.json");
    tc_tl_part_info_t info = *tc__tl_part_info(part);
    int64_t origin = info.start_unix_ns;
    char err[512];
    tc_tl_merge_t *m;
    trace_t t, v[NPARTS];
    int r;

    CHECK_OK(tc__tl_merge_open(path, origin, &m, err, sizeof(err)));
    for (r = 0; r < NPARTS; r++) {
        info.rank = r;
        info.start_unix_ns = origin + delay_ns[r];
        tc__tl_merge_rank(m, &info);
        feed_part(m, part, 0, info.bytes);
        CHECK(tc__tl_merge_rank_end(m, 1));
    }
    CHECK_OK(tc__tl_merge_close(m, err, sizeof(err)));
    load_job_trace(path, NPARTS, &t);
    for (r = 0; r < NPARTS; r++) {
        trace_view_pid(&t, r, &v[r]);
        CHECK_EQ(v[r].events->n, v[0].events->n);
    }
    for (size_t i = 0; i < v[0].events->n; i++) {
        const jval_t *e0 = &v[0].events->items[i];
        if (jget(e0, "ph")->str[0] == 'M') {
            continue;
        }
        for (r = 1; r < NPARTS; r++) {
            double d = num_of(&v[r].events->items[i], "ts") - num_of(e0, "ts");
            CHECK_MSG(d > delay_ns[r] / 1000.0 - 1e-6 && d < delay_ns[r] / 1000.0 + 1e-6,
                      "rank %d's event %zu is %.6f us after rank 0's, want %.3f", r, i, d,
                      delay_ns[r] / 1000.0);
        }
    }
    for (r = 0; r < NPARTS; r++) {
        free_trace_view(&v[r]);
    }
    free_trace(&t);
}

/* A part cut short and parts that are not parts: the file stays valid
 * JSON, the whole items before the damage are kept, and otherData says the
 * sections are incomplete. */
static void test_merge_damaged(tc_tl_part_t *part, int nevents)
{
    static const unsigned char zeros[8] = {0};
    static const unsigned char unknown[9] = {5, 0, 0, 0, 'Z', 1, 2, 3, 4};
    const char *path = tmp_path("damaged.json");
    tc_tl_part_info_t info = *tc__tl_part_info(part);
    char err[512];
    tc_tl_merge_t *m;
    trace_t t, v;
    int r;

    CHECK_OK(tc__tl_merge_open(path, info.start_unix_ns, &m, err, sizeof(err)));
    info.rank = 0; /* cut: the last item (an event) is lost */
    tc__tl_merge_rank(m, &info);
    feed_part(m, part, 5, info.bytes - 3);
    CHECK_EQ(tc__tl_merge_rank_end(m, 1), 0);
    info.rank = 1; /* an item of length 0 */
    tc__tl_merge_rank(m, &info);
    CHECK_STATUS(tc__tl_merge_feed(m, zeros, sizeof(zeros), err, sizeof(err)), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(err, "rank 1's part of the timeline is malformed at byte 0");
    CHECK_STATUS(tc__tl_merge_feed(m, zeros, sizeof(zeros), err, sizeof(err)), TC_ERR_STATE);
    CHECK_EQ(tc__tl_merge_rank_end(m, 1), 0);
    info.rank = 2; /* a whole part, then an item of an unknown type */
    tc__tl_merge_rank(m, &info);
    feed_part(m, part, 0, info.bytes);
    CHECK_STATUS(tc__tl_merge_feed(m, unknown, sizeof(unknown), err, sizeof(err)),
                 TC_ERR_TRANSPORT);
    /* left open: close ends it (incomplete) */
    CHECK_OK(tc__tl_merge_close(m, err, sizeof(err)));

    load_job_trace(path, NPARTS, &t);
    for (r = 0; r < NPARTS; r++) {
        const jval_t *ri = job_rank_info(&t, r);
        CHECK(ri != NULL && !jget(ri, "complete")->b);
        CHECK_EQ(num_of(ri, "events"), r == 0 ? nevents - 1 : r == 1 ? 0 : nevents);
    }
    trace_view_pid(&t, 1, &v);
    CHECK(find_row(&v, S("collectives")) >= 0); /* the rank's rows are there, no events */
    free_trace_view(&v);
    free_trace(&t);
}

/* A part alone as a file (what a rank writes when the parts cannot be
 * gathered), with the drop count of a full buffer; the file name for it. */
static void test_part_save(tc_tl_part_t *part, int nevents)
{
    char err[512], path[PATH_MAX], name[32];
    const tc_tl_part_info_t *info = tc__tl_part_info(part);
    tc_tl_part_t *drops;
    const jval_t *e;
    trace_t t, v;
    int i, n;

    CHECK_EQ(tc__tl_rank_path("a/b/tl.json", 3, path, sizeof(path)), 0);
    CHECK(strcmp(path, "a/b/tl.rank3.json") == 0);
    CHECK_EQ(tc__tl_rank_path("tl", 12, path, sizeof(path)), 0);
    CHECK(strcmp(path, "tl.rank12") == 0);
    CHECK_EQ(tc__tl_rank_path("x.json/tl", 0, path, sizeof(path)), 0);
    CHECK(strcmp(path, "x.json/tl.rank0") == 0);
    CHECK_EQ(tc__tl_rank_path("d/.json", 1, path, sizeof(path)), 0);
    CHECK(strcmp(path, "d/.json.rank1") == 0);
    CHECK_EQ(tc__tl_rank_path("tl.json", 1234, path, 13), -1);

    CHECK_EQ(tc__tl_rank_path(tmp_path("alone.json"), info->rank, path, sizeof(path)), 0);
    CHECK_OK(tc__tl_part_save(part, path, err, sizeof(err)));
    load_job_trace(path, info->rank + 1, &t);
    trace_view_pid(&t, info->rank, &v); /* every event is the part's rank's */
    CHECK_EQ(v.events->n, t.events->n);
    free_trace_view(&v);
    CHECK_EQ(jget(t.other, "ranks")->n, 1);
    CHECK(jget(job_rank_info(&t, info->rank), "complete")->b);
    CHECK_EQ(num_of(t.other, "events"), nevents);
    free_trace(&t);
    unlink(path);

    /* a full buffer: the drops reach the part and the file */
    tc__tl_test_config(8, 1);
    CHECK_OK(tc__tl_start_part(tmp_path("drops.json"), 2, err, sizeof(err)));
    for (i = 0; i < 12; i++) {
        n = snprintf(name, sizeof(name), "drop/%d", i);
        tc__tl_instant(TC_TL_TRACK_OTHER, name, (size_t)n, NULL, tc__now_ns(), NULL);
    }
    CHECK_OK(tc__tl_stop());
    tc__tl_test_config(0, 0);
    drops = tc__tl_part_take();
    CHECK(drops != NULL);
    CHECK_EQ(tc__tl_part_info(drops)->events, 8);
    CHECK_EQ(tc__tl_part_info(drops)->dropped, 4);
    CHECK_OK(tc__tl_part_save(drops, tmp_path("drops.json"), err, sizeof(err)));
    tc__tl_part_free(drops);
    load_job_trace(tmp_path("drops.json"), 3, &t);
    CHECK_EQ(num_of(t.other, "dropped_events"), 4);
    CHECK_EQ(num_of(t.other, "events"), 8);
    e = find_event(&t, 'i', S("tcoll timeline: 4 events dropped (buffer full)"));
    CHECK(e != NULL && num_of(e, "pid") == 2);
    free_trace(&t);
}

void test_parts(void)
{
    tc_tl_part_t *parts[NPARTS];
    int nevents[NPARTS], r;

    test_part_record(parts, nevents);
    test_merge_ranks(parts, nevents);
    test_merge_shift(parts[1]);
    test_merge_damaged(parts[2], nevents[2]);
    test_part_save(parts[1], nevents[1]);
    for (r = 0; r < NPARTS; r++) {
        tc__tl_part_free(parts[r]);
    }
}
