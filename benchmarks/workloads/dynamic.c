/*
 * dynamic.c — the "reactively" dynamic graphs of BENCHMARKS.md ("Dynamic
 * graphs"), on Tether. Port of the JS benchmark's makeGraph / runGraph
 * (js-reactivity-benchmark, benches/reactively/dependencyGraph.ts):
 *
 *   sources   width double states, signal(i)
 *   rows      layers-1 rows of width computeds; node myDex reads
 *             prev[(myDex+k) % width] for k < nSources; static nodes sum
 *             all of them in order, dynamic nodes drop one tail input when
 *             the first input is odd (see dyn_compute)
 *   effect    one SYNC effect reading every leaf left after removing
 *             round(width*(1-readFraction)) of them with `rand`
 *   run       for i < iterations: batch{ sources[i % width] = i + i % width },
 *             then read every read leaf; the result is the sum of the leaves
 *
 * Values are IEEE doubles (one expected sum is 3.0e241), so the states are
 * double states and the computeds fill their results with
 * tether_value_set_double. The shape (static or dynamic per node, which
 * leaves are read) comes from wl_dyn_shape (reference.c), the same code the
 * plain C model uses. Every computed execution does count++.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "workloads.h"

typedef struct dyn_node {
  wl_dyn_t *g;
  const wl_src_t *inputs; /* n_sources entries: the previous row's nodes */
  int is_static;
} dyn_node_t;

struct wl_dyn {
  wl_dyn_config_t cfg;
  wl_report_t report;
  wl_scope_t scope;
  int ns;
  tether_state_t *sources;     /* width */
  wl_src_t *row_nodes;         /* layers * width: every node as something to read */
  wl_src_t *inputs;            /* (layers-1) * width * ns */
  dyn_node_t *nodes;           /* (layers-1) * width */
  unsigned char *is_static;    /* (layers-1) * width */
  int *read_leaf_index;        /* width slots, n_read used */
  tether_computed_t *read_leaves; /* n_read */
  int n_read;
  long count;                  /* computed executions */
  char title[96];
};

/* A computed node; the closure of makeRow. */
static int dyn_compute(tether_value_t *result, void *user_data) {
  dyn_node_t *n = user_data;
  int ns = n->g->ns, k;
  double sum, v;
  n->g->count++;
  if (n->is_static) {
    sum = 0;
    for (k = 0; k < ns; k++) {
      WL_TRY(wl_read_double(n->inputs[k], &v));
      sum += v;
    }
  } else {
    /* sum = first; shouldDrop = sum & 1; dropDex = sum % tail.length;
     * for i over the tail: skip i == dropDex when shouldDrop. JS's % on
     * doubles is fmod, and i === dropDex compares as doubles. */
    int tail = ns - 1, drop;
    double drop_dex;
    WL_TRY(wl_read_double(n->inputs[0], &sum));
    drop = wl_js_bit0(sum);
    drop_dex = wl_js_mod(sum, (double)tail);
    for (k = 0; k < tail; k++) {
      if (drop && (double)k == drop_dex) continue;
      WL_TRY(wl_read_double(n->inputs[k + 1], &v));
      sum += v;
    }
  }
  return tether_value_set_double(result, sum);
}

/* The effect: reads every remaining leaf. */
static void dyn_effect(tether_effect_t e, void *user_data) {
  wl_dyn_t *g = user_data;
  int j;
  double v;
  (void)e;
  for (j = 0; j < g->n_read; j++) {
    int rc = tether_computed_get_double(g->read_leaves[j], &v);
    if (rc != TETHER_OK) {
      wl_expect_ok(&g->report, "effect: tether_computed_get_double(leaf)", rc);
      return;
    }
  }
}

static void dyn_release(wl_dyn_t *g) {
  free(g->sources);
  free(g->row_nodes);
  free(g->inputs);
  free(g->nodes);
  free(g->is_static);
  free(g->read_leaf_index);
  free(g->read_leaves);
  free(g);
}

