/*
 * reference.c — expected results computed without any reactive library:
 *
 *  - cellx: the end values of the layered graph (BENCHMARKS.md, "cellx"),
 *    by applying the layer formulas L times to plain integers;
 *  - the "reactively" dynamic graphs (BENCHMARKS.md, "Dynamic graphs"; the
 *    JS benchmark's makeGraph/runGraph in reactively/dependencyGraph.ts):
 *    the graph's shape (which nodes are static, which leaves are read, both
 *    from the sfc32 generators exactly as the JS draws them), and a plain C
 *    model that predicts the leaf sum and the number of computed executions
 *    for any size, so the test can run reduced iteration counts and still
 *    check exact numbers.
 *
 * The model of "when does a computed run" is the one every lazy, cached,
 * glitch-free library with equality cut-off implements (and the one tether.h
 * documents for computeds): a computed runs when something reads it (the
 * effect reading the leaves, or a computed being brought up to date) and it
 * never ran, or one of the inputs it read on its last run (checked in the
 * order it read them, each brought up to date first) changed since then. A
 * dynamic node's first input decides which inputs it reads, so checking in
 * read order never brings up to date an input the re-run would not read.
 * At full size the model reproduces every sum and count of BENCHMARKS.md's
 * table (graph_workloads.c checks this), which is what makes its numbers
 * for reduced sizes trustworthy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"

/* ---- cellx -------------------------------------------------------------- */

static void wl_cellx_layers(int layers, int64_t p[4]) {
  int i;
  for (i = 0; i < layers; i++) {
    int64_t n1 = p[1], n2 = p[0] - p[2], n3 = p[1] + p[3], n4 = p[2];
    p[0] = n1;
    p[1] = n2;
    p[2] = n3;
    p[3] = n4;
  }
}

void wl_cellx_expected(int layers, int64_t before[4], int64_t after[4]) {
  before[0] = 1, before[1] = 2, before[2] = 3, before[3] = 4;
  after[0] = 4, after[1] = 3, after[2] = 2, after[3] = 1;
  wl_cellx_layers(layers, before);
  wl_cellx_layers(layers, after);
}

/* ---- dynamic graphs: shape ---------------------------------------------- */

/* The table of BENCHMARKS.md, in order. */
const wl_dyn_config_t wl_dyn_configs[WL_DYN_CONFIGS] = {
    {"2-10x5 lazy80%", 10, 5, 1.0, 2, 0.2, 600000, 19199968.0, 3480000},
    {"6-10x10 dyn25% lazy80%", 10, 10, 0.75, 6, 0.2, 15000, 302310782860.0, 1155000},
    {"4-1000x12 dyn5%", 1000, 12, 0.95, 4, 1.0, 7000, 29355933696000.0, 1463000},
    {"25-1000x5", 1000, 5, 1.0, 25, 1.0, 3000, 1171484375000.0, 732000},
    {"3-5x500", 5, 500, 1.0, 3, 1.0, 500, 3.0239642676898464e241, 1246500},
    {"6-100x15 dyn50%", 100, 15, 0.5, 6, 1.0, 2000, 15664996402790400.0, 1078000},
};


/* JS Math.round: the nearest integer, halves rounded up. */
static double wl_js_round(double x) {
  double f = floor(x);
  return x - f >= 0.5 ? f + 1.0 : f;
}

int wl_dyn_shape(const wl_dyn_config_t *cfg, unsigned char *is_static, int *read_leaves,
                 int *n_read) {
  wl_rng_t random, rand;
  int rows = cfg->layers - 1, width = cfg->width, n, l, i, skip;
  /* makeDependentRows: one draw per computed node, row-major, static or
   * not, even when static_fraction is 1. */
  wl_rng_seed(&random, "seed");
  for (l = 0; l < rows; l++)
    for (i = 0; i < width; i++)
      is_static[l * width + i] = wl_rng_next(&random) < cfg->static_fraction;
  /* removeElems(leaves, skipCount, rand): rand is a second generator with
   * the same seed, made after the rows. */
  wl_rng_seed(&rand, "seed");
  for (i = 0; i < width; i++) read_leaves[i] = i;
  n = width;
  skip = (int)wl_js_round((double)width * (1.0 - cfg->read_fraction));
  for (i = 0; i < skip && n > 0; i++) {
    int rm = (int)floor(wl_rng_next(&rand) * (double)n);
    memmove(read_leaves + rm, read_leaves + rm + 1, (size_t)(n - rm - 1) * sizeof *read_leaves);
    n--;
  }
  *n_read = n;
  return 0;
}

