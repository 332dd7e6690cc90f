/*
 * bench_tether.c — Tether's side of the benchmark suite (`make bench`).
 *
 * Every graph workload of /work/shared/BENCHMARKS.md, reusing the checked
 * ports in benchmarks/workloads/ unchanged (the same code `make test` runs
 * with small counts), with the clock put around the phases BENCHMARKS.md
 * times; plus set+notify, fan-out, cross-thread delivery, memory, and
 * tracking by path (1,000 computeds over the fields of one state).
 * A workload whose checks fail reports no time ("ok":false).
 *
 * Output: one JSON line per result on stdout (benchmarks/common/bench.h),
 * progress on stderr. Environment: BENCH_QUICK=1 (small sizes, a smoke
 * test), BENCH_ONLY="kairo cellx ..." (sections: kairo cellx sbench dynamic
 * setnotify chain fanout crossthread memory paths). `--icount WORKLOAD N
 * [host|single|thread]` runs one of set+notify, fan-out and the chain N
 * times for callgrind (benchmarks/icount/icount.py; common/bench.h says
 * how), or one kairo or S.js case (kairo:NAME, sbench:NAME;
 * benchmarks/icount/suites.py). icount.py leaves "thread" out: the loop thread adds about 7,000
 * instructions to some runs and not to others, so its counts do not repeat.
 *
 * Clock: clock_gettime(CLOCK_MONOTONIC).
 */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/bench.h"
#include "tether.h"
#include "workloads/workloads.h"

#define SYS "tether"

static int quick;
/* --icount WORKLOAD N (benchmarks/icount/): N repetitions in place of the
 * timed sizes, one run; 0 when timing. */
static long icount_n;
static const char *mode_note = "runtime TETHER_LOOP_HOST (no loop thread; thread-safe API)";

/* ======================================================================== */
/* Kairo                                                                     */
/* ======================================================================== */

static double kairo_deep_ms = -1; /* reused as the 50-deep chain figure */
static double kairo_deep_single_ms = -1; /* the same, single-threaded runtime */
/* How each runtime mode is described in the results. */
static const char *const rt_mode_notes[3] = {
    "TETHER_LOOP_HOST runtime", "default runtime (TETHER_LOOP_THREAD)",
    "TETHER_LOOP_HOST + TETHER_RUNTIME_SINGLE_THREAD (no locks; one thread only)"};

static void bench_kairo(const char *group) {
  int c;
  int samples = quick ? 2 : 10, per_sample = quick ? 5 : 500;
  for (c = 0; c < WL_KAIRO_CASES; c++) {
    wl_kairo_t *k;
    int failed = 0, s, i;
    int64_t best = INT64_MAX;
    const char *name = wl_kairo_name((wl_kairo_case_t)c);
    if (wl_kairo_build((wl_kairo_case_t)c, NULL, &k)) {
      bench_emit(SYS, group, name, 0, 0, "ms", NULL, NULL, "build failed");
      continue;
    }
    for (i = 0; i < 3; i++) failed |= wl_kairo_iter(k);
    for (s = 0; s < samples && !failed; s++) {
      int64_t t0 = bench_now_ns(), dt;
      for (i = 0; i < per_sample; i++) failed |= wl_kairo_iter(k);
      dt = bench_now_ns() - t0;
      if (dt < best) best = dt;
    }
    failed |= wl_kairo_free(k);
    bench_emit(SYS, group, name, !failed, best / 1e6, "ms",
               "build once, 3 warm-up iter(), fastest of 10 samples of 500 iter()", NULL,
               failed ? "a check failed (see stderr)" : wl_runtime_flags ? rt_mode_notes[2] : NULL);
    if (c == WL_KAIRO_DEEP && !failed) {
      if (wl_runtime_flags) kairo_deep_single_ms = best / 1e6; else kairo_deep_ms = best / 1e6;
    }
  }
}

/* ======================================================================== */
/* cellx                                                                     */
/* ======================================================================== */

static void bench_cellx(void) {
  static const int layer_counts[2] = {1000, 2500};
  int li;
  for (li = 0; li < 2; li++) {
    int layers = layer_counts[li], r, failed = 0, repeats = quick ? 1 : 10;
    int64_t total = 0;
    char name[32];
    snprintf(name, sizeof name, "cellx%d", layers);
    for (r = 0; r < repeats && !failed; r++) {
      wl_cellx_t *cx;
      int64_t t0;
      if (wl_cellx_build(layers, NULL, &cx)) {
        failed = 1;
        break;
      }
      t0 = bench_now_ns();
      failed |= wl_cellx_run(cx);
      total += bench_now_ns() - t0;
      failed |= wl_cellx_free(cx);
    }
    bench_emit(SYS, "cellx", name, !failed, total / 1e6, "ms",
               "build (untimed), run timed, dispose (untimed), x10, sum", NULL,
               failed ? "a check failed (see stderr)" : NULL);
  }
}

/* ======================================================================== */
/* Creation and update (S.js style)                                          */
/* ======================================================================== */