int wl_dyn_build(const wl_dyn_config_t *cfg, const wl_options_t *opts, wl_dyn_t **out) {
  wl_dyn_t *g;
  int w = cfg->width, rows = cfg->layers - 1, ns = cfg->n_sources, l, i, k, j;
  size_t n_comp = (size_t)w * (size_t)(rows > 0 ? rows : 0);
  tether_effect_t effect;
  *out = NULL;
  g = calloc(1, sizeof *g);
  if (g == NULL) return 1;
  g->cfg = *cfg;
  snprintf(g->title, sizeof g->title, "dynamic %s", cfg->title ? cfg->title : "?");
  wl_report_init(&g->report, g->title);
  if (w < 1 || rows < 1 || ns < 1) {
    wl_fail(&g->report, "bad config: width %d, layers %d, nSources %d", w, cfg->layers, ns);
    dyn_release(g);
    return 1;
  }
  g->ns = ns;
  g->sources = calloc((size_t)w, sizeof *g->sources);
  g->row_nodes = calloc((size_t)w * (size_t)cfg->layers, sizeof *g->row_nodes);
  g->inputs = calloc(n_comp * (size_t)ns, sizeof *g->inputs);
  g->nodes = calloc(n_comp, sizeof *g->nodes);
  g->is_static = calloc(n_comp, 1);
  g->read_leaf_index = calloc((size_t)w, sizeof *g->read_leaf_index);
  g->read_leaves = calloc((size_t)w, sizeof *g->read_leaves);
  if (!g->sources || !g->row_nodes || !g->inputs || !g->nodes || !g->is_static ||
      !g->read_leaf_index || !g->read_leaves) {
    wl_fail(&g->report, "out of memory");
    dyn_release(g);
    return 1;
  }
  wl_dyn_shape(cfg, g->is_static, g->read_leaf_index, &g->n_read);

  if (wl_scope_open(&g->scope, opts, n_comp + (size_t)w + 1, &g->report)) {
    dyn_release(g);
    return 1;
  }
  for (i = 0; i < w; i++) {
    if (wl_signal_double(&g->scope, (double)i, &g->sources[i])) goto fail;
    g->row_nodes[i] = wl_src_state(g->sources[i]);
  }
  g->count = 0; /* the counter exists before the rows (it counts the build) */
  for (l = 1; l <= rows; l++) {
    for (i = 0; i < w; i++) {
      size_t idx = (size_t)(l - 1) * (size_t)w + (size_t)i;
      dyn_node_t *n = &g->nodes[idx];
      wl_src_t *in = &g->inputs[idx * (size_t)ns];
      tether_computed_t c;
      const wl_src_t *prev = &g->row_nodes[(size_t)(l - 1) * (size_t)w];
      for (k = 0; k < ns; k++) in[k] = prev[(i + k) % w]; /* prev[(myDex+k) % width] */
      n->g = g;
      n->inputs = in;
      n->is_static = g->is_static[idx];
      if (wl_computed(&g->scope, dyn_compute, n, &c)) goto fail;
      g->row_nodes[(size_t)l * (size_t)w + (size_t)i] = wl_src_computed(c);
    }
  }
  for (j = 0; j < g->n_read; j++) {
    size_t leaf = (size_t)rows * (size_t)w + (size_t)g->read_leaf_index[j];
    g->read_leaves[j] = g->row_nodes[leaf].computed;
  }
  if (wl_effect(&g->scope, dyn_effect, g, &effect)) goto fail;
  *out = g;
  return 0;
fail:
  wl_scope_close(&g->scope);
  dyn_release(g);
  return 1;
}

int wl_dyn_run(wl_dyn_t *g, long iterations, double *sum_out) {
  long i;
  int j, w = g->cfg.width;
  double v, sum = 0;
  for (i = 0; i < iterations; i++) {
    int dex = (int)(i % w);
    if (WL_OK(&g->report, tether_batch_begin(g->scope.rt))) return 1;
    if (WL_OK(&g->report, tether_state_set_double(g->sources[dex], (double)(i + dex)))) {
      tether_batch_end(g->scope.rt);
      return 1;
    }
    if (WL_OK(&g->report, tether_batch_end(g->scope.rt))) return 1;
    for (j = 0; j < g->n_read; j++)
      if (WL_OK(&g->report, tether_computed_get_double(g->read_leaves[j], &v))) return 1;
  }
  /* readLeaves.reduce((total, leaf) => leaf.read() + total, 0) */
  for (j = 0; j < g->n_read; j++) {
    if (WL_OK(&g->report, tether_computed_get_double(g->read_leaves[j], &v))) return 1;
    sum = v + sum;
  }
  *sum_out = sum;
  return 0;
}

long wl_dyn_count(const wl_dyn_t *g) { return g->count; }

void wl_dyn_reset_count(wl_dyn_t *g) { g->count = 0; }

int wl_dyn_free(wl_dyn_t *g) {
  long failures;
  if (g == NULL) return 0;
  wl_scope_close(&g->scope);
  failures = g->report.failures;
  dyn_release(g);
  return failures != 0;
}

int wl_dyn_workload(const wl_dyn_params_t *p) {
  wl_dyn_t *g;
  double sum;
  int i, failed = 0;
  if (wl_dyn_build(p->config, p->options, &g)) return 1;
  for (i = 0; i < p->warmup_runs && !failed; i++) failed |= wl_dyn_run(g, p->iterations, &sum);
  for (i = 0; i < p->checked_runs && !failed; i++) {
    if (p->reset_count) wl_dyn_reset_count(g);
    if (wl_dyn_run(g, p->iterations, &sum)) {
      failed = 1;
      break;
    }
    failed |= wl_expect_double(&g->report, "sum of the read leaves", p->expected_sum, sum);
    if (p->expected_count >= 0)
      failed |= wl_expect_int(&g->report, "computed executions", p->expected_count, g->count);
  }
  return wl_dyn_free(g) | failed;
}
