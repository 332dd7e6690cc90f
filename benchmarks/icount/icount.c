/*
 * icount.c — the per-operation probes of issue 16's target table, for
 * callgrind: `icount OP N [host|single]` does one Tether operation N times
 * in a loop and nothing else, so that (I(2N) - I(N)) / N, the instruction
 * counts of two runs under callgrind, is what one operation costs (setup and
 * teardown cancel out). benchmarks/icount/icount.py runs it; this is the
 * probe docs/performance.md describes ("The runtime as its own module").
 *
 *   get       tether_state_get_int
 *   set       tether_state_set_int, no observer (distinct values)
 *   sync      tether_state_set_int with one TETHER_OBSERVE_SYNC observer
 *             (the write and the call)
 *   fanout    tether_state_set_int with 100 SYNC observers (divide by 100
 *             for one notification)
 *   computed  a write, then a read of a computed reading the state (the
 *             step of a chain: invalidate, recompute, read)
 *   new       tether_state_new_int
 *
 * The fifth row of the table, one recompute in the 50-deep chain,
 * is the chain workload itself (bench_tether --icount chain), divided by
 * its 50 recomputes per write.
 *
 * The runtime is TETHER_LOOP_HOST (no loop thread, so callgrind sees one
 * thread doing only this); "single" adds TETHER_RUNTIME_SINGLE_THREAD (no
 * locks). Each op checks what it did (observer calls, computed values) and
 * exits 1 on a mismatch, so a figure is never taken from a run that went
 * wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether.h"

static void on_change(const tether_change_t *c, void *calls) {
  (void)c;
  (*(long *)calls)++;
}

/* A computed of one state: twice its value. */
static int twice(tether_value_t *out, void *state) {
  int64_t v = 0;
  tether_state_get_int(*(tether_state_t *)state, &v);
  return tether_value_set_int(out, v * 2);
}

static int fail(const char *what) {
  fprintf(stderr, "icount: %s: %s\n", what, tether_last_error());
  return 1;
}

int main(int argc, char **argv) {
  const char *op = argc > 2 ? argv[1] : "";
  long n = argc > 2 ? atol(argv[2]) : 0, calls = 0, i, k, observers;
  int single = argc > 3 && strcmp(argv[3], "single") == 0;
  int64_t v = 0;
  tether_runtime_options_t o;
  tether_runtime_t rt;
  tether_state_t s;
  if (n <= 0 || (argc > 3 && !single && strcmp(argv[3], "host") != 0)) {
    fprintf(stderr, "usage: %s get|set|sync|fanout|computed|new N [host|single]\n", argv[0]);
    return 2;
  }
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  if (single) o.flags = TETHER_RUNTIME_SINGLE_THREAD;
  if (tether_runtime_new(&o, &rt) != TETHER_OK) return fail("tether_runtime_new");
  if (tether_state_new_int(rt, 0, 0, &s) != TETHER_OK) return fail("tether_state_new_int");

  if (strcmp(op, "get") == 0) {
    for (i = 0; i < n; i++) tether_state_get_int(s, &v);
  } else if (strcmp(op, "set") == 0) {
    for (i = 0; i < n; i++) tether_state_set_int(s, i + 1);
    if (tether_state_get_int(s, &v) != TETHER_OK || v != n) return fail("set: last value");
  } else if (strcmp(op, "sync") == 0 || strcmp(op, "fanout") == 0) {
    observers = op[0] == 's' ? 1 : 100;
    for (k = 0; k < observers; k++) {
      tether_observer_t ob;
      if (tether_observe(s, NULL, TETHER_OBSERVE_SYNC, on_change, &calls, NULL, &ob) != TETHER_OK)
        return fail("tether_observe");
    }
    for (i = 0; i < n; i++) tether_state_set_int(s, i + 1);
    if (calls != n * observers) return fail("observer calls");
  } else if (strcmp(op, "computed") == 0) {
    tether_computed_t c;
    if (tether_computed_new(rt, twice, &s, NULL, &c) != TETHER_OK)
      return fail("tether_computed_new");
    for (i = 0; i < n; i++) {
      tether_state_set_int(s, i + 1);
      tether_computed_get_int(c, &v);
    }
    if (v != 2 * n) return fail("computed: last value");
  } else if (strcmp(op, "new") == 0) {
    for (i = 0; i < n; i++) {
      tether_state_t t;
      if (tether_state_new_int(rt, i, 0, &t) != TETHER_OK) return fail("new");
    }
  } else {
    fprintf(stderr, "icount: no op %s\n", op);
    return 2;
  }
  tether_runtime_free(rt);
  return 0;
}