int wl_js_bit0(double x) {
  /* JS `x & 1`: ToInt32(x) & 1, i.e. the parity of trunc(x) (0 for NaN and
   * infinities; every double of magnitude >= 2^53 is even). */
  if (!isfinite(x)) return 0;
  return wl_js_mod(trunc(x), 2.0) != 0.0;
}

double wl_js_mod(double a, double b) {
  /* Integers below 2^63 in magnitude: the int64 remainder is exact (its sign
   * follows a, as fmod's does, down to fmod's -0.0 for a negative a) and
   * costs a division instead of libm's fmod, which was 10% of the 6-100x15
   * graph's instructions (callgrind). V8 takes the same path for small
   * integers. */
  if (a > -9.2e18 && a < 9.2e18 && b >= 1.0 && b < 9.2e18) {
    int64_t ia = (int64_t)a, ib = (int64_t)b;
    if ((double)ia == a && (double)ib == b) {
      int64_t r = ia % ib;
      return r == 0 && a < 0 ? -0.0 : (double)r;
    }
  }
  return fmod(a, b);
}

/* ---- dynamic graphs: the model ------------------------------------------ */

typedef struct ref_node {
  double value;
  uint64_t version;   /* advanced when value changes (sources: on a changing write) */
  uint64_t checked;   /* epoch in which it was last brought up to date */
  uint64_t marked;    /* write that last flagged it (visit stamp) */
  int stale;          /* an input it may read changed since its last check */
  int ran;
  int n_deps;         /* inputs read on the last run */
} ref_node_t;

typedef struct ref_graph {
  const wl_dyn_config_t *cfg;
  int width, layers, ns;
  ref_node_t *nodes;       /* layers * width; row 0 = sources */
  int *dep_slot;           /* per node, ns entries: input slot k read */
  uint64_t *dep_version;   /* per node, ns entries: its version then */
  unsigned char *is_static; /* per computed node */
  int *read_leaves;
  int n_read;
  uint64_t epoch;
  uint64_t writes;
  int *stack;              /* for flagging descendants */
  long count;
} ref_graph_t;

static void ref_update(ref_graph_t *g, int node);

/* The index of input slot k of node (l, i): node ((l-1), (i+k) % width). */
static int ref_input(const ref_graph_t *g, int node, int k) {
  int l = node / g->width, i = node % g->width;
  return (l - 1) * g->width + (i + k) % g->width;
}

static double ref_read_input(ref_graph_t *g, int node, int k) {
  int in = ref_input(g, node, k);
  ref_node_t *n = &g->nodes[node];
  if (in >= g->width) ref_update(g, in);
  g->dep_slot[node * g->ns + n->n_deps] = k;
  g->dep_version[node * g->ns + n->n_deps] = g->nodes[in].version;
  n->n_deps++;
  return g->nodes[in].value;
}

static void ref_execute(ref_graph_t *g, int node) {
  ref_node_t *n = &g->nodes[node];
  double sum;
  int k;
  g->count++;
  n->n_deps = 0;
  if (g->is_static[node - g->width]) {
    sum = 0;
    for (k = 0; k < g->ns; k++) sum += ref_read_input(g, node, k);
  } else {
    int tail = g->ns - 1, drop;
    double drop_dex;
    sum = ref_read_input(g, node, 0);
    drop = wl_js_bit0(sum);
    drop_dex = fmod(sum, (double)tail);
    for (k = 0; k < tail; k++) {
      if (drop && (double)k == drop_dex) continue;
      sum += ref_read_input(g, node, k + 1);
    }
  }
  if (!n->ran || sum != n->value) n->version++;
  n->value = sum;
  n->ran = 1;
}

static void ref_update(ref_graph_t *g, int node) {
  ref_node_t *n = &g->nodes[node];
  int j;
  if (n->checked == g->epoch) return;
  n->checked = g->epoch;
  if (!n->ran) {
    ref_execute(g, node);
    return;
  }
  if (!n->stale) return; /* no input it could read changed: nothing to check */
  n->stale = 0;
  for (j = 0; j < n->n_deps; j++) {
    int in = ref_input(g, node, g->dep_slot[node * g->ns + j]);
    if (in >= g->width) ref_update(g, in);
    if (g->nodes[in].version != g->dep_version[node * g->ns + j]) {
      ref_execute(g, node);
      return;
    }
  }
}

