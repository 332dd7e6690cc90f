/*
 * workloads.h — the graph workloads of /work/shared/BENCHMARKS.md, ported to
 * C against tether.h, as reusable code.
 *
 * The workloads are those the reactive-programming field measures itself
 * with (the js-reactivity-benchmark suite: the kairo cases and molBench,
 * cellx, the S.js-style creation/update cases, and the "reactively" dynamic
 * graphs). Each one checks the values and call counts BENCHMARKS.md states,
 * so every run checks itself; none of them times anything. Two users:
 *
 *  - Tests/CTests/graph_workloads.c runs every workload once with small counts
 *    (part of the C test suite);
 *  - the benchmark driver runs the same code with the full counts and puts
 *    its clock around the phases BENCHMARKS.md times, which is why most
 *    workloads come as build / run / free instead of one call.
 *
 * Conventions: every function returning int returns 0 when everything it
 * checked held (and every tether call it made succeeded), non-zero otherwise,
 * after printing each mismatch to stderr as
 *     "workload <name>: <what>: expected <x>, got <y>".
 *
 * How BENCHMARKS.md's vocabulary maps onto Tether (adapter.c):
 *   signal(v)   a state (int where values are integral, double for the
 *               dynamic graphs), read with tether_state_get_*, written with tether_state_set_*
 *   computed(f) tether_computed_new; f is a tether_compute_fn that reads
 *               through tether_state_get_* / tether_computed_get_* and fills
 *               its result with tether_value_set_*
 *   effect(f)   tether_effect_new(..., TETHER_EFFECT_SYNC, ...): runs now,
 *               then at the end of the outermost write or batch
 *   batch(f)    tether_batch_begin / tether_batch_end
 *   build(f)    a wl_scope_t: everything a build makes belongs to it
 *   cleanup()   wl_scope_close (see wl_dispose_t for the two ways)
 * Writes of an equal value are skipped by Tether itself.
 */
#ifndef TETHER_WORKLOADS_H
#define TETHER_WORKLOADS_H

#include <stddef.h>
#include <stdint.h>

#include "tether.h"

/* ======================================================================== */
/* Reporting mismatches                                                      */
/* ======================================================================== */

/* What one workload run has found wrong so far. Mismatches are printed (at
 * most WL_REPORT_MAX_PRINTED per report, then only counted, so a broken
 * library does not flood the log from a loop of 500k writes). */
typedef struct wl_report {
  const char *workload; /* printed in front of every mismatch */
  long failures;        /* mismatches and failed tether calls */
  long printed;
} wl_report_t;

#define WL_REPORT_MAX_PRINTED 12

void wl_report_init(wl_report_t *r, const char *workload);

/* Records one failure and prints "workload <name>: <message>" (printf-style).
 * Returns 1, so `return wl_fail(...)` reads as "failed". */
int wl_fail(wl_report_t *r, const char *fmt, ...);

/* Each returns 0 when got matches expected, else records a failure naming
 * `what` with both values and returns 1. */
int wl_expect_int_(wl_report_t *r, const char *what, long long expected, long long got);
int wl_expect_double_(wl_report_t *r, const char *what, double expected, double got);
/* A tether call returned TETHER_OK; otherwise prints the error name,
 * tether_strerror() and tether_last_error(). */
int wl_expect_ok_(wl_report_t *r, const char *call, int rc);

/* The comparison is inline so a passing check on a hot path costs one
 * compare. */
static inline int wl_expect_int(wl_report_t *r, const char *what, long long expected,
                                long long got) {
  return got == expected ? 0 : wl_expect_int_(r, what, expected, got);
}
/* Exact IEEE equality (the sums are exact in the original too). */
static inline int wl_expect_double(wl_report_t *r, const char *what, double expected,
                                   double got) {
  return got == expected ? 0 : wl_expect_double_(r, what, expected, got);
}
static inline int wl_expect_ok(wl_report_t *r, const char *call, int rc) {
  return rc == TETHER_OK ? 0 : wl_expect_ok_(r, call, rc);
}
/* Checks a tether call, naming it by its source text. */
#define WL_OK(report, call) wl_expect_ok((report), #call, (call))