static void bench_sbench(void) {
  static const char *const group_names[3] = {"createSignals", "createComputations",
                                             "updateSignals"};
  int64_t group_ns[3] = {0, 0, 0};
  int group_failed[3] = {0, 0, 0};
  char detail[3][1024];
  long count = quick ? 1000 : 100000;
  int c, g, samples = quick ? 2 : 10;
  for (g = 0; g < 3; g++) detail[g][0] = 0;
  for (c = 0; c < WL_SB_CASES; c++) {
    wl_sbench_params_t p, warm;
    int failed = 0, s;
    int64_t best = INT64_MAX;
    wl_sbench_group_t grp = wl_sbench_group((wl_sbench_case_t)c);
    wl_sbench_default_params((wl_sbench_case_t)c, count, &p);
    warm = p;
    warm.n = (p.n + 99) / 100;
    for (s = 0; s < 3 && !failed; s++) failed |= wl_sbench_workload(&warm);
    for (s = 0; s < samples && !failed; s++) {
      wl_sbench_t *sb;
      int64_t t0, dt;
      if (wl_sbench_setup(&p, &sb)) {
        failed = 1;
        break;
      }
      t0 = bench_now_ns();
      failed |= wl_sbench_run(sb);
      dt = bench_now_ns() - t0;
      failed |= wl_sbench_free(sb);
      if (dt < best) best = dt;
    }
    if (failed) {
      group_failed[grp] = 1;
      fprintf(stderr, "sbench %s: a check failed\n", wl_sbench_name((wl_sbench_case_t)c));
    } else {
      size_t len = strlen(detail[grp]);
      group_ns[grp] += best;
      snprintf(detail[grp] + len, sizeof detail[grp] - len, "%s\"%s\":%.4g",
               len ? "," : "", wl_sbench_name((wl_sbench_case_t)c), best / 1e6);
    }
  }
  for (g = 0; g < 3; g++) {
    char extra[1100];
    snprintf(extra, sizeof extra, "\"cases_ms\":{%s}", detail[g]);
    bench_emit(SYS, "creation", group_names[g], !group_failed[g], group_ns[g] / 1e6, "ms",
               "per case: 3 warm-ups at n/100, fastest of 10 samples (create+update+dispose "
               "timed); group = sum of its cases",
               extra, group_failed[g] ? "a check failed (see stderr)" : NULL);
  }
}

/* ======================================================================== */
/* Dynamic graphs                                                            */
/* ======================================================================== */

static void bench_dynamic(void) {
  int i;
  for (i = 0; i < WL_DYN_CONFIGS; i++) {
    const wl_dyn_config_t *cfg = &wl_dyn_configs[i];
    wl_dyn_params_t p;
    wl_dyn_t *g;
    double sum = 0;
    long iterations = cfg->iterations;
    int failed = 0, r, runs = quick ? 2 : 5;
    int64_t best = INT64_MAX;
    double expected_sum = cfg->expected_sum;
    long expected_count = cfg->expected_count;
    if (quick) {
      /* A tenth of the writes, with exact expectations from the plain model. */
      memset(&p, 0, sizeof p);
      p.config = cfg;
      p.iterations = iterations = cfg->iterations / 10;
      p.warmup_runs = 3;
      p.checked_runs = 1;
      p.reset_count = 1;
      if (wl_dyn_reference(&p, &expected_sum, &expected_count)) failed = 1;
    }
    if (failed || wl_dyn_build(cfg, NULL, &g)) {
      bench_emit(SYS, "dynamic", cfg->title, 0, 0, "ms", NULL, NULL, "build failed");
      continue;
    }
    for (r = 0; r < 3 && !failed; r++) failed |= wl_dyn_run(g, iterations, &sum);
    for (r = 0; r < runs && !failed; r++) {
      int64_t t0, dt;
      wl_dyn_reset_count(g);
      t0 = bench_now_ns();
      failed |= wl_dyn_run(g, iterations, &sum);
      dt = bench_now_ns() - t0;
      if (sum != expected_sum) {
        fprintf(stderr, "dynamic %s: sum %.17g, expected %.17g\n", cfg->title, sum, expected_sum);
        failed = 1;
      }
      if (wl_dyn_count(g) != expected_count) {
        fprintf(stderr, "dynamic %s: count %ld, expected %ld\n", cfg->title, wl_dyn_count(g),
                expected_count);
        failed = 1;
      }
      if (dt < best) best = dt;
    }
    failed |= wl_dyn_free(g);
    bench_emit(SYS, "dynamic", cfg->title, !failed, best / 1e6, "ms",
               "build, 3 untimed runs, fastest of 5 timed runs (counter reset, sum and count "
               "checked each)",
               NULL, failed ? "a check failed (see stderr)" : NULL);
  }
}

/* ======================================================================== */
/* Runtimes for the micro-workloads                                          */
/* ======================================================================== */

typedef enum rt_mode { RT_HOST = 0, RT_THREAD = 1, RT_SINGLE = 2 } rt_mode_t;

static const char *const rt_mode_names[3] = {"host", "thread", "single"};

static int make_runtime(rt_mode_t mode, tether_runtime_t *rt) {
  tether_runtime_options_t o;
  tether_runtime_options_init(&o);
  o.mode = mode == RT_THREAD ? TETHER_LOOP_THREAD : TETHER_LOOP_HOST;
  if (mode == RT_SINGLE) o.flags = TETHER_RUNTIME_SINGLE_THREAD;
  return tether_runtime_new(&o, rt);
}

static int bad(const char *what, int rc) {
  fprintf(stderr, "%s: %s (%s)\n", what, tether_strerror(rc), tether_last_error());
  return 1;
}

/* ======================================================================== */
/* set+notify: one state, one SYNC observer, 1M writes of distinct values    */
/* ======================================================================== */

