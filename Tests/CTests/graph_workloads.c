/*
 * graph_workloads.c — every graph workload of /work/shared/BENCHMARKS.md
 * (kairo suite, cellx, S.js-style creation/update, "reactively" dynamic
 * graphs), run once with small counts as a test. The workloads themselves
 * live in benchmarks/workloads/ and are the same code the benchmark driver
 * runs at full size with a clock around it; here each must report no
 * mismatch.
 *
 * Which checks are exact, and why:
 *  - PRNG: the first outputs of xmur3a("seed") and of sfc32 equal those of
 *    the JS benchmark's pseudoRandom() (obtained by running its
 *    util/pseudoRandom.ts under node).
 *  - kairo: every case's iter() does exactly BENCHMARKS.md's writes and
 *    checks its "must hold" values and counts; they hold from the first
 *    iter() on, so 2 iter() calls per case (instead of 3 + 10 x 500) check
 *    the same things.
 *  - cellx: L = 1000 built, run and disposed once; the end values are
 *    BENCHMARKS.md's stated ones. A tiny L = 7 uses the plain recurrence
 *    (whose values for 1000, 2500 and 5000 are checked against the stated
 *    ones below).
 *  - creation/update: each of the 17 cases with COUNT = 1000 (the full
 *    suite uses 100000); the effect run counts and the sums of the values
 *    the effects read follow exactly from the case definitions for any
 *    COUNT.
 *  - dynamic graphs: (a) the three small fresh-graph checks, exact as
 *    BENCHMARKS.md states them (the counter includes the build, no
 *    warm-up); (b) the six table graphs, fresh (one run of 1/100 of the
 *    iterations straight after the build, the counter including the
 *    build) and in the steady state (1/10 of the iterations, but more than
 *    `width` so that something changes; one warm-up run, then two checked
 *    runs with the counter reset: every run writes the same values, so
 *    every run after the first is the same), both against the sum and
 *    count of the plain C model in reference.c for that same size; (c)
 *    that model, run at full size, reproduces every sum and count of
 *    BENCHMARKS.md's table and the three fresh-graph checks — which is
 *    what makes (b)'s expectations exact rather than guessed. Under
 *    ThreadSanitizer the steady-state runs are left out (too slow there).
 *  Both ways of disposing of a build (one runtime per build, or freeing
 *  every handle in a shared runtime) are exercised.
 *
 * GRAPH_WORKLOADS_FULL=1 in the environment also runs the dynamic graphs,
 * cellx 2500 and 5000 and the creation/update cases at full size against
 * the library (slow; not part of the suite).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cases.h"
#include "check.h"
#include "tether.h"
#include "workloads/workloads.h"

/* Under ThreadSanitizer the debug build of the library is about 100 times
 * slower and the harness gives each program 120 s: the steady-state runs of
 * the table's graphs are left out there (the fresh-graph ones still run). */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* ---- the PRNG ----------------------------------------------------------- */

static void test_prng(void) {
  /* node: xmur3a("seed") four times, then pseudoRandom()() five times */
  static const uint32_t hashes[4] = {246123560u, 2434935956u, 752727108u, 913990249u};
  static const double draws[5] = {0.83703775098547339, 0.35816134908236563,
                                  0.12195610790513456, 0.48698632186278701,
                                  0.28508814005181193};
  uint32_t h = wl_xmur3a_init("seed");
  wl_rng_t r;
  int i;
  for (i = 0; i < 4; i++) CHECK_INT_EQ(wl_xmur3a_next(&h), hashes[i]);
  wl_rng_seed(&r, "seed");
  for (i = 0; i < 5; i++) {
    double d = wl_rng_next(&r);
    if (!CHECK(d == draws[i])) fprintf(stderr, "    draw %d: %.17g != %.17g\n", i, d, draws[i]);
  }
}

/* ---- the plain models against BENCHMARKS.md's stated numbers ------------ */

static void test_cellx_reference(void) {
  static const int64_t b1000[4] = {-3, -6, -2, 2}, a1000[4] = {-2, -4, 2, 3};
  static const int64_t b5000[4] = {2, 4, -1, -6}, a5000[4] = {-2, 1, -4, -4};
  int64_t before[4], after[4];
  int p;
  wl_cellx_expected(1000, before, after);
  for (p = 0; p < 4; p++) CHECK_INT_EQ(before[p], b1000[p]), CHECK_INT_EQ(after[p], a1000[p]);
  wl_cellx_expected(2500, before, after);
  for (p = 0; p < 4; p++) CHECK_INT_EQ(before[p], b1000[p]), CHECK_INT_EQ(after[p], a1000[p]);
  wl_cellx_expected(5000, before, after);
  for (p = 0; p < 4; p++) CHECK_INT_EQ(before[p], b5000[p]), CHECK_INT_EQ(after[p], a5000[p]);
}