/* Inside a compute callback: a failing read is returned as the computed's
 * error (Tether caches it and hands it to every reader). */
#define WL_TRY(call)                     \
  do {                                   \
    int wl_rc_ = (call);                 \
    if (wl_rc_ != TETHER_OK) return wl_rc_; \
  } while (0)

/* ======================================================================== */
/* The adapter: build scopes, signals, computeds, effects, batches           */
/* ======================================================================== */

/* How cleanup() disposes of a build.
 *  WL_DISPOSE_RUNTIME  every build makes its own runtime (TETHER_LOOP_HOST:
 *                      no loop thread is started, SYNC effects need none)
 *                      and cleanup() is one tether_runtime_free. The default.
 *  WL_DISPOSE_HANDLES  the build is made in a runtime the caller keeps
 *                      (wl_options_t.runtime, or one the scope makes when
 *                      that is {0}); the scope records every handle and
 *                      cleanup() frees them one by one: effects, then
 *                      computeds (newest first), then states.
 * Both are correct (graph_workloads.c runs both). RUNTIME is the default
 * because it was faster where disposal is timed: measured on the library
 * of 2026-11-22 (best of 3, -O2), createComputations at COUNT 100000 took
 * 276 ms against 345 ms, and disposing a cellx1000 build 0.9 ms against
 * 1.8 ms; only createSignals was faster handle by handle (9 against 17 ms),
 * and updateSignals was equal. A HOST runtime costs about 14 us to make and
 * free (a THREAD one, 85 us). */
typedef enum wl_dispose {
  WL_DISPOSE_RUNTIME = 0,
  WL_DISPOSE_HANDLES = 1
} wl_dispose_t;

typedef struct wl_options {
  wl_dispose_t dispose;
  tether_runtime_t runtime; /* WL_DISPOSE_HANDLES only; {0}: make one */
} wl_options_t;

/* One build(): the runtime it lives in and, for WL_DISPOSE_HANDLES, every
 * handle it made. */
typedef struct wl_scope {
  tether_runtime_t rt;
  int owns_runtime;  /* cleanup frees rt */
  int tracks_handles; /* cleanup frees each handle */
  wl_report_t *report;
  tether_effect_t *effects;
  size_t n_effects, cap_effects;
  tether_computed_t *computeds;
  size_t n_computeds, cap_computeds;
  tether_state_t *states;
  size_t n_states, cap_states;
} wl_scope_t;

/* A new runtime for workloads: TETHER_LOOP_HOST (no background thread; the
 * workloads only use SYNC effects). Free it with tether_runtime_free on the
 * thread that made it. */
int wl_runtime_new(tether_runtime_t *out);
/* Flags for the runtimes wl_runtime_new makes (tether_runtime_options_t
 * .flags): the benchmarks set TETHER_RUNTIME_SINGLE_THREAD for their
 * single-threaded pass. Default 0. */
extern unsigned wl_runtime_flags;

/* Opens a build scope (opts NULL: the defaults). `expected_nodes` sizes the
 * handle lists up front (0 is fine; they grow). Failures go to report. */
int wl_scope_open(wl_scope_t *s, const wl_options_t *opts, size_t expected_nodes,
                  wl_report_t *report);

/* cleanup(): disposes everything the build made (see wl_dispose_t). The
 * scope can be opened again afterwards. */
int wl_scope_close(wl_scope_t *s);

/* signal(v): an int state or a double state. */
int wl_signal_int(wl_scope_t *s, int64_t initial, tether_state_t *out);
int wl_signal_double(wl_scope_t *s, double initial, tether_state_t *out);

/* computed(fn): lazy, cached; fn gets user_data, which the caller keeps
 * alive until after wl_scope_close (no destroy function is registered). */
int wl_computed(wl_scope_t *s, tether_compute_fn fn, void *user_data, tether_computed_t *out);

/* effect(fn): a TETHER_EFFECT_SYNC effect; it has run once when this
 * returns, and runs again at the end of the outermost write or batch that
 * changed something it read. */