typedef struct counter {
  long calls;
  int64_t last;
  int64_t sum;
  int errors;
} counter_t;

static void count_observer(const tether_change_t *ch, void *ud) {
  counter_t *c = ud;
  int64_t v;
  if (tether_value_get_int(ch->new_value, &v) != TETHER_OK) {
    c->errors++;
    return;
  }
  c->calls++;
  c->last = v;
  c->sum += v;
}

static void bench_setnotify_mode(rt_mode_t mode) {
  tether_runtime_t rt;
  tether_state_t s;
  tether_observer_t o;
  counter_t cnt;
  long n = icount_n ? icount_n : quick ? 20000 : 1000000, i, base = 0;
  int r, runs = icount_n ? 1 : quick ? 2 : 5, failed = 0, rc;
  int64_t best = INT64_MAX;
  char name[48];
  snprintf(name, sizeof name, "set+notify [%s]", rt_mode_names[mode]);
  memset(&cnt, 0, sizeof cnt);
  if ((rc = make_runtime(mode, &rt)) != TETHER_OK) {
    bad("tether_runtime_new", rc);
    bench_emit(SYS, "micro", name, 0, 0, "ns/write", NULL, NULL, "runtime failed");
    return;
  }
  if ((rc = tether_state_new_int(rt, 0, 0, &s)) != TETHER_OK ||
      (rc = tether_observe(s, NULL, TETHER_OBSERVE_SYNC, count_observer, &cnt, NULL, &o)) !=
          TETHER_OK) {
    failed = bad("setup", rc);
  }
  /* warm-up */
  for (i = 1; i <= 10000 && !failed; i++)
    if ((rc = tether_state_set_int(s, base + i)) != TETHER_OK) failed = bad("set", rc);
  base += 10000;
  for (r = 0; r < runs && !failed; r++) {
    int64_t t0, dt;
    long calls0 = cnt.calls;
    t0 = bench_now_ns();
    for (i = 1; i <= n; i++)
      if (tether_state_set_int(s, base + i) != TETHER_OK) {
        failed = 1;
        break;
      }
    dt = bench_now_ns() - t0;
    if (cnt.calls - calls0 != n || cnt.last != base + n || cnt.errors) {
      fprintf(stderr, "set+notify: %ld calls (expected %ld), last %lld (expected %ld)\n",
              cnt.calls - calls0, n, (long long)cnt.last, base + n);
      failed = 1;
    }
    base += n;
    if (dt < best) best = dt;
  }
  tether_runtime_free(rt);
  bench_emit(SYS, "micro", name, !failed, (double)best / (double)n, "ns/write",
             "1M writes of distinct ints, one SYNC observer reading the new value; fastest of 5 "
             "runs after 10k warm-up writes",
             NULL, "%s", rt_mode_notes[mode]);
}

/* ======================================================================== */
/* fan-out: one state, 1000 SYNC observers, 10k writes                       */
/* ======================================================================== */

static void bench_fanout_mode(rt_mode_t mode) {
  tether_runtime_t rt;
  tether_state_t s;
  enum { OBS = 1000 };
  static counter_t cnt[OBS];
  long writes = icount_n ? icount_n : quick ? 200 : 10000, i, base = 0;
  int r, runs = icount_n ? 1 : quick ? 2 : 5, failed = 0, rc, k;
  int64_t best = INT64_MAX;
  char name[48];
  snprintf(name, sizeof name, "fan-out [%s]", rt_mode_names[mode]);
  memset(cnt, 0, sizeof cnt);
  if ((rc = make_runtime(mode, &rt)) != TETHER_OK) {
    bad("tether_runtime_new", rc);
    bench_emit(SYS, "micro", name, 0, 0, "ns/notification", NULL, NULL, "runtime failed");
    return;
  }
  if ((rc = tether_state_new_int(rt, 0, 0, &s)) != TETHER_OK) failed = bad("state", rc);
  for (k = 0; k < OBS && !failed; k++) {
    tether_observer_t o;
    if ((rc = tether_observe(s, NULL, TETHER_OBSERVE_SYNC, count_observer, &cnt[k], NULL, &o)) !=
        TETHER_OK)
      failed = bad("observe", rc);
  }
  for (i = 1; i <= 100 && !failed; i++) tether_state_set_int(s, base + i);
  base += 100;
  for (r = 0; r < runs && !failed; r++) {
    int64_t t0, dt;
    long calls0 = cnt[0].calls, calls_last0 = cnt[OBS - 1].calls;
    t0 = bench_now_ns();
    for (i = 1; i <= writes; i++)
      if (tether_state_set_int(s, base + i) != TETHER_OK) {
        failed = 1;
        break;
      }
    dt = bench_now_ns() - t0;
    if (cnt[0].calls - calls0 != writes || cnt[OBS - 1].calls - calls_last0 != writes ||
        cnt[OBS - 1].last != base + writes) {
      fprintf(stderr, "fan-out: observer calls do not match\n");
      failed = 1;
    }
    base += writes;
    if (dt < best) best = dt;
  }
  for (k = 0; k < OBS && !failed; k++)
    if (cnt[k].calls != base || cnt[k].errors) {
      fprintf(stderr, "fan-out: observer %d called %ld times, expected %ld\n", k, cnt[k].calls,
              base);
      failed = 1;
    }
  tether_runtime_free(rt);
  bench_emit(SYS, "micro", name, !failed, (double)best / ((double)writes * OBS),
             "ns/notification",
             "one state, 1000 SYNC observers, 10k writes; time / (writes x 1000); fastest of 5",
             NULL, "%s", rt_mode_notes[mode]);
}