/* Only an optimisation of the model (same counts, far fewer checks): a
 * changing write flags every node that could read it, directly or not
 * (every input slot, whatever a dynamic node read last time); an unflagged
 * node that ran is up to date without looking at its inputs. */
static void ref_flag_descendants(ref_graph_t *g, int source) {
  int top = 0, k;
  g->writes++;
  g->stack[top++] = source;
  while (top > 0) {
    int node = g->stack[--top], l = node / g->width, i = node % g->width;
    if (l + 1 >= g->layers) continue;
    for (k = 0; k < g->ns; k++) {
      /* (l+1, j) reads (l, i) through slot k when (j + k) % width == i. */
      int j = ((i - k) % g->width + g->width) % g->width, reader = (l + 1) * g->width + j;
      if (g->nodes[reader].marked == g->writes) continue;
      g->nodes[reader].marked = g->writes;
      g->nodes[reader].stale = 1;
      g->stack[top++] = reader;
    }
  }
}

/* The effect (and the reads after each write): every read leaf, in order. */
static void ref_read_leaves(ref_graph_t *g) {
  int j, last = (g->layers - 1) * g->width;
  g->epoch++;
  for (j = 0; j < g->n_read; j++) ref_update(g, last + g->read_leaves[j]);
}

static double ref_run(ref_graph_t *g, long iterations) {
  long i;
  int j, last = (g->layers - 1) * g->width;
  double sum = 0;
  for (i = 0; i < iterations; i++) {
    int dex = (int)(i % g->width);
    double v = (double)(i + dex);
    if (g->nodes[dex].value != v) {
      g->nodes[dex].value = v;
      g->nodes[dex].version++;
      ref_flag_descendants(g, dex);
    }
    ref_read_leaves(g);
  }
  /* readLeaves.reduce((total, leaf) => leaf.read() + total, 0) */
  for (j = 0; j < g->n_read; j++) sum = g->nodes[last + g->read_leaves[j]].value + sum;
  return sum;
}

int wl_dyn_reference(const wl_dyn_params_t *p, double *sum_out, long *count_out) {
  ref_graph_t g;
  const wl_dyn_config_t *cfg = p->config;
  size_t n_nodes = (size_t)cfg->width * (size_t)cfg->layers;
  double sum = 0;
  int i, r;
  if (cfg->width < 1 || cfg->layers < 2 || cfg->n_sources < 1) return 1;
  memset(&g, 0, sizeof g);
  g.cfg = cfg;
  g.width = cfg->width;
  g.layers = cfg->layers;
  g.ns = cfg->n_sources;
  g.nodes = calloc(n_nodes, sizeof *g.nodes);
  g.dep_slot = calloc(n_nodes * (size_t)g.ns, sizeof *g.dep_slot);
  g.dep_version = calloc(n_nodes * (size_t)g.ns, sizeof *g.dep_version);
  g.is_static = calloc(n_nodes, 1);
  g.read_leaves = calloc((size_t)g.width, sizeof *g.read_leaves);
  g.stack = calloc(n_nodes + 1, sizeof *g.stack);
  if (!g.nodes || !g.dep_slot || !g.dep_version || !g.is_static || !g.read_leaves ||
      !g.stack) {
    r = 1;
    goto out;
  }
  wl_dyn_shape(cfg, g.is_static, g.read_leaves, &g.n_read);
  for (i = 0; i < g.width; i++) {
    g.nodes[i].value = i; /* signal(i) */
    g.nodes[i].ran = 1;
  }
  /* The build: the counter exists before the rows; the effect reads the
   * leaves once. */
  ref_read_leaves(&g);
  for (i = 0; i < p->warmup_runs; i++) ref_run(&g, p->iterations);
  for (i = 0; i < p->checked_runs; i++) {
    if (p->reset_count) g.count = 0;
    sum = ref_run(&g, p->iterations);
  }
  *sum_out = sum;
  *count_out = g.count;
  r = 0;
out:
  free(g.nodes);
  free(g.dep_slot);
  free(g.dep_version);
  free(g.is_static);
  free(g.read_leaves);
  free(g.stack);
  return r;
}