int wl_effect(wl_scope_t *s, tether_effect_fn fn, void *user_data, tether_effect_t *out);

/* batch(fn) is written inline as begin / writes / end. */
static inline int wl_batch_begin(wl_scope_t *s) { return tether_batch_begin(s->rt); }
static inline int wl_batch_end(wl_scope_t *s) { return tether_batch_end(s->rt); }

/* Something a node reads: a state or a computed. */
typedef struct wl_src {
  int is_state;
  tether_state_t state;
  tether_computed_t computed;
} wl_src_t;

static inline wl_src_t wl_src_state(tether_state_t s) {
  wl_src_t r;
  r.is_state = 1;
  r.state = s;
  r.computed.id = 0;
  return r;
}
static inline wl_src_t wl_src_computed(tether_computed_t c) {
  wl_src_t r;
  r.is_state = 0;
  r.state.id = 0;
  r.computed = c;
  return r;
}
/* read(): recorded as a dependency when called from a compute or effect. */
static inline int wl_read_int(wl_src_t src, int64_t *out) {
  return src.is_state ? tether_state_get_int(src.state, out)
                      : tether_computed_get_int(src.computed, out);
}
static inline int wl_read_double(wl_src_t src, double *out) {
  return src.is_state ? tether_state_get_double(src.state, out)
                      : tether_computed_get_double(src.computed, out);
}


/* ======================================================================== */
/* PRNG of the dynamic graphs (prng.c)                                       */
/* ======================================================================== */

/* The JS benchmark's pseudoRandom(): sfc32 seeded with four successive
 * outputs of xmur3a(seed); each call returns a double in [0, 1). */
typedef struct wl_rng {
  uint32_t a, b, c, d;
} wl_rng_t;

/* xmur3a: MurmurHash3-style string hash; returns the state that successive
 * wl_xmur3a_next calls advance. */
uint32_t wl_xmur3a_init(const char *str);
uint32_t wl_xmur3a_next(uint32_t *h);
void wl_rng_seed(wl_rng_t *r, const char *seed);
double wl_rng_next(wl_rng_t *r);

/* ======================================================================== */
/* Kairo suite (kairo.c, kairo_mux_mol.c)                                    */
/* ======================================================================== */

/* Protocol (BENCHMARKS.md): build once; iter() 3 times to warm up; then the
 * fastest of 10 samples of 500 iter() calls; cleanup. Every iter() checks
 * the values and counts of its row of the table. */
typedef enum wl_kairo_case {
  WL_KAIRO_AVOIDABLE = 0,
  WL_KAIRO_BROAD,
  WL_KAIRO_DEEP,
  WL_KAIRO_DIAMOND,
  WL_KAIRO_MUX,
  WL_KAIRO_REPEATED,
  WL_KAIRO_TRIANGLE,
  WL_KAIRO_UNSTABLE,
  WL_KAIRO_MOL,
  WL_KAIRO_CASES /* how many */
} wl_kairo_case_t;

/* "avoidablePropagation", ... as BENCHMARKS.md names them; NULL if out of
 * range. */
const char *wl_kairo_name(wl_kairo_case_t which);

typedef struct wl_kairo wl_kairo_t; /* a built graph */

/* build (untimed). opts may be NULL. On failure *out is NULL. */
int wl_kairo_build(wl_kairo_case_t which, const wl_options_t *opts, wl_kairo_t **out);
/* One iter(): the writes and checks of the table row. */
int wl_kairo_iter(wl_kairo_t *k);
/* cleanup() and release; returns the failures of the whole life of k
 * (0 when everything held). NULL is ignored (returns 0). */
int wl_kairo_free(wl_kairo_t *k);

typedef struct wl_kairo_params {
  wl_kairo_case_t which;
  long iterations;           /* iter() calls */
  const wl_options_t *options; /* NULL: defaults */
} wl_kairo_params_t;

/* All in one: build, iter() `iterations` times, cleanup. */
int wl_kairo_workload(const wl_kairo_params_t *p);

/* ======================================================================== */
/* cellx (cellx.c)                                                           */
/* ======================================================================== */

