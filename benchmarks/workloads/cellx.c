/*
 * cellx.c — the cellx benchmark of BENCHMARKS.md ("cellx"), on Tether.
 * Port of js-reactivity-benchmark's benches/cellxBench.ts (itself from
 * https://github.com/Riim/cellx/blob/master/perf/perf.html):
 *
 *   start signals p1..p4 = 1, 2, 3, 4; each of L layers makes four
 *   computeds over the previous layer m: p1 = m.p2, p2 = m.p1 - m.p3,
 *   p3 = m.p2 + m.p4, p4 = m.p3, and four effects, one reading each.
 *   run: read the four end values; batch{p1 = 4; p2 = 3; p3 = 2; p4 = 1};
 *   read them again. Both readings are checked against BENCHMARKS.md's
 *   values for L = 1000, 2500, 5000 and against wl_cellx_expected (a plain
 *   recurrence) for any L.
 *
 * The build is not timed, so it is separate from the run; every callback's
 * user_data is one preallocated node struct.
 */
#include <stdio.h>
#include <stdlib.h>

#include "workloads.h"

typedef enum cellx_kind { CELLX_P1, CELLX_P2, CELLX_P3, CELLX_P4 } cellx_kind_t;

typedef struct cellx_node {
  struct wl_cellx *owner;
  cellx_kind_t kind;
  const wl_src_t *prev; /* the previous layer's p1..p4 */
  wl_src_t self;        /* what the effect on this node reads */
} cellx_node_t;

struct wl_cellx {
  int layers;
  int ran;
  char name[48];
  wl_report_t report;
  wl_scope_t scope;
  tether_state_t start[4];
  wl_src_t *layer_srcs; /* (layers + 1) * 4: layer 0 = start signals */
  cellx_node_t *nodes;  /* layers * 4 */
};

static int cellx_compute(tether_value_t *result, void *user_data) {
  cellx_node_t *n = user_data;
  int64_t x, y;
  switch (n->kind) {
    case CELLX_P1: /* m.p2 */
      WL_TRY(wl_read_int(n->prev[1], &x));
      return tether_value_set_int(result, x);
    case CELLX_P2: /* m.p1 - m.p3 */
      WL_TRY(wl_read_int(n->prev[0], &x));
      WL_TRY(wl_read_int(n->prev[2], &y));
      return tether_value_set_int(result, x - y);
    case CELLX_P3: /* m.p2 + m.p4 */
      WL_TRY(wl_read_int(n->prev[1], &x));
      WL_TRY(wl_read_int(n->prev[3], &y));
      return tether_value_set_int(result, x + y);
    case CELLX_P4: /* m.p3 */
      WL_TRY(wl_read_int(n->prev[2], &x));
      return tether_value_set_int(result, x);
  }
  return TETHER_EINVAL;
}

/* effect(() => s.propN.read()) */
static void cellx_effect(tether_effect_t e, void *user_data) {
  cellx_node_t *n = user_data;
  int64_t v;
  (void)e;
  wl_expect_ok(&n->owner->report, "effect: read", wl_read_int(n->self, &v));
}

static void cellx_release(wl_cellx_t *c) {
  free(c->layer_srcs);
  free(c->nodes);
  free(c);
}

