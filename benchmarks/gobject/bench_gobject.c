/*
 * bench_gobject.c — the GObject anchor of the benchmark suite (`make
 * bench`): property notification ("notify::value" handlers) and GBinding
 * (g_object_bind_property_full with transform functions), on the workloads
 * of /work/shared/BENCHMARKS.md they express, with the same checks and the
 * same timing protocol as benchmarks/tether/bench_tether.c.
 *
 * The state is BenchCell, a GObject with one gint64 property "value",
 * declared G_PARAM_EXPLICIT_NOTIFY: its setter notifies only when the value
 * changed (what GTK's own properties do), so an equal write wakes nothing.
 * Two ways to write are measured for set+notify: the class's C setter
 * (bench_cell_set: compare, store, g_object_notify_by_pspec) — what GTK
 * code calls — and the generic g_object_set(obj, "value", v, NULL).
 *
 * What GObject expresses: a derived value is another object kept up to
 * date by a GBinding from ONE source property (a transform may compute
 * from that one value). So the one-input chains of the kairo suite port
 * naturally (avoidablePropagation, broadPropagation, deepPropagation — the
 * 50-deep chain); the rest need values computed from several inputs, read
 * lazily, or recomputed once per batch, which GObject has no notion of
 * (g_object_freeze_notify is per object). Those are reported as skipped,
 * with the reason.
 *
 * `--icount setnotify|fanout|chain N` runs one of set+notify (the class's
 * setter), fan-out and the chain once, N times over, for callgrind
 * (benchmarks/icount/icount.py; common/bench.h says how).
 */
#define _GNU_SOURCE 1
#include <glib-object.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "../common/bench.h"

#define SYS "gobject"

static int quick;
/* --icount WORKLOAD N (benchmarks/icount/): N repetitions in place of the
 * timed sizes, one run; 0 when timing. */
static long icount_n;

/* ======================================================================== */
/* BenchCell: a GObject with one gint64 property                             */
/* ======================================================================== */

#define BENCH_TYPE_CELL (bench_cell_get_type())
G_DECLARE_FINAL_TYPE(BenchCell, bench_cell, BENCH, CELL, GObject)

struct _BenchCell {
  GObject parent_instance;
  gint64 value;
};

G_DEFINE_TYPE(BenchCell, bench_cell, G_TYPE_OBJECT)

enum { PROP_0, PROP_VALUE, N_PROPS };
static GParamSpec *props[N_PROPS];

/* The class's setter: notify only on change. */
static inline void bench_cell_set(BenchCell *c, gint64 v) {
  if (c->value == v) return;
  c->value = v;
  g_object_notify_by_pspec(G_OBJECT(c), props[PROP_VALUE]);
}

static void bench_cell_set_property(GObject *obj, guint id, const GValue *v, GParamSpec *ps) {
  if (id == PROP_VALUE)
    bench_cell_set(BENCH_CELL(obj), g_value_get_int64(v));
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(obj, id, ps);
}

static void bench_cell_get_property(GObject *obj, guint id, GValue *v, GParamSpec *ps) {
  if (id == PROP_VALUE)
    g_value_set_int64(v, BENCH_CELL(obj)->value);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(obj, id, ps);
}