/* ======================================================================== */
/* 50-deep chain = kairo deepPropagation                                      */
/* ======================================================================== */

/* deepPropagation alone, when the kairo suite did not run in this invocation. */
static double measure_deep(void) {
  wl_kairo_t *k;
  int failed = 0, s, i, samples = icount_n ? 1 : quick ? 2 : 10;
  int per = icount_n ? (int)icount_n : quick ? 5 : 500;
  int64_t best = INT64_MAX;
  if (wl_kairo_build(WL_KAIRO_DEEP, NULL, &k)) return -1;
  for (i = 0; i < 3 && !failed; i++) failed |= wl_kairo_iter(k);
  for (s = 0; s < samples && !failed; s++) {
    int64_t t0 = bench_now_ns(), dt;
    for (i = 0; i < per; i++) failed |= wl_kairo_iter(k);
    dt = bench_now_ns() - t0;
    if (dt < best) best = dt;
  }
  failed |= wl_kairo_free(k);
  return failed ? -1 : best / 1e6;
}

static void bench_chain(void) {
  static const char *const protocol =
      "kairo deepPropagation: head -> 50 computeds -> 1 SYNC effect; 500 iter() of 51 "
      "batched writes; fastest of 10 samples";
  if (kairo_deep_ms < 0) kairo_deep_ms = measure_deep();
  if (kairo_deep_single_ms < 0) {
    wl_runtime_flags = TETHER_RUNTIME_SINGLE_THREAD;
    kairo_deep_single_ms = measure_deep();
    wl_runtime_flags = 0;
  }
  bench_emit(SYS, "micro", "50-deep chain", kairo_deep_ms >= 0, kairo_deep_ms, "ms", protocol,
             NULL, "%s", mode_note);
  bench_emit(SYS, "micro", "50-deep chain [single]", kairo_deep_single_ms >= 0,
             kairo_deep_single_ms, "ms", protocol, NULL, "%s", rt_mode_notes[RT_SINGLE]);
}

/* ======================================================================== */
/* Tracking by path: 1,000 fields, one computed per field                    */
/* ======================================================================== */

enum { PATH_FIELDS = 1000 };

typedef struct field_reader {
  tether_state_t s;
  char path[16]; /* "/f123" */
  long runs;
} field_reader_t;

/* Reads its field by path: depends on that field only. */
static int field_by_path(tether_value_t *result, void *user_data) {
  field_reader_t *f = user_data;
  tether_value_t *v = NULL;
  int rc = tether_state_get_path(f->s, f->path, &v);
  f->runs++;
  if (rc != TETHER_OK) return rc;
  rc = tether_value_assign(result, v);
  tether_value_free(v);
  return rc;
}

/* Reads the whole state, then picks its field: depends on every field. */
static int field_from_whole(tether_value_t *result, void *user_data) {
  field_reader_t *f = user_data;
  tether_value_t *whole = NULL, *v = NULL;
  int rc = tether_state_get(f->s, &whole);
  f->runs++;
  if (rc != TETHER_OK) return rc;
  rc = tether_value_get_path(whole, f->path, &v);
  if (rc == TETHER_OK) rc = tether_value_assign(result, v);
  tether_value_free(v);
  tether_value_free(whole);
  return rc;
}

/* One object state of PATH_FIELDS int fields, one computed per field (by
 * path, or through the whole value); an iteration writes one field (a
 * different one each time) and reads every computed. Checks every value
 * read and how many computeds re-ran per write. */