/* Protocol: build (untimed); run = read the 4 end values, batch{p1=4; p2=3;
 * p3=2; p4=1}, read them again (timed, and only once per build: the second
 * run would start from the written values); cleanup (untimed). 10 times per
 * layer count, report the sum. L = 1000 and 2500. */
typedef struct wl_cellx wl_cellx_t;

int wl_cellx_build(int layers, const wl_options_t *opts, wl_cellx_t **out);
/* The timed part; checks the end values before and after the batch. */
int wl_cellx_run(wl_cellx_t *c);
/* cleanup() and release; returns the failures of the whole life of c. */
int wl_cellx_free(wl_cellx_t *c);

typedef struct wl_cellx_params {
  int layers;
  int repeats;                 /* build/run/free cycles */
  const wl_options_t *options;
} wl_cellx_params_t;

int wl_cellx_workload(const wl_cellx_params_t *p);

/* The end values [p1..p4] before and after the batch for `layers` layers,
 * computed without any reactivity (reference.c). BENCHMARKS.md states them
 * for 1000, 2500 and 5000. */
void wl_cellx_expected(int layers, int64_t before[4], int64_t after[4]);

/* ======================================================================== */
/* Creation and update, S.js style (sbench.c)                                */
/* ======================================================================== */

/* Protocol per sample: setup = create `scount` signals signal(i) and read
 * each 3 times (untimed); run = the case (creations), its update (writes,
 * each in its own batch) and the disposal of everything (timed); then free
 * (untimed). 3 warm-ups with n/100, fastest of 10 samples; the driver sums
 * the createComputations cases and the updateSignals cases. */
typedef enum wl_sbench_case {
  WL_SB_CREATE_SIGNALS = 0,
  WL_SB_CREATE_0TO1,
  WL_SB_CREATE_1TO1,
  WL_SB_CREATE_2TO1,
  WL_SB_CREATE_4TO1,
  WL_SB_CREATE_1000TO1,
  WL_SB_CREATE_1TO2,
  WL_SB_CREATE_1TO4,
  WL_SB_CREATE_1TO8,
  WL_SB_CREATE_1TO1000,
  WL_SB_UPDATE_1TO1,
  WL_SB_UPDATE_2TO1,
  WL_SB_UPDATE_4TO1,
  WL_SB_UPDATE_1000TO1,
  WL_SB_UPDATE_1TO2,
  WL_SB_UPDATE_1TO4,
  WL_SB_UPDATE_1TO1000,
  WL_SB_CASES /* how many */
} wl_sbench_case_t;

/* Which reported figure a case adds to. */
typedef enum wl_sbench_group {
  WL_SB_GROUP_CREATE_SIGNALS = 0, /* "createSignals" */
  WL_SB_GROUP_CREATE_COMPUTATIONS, /* "createComputations" (sum of 9) */
  WL_SB_GROUP_UPDATE_SIGNALS       /* "updateSignals" (sum of 7) */
} wl_sbench_group_t;

typedef struct wl_sbench_params {
  wl_sbench_case_t which;
  long n;      /* the case's n, as the JS passes it to the case function */
  long scount; /* signals made before the clock starts */
  const wl_options_t *options;
} wl_sbench_params_t;

const char *wl_sbench_name(wl_sbench_case_t which); /* "create1to2", ... */
wl_sbench_group_t wl_sbench_group(wl_sbench_case_t which);

/* The case's (n, scount) for COUNT (100000 in BENCHMARKS.md), exactly as
 * the JS run() calls pass them, rounded up where the JS would pass a
 * fraction (its loops run ceil(n) times). The warm-ups use ceil(n/100) with
 * the same scount. */
void wl_sbench_default_params(wl_sbench_case_t which, long count, wl_sbench_params_t *out);

typedef struct wl_sbench wl_sbench_t;

/* Untimed: the runtime, `scount` signals, each read 3 times, and every
 * array the run needs (so the timed part allocates nothing in C). */
int wl_sbench_setup(const wl_sbench_params_t *p, wl_sbench_t **out);
/* Timed: create, update, dispose everything; then checks the effect run
 * counts and the values the effects saw. */
