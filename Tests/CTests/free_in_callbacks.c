/*
 * free_in_callbacks.c — tether_runtime_free called from inside the callbacks
 * that the hot paths run: a compute callback during a plain
 * tether_computed_get_int, a SYNC effect's first run during
 * tether_effect_new, and a SYNC effect re-run during tether_state_set_int.
 *
 * The calls that run these callbacks do not hold their own reference to the
 * runtime (the handle lookup lends it to them); they keep it alive only
 * while callbacks may run. This program is the check that they do: under
 * ASan and valgrind a missing reference is a use after free. In each case
 * the call itself succeeds, the teardown completes before it returns (on
 * this thread), every destroy function runs exactly once, and every handle
 * of the runtime is stale afterwards.
 */
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

typedef struct node {
  tether_runtime_t rt;
  tether_state_t source;
  int free_on_run;  /* run number on which to free the runtime (1 = first) */
  int runs;
  int free_rc;      /* what tether_runtime_free returned inside */
  int destroyed;
} node_t;

/* A fresh runtime with one int state, and the node that will free it on
 * run number free_on_run. 0 when the runtime could not be made. */
static int node_start(node_t *n, int64_t initial, int free_on_run) {
  memset(n, 0, sizeof *n);
  n->free_on_run = free_on_run;
  n->free_rc = -1;
  if (!CHECK_OK(tether_runtime_new(NULL, &n->rt))) return 0;
  return CHECK_OK(tether_state_new_int(n->rt, initial, 0, &n->source));
}

static void node_destroy(void *user_data) { ((node_t *)user_data)->destroyed++; }

static void maybe_free(node_t *n) {
  if (++n->runs == n->free_on_run) n->free_rc = tether_runtime_free(n->rt);
}

/* computed(() => source + 1), freeing the runtime while it computes. */
static int freeing_compute(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  int64_t v;
  int rc = tether_state_get_int(n->source, &v);
  if (rc != TETHER_OK) return rc;
  maybe_free(n);
  return tether_value_set_int(result, v + 1);
}

/* effect(() => source.read()), freeing the runtime on the chosen run. */
static void freeing_effect(tether_effect_t e, void *user_data) {
  node_t *n = user_data;
  int64_t v;
  (void)e;
  CHECK_OK(tether_state_get_int(n->source, &v));
  maybe_free(n);
}

static void expect_gone(node_t *n) {
  int64_t v;
  CHECK_INT_EQ(n->free_rc, TETHER_OK);
  CHECK_INT_EQ(n->destroyed, 1);
  CHECK_ERR(tether_state_get_int(n->source, &v), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_free(n->rt), TETHER_ESTALE);
}

/* The outermost read runs the compute callback that frees the runtime. */
static void free_during_computed_read(void) {
  tether_computed_t c;
  node_t n;
  int64_t v = -1;
  if (!node_start(&n, 41, 1)) return;
  CHECK_OK(tether_computed_new(n.rt, freeing_compute, &n, node_destroy, &c));
  CHECK_OK(tether_computed_get_int(c, &v)); /* computed, then torn down */
  CHECK_INT_EQ(v, 42);
  CHECK_INT_EQ(n.runs, 1);
  CHECK_ERR(tether_computed_get_int(c, &v), TETHER_ESTALE);
  expect_gone(&n);
}

/* A SYNC effect reading the node's state; its first run is inside
 * tether_effect_new. */
static int start_effect(node_t *n, tether_effect_t *e) {
  if (!CHECK_OK(tether_effect_new(n->rt, TETHER_EFFECT_SYNC, freeing_effect, NULL, n, node_destroy, e)))
    return 0;
  return CHECK_INT_EQ(n->runs, 1);
}

/* The first run, inside tether_effect_new, frees. */
static void free_during_effect_creation(void) {
  tether_effect_t e;
  node_t n;
  if (!node_start(&n, 1, 1) || !start_effect(&n, &e)) return;
  CHECK_ERR(tether_effect_free(e), TETHER_ESTALE);
  expect_gone(&n);
}

/* A write re-runs a SYNC effect before it returns; the re-run frees. */
static void free_during_write(void) {
  tether_effect_t e;
  node_t n;
  if (!node_start(&n, 1, 2) || !start_effect(&n, &e)) return;
  CHECK_INT_EQ(n.destroyed, 0);
  CHECK_OK(tether_state_set_int(n.source, 2)); /* the write itself succeeded */
  CHECK_INT_EQ(n.runs, 2);
  expect_gone(&n);
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(free_in_callbacks_free_during_computed_read) {
  free_during_computed_read();
  return check_report("free_in_callbacks_free_during_computed_read");
}

TEST_CASE(free_in_callbacks_free_during_effect_creation) {
  free_during_effect_creation();
  return check_report("free_in_callbacks_free_during_effect_creation");
}

TEST_CASE(free_in_callbacks_free_during_write) {
  free_during_write();
  return check_report("free_in_callbacks_free_during_write");
}