/* The three fresh-graph checks of BENCHMARKS.md (width 3, layers 3, static
 * 1, nSources 2, unless changed). */
typedef struct fresh_check {
  wl_dyn_config_t config;
  double sum;
  long count;
} fresh_check_t;

static const fresh_check_t fresh_checks[3] = {
    {{"fresh 3x3 read all, 2 iterations", 3, 3, 1.0, 2, 1.0, 2, 16, 11}, 16, 11},
    {{"fresh 3x3 read 2/3, 10 iterations", 3, 3, 1.0, 2, 2.0 / 3.0, 10, 72, 41}, 72, 41},
    {{"fresh 4x2 static 0.5, 10 iterations", 4, 2, 0.5, 2, 1.0, 10, 72, 22}, 72, 22},
};

static wl_dyn_params_t fresh_params(const fresh_check_t *f, const wl_options_t *opts) {
  wl_dyn_params_t p;
  p.config = &f->config;
  p.iterations = f->config.iterations;
  p.warmup_runs = 0;
  p.checked_runs = 1;
  p.reset_count = 0; /* the counter includes the build */
  p.expected_sum = f->sum;
  p.expected_count = f->count;
  p.options = opts;
  return p;
}

static void test_dynamic_reference(void) {
  int i;
  for (i = 0; i < 3; i++) {
    wl_dyn_params_t p = fresh_params(&fresh_checks[i], NULL);
    double sum = -1;
    long count = -1;
    CHECK_INT_EQ(wl_dyn_reference(&p, &sum, &count), 0);
    if (!CHECK(sum == fresh_checks[i].sum))
      fprintf(stderr, "    %s: model sum %.17g\n", fresh_checks[i].config.title, sum);
    CHECK_INT_EQ(count, fresh_checks[i].count);
  }
  /* Full size, steady state: one warm-up run, then the run that is checked
   * (every later run is the same run again). */
  for (i = 0; i < WL_DYN_CONFIGS; i++) {
    const wl_dyn_config_t *c = &wl_dyn_configs[i];
    wl_dyn_params_t p = {c, c->iterations, 1, 1, 1, 0, 0, NULL};
    double sum = -1;
    long count = -1;
    CHECK_INT_EQ(wl_dyn_reference(&p, &sum, &count), 0);
    if (!CHECK(sum == c->expected_sum))
      fprintf(stderr, "    %s: model sum %.17g, table %.17g\n", c->title, sum, c->expected_sum);
    if (!CHECK_INT_EQ(count, c->expected_count)) fprintf(stderr, "    %s\n", c->title);
  }
}

/* ---- the workloads on Tether -------------------------------------------- */

static void test_kairo(const wl_options_t *opts) {
  int c;
  for (c = 0; c < WL_KAIRO_CASES; c++) {
    wl_kairo_params_t p;
    p.which = (wl_kairo_case_t)c;
    p.iterations = 2;
    p.options = opts;
    if (!CHECK_INT_EQ(wl_kairo_workload(&p), 0))
      fprintf(stderr, "    kairo %s failed (see above)\n", wl_kairo_name(p.which));
  }
}

static void test_cellx(const wl_options_t *opts, int layers, int repeats) {
  wl_cellx_params_t p;
  p.layers = layers;
  p.repeats = repeats;
  p.options = opts;
  if (!CHECK_INT_EQ(wl_cellx_workload(&p), 0)) fprintf(stderr, "    cellx%d failed\n", layers);
}

static void test_sbench(const wl_options_t *opts, long count) {
  int c;
  for (c = 0; c < WL_SB_CASES; c++) {
    wl_sbench_params_t p;
    wl_sbench_default_params((wl_sbench_case_t)c, count, &p);
    p.options = opts;
    if (!CHECK_INT_EQ(wl_sbench_workload(&p), 0))
      fprintf(stderr, "    %s (COUNT %ld) failed\n", wl_sbench_name(p.which), count);
  }
}

