/*
 * adapter.c — the benchmark adapter of /work/shared/BENCHMARKS.md
 * ("signal / computed / effect / batch / build / cleanup") on top of
 * tether.h, plus the mismatch reporting every workload uses.
 *
 * The JS suite (js-reactivity-benchmark) wraps each framework in a
 * ReactiveFramework object with exactly these operations; this file is
 * Tether's wrapper. See workloads.h for the mapping and for the two ways a
 * build can be disposed of.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"

/* ---- reporting ---------------------------------------------------------- */

void wl_report_init(wl_report_t *r, const char *workload) {
  r->workload = workload;
  r->failures = 0;
  r->printed = 0;
}

static void wl_vfail(wl_report_t *r, const char *fmt, va_list ap) {
  r->failures++;
  if (r->printed >= WL_REPORT_MAX_PRINTED) return;
  r->printed++;
  fprintf(stderr, "workload %s: ", r->workload ? r->workload : "?");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  if (r->printed == WL_REPORT_MAX_PRINTED)
    fprintf(stderr, "workload %s: (further mismatches are counted, not printed)\n",
            r->workload ? r->workload : "?");
  fflush(stderr);
}

int wl_fail(wl_report_t *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wl_vfail(r, fmt, ap);
  va_end(ap);
  return 1;
}

int wl_expect_int_(wl_report_t *r, const char *what, long long expected, long long got) {
  return wl_fail(r, "%s: expected %lld, got %lld", what, expected, got);
}

int wl_expect_double_(wl_report_t *r, const char *what, double expected, double got) {
  return wl_fail(r, "%s: expected %.17g, got %.17g", what, expected, got);
}

int wl_expect_ok_(wl_report_t *r, const char *call, int rc) {
  /* A computed's error message nests its inputs' messages; the first 300
   * bytes say what failed. */
  return wl_fail(r, "%s: expected TETHER_OK, got %d (%s): %.300s", call, rc, tether_strerror(rc),
                 tether_last_error());
}

/* ---- scopes ------------------------------------------------------------- */

unsigned wl_runtime_flags = 0;

int wl_runtime_new(tether_runtime_t *out) {
  tether_runtime_options_t opts;
  tether_runtime_options_init(&opts);
  opts.mode = TETHER_LOOP_HOST;
  opts.flags = wl_runtime_flags;
  return tether_runtime_new(&opts, out);
}

/* Grows a handle list; handles are plain structs of one uint64_t. */
static int wl_grow(void **items, size_t *cap, size_t need, size_t item_size) {
  size_t cap2;
  void *p;
  if (need <= *cap) return 0;
  cap2 = *cap ? *cap * 2 : 64;
  while (cap2 < need) cap2 *= 2;
  p = realloc(*items, cap2 * item_size);
  if (p == NULL) return -1;
  *items = p;
  *cap = cap2;
  return 0;
}

int wl_scope_open(wl_scope_t *s, const wl_options_t *opts, size_t expected_nodes,
                  wl_report_t *report) {
  wl_dispose_t mode = opts ? opts->dispose : WL_DISPOSE_RUNTIME;
  memset(s, 0, sizeof *s);
  s->report = report;
  if (mode == WL_DISPOSE_HANDLES && opts->runtime.id != 0) {
    s->rt = opts->runtime;
    s->owns_runtime = 0;
  } else {
    int rc = wl_runtime_new(&s->rt);
    if (wl_expect_ok(report, "tether_runtime_new", rc)) return 1;
    s->owns_runtime = 1;
  }
  s->tracks_handles = mode == WL_DISPOSE_HANDLES;
  if (s->tracks_handles && expected_nodes > 0) {
    /* Sized up front so a timed build does not pay for growing. */
    if (wl_grow((void **)&s->states, &s->cap_states, expected_nodes, sizeof *s->states) ||
        wl_grow((void **)&s->computeds, &s->cap_computeds, expected_nodes,
                sizeof *s->computeds) ||
        wl_grow((void **)&s->effects, &s->cap_effects, expected_nodes, sizeof *s->effects))
      return wl_fail(report, "wl_scope_open: out of memory");
  }
  return 0;
}

int wl_scope_close(wl_scope_t *s) {
  int failed = 0;
  size_t i;
  if (s->tracks_handles) {
    for (i = 0; i < s->n_effects; i++)
      failed |= wl_expect_ok(s->report, "tether_effect_free", tether_effect_free(s->effects[i]));
    for (i = s->n_computeds; i-- > 0;)
      failed |= wl_expect_ok(s->report, "tether_computed_free",
                             tether_computed_free(s->computeds[i]));
    for (i = 0; i < s->n_states; i++)
      failed |= wl_expect_ok(s->report, "tether_state_free", tether_state_free(s->states[i]));
  }
  if (s->owns_runtime)
    failed |= wl_expect_ok(s->report, "tether_runtime_free", tether_runtime_free(s->rt));
  free(s->effects);
  free(s->computeds);
  free(s->states);
  s->effects = NULL;
  s->computeds = NULL;
  s->states = NULL;
  s->n_effects = s->n_computeds = s->n_states = 0;
  s->cap_effects = s->cap_computeds = s->cap_states = 0;
  s->rt.id = 0;
  s->owns_runtime = 0;
  return failed;
}

static int wl_track_state(wl_scope_t *s, tether_state_t st) {
  if (!s->tracks_handles) return 0;
  if (wl_grow((void **)&s->states, &s->cap_states, s->n_states + 1, sizeof *s->states)) {
    tether_state_free(st);
    return wl_fail(s->report, "out of memory recording a state");
  }
  s->states[s->n_states++] = st;
  return 0;
}

int wl_signal_int(wl_scope_t *s, int64_t initial, tether_state_t *out) {
  int rc = tether_state_new_int(s->rt, initial, 0, out);
  if (wl_expect_ok(s->report, "tether_state_new_int", rc)) return 1;
  return wl_track_state(s, *out);
}

int wl_signal_double(wl_scope_t *s, double initial, tether_state_t *out) {
  int rc = tether_state_new_double(s->rt, initial, 0, out);
  if (wl_expect_ok(s->report, "tether_state_new_double", rc)) return 1;
  return wl_track_state(s, *out);
}

int wl_computed(wl_scope_t *s, tether_compute_fn fn, void *user_data, tether_computed_t *out) {
  int rc = tether_computed_new(s->rt, fn, user_data, NULL, out);
  if (wl_expect_ok(s->report, "tether_computed_new", rc)) return 1;
  if (!s->tracks_handles) return 0;
  if (wl_grow((void **)&s->computeds, &s->cap_computeds, s->n_computeds + 1,
              sizeof *s->computeds)) {
    tether_computed_free(*out);
    return wl_fail(s->report, "out of memory recording a computed");
  }
  s->computeds[s->n_computeds++] = *out;
  return 0;
}

int wl_effect(wl_scope_t *s, tether_effect_fn fn, void *user_data, tether_effect_t *out) {
  int rc = tether_effect_new(s->rt, TETHER_EFFECT_SYNC, fn, NULL, user_data, NULL, out);
  if (wl_expect_ok(s->report, "tether_effect_new", rc)) return 1;
  if (!s->tracks_handles) return 0;
  if (wl_grow((void **)&s->effects, &s->cap_effects, s->n_effects + 1, sizeof *s->effects)) {
    tether_effect_free(*out);
    return wl_fail(s->report, "out of memory recording an effect");
  }
  s->effects[s->n_effects++] = *out;
  return 0;
}