static void bench_paths_mode(int by_path) {
  static field_reader_t readers[PATH_FIELDS];
  static tether_computed_t cs[PATH_FIELDS];
  const char *name = by_path ? "path tracking" : "whole-state tracking";
  long iters = quick ? 20 : (by_path ? 5000 : 500), i, total_runs = 0, writes = 0;
  int r, runs = quick ? 2 : 5, failed = 0, rc, k;
  int64_t best = INT64_MAX, v = 0, next = 1;
  tether_runtime_t rt;
  tether_state_t s;
  tether_value_t *val = NULL;
  char *json = NULL, extra[200];
  size_t used = 0, cap = PATH_FIELDS * 16 + 8;

  if ((rc = make_runtime(RT_HOST, &rt)) != TETHER_OK) {
    bad("tether_runtime_new", rc);
    bench_emit(SYS, "paths", name, 0, 0, "us", NULL, NULL, "runtime failed");
    return;
  }
  /* {"f0":0,"f1":0,...} */
  json = malloc(cap);
  used += (size_t)snprintf(json + used, cap - used, "{");
  for (k = 0; k < PATH_FIELDS; k++)
    used += (size_t)snprintf(json + used, cap - used, "%s\"f%d\":0", k ? "," : "", k);
  snprintf(json + used, cap - used, "}");
  if ((rc = tether_state_new_json(rt, json, -1, 0, &s)) != TETHER_OK) failed = bad("state", rc);
  free(json);
  if (!failed && (rc = tether_value_new_int(0, &val)) != TETHER_OK) failed = bad("value", rc);
  for (k = 0; k < PATH_FIELDS && !failed; k++) {
    readers[k].s = s;
    readers[k].runs = 0;
    snprintf(readers[k].path, sizeof readers[k].path, "/f%d", k);
    if ((rc = tether_computed_new(rt, by_path ? field_by_path : field_from_whole, &readers[k],
                                  NULL, &cs[k])) != TETHER_OK ||
        (rc = tether_computed_get_int(cs[k], &v)) != TETHER_OK)
      failed = bad("computed", rc);
  }
  for (r = -1; r < runs && !failed; r++) { /* run -1: warm-up, untimed */
    int64_t t0, dt;
    long runs0 = 0, runs1 = 0;
    for (k = 0; k < PATH_FIELDS; k++) runs0 += readers[k].runs;
    t0 = bench_now_ns();
    for (i = 0; i < iters; i++) {
      int field = (int)((writes + i) % PATH_FIELDS);
      tether_value_set_int(val, next + i);
      if (tether_state_set_path(s, readers[field].path, val) != TETHER_OK) failed = 1;
      for (k = 0; k < PATH_FIELDS; k++)
        if (tether_computed_get_int(cs[k], &v) != TETHER_OK) failed = 1;
      /* the last read is the written field's computed when field is last */
    }
    dt = bench_now_ns() - t0;
    for (k = 0; k < PATH_FIELDS; k++) runs1 += readers[k].runs;
    /* every computed of a written field holds what was written */
    for (i = (iters > PATH_FIELDS ? iters - PATH_FIELDS : 0); i < iters && !failed; i++) {
      int field = (int)((writes + i) % PATH_FIELDS);
      if ((rc = tether_computed_get_int(cs[field], &v)) != TETHER_OK || v != next + i) {
        fprintf(stderr, "path tracking: field %d reads %lld, expected %lld\n", field,
                (long long)v, (long long)(next + i));
        failed = 1;
      }
    }
    if (runs1 - runs0 != iters * (by_path ? 1 : PATH_FIELDS)) {
      fprintf(stderr, "%s: %ld recomputes for %ld writes (expected %ld per write)\n", name,
              runs1 - runs0, iters, by_path ? 1L : (long)PATH_FIELDS);
      failed = 1;
    }
    if (r >= 0) {
      total_runs += runs1 - runs0;
      if (dt < best) best = dt;
    }
    writes += iters;
    next += iters;
  }
  if (val) tether_value_free(val);
  tether_runtime_free(rt);
  snprintf(extra, sizeof extra, "\"recomputes_per_write\":%.6g,\"fields\":%d",
           writes > 0 && runs > 0 ? (double)total_runs / ((double)iters * runs) : 0.0,
           PATH_FIELDS);
  bench_emit(SYS, "paths", name, !failed, (double)best / (double)iters / 1e3, "us",
             by_path
                 ? "one state of 1,000 int fields, 1,000 computeds each reading its field with "
                   "tether_state_get_path; an iteration writes one field "
                   "(tether_state_set_path) and reads all 1,000 computeds; fastest of 5 runs of "
                   "5,000 iterations; 1 recompute per write checked"
                 : "as path tracking, but each computed reads the whole state "
                   "(tether_state_get) and picks its field (tether_value_get_path); fastest of 5 "
                   "runs of 500 iterations; 1,000 recomputes per write checked",
             extra, "%s", mode_note);
}

static void bench_paths(void) {
  bench_paths_mode(1);
  bench_paths_mode(0);
}

/* ======================================================================== */
/* Cross-thread: writer thread -> loop-thread observer                        */
/* ======================================================================== */

typedef struct xt {
  int64_t *recv_ns;        /* indexed by the value written */
  long n;
  _Atomic long seen;       /* last value delivered */
  _Atomic long calls;
  int errors;
} xt_t;

static void xt_observer(const tether_change_t *ch, void *ud) {
  xt_t *x = ud;
  int64_t t = bench_now_ns(), v;
  if (tether_value_get_int(ch->new_value, &v) != TETHER_OK || v < 0 || v > x->n) {
    x->errors++;
    return;
  }
  if (x->recv_ns != NULL) x->recv_ns[v] = t;
  atomic_fetch_add_explicit(&x->calls, 1, memory_order_relaxed);
  atomic_store_explicit(&x->seen, (long)v, memory_order_release);
}

typedef struct xt_writer {
  tether_state_t s;
  xt_t *x;
  int64_t *send_ns;
  long n;
  int paced;
  int failed;
  int64_t t_start, t_end;
} xt_writer_t;

static void *xt_writer_main(void *arg) {
  xt_writer_t *w = arg;
  long i;
  w->t_start = bench_now_ns();
  for (i = 1; i <= w->n; i++) {
    if (w->paced) w->send_ns[i] = bench_now_ns();
    if (tether_state_set_int(w->s, i) != TETHER_OK) {
      w->failed = 1;
      break;
    }
    if (w->paced)
      while (atomic_load_explicit(&w->x->seen, memory_order_acquire) != i) sched_yield();
  }
  w->t_end = bench_now_ns();
  return NULL;
}