static void test_dynamic_fresh(const wl_options_t *opts) {
  int i;
  for (i = 0; i < 3; i++) {
    wl_dyn_params_t p = fresh_params(&fresh_checks[i], opts);
    if (!CHECK_INT_EQ(wl_dyn_workload(&p), 0))
      fprintf(stderr, "    %s failed\n", fresh_checks[i].config.title);
  }
}

/* The table's graphs at reduced sizes, checked against the model at the
 * same size (steady: 1 warm-up and 2 checked runs with the counter reset;
 * fresh: 1 run from the build, the counter including the build). A
 * reduced steady-state run needs more than `width` iterations: with fewer,
 * each source is written once per run with the value the previous run left
 * there, nothing changes, and the count would be a meaningless 0. */
static void test_dynamic_table(const wl_options_t *opts, int steady, long divisor) {
  int i;
  for (i = 0; i < WL_DYN_CONFIGS; i++) {
    const wl_dyn_config_t *c = &wl_dyn_configs[i];
    wl_dyn_params_t p;
    p.config = c;
    p.iterations = c->iterations / divisor;
    if (steady && p.iterations < c->width + c->width / 10) p.iterations = c->width + c->width / 10;
    if (p.iterations < 2) p.iterations = 2;
    p.warmup_runs = steady ? 1 : 0;
    p.checked_runs = steady ? 2 : 1;
    p.reset_count = steady;
    p.options = opts;
    if (divisor == 1 && steady) {
      p.warmup_runs = 3;
      p.expected_sum = c->expected_sum;
      p.expected_count = c->expected_count;
    } else {
      if (!CHECK_INT_EQ(wl_dyn_reference(&p, &p.expected_sum, &p.expected_count), 0)) continue;
      if (!CHECK(p.expected_count > 0)) fprintf(stderr, "    %s: degenerate size\n", c->title);
    }
    if (!CHECK_INT_EQ(wl_dyn_workload(&p), 0))
      fprintf(stderr, "    %s, %s, %ld iterations, failed (expected sum %.17g, count %ld)\n",
              c->title, steady ? "steady state" : "fresh graph", p.iterations, p.expected_sum,
              p.expected_count);
  }
}

/* The cases of this suite, registered in cases.h (Tests/CTests/runner.c
 * runs one by name). */
TEST_CASE(graph_workloads_references) {
  test_prng();
  test_cellx_reference();
  test_dynamic_reference();
  return check_report("graph_workloads_references");
}

/* One runtime per build, freed by cleanup() (the default). */
TEST_CASE(graph_workloads_kairo) {
  test_kairo(NULL);
  return check_report("graph_workloads_kairo");
}

TEST_CASE(graph_workloads_cellx) {
  test_cellx(NULL, 1000, 1);
  return check_report("graph_workloads_cellx");
}

TEST_CASE(graph_workloads_sbench) {
  test_sbench(NULL, 1000);
  return check_report("graph_workloads_sbench");
}

TEST_CASE(graph_workloads_dynamic) {
  test_dynamic_fresh(NULL);
  test_dynamic_table(NULL, 0, 100);
#if !UNDER_TSAN
  test_dynamic_table(NULL, 1, 10);
#endif
  return check_report("graph_workloads_dynamic");
}

/* Builds in one long-lived runtime; cleanup() frees every handle. */
TEST_CASE(graph_workloads_shared_runtime) {
  wl_options_t handles;
  tether_runtime_t shared;
  if (CHECK_OK(wl_runtime_new(&shared))) {
    handles.dispose = WL_DISPOSE_HANDLES;
    handles.runtime = shared;
    test_kairo(&handles);
    test_cellx(&handles, 7, 2);
    test_sbench(&handles, 1000);
    test_dynamic_fresh(&handles);
    test_dynamic_table(&handles, 0, 100);
    CHECK_OK(tether_runtime_free(shared));
  }
  return check_report("graph_workloads_shared_runtime");
}

/* The full sizes, only with GRAPH_WORKLOADS_FULL=1 (minutes, not seconds). */
TEST_CASE(graph_workloads_full) {
  const char *full = getenv("GRAPH_WORKLOADS_FULL");
  if (full == NULL || full[0] != '1') {
    return check_skip("graph_workloads_full", "set GRAPH_WORKLOADS_FULL=1: minutes, not seconds");
  }
  test_dynamic_table(NULL, 1, 1);
  test_cellx(NULL, 2500, 1);
  test_cellx(NULL, 5000, 1);
  test_sbench(NULL, 100000);
  return check_report("graph_workloads_full");
}