int wl_sbench_run(wl_sbench_t *s);
/* Untimed: releases the C memory; returns the failures of the whole life
 * of s. */
int wl_sbench_free(wl_sbench_t *s);

/* All in one: setup, run, free. */
int wl_sbench_workload(const wl_sbench_params_t *p);

/* ======================================================================== */
/* Dynamic graphs, "reactively" (dynamic.c, reference.c)                     */
/* ======================================================================== */

typedef struct wl_dyn_config {
  const char *title;
  int width;             /* sources, and computeds per row */
  int layers;            /* rows including the sources */
  double static_fraction;
  int n_sources;         /* inputs per computed */
  double read_fraction;  /* of the last row, read by the effect and run */
  long iterations;       /* writes per run */
  double expected_sum;   /* steady state, BENCHMARKS.md's table */
  long expected_count;
} wl_dyn_config_t;

/* The six rows of BENCHMARKS.md's table, in order. */
#define WL_DYN_CONFIGS 6
extern const wl_dyn_config_t wl_dyn_configs[WL_DYN_CONFIGS];

typedef struct wl_dyn wl_dyn_t; /* a built graph */

/* makeGraph (untimed): sources, rows, the leaves removed with `rand`, and
 * the effect reading the remaining leaves (it runs once now). The counter
 * starts at 0 before the rows are made, so it includes the build. */
int wl_dyn_build(const wl_dyn_config_t *cfg, const wl_options_t *opts, wl_dyn_t **out);
/* runGraph: `iterations` batched writes, each followed by reading every
 * read leaf; *sum gets the sum of the read leaves at the end. Returns
 * non-zero only when a tether call failed. */
int wl_dyn_run(wl_dyn_t *g, long iterations, double *sum);
/* Computed executions since the build or the last reset. */
long wl_dyn_count(const wl_dyn_t *g);
void wl_dyn_reset_count(wl_dyn_t *g);
/* cleanup() and release; returns the failures of the whole life of g. */
int wl_dyn_free(wl_dyn_t *g);

typedef struct wl_dyn_params {
  const wl_dyn_config_t *config; /* graph shape */
  long iterations;               /* per run (config->iterations: full size) */
  int warmup_runs;               /* 3 in BENCHMARKS.md; 0 for fresh checks */
  int checked_runs;              /* runs whose sum and count are checked */
  int reset_count;               /* reset the counter before each checked
                                    run (steady state); 0: count from the
                                    build (the fresh-graph checks) */
  double expected_sum;
  long expected_count;           /* < 0: do not check the count */
  const wl_options_t *options;
} wl_dyn_params_t;

/* All in one: build, warm-up runs, checked runs, cleanup. */
int wl_dyn_workload(const wl_dyn_params_t *p);

/* What wl_dyn_workload must find, computed by a plain C model of the same
 * graph (same PRNG draws, same arithmetic, no reactivity): a node runs when
 * it is read (directly or by a node being brought up to date) and one of
 * the sources it read last time changed since its last run, or it never
 * ran. Used to get exact expectations for reduced iteration counts; at full
 * size it reproduces BENCHMARKS.md's table (graph_workloads.c checks that). */
int wl_dyn_reference(const wl_dyn_params_t *p, double *sum, long *count);

/* Shared by dynamic.c and reference.c, so both build the very same graph:
 * is_static gets one flag per computed node ((layers-1)*width, row-major,
 * from `random`), read_leaves the indexes of the last row left after
 * removing round(width*(1-read_fraction)) leaves with `rand` (width slots;
 * *n_read of them used). */
int wl_dyn_shape(const wl_dyn_config_t *cfg, unsigned char *is_static, int *read_leaves,
                 int *n_read);
/* JS `x & 1` for a double x (ToInt32, then the low bit). */
int wl_js_bit0(double x);
/* JS `a % b` for doubles: C's fmod, exactly, with the integer fast path JS
 * engines take. */
double wl_js_mod(double a, double b);

#endif /* TETHER_WORKLOADS_H */