static void bench_crossthread(void) {
  long n_lat = quick ? 2000 : 100000, n_rate = quick ? 20000 : 1000000, warm = 1000;
  tether_runtime_t rt;
  tether_state_t s;
  tether_observer_t o;
  xt_t x;
  xt_writer_t w;
  pthread_t th;
  int rc, failed = 0;
  int64_t *send_ns, *recv_ns, *lat;
  long i, nl = 0;

  /* Latency: each write is delivered before the next is made. */
  send_ns = calloc((size_t)n_lat + 1, sizeof *send_ns);
  recv_ns = calloc((size_t)n_lat + 1, sizeof *recv_ns);
  lat = calloc((size_t)n_lat + 1, sizeof *lat);
  memset(&x, 0, sizeof x);
  x.recv_ns = recv_ns;
  x.n = n_lat;
  if ((rc = make_runtime(RT_THREAD, &rt)) != TETHER_OK) failed = bad("runtime", rc);
  if (!failed && ((rc = tether_state_new_int(rt, 0, 0, &s)) != TETHER_OK ||
                  (rc = tether_observe(s, NULL, 0, xt_observer, &x, NULL, &o)) != TETHER_OK))
    failed = bad("setup", rc);
  if (!failed) {
    memset(&w, 0, sizeof w);
    w.s = s;
    w.x = &x;
    w.send_ns = send_ns;
    w.n = n_lat;
    w.paced = 1;
    pthread_create(&th, NULL, xt_writer_main, &w);
    pthread_join(th, NULL);
    failed |= w.failed || x.errors || atomic_load(&x.calls) != n_lat;
    for (i = warm + 1; i <= n_lat && !failed; i++) lat[nl++] = recv_ns[i] - send_ns[i];
    qsort(lat, (size_t)nl, sizeof *lat, bench_cmp_i64);
    tether_runtime_free(rt);
  }
  {
    char extra[256];
    snprintf(extra, sizeof extra,
             "\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,"
             "\"samples\":%ld",
             bench_quantile(lat, nl, 0.5) / 1e3, bench_quantile(lat, nl, 0.9) / 1e3,
             bench_quantile(lat, nl, 0.99) / 1e3, bench_quantile(lat, nl, 0.999) / 1e3,
             nl ? lat[nl - 1] / 1e3 : 0.0, nl);
    bench_emit(SYS, "crossthread", "latency p50", !failed, bench_quantile(lat, nl, 0.5) / 1e3,
               "us",
               "writer thread: timestamp, tether_state_set_int, then spin (sched_yield) until "
               "the loop-thread observer has seen that value; 100k writes, first 1000 dropped",
               extra, "default runtime (TETHER_LOOP_THREAD), observer without SYNC");
    bench_emit(SYS, "crossthread", "latency p99", !failed, bench_quantile(lat, nl, 0.99) / 1e3,
               "us", "as latency p50", extra,
               "default runtime (TETHER_LOOP_THREAD), observer without SYNC");
  }
  free(send_ns);
  free(recv_ns);
  free(lat);

  /* Sustained: the writer writes as fast as it can; the loop coalesces. */
  failed = 0;
  memset(&x, 0, sizeof x);
  x.n = n_rate;
  if ((rc = make_runtime(RT_THREAD, &rt)) != TETHER_OK) failed = bad("runtime", rc);
  if (!failed && ((rc = tether_state_new_int(rt, 0, 0, &s)) != TETHER_OK ||
                  (rc = tether_observe(s, NULL, 0, xt_observer, &x, NULL, &o)) != TETHER_OK))
    failed = bad("setup", rc);
  if (!failed) {
    int64_t t_flushed;
    memset(&w, 0, sizeof w);
    w.s = s;
    w.x = &x;
    w.n = n_rate;
    w.paced = 0;
    pthread_create(&th, NULL, xt_writer_main, &w);
    pthread_join(th, NULL);
    if ((rc = tether_runtime_flush(rt)) != TETHER_OK) failed = bad("flush", rc);
    t_flushed = bench_now_ns();
    failed |= w.failed || x.errors || atomic_load(&x.seen) != n_rate;
    {
      double secs = (double)(w.t_end - w.t_start) / 1e9;
      double secs_all = (double)(t_flushed - w.t_start) / 1e9;
      long calls = atomic_load(&x.calls);
      char extra[256];
      snprintf(extra, sizeof extra,
               "\"writes\":%ld,\"observer_calls\":%ld,\"calls_per_write\":%.5f,"
               "\"delivered_writes_per_s\":%.4g",
               n_rate, calls, (double)calls / (double)n_rate, (double)n_rate / secs_all);
      bench_emit(SYS, "crossthread", "sustained writes/s", !failed, (double)n_rate / secs,
                 "writes/s",
                 "one writer thread writes 1M distinct ints as fast as it can; the observer "
                 "(loop thread) is coalesced per loop turn; last value checked after flush",
                 extra, "%ld observer calls for %ld writes (%.4f per write); until flush: %.3g writes/s",
                 calls, n_rate, (double)calls / (double)n_rate, (double)n_rate / secs_all);
    }
    tether_runtime_free(rt);
  }
}

/* ======================================================================== */
/* Memory                                                                    */
/* ======================================================================== */

static int phase_all; /* edges workload: 0 read state 0 only, 1 read all */
static tether_state_t *edge_states;
static long edge_nstates;

static int const_compute(tether_value_t *result, void *ud) {
  return tether_value_set_int(result, (int64_t)(intptr_t)ud);
}

static int edge_compute(tether_value_t *result, void *ud) {
  int64_t sum = 0, v;
  long i, n = phase_all ? edge_nstates : 1;
  (void)ud;
  for (i = 0; i < n; i++) {
    WL_TRY(tether_state_get_int(edge_states[i], &v));
    sum += v;
  }
  return tether_value_set_int(result, sum);
}