int wl_cellx_build(int layers, const wl_options_t *opts, wl_cellx_t **out) {
  wl_cellx_t *c;
  int l, p;
  *out = NULL;
  if (layers < 1) {
    fprintf(stderr, "workload cellx: layers must be >= 1 (got %d)\n", layers);
    return 1;
  }
  c = calloc(1, sizeof *c);
  if (c == NULL) return 1;
  c->layers = layers;
  snprintf(c->name, sizeof c->name, "cellx%d", layers);
  wl_report_init(&c->report, c->name);
  c->layer_srcs = calloc((size_t)(layers + 1) * 4, sizeof *c->layer_srcs);
  c->nodes = calloc((size_t)layers * 4, sizeof *c->nodes);
  if (c->layer_srcs == NULL || c->nodes == NULL) {
    cellx_release(c);
    return 1;
  }
  if (wl_scope_open(&c->scope, opts, (size_t)layers * 4 + 4, &c->report)) {
    cellx_release(c);
    return 1;
  }
  for (p = 0; p < 4; p++) {
    if (wl_signal_int(&c->scope, p + 1, &c->start[p])) goto fail;
    c->layer_srcs[p] = wl_src_state(c->start[p]);
  }
  for (l = 1; l <= layers; l++) {
    const wl_src_t *prev = &c->layer_srcs[(size_t)(l - 1) * 4];
    cellx_node_t *nodes = &c->nodes[(size_t)(l - 1) * 4];
    tether_effect_t e;
    for (p = 0; p < 4; p++) {
      tether_computed_t cc;
      nodes[p].owner = c;
      nodes[p].kind = (cellx_kind_t)p;
      nodes[p].prev = prev;
      if (wl_computed(&c->scope, cellx_compute, &nodes[p], &cc)) goto fail;
      nodes[p].self = wl_src_computed(cc);
      c->layer_srcs[(size_t)l * 4 + (size_t)p] = nodes[p].self;
    }
    for (p = 0; p < 4; p++)
      if (wl_effect(&c->scope, cellx_effect, &nodes[p], &e)) goto fail;
  }
  *out = c;
  return 0;
fail:
  wl_scope_close(&c->scope);
  cellx_release(c);
  return 1;
}

static int cellx_read_end(wl_cellx_t *c, int64_t got[4]) {
  const wl_src_t *end = &c->layer_srcs[(size_t)c->layers * 4];
  int p, failed = 0;
  for (p = 0; p < 4; p++) {
    got[p] = 0;
    failed |= WL_OK(&c->report, wl_read_int(end[p], &got[p]));
  }
  return failed;
}

/* BENCHMARKS.md's stated values where it states them, else the recurrence. */
static void cellx_want(int layers, int64_t before[4], int64_t after[4]) {
  static const int64_t b1000[4] = {-3, -6, -2, 2}, a1000[4] = {-2, -4, 2, 3};
  static const int64_t b5000[4] = {2, 4, -1, -6}, a5000[4] = {-2, 1, -4, -4};
  int p;
  wl_cellx_expected(layers, before, after);
  if (layers == 1000 || layers == 2500)
    for (p = 0; p < 4; p++) before[p] = b1000[p], after[p] = a1000[p];
  if (layers == 5000)
    for (p = 0; p < 4; p++) before[p] = b5000[p], after[p] = a5000[p];
}

static int cellx_check(wl_cellx_t *c, const char *when, const int64_t want[4],
                       const int64_t got[4]) {
  int p, failed = 0;
  char what[64];
  for (p = 0; p < 4; p++) {
    snprintf(what, sizeof what, "end p%d %s the batch", p + 1, when);
    failed |= wl_expect_int(&c->report, what, want[p], got[p]);
  }
  return failed;
}

int wl_cellx_run(wl_cellx_t *c) {
  int64_t before[4], after[4], want_before[4], want_after[4];
  int failed = 0;
  if (c->ran++) return wl_fail(&c->report, "wl_cellx_run called twice on one build");
  failed |= cellx_read_end(c, before);
  failed |= WL_OK(&c->report, tether_batch_begin(c->scope.rt));
  failed |= WL_OK(&c->report, tether_state_set_int(c->start[0], 4));
  failed |= WL_OK(&c->report, tether_state_set_int(c->start[1], 3));
  failed |= WL_OK(&c->report, tether_state_set_int(c->start[2], 2));
  failed |= WL_OK(&c->report, tether_state_set_int(c->start[3], 1));
  failed |= WL_OK(&c->report, tether_batch_end(c->scope.rt));
  failed |= cellx_read_end(c, after);
  cellx_want(c->layers, want_before, want_after);
  failed |= cellx_check(c, "before", want_before, before);
  failed |= cellx_check(c, "after", want_after, after);
  return failed;
}

int wl_cellx_free(wl_cellx_t *c) {
  long failures;
  if (c == NULL) return 0;
  wl_scope_close(&c->scope);
  failures = c->report.failures;
  cellx_release(c);
  return failures != 0;
}

int wl_cellx_workload(const wl_cellx_params_t *p) {
  int i, failed = 0;
  for (i = 0; i < p->repeats; i++) {
    wl_cellx_t *c;
    if (wl_cellx_build(p->layers, p->options, &c)) return 1;
    failed |= wl_cellx_run(c);
    failed |= wl_cellx_free(c);
  }
  return failed;
}