static void bench_cell_class_init(BenchCellClass *k) {
  GObjectClass *oc = G_OBJECT_CLASS(k);
  oc->set_property = bench_cell_set_property;
  oc->get_property = bench_cell_get_property;
  props[PROP_VALUE] = g_param_spec_int64("value", NULL, NULL, G_MININT64, G_MAXINT64, 0,
                                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
                                             G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties(oc, N_PROPS, props);
}

static void bench_cell_init(BenchCell *c) { c->value = 0; }

static BenchCell *cell_new(gint64 v) {
  BenchCell *c = g_object_new(BENCH_TYPE_CELL, NULL);
  c->value = v;
  return c;
}

static void busy(void) {
  volatile int a = 0;
  int i;
  for (i = 0; i < 100; i++) a++;
}

/* ======================================================================== */
/* Checks                                                                    */
/* ======================================================================== */

typedef struct report {
  const char *name;
  long failures;
} report_t;

static int expect(report_t *r, const char *what, long long want, long long got) {
  if (want == got) return 0;
  if (r->failures++ < 8)
    fprintf(stderr, "gobject %s: %s: expected %lld, got %lld\n", r->name, what, want, got);
  return 1;
}

/* ======================================================================== */
/* The one-input kairo cases, with GBinding                                  */
/* ======================================================================== */

/* transform: to = from + add (add in user_data) */
static gboolean add_transform(GBinding *b, const GValue *from, GValue *to, gpointer ud) {
  (void)b;
  g_value_set_int64(to, g_value_get_int64(from) + (gint64)GPOINTER_TO_SIZE(ud));
  return TRUE;
}

/* c2 = (read c1; 0) */
static gboolean zero_transform(GBinding *b, const GValue *from, GValue *to, gpointer ud) {
  (void)b;
  (void)ud;
  (void)g_value_get_int64(from);
  g_value_set_int64(to, 0);
  return TRUE;
}

typedef struct kairo_g {
  report_t r;
  int which;
  GPtrArray *objects; /* every cell, in creation order */
  BenchCell *head, *last, *c5;
  long count, c3_runs, effect_runs;
} kairo_g_t;

static BenchCell *k_cell(kairo_g_t *k, gint64 v) {
  BenchCell *c = cell_new(v);
  g_ptr_array_add(k->objects, c);
  return c;
}

/* A derived cell: to = from + add, kept by a GBinding (SYNC_CREATE). */
static BenchCell *k_add(kairo_g_t *k, BenchCell *from, gint64 add) {
  BenchCell *to = k_cell(k, 0);
  g_object_bind_property_full(from, "value", to, "value", G_BINDING_SYNC_CREATE, add_transform,
                              NULL, GSIZE_TO_POINTER((gsize)add), NULL);
  return to;
}

static void count_notify(GObject *obj, GParamSpec *ps, gpointer ud) {
  kairo_g_t *k = ud;
  (void)ps;
  (void)BENCH_CELL(obj)->value;
  k->count++;
}

/* effect(read x; count++): run once now, then a notify handler. */
static void k_counting_effect(kairo_g_t *k, BenchCell *on) {
  (void)on->value;
  k->count++;
  g_signal_connect(on, "notify::value", G_CALLBACK(count_notify), k);
}

/* c3 = (busy(); c2 + 1): the notify handler of c2 computes c3. */
static void avoid_c3_notify(GObject *obj, GParamSpec *ps, gpointer ud) {
  kairo_g_t *k = ud;
  BenchCell *c3 = g_ptr_array_index(k->objects, 3);
  (void)ps;
  k->c3_runs++;
  busy();
  bench_cell_set(c3, BENCH_CELL(obj)->value + 1);
}

static void avoid_effect_notify(GObject *obj, GParamSpec *ps, gpointer ud) {
  kairo_g_t *k = ud;
  (void)ps;
  k->effect_runs++;
  (void)BENCH_CELL(obj)->value;
  busy();
}

static kairo_g_t *kairo_build(int which) {
  kairo_g_t *k = g_new0(kairo_g_t, 1);
  int i;
  k->which = which;
  k->objects = g_ptr_array_new_with_free_func(g_object_unref);
  k->head = k_cell(k, 0);
  switch (which) {
    case 0: { /* avoidablePropagation */
      BenchCell *c1, *c2, *c3, *c4;
      k->r.name = "avoidablePropagation";
      c1 = k_add(k, k->head, 0);
      c2 = k_cell(k, 0);
      g_object_bind_property_full(c1, "value", c2, "value", G_BINDING_SYNC_CREATE,
                                  zero_transform, NULL, NULL, NULL);
      c3 = k_cell(k, 0); /* objects[3] */
      k->c3_runs++;
      busy();
      c3->value = c2->value + 1;
      g_signal_connect(c2, "notify::value", G_CALLBACK(avoid_c3_notify), k);
      c4 = k_add(k, c3, 2);
      k->c5 = k_add(k, c4, 3);
      k->effect_runs++;
      busy();
      g_signal_connect(k->c5, "notify::value", G_CALLBACK(avoid_effect_notify), k);
      expect(&k->r, "c5 after the build", 6, k->c5->value);
      break;
    }
    case 1: /* broadPropagation */
      k->r.name = "broadPropagation";
      for (i = 0; i < 50; i++) {
        BenchCell *a = k_add(k, k->head, i);
        BenchCell *b = k_add(k, a, 1);
        k_counting_effect(k, b);
        k->last = b;
      }
      break;
    default: { /* deepPropagation */
      BenchCell *cur = k->head;
      k->r.name = "deepPropagation";
      for (i = 0; i < 50; i++) cur = k_add(k, cur, 1);
      k->last = cur;
      k_counting_effect(k, cur);
      break;
    }
  }
  return k;
}

static int kairo_iter(kairo_g_t *k) {
  int failed = 0, i;
  switch (k->which) {
    case 0:
      bench_cell_set(k->head, 1);
      failed |= expect(&k->r, "c5 after writing 1", 6, k->c5->value);
      for (i = 0; i < 1000; i++) {
        bench_cell_set(k->head, i);
        failed |= expect(&k->r, "c5 after a write", 6, k->c5->value);
      }
      failed |= expect(&k->r, "c3 runs (never re-run)", 1, k->c3_runs);
      failed |= expect(&k->r, "effect runs (never re-run)", 1, k->effect_runs);
      break;
    case 1:
      bench_cell_set(k->head, 1);
      k->count = 0;
      for (i = 0; i < 50; i++) {
        bench_cell_set(k->head, i);
        failed |= expect(&k->r, "b_49 after writing i", i + 50, k->last->value);
      }
      failed |= expect(&k->r, "effect runs", 2500, k->count);
      break;
    default:
      bench_cell_set(k->head, 1);
      k->count = 0;
      for (i = 0; i < 50; i++) {
        bench_cell_set(k->head, i);
        failed |= expect(&k->r, "last after writing i", 50 + i, k->last->value);
      }
      failed |= expect(&k->r, "effect runs", 50, k->count);
      break;
  }
  return failed;
}

static void kairo_free(kairo_g_t *k) {
  /* Unref downstream first: a GBinding goes away with either end. */
  while (k->objects->len > 0) g_ptr_array_remove_index(k->objects, k->objects->len - 1);
  g_ptr_array_unref(k->objects);
  g_free(k);
}

static void bench_kairo_case(int which, const char *group, const char *name, int samples) {
  kairo_g_t *k = kairo_build(which);
  int failed = k->r.failures != 0, s, i, per = icount_n ? (int)icount_n : quick ? 5 : 500;
  int64_t best = INT64_MAX;
  char protocol[200];
  if (quick) samples = 2;
  if (icount_n) samples = 1;
  for (i = 0; i < 3; i++) failed |= kairo_iter(k);
  for (s = 0; s < samples && !failed; s++) {
    int64_t t0 = bench_now_ns(), dt;
    for (i = 0; i < per; i++) failed |= kairo_iter(k);
    dt = bench_now_ns() - t0;
    if (dt < best) best = dt;
  }
  kairo_free(k);
  snprintf(protocol, sizeof protocol,
           "build once, 3 warm-up iter(), fastest of %d samples of 500 iter()", samples);
  bench_emit(SYS, group, name, !failed, best / 1e6, "ms", protocol, NULL, "%s",
             which == 2 ? "50 GBindings with +1 transforms, a notify::value handler as the effect"
                        : "GBindings with transforms, notify::value handlers as effects");
}

static void bench_kairo(void) {
  static const char *const skipped[][2] = {
      {"diamond", "the sum reads 5 values: GBinding has one source; hand-written notify "
                  "handlers would recompute it once per changed input (5 times per write, 4 of "
                  "them with glitch values)"},
      {"mux", "a value computed from 100 sources: GBinding has one source property"},
      {"repeatedObservers", "a lazily cached value read 30 times per evaluation: GObject has "
                            "no derived (cached, lazy) values"},
      {"triangle", "a sum of 10 values along a chain: one source per GBinding, no "
                   "glitch-free multi-input recomputation"},
      {"unstable", "dependencies that change with the value read (dynamic): GBinding is "
                   "wired once, by hand"},
      {"molBench", "multi-input derived values and batches of two writes: GObject has "
                   "neither (freeze_notify is per object, not a transaction)"},
  };
  size_t i;
  bench_kairo_case(0, "kairo", "avoidablePropagation", 10);
  bench_kairo_case(1, "kairo", "broadPropagation", 10);
  bench_kairo_case(2, "kairo", "deepPropagation", 5);
  for (i = 0; i < sizeof skipped / sizeof skipped[0]; i++)
    bench_skip(SYS, "kairo", skipped[i][0], skipped[i][1]);
}

static void bench_skips(void) {
  const char *multi =
      "every node derives from several inputs (GBinding has one source) and must be "
      "recomputed once per batch, glitch-free; GObject has neither derived multi-input values "
      "nor transactions";
  bench_skip(SYS, "cellx", "cellx1000", multi);
  bench_skip(SYS, "cellx", "cellx2500", multi);
  bench_skip(SYS, "creation", "createSignals",
             "the S.js cases are measured as groups built on effects (callbacks re-run on "
             "whatever they read): GObject has no such effect");
  bench_skip(SYS, "creation", "createComputations",
             "an effect re-run on whatever it read has no GObject counterpart (handlers are "
             "connected by hand to named properties)");
  bench_skip(SYS, "creation", "updateSignals",
             "an effect re-run on whatever it read has no GObject counterpart");
  {
    static const char *const dyn[] = {"2-10x5 lazy80%", "6-10x10 dyn25% lazy80%",
                                      "4-1000x12 dyn5%", "25-1000x5", "3-5x500",
                                      "6-100x15 dyn50%"};
    size_t i;
    for (i = 0; i < 6; i++)
      bench_skip(SYS, "dynamic", dyn[i],
                 "nodes sum 2 to 25 inputs, some with dependencies that change with the values, "
                 "read lazily: GObject has no multi-input, dynamic or lazy derived values");
  }
  bench_skip(SYS, "memory", "per computed",
             "GObject has no derived-value object: a derived value is another object (per "
             "state) kept by a GBinding (per dependency edge)");
}

/* ======================================================================== */
/* set+notify, fan-out                                                       */
/* ======================================================================== */

typedef struct counter {
  long calls;
  gint64 last;
} counter_t;

static void counter_notify(GObject *obj, GParamSpec *ps, gpointer ud) {
  counter_t *c = ud;
  (void)ps;
  c->calls++;
  c->last = BENCH_CELL(obj)->value;
}

static void bench_setnotify(int generic) {
  long n = icount_n ? icount_n : quick ? 20000 : 1000000, i;
  int runs = icount_n ? 1 : quick ? 2 : 5, r, failed = 0;
  gint64 base = 0;
  int64_t best = INT64_MAX;
  counter_t c = {0, 0};
  BenchCell *cell = cell_new(0);
  g_signal_connect(cell, "notify::value", G_CALLBACK(counter_notify), &c);
  for (i = 1; i <= 10000; i++) bench_cell_set(cell, base + i);
  base += 10000;
  for (r = 0; r < runs; r++) {
    long c0 = c.calls;
    int64_t t0 = bench_now_ns(), dt;
    if (generic)
      for (i = 1; i <= n; i++) g_object_set(cell, "value", (gint64)(base + i), NULL);
    else
      for (i = 1; i <= n; i++) bench_cell_set(cell, base + i);
    dt = bench_now_ns() - t0;
    if (c.calls - c0 != n || c.last != base + n) failed = 1;
    base += n;
    if (dt < best) best = dt;
  }
  g_object_unref(cell);
  bench_emit(SYS, "micro", generic ? "set+notify [g_object_set]" : "set+notify", !failed,
             (double)best / n, "ns/write",
             "1M writes of distinct ints, one notify::value handler reading the value; fastest "
             "of 5 runs after 10k warm-up writes",
             NULL, "%s",
             generic ? "g_object_set(obj, \"value\", v, NULL): the generic, name-looked-up path"
                     : "the class's C setter: compare, store, g_object_notify_by_pspec");
}

static void bench_fanout(void) {
  enum { OBS = 1000 };
  static counter_t cs[OBS];
  long writes = icount_n ? icount_n : quick ? 200 : 10000, i;
  int runs = icount_n ? 1 : quick ? 2 : 5, r, k, failed = 0;
  gint64 base = 0;
  int64_t best = INT64_MAX;
  BenchCell *cell = cell_new(0);
  memset(cs, 0, sizeof cs);
  for (k = 0; k < OBS; k++) g_signal_connect(cell, "notify::value", G_CALLBACK(counter_notify), &cs[k]);
  for (i = 1; i <= 100; i++) bench_cell_set(cell, base + i);
  base += 100;
  for (r = 0; r < runs; r++) {
    int64_t t0 = bench_now_ns(), dt;
    for (i = 1; i <= writes; i++) bench_cell_set(cell, base + i);
    dt = bench_now_ns() - t0;
    base += writes;
    if (dt < best) best = dt;
  }
  for (k = 0; k < OBS; k++)
    if (cs[k].calls != base || cs[k].last != base) failed = 1;
  g_object_unref(cell);
  bench_emit(SYS, "micro", "fan-out", !failed, (double)best / ((double)writes * OBS),
             "ns/notification",
             "one object, 1000 notify::value handlers, 10k writes; time / (writes x 1000); "
             "fastest of 5",
             NULL, "g_signal_connect x1000, the class's setter");
}

/* ======================================================================== */
/* Cross-thread: g_main_context_invoke to the thread that owns the object    */
/* ======================================================================== */

/* GObject signals run on the emitting thread. The GLib idiom for "the
 * object lives in the loop thread": that thread runs a GMainLoop on its own
 * GMainContext, and other threads hand it work with
 * g_main_context_invoke_full (one idle GSource per call). The notify
 * handler runs on the loop thread. No coalescing: each invoke is one write
 * and one handler call. */
typedef struct xt {
  GMainContext *ctx;
  GMainLoop *loop;
  BenchCell *cell;
  int64_t *recv_ns;
  long n_recv;
  _Atomic long seen;
  _Atomic long calls;
  gulong handler;
} xt_t;

static xt_t xt;

static void xt_notify(GObject *obj, GParamSpec *ps, gpointer ud) {
  int64_t t = bench_now_ns();
  long v = (long)BENCH_CELL(obj)->value;
  (void)ps;
  (void)ud;
  if (xt.recv_ns != NULL && v >= 0 && v < xt.n_recv) xt.recv_ns[v] = t;
  atomic_fetch_add_explicit(&xt.calls, 1, memory_order_relaxed);
  atomic_store_explicit(&xt.seen, v, memory_order_release);
}

static gboolean xt_set(gpointer ud) {
  bench_cell_set(xt.cell, (gint64)(gintptr)ud);
  return G_SOURCE_REMOVE;
}

static gboolean xt_quit(gpointer ud) {
  (void)ud;
  g_main_loop_quit(xt.loop);
  return G_SOURCE_REMOVE;
}

static void *xt_loop_main(void *arg) {
  (void)arg;
  g_main_context_push_thread_default(xt.ctx);
  g_main_loop_run(xt.loop);
  g_main_context_pop_thread_default(xt.ctx);
  return NULL;
}

static void bench_crossthread(void) {
  long n_lat = quick ? 2000 : 100000, n_rate = quick ? 20000 : 1000000, warm = 1000, i, nl = 0;
  pthread_t th;
  int64_t *send_ns = calloc((size_t)n_lat + 1, sizeof *send_ns);
  int64_t *lat = calloc((size_t)n_lat + 1, sizeof *lat);
  int64_t t0, t_posted, t_done;
  long calls;
  char extra[256];
  const char *proto =
      "writer thread: timestamp, g_main_context_invoke_full of the write to the loop thread's "
      "context, spin (sched_yield) until the notify handler there saw it; 100k writes, first "
      "1000 dropped";
  memset(&xt, 0, sizeof xt);
  xt.ctx = g_main_context_new();
  xt.loop = g_main_loop_new(xt.ctx, FALSE);
  xt.cell = cell_new(0);
  xt.recv_ns = calloc((size_t)n_lat + 1, sizeof *xt.recv_ns);
  xt.n_recv = n_lat + 1;
  xt.handler = g_signal_connect(xt.cell, "notify::value", G_CALLBACK(xt_notify), NULL);
  pthread_create(&th, NULL, xt_loop_main, NULL);
  for (i = 1; i <= n_lat; i++) {
    send_ns[i] = bench_now_ns();
    g_main_context_invoke_full(xt.ctx, G_PRIORITY_DEFAULT, xt_set, (gpointer)(gintptr)i, NULL);
    while (atomic_load_explicit(&xt.seen, memory_order_acquire) != i) sched_yield();
  }
  for (i = warm + 1; i <= n_lat; i++) lat[nl++] = xt.recv_ns[i] - send_ns[i];
  qsort(lat, (size_t)nl, sizeof *lat, bench_cmp_i64);
  snprintf(extra, sizeof extra,
           "\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,"
           "\"samples\":%ld",
           bench_quantile(lat, nl, 0.5) / 1e3, bench_quantile(lat, nl, 0.9) / 1e3,
           bench_quantile(lat, nl, 0.99) / 1e3, bench_quantile(lat, nl, 0.999) / 1e3,
           nl ? lat[nl - 1] / 1e3 : 0.0, nl);
  bench_emit(SYS, "crossthread", "latency p50", atomic_load(&xt.calls) == n_lat,
             bench_quantile(lat, nl, 0.5) / 1e3, "us", proto, extra,
             "GMainLoop thread owns the object; writes handed over with g_main_context_invoke_full");
  bench_emit(SYS, "crossthread", "latency p99", atomic_load(&xt.calls) == n_lat,
             bench_quantile(lat, nl, 0.99) / 1e3, "us", proto, extra,
             "GMainLoop thread owns the object; writes handed over with g_main_context_invoke_full");

  /* Sustained. */
  xt.recv_ns = NULL;
  atomic_store(&xt.calls, 0);
  t0 = bench_now_ns();
  for (i = 1; i <= n_rate; i++)
    g_main_context_invoke_full(xt.ctx, G_PRIORITY_DEFAULT, xt_set, (gpointer)(gintptr)(n_lat + i),
                               NULL);
  t_posted = bench_now_ns();
  while (atomic_load_explicit(&xt.seen, memory_order_acquire) != n_lat + n_rate) sched_yield();
  t_done = bench_now_ns();
  calls = atomic_load(&xt.calls);
  snprintf(extra, sizeof extra,
           "\"writes\":%ld,\"observer_calls\":%ld,\"calls_per_write\":%.5f,"
           "\"delivered_writes_per_s\":%.4g",
           n_rate, calls, (double)calls / n_rate, n_rate / ((t_done - t0) / 1e9));
  bench_emit(SYS, "crossthread", "sustained writes/s", calls == n_rate,
             n_rate / ((t_posted - t0) / 1e9), "writes/s",
             "one writer thread invokes 1M writes as fast as it can; each is one idle source and "
             "one handler call (no coalescing)",
             extra, "until the last was delivered: %.3g writes/s", n_rate / ((t_done - t0) / 1e9));
  g_main_context_invoke(xt.ctx, xt_quit, NULL);
  pthread_join(th, NULL);
  g_signal_handler_disconnect(xt.cell, xt.handler);
  g_object_unref(xt.cell);
  g_main_loop_unref(xt.loop);
  g_main_context_unref(xt.ctx);
  free(send_ns);
  free(lat);
}

/* ======================================================================== */
/* Memory                                                                    */
/* ======================================================================== */

static void emit_mem(const char *name, long long dm, long long dr, long n, const char *proto,
                     const char *note) {
  char extra[200];
  snprintf(extra, sizeof extra,
           "\"malloc_bytes\":%lld,\"rss_bytes\":%lld,\"count\":%ld,\"rss_per\":%.1f", dm, dr, n,
           (double)dr / n);
  bench_emit(SYS, "memory", name, dm > 0, (double)dm / n, "bytes", proto, extra, "%s", note);
}

static void bench_memory(void) {
  long n = quick ? 20000 : 1000000, i;
  BenchCell **cells = malloc((size_t)n * sizeof *cells);
  long long m0, m1, r0, r1;
  /* the type is registered and its class made before the baseline */
  g_object_unref(cell_new(0));
  m0 = bench_malloc_in_use();
  r0 = bench_rss();
  for (i = 0; i < n; i++) cells[i] = cell_new(i);
  m1 = bench_malloc_in_use();
  r1 = bench_rss();
  emit_mem("per state", m1 - m0, r1 - r0, n, "1M BenchCell objects (GObject + gint64)",
           "mallinfo2 difference / count (GLib's slice allocator gets its pages from malloc)");
  /* Edges: a GBinding (with a transform) from cell i to cell i+1. */
  m0 = bench_malloc_in_use();
  r0 = bench_rss();
  for (i = 0; i + 1 < n; i++)
    g_object_bind_property_full(cells[i], "value", cells[i + 1], "value", G_BINDING_DEFAULT,
                                add_transform, NULL, GSIZE_TO_POINTER(1), NULL);
  m1 = bench_malloc_in_use();
  r1 = bench_rss();
  emit_mem("per dependency edge", m1 - m0, r1 - r0, n - 1,
           "1M GBindings (with a transform) between existing objects",
           "mallinfo2 difference / count: a GBinding is itself a GObject, plus its notify "
           "handler closure");
  for (i = n - 1; i >= 0; i--) g_object_unref(cells[i]);
  free(cells);
}

int main(int argc, char **argv) {
  const char *icount_workload, *icount_variant;
  quick = bench_quick();
  if (bench_icount_args(argc, argv, &icount_workload, &icount_n, &icount_variant)) {
    /* One workload under callgrind; its result line says whether its checks held. */
    if (strcmp(icount_workload, "setnotify") == 0) bench_setnotify(0);
    else if (strcmp(icount_workload, "fanout") == 0) bench_fanout();
    else if (strcmp(icount_workload, "chain") == 0) bench_kairo_case(2, "micro", "50-deep chain", 5);
    else {
      fprintf(stderr, "%s --icount: no workload %s (setnotify, fanout, chain)\n", argv[0],
              icount_workload);
      return 2;
    }
    return 0;
  }
  fprintf(stderr, "bench_gobject: GLib %u.%u.%u%s\n", glib_major_version, glib_minor_version,
          glib_micro_version, quick ? " (BENCH_QUICK)" : "");
  if (bench_want("memory")) bench_memory();
  if (bench_want("kairo")) bench_kairo();
  if (bench_want("chain")) bench_kairo_case(2, "micro", "50-deep chain", 5);
  if (bench_want("setnotify")) {
    bench_setnotify(0);
    bench_setnotify(1);
  }
  if (bench_want("fanout")) bench_fanout();
  if (bench_want("crossthread")) bench_crossthread();
  bench_skips();
  return 0;
}