static void emit_mem(const char *name, long long d_malloc, long long d_rss, long n,
                     const char *protocol) {
  char extra[256];
  snprintf(extra, sizeof extra, "\"malloc_bytes\":%lld,\"rss_bytes\":%lld,\"count\":%ld,"
           "\"rss_per\":%.1f",
           d_malloc, d_rss, n, (double)d_rss / (double)n);
  bench_emit(SYS, "memory", name, d_malloc > 0, (double)d_malloc / (double)n, "bytes", protocol,
             extra, "mallinfo2 (uordblks+hblkhd) difference / count; RSS difference / count = %.1f",
             (double)d_rss / (double)n);
}

static void bench_memory(void) {
  long n = quick ? 20000 : 1000000, i;
  tether_runtime_t rt;
  long long m0, m1, r0, r1;
  int rc;

  /* States: n int states. */
  if ((rc = make_runtime(RT_HOST, &rt)) != TETHER_OK) {
    bad("runtime", rc);
    return;
  }
  m0 = bench_malloc_in_use();
  r0 = bench_rss();
  for (i = 0; i < n; i++) {
    tether_state_t s;
    if ((rc = tether_state_new_int(rt, i, 0, &s)) != TETHER_OK) {
      bad("state_new", rc);
      break;
    }
  }
  m1 = bench_malloc_in_use();
  r1 = bench_rss();
  if (i == n)
    emit_mem("per state", m1 - m0, r1 - r0, n,
             "1M int states in one runtime (made after the runtime)");
  tether_runtime_free(rt);

  /* Computeds: n computeds without dependencies, each read once. */
  {
    tether_computed_t *cs = malloc((size_t)n * sizeof *cs);
    if ((rc = make_runtime(RT_HOST, &rt)) != TETHER_OK) {
      bad("runtime", rc);
      free(cs);
      return;
    }
    m0 = bench_malloc_in_use();
    r0 = bench_rss();
    for (i = 0; i < n; i++)
      if ((rc = tether_computed_new(rt, const_compute, (void *)(intptr_t)i, NULL, &cs[i])) !=
          TETHER_OK) {
        bad("computed_new", rc);
        break;
      }
    if (i == n)
      for (i = 0; i < n; i++) {
        int64_t v;
        if ((rc = tether_computed_get_int(cs[i], &v)) != TETHER_OK || v != i) {
          bad("computed_get", rc);
          break;
        }
      }
    m1 = bench_malloc_in_use();
    r1 = bench_rss();
    if (i == n)
      emit_mem("per computed", m1 - m0, r1 - r0, n,
               "1M computeds without dependencies, each evaluated once (holding its int "
               "result)");
    tether_runtime_free(rt);
    free(cs);
  }

  /* Edges: 1000 computeds that read state 0, then all 1000 states. */
  {
    long ns = quick ? 200 : 1000, nc = quick ? 100 : 1000, added = nc * (ns - 1);
    tether_computed_t *cs = malloc((size_t)nc * sizeof *cs);
    int ok = 1;
    edge_states = malloc((size_t)ns * sizeof *edge_states);
    edge_nstates = ns;
    phase_all = 0;
    if ((rc = make_runtime(RT_HOST, &rt)) != TETHER_OK) {
      bad("runtime", rc);
      return;
    }
    for (i = 0; i < ns && ok; i++)
      if ((rc = tether_state_new_int(rt, 1, 0, &edge_states[i])) != TETHER_OK) ok = !bad("s", rc);
    for (i = 0; i < nc && ok; i++)
      if ((rc = tether_computed_new(rt, edge_compute, NULL, NULL, &cs[i])) != TETHER_OK)
        ok = !bad("c", rc);
    for (i = 0; i < nc && ok; i++) {
      int64_t v;
      if ((rc = tether_computed_get_int(cs[i], &v)) != TETHER_OK || v != 1) ok = !bad("get", rc);
    }
    m0 = bench_malloc_in_use();
    r0 = bench_rss();
    phase_all = 1;
    if (ok && (rc = tether_state_set_int(edge_states[0], 2)) != TETHER_OK) ok = !bad("set", rc);
    for (i = 0; i < nc && ok; i++) {
      int64_t v;
      if ((rc = tether_computed_get_int(cs[i], &v)) != TETHER_OK || v != ns + 1)
        ok = !bad("get all", rc);
    }
    m1 = bench_malloc_in_use();
    r1 = bench_rss();
    if (ok)
      emit_mem("per dependency edge", m1 - m0, r1 - r0, added,
               "1000 computeds each reading 1 of 1000 states, then (after a write) all 1000: "
               "the difference over the 999k edges added");
    tether_runtime_free(rt);
    free(cs);
    free(edge_states);
  }
}

/* One case of the kairo, S.js or dynamic suite under callgrind (--icount
 * kairo:NAME N, sbench:NAME N, dynamic:INDEX N; benchmarks/icount/
 * suites.py): kairo builds its graph and runs N iter()s, S.js runs its case
 * once with COUNT = N (setup, the case, disposal), a dynamic graph makes N
 * writes with their reads, so (I(2N) - I(N)) / N is an iter(), a COUNT unit
 * or a write. Its result line says whether its checks held. */
static int icount_suite_case(const char *workload) {
  const char *name = strchr(workload, ':') + 1;
  int c, failed = 0;
  long i;
  if (workload[0] == 'd') {
    /* dynamic:I, the I-th graph of the dynamic suite (0 = 2-10x5 lazy80%):
     * built, then N writes each followed by the lazy reads, one run. */
    wl_dyn_t *g = NULL;
    double sum = 0;
    char *end;
    long index = strtol(name, &end, 10);
    if (*name == '\0' || *end != '\0' || index < 0 || index >= WL_DYN_CONFIGS) {
      fprintf(stderr, "bench_tether --icount: no dynamic graph %s (0 to %d)\n", name,
              WL_DYN_CONFIGS - 1);
      return 2;
    }
    failed = wl_dyn_build(&wl_dyn_configs[index], NULL, &g);
    if (!failed) failed |= wl_dyn_run(g, icount_n, &sum);
    if (g) failed |= wl_dyn_free(g);
  } else if (workload[0] == 'k') {
    wl_kairo_t *k = NULL;
    for (c = 0; c < WL_KAIRO_CASES && strcmp(wl_kairo_name(c), name) != 0; c++) {}
    if (c == WL_KAIRO_CASES) {
      fprintf(stderr, "bench_tether --icount: no kairo case %s\n", name);
      return 2;
    }
    failed = wl_kairo_build(c, NULL, &k);
    for (i = 0; i < icount_n && !failed; i++) failed |= wl_kairo_iter(k);
    if (k) failed |= wl_kairo_free(k);
  } else {
    wl_sbench_params_t p;
    for (c = 0; c < WL_SB_CASES && strcmp(wl_sbench_name(c), name) != 0; c++) {}
    if (c == WL_SB_CASES) {
      fprintf(stderr, "bench_tether --icount: no sbench case %s\n", name);
      return 2;
    }
    wl_sbench_default_params(c, icount_n, &p);
    failed = wl_sbench_workload(&p);
  }
  bench_emit(SYS, "icount", workload, !failed, 0, "-", "one suite case under callgrind", NULL,
             "%s", "");
  return 0;
}

/* One workload under callgrind (--icount); its result line says whether its
 * checks held. */
static int icount_main(const char *workload, const char *variant) {
  rt_mode_t mode = strcmp(variant, "single") == 0   ? RT_SINGLE
                   : strcmp(variant, "thread") == 0 ? RT_THREAD
                                                    : RT_HOST;
  if (strcmp(variant, "") != 0 && strcmp(variant, "host") != 0 && mode == RT_HOST) {
    fprintf(stderr, "bench_tether --icount: runtime mode host, thread or single, not %s\n",
            variant);
    return 2;
  }
  if (mode == RT_THREAD && strcmp(workload, "chain") == 0) {
    fprintf(stderr, "bench_tether --icount: the chain runs in a host runtime (workloads/)\n");
    return 2;
  }
  if (strcmp(workload, "setnotify") == 0) {
    bench_setnotify_mode(mode);
  } else if (strcmp(workload, "fanout") == 0) {
    bench_fanout_mode(mode);
  } else if (strcmp(workload, "chain") == 0) {
    double ms;
    if (mode == RT_SINGLE) wl_runtime_flags = TETHER_RUNTIME_SINGLE_THREAD;
    ms = measure_deep();
    bench_emit(SYS, "micro", mode == RT_SINGLE ? "50-deep chain [single]" : "50-deep chain",
               ms >= 0, ms, "ms", "kairo deepPropagation", NULL, "%s", rt_mode_notes[mode]);
  } else if (strncmp(workload, "kairo:", 6) == 0 || strncmp(workload, "sbench:", 7) == 0 ||
             strncmp(workload, "dynamic:", 8) == 0) {
    if (mode == RT_SINGLE) wl_runtime_flags = TETHER_RUNTIME_SINGLE_THREAD;
    return icount_suite_case(workload);
  } else {
    fprintf(stderr,
            "bench_tether --icount: no workload %s (setnotify, fanout, chain, kairo:CASE, "
            "sbench:CASE, dynamic:INDEX)\n",
            workload);
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *icount_workload, *icount_variant;
  quick = bench_quick();
  if (bench_icount_args(argc, argv, &icount_workload, &icount_n, &icount_variant))
    return icount_main(icount_workload, icount_variant);
  fprintf(stderr, "bench_tether: libtether %s%s\n", tether_version(),
          quick ? " (BENCH_QUICK: small sizes, figures mean nothing)" : "");
  if (bench_want("memory")) bench_memory(); /* first: a fresh heap */
  if (bench_want("kairo")) {
    bench_kairo("kairo");
    wl_runtime_flags = TETHER_RUNTIME_SINGLE_THREAD;
    bench_kairo("kairo-single");
    wl_runtime_flags = 0;
  }
  if (bench_want("chain")) bench_chain();
  if (bench_want("setnotify")) {
    bench_setnotify_mode(RT_HOST);
    bench_setnotify_mode(RT_THREAD);
    bench_setnotify_mode(RT_SINGLE);
  }
  if (bench_want("fanout")) {
    bench_fanout_mode(RT_HOST);
    bench_fanout_mode(RT_THREAD);
    bench_fanout_mode(RT_SINGLE);
  }
  if (bench_want("crossthread")) bench_crossthread();
  if (bench_want("paths")) bench_paths();
  if (bench_want("cellx")) bench_cellx();
  if (bench_want("sbench")) bench_sbench();
  if (bench_want("dynamic")) bench_dynamic();
  return 0;
}
