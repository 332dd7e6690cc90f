/*
 * sbench.c — the S.js-style creation and update cases of BENCHMARKS.md
 * ("Creation and update"), on Tether. Port of js-reactivity-benchmark's
 * benches/sBench.ts (inspired by Solid's bench.cjs): createSignals, the 9
 * createComputations cases and the 7 updateSignals cases, every
 * computation an effect.
 *
 * The JS asserts nothing here; this port checks what the cases imply: the
 * number of effect runs (each effect runs once when made, then once per
 * write that changed what it read: the first write of each update case
 * writes 0 over 0 and is skipped) and the sum of every value the effects
 * read (which proves each read the right sources and saw each new value).
 *
 * Each effect's user_data is one entry of an array made at setup (which
 * sources it sums), so the timed part allocates nothing in C.
 */
#include <stdio.h>
#include <stdlib.h>

#include "workloads.h"

typedef struct sb_effect {
  struct wl_sbench *owner;
  long first; /* first source read */
  long n_read; /* consecutive sources read and summed (0: none) */
} sb_effect_t;

struct wl_sbench {
  wl_sbench_params_t p;
  char name[48];
  wl_report_t report;
  wl_scope_t scope;
  tether_state_t *sources; /* scount, then the n more of createSignals */
  long n_sources;
  sb_effect_t *effects;    /* what each effect reads */
  long n_effects;
  long writes;             /* update cases: writes to sources[0] */
  int64_t base;            /* update cases: the sum of the other sources read */
  long runs;               /* effect runs */
  long long seen;          /* sum of the values the effects computed */
  int ran;
};

static const char *const sb_names[WL_SB_CASES] = {
    "createSignals", "create0to1",   "create1to1",   "create2to1",    "create4to1",
    "create1000to1", "create1to2",   "create1to4",   "create1to8",    "create1to1000",
    "update1to1",    "update2to1",   "update4to1",   "update1000to1", "update1to2",
    "update1to4",    "update1to1000",
};

const char *wl_sbench_name(wl_sbench_case_t which) {
  return (unsigned)which < WL_SB_CASES ? sb_names[which] : NULL;
}

wl_sbench_group_t wl_sbench_group(wl_sbench_case_t which) {
  if (which == WL_SB_CREATE_SIGNALS) return WL_SB_GROUP_CREATE_SIGNALS;
  if (which < WL_SB_UPDATE_1TO1) return WL_SB_GROUP_CREATE_COMPUTATIONS;
  return WL_SB_GROUP_UPDATE_SIGNALS;
}

/* JS `for (i = 0; i < n / k; i++)`: ceil(n / k) rounds. */
static long sb_ceil_div(long n, long k) { return n <= 0 ? 0 : (n + k - 1) / k; }

void wl_sbench_default_params(wl_sbench_case_t which, long count, wl_sbench_params_t *out) {
  /* run(fn, n, scount) exactly as sBench.ts calls it. */
  static const struct {
    long n_mul, n_div, s_mul, s_div; /* n = count*n_mul/n_div (s likewise); s_div 0: s_mul */
  } t[WL_SB_CASES] = {
      {1, 1, 1, 1},    /* createSignals COUNT, COUNT */
      {1, 1, 0, 1},    /* create0to1 COUNT, 0 */
      {1, 1, 1, 1},    /* create1to1 COUNT, COUNT */
      {1, 2, 1, 1},    /* create2to1 COUNT/2, COUNT */
      {1, 4, 1, 1},    /* create4to1 COUNT/4, COUNT */
      {1, 1000, 1, 1}, /* create1000to1 COUNT/1000, COUNT */
      {1, 1, 1, 2},    /* create1to2 COUNT, COUNT/2 */
      {1, 1, 1, 4},    /* create1to4 COUNT, COUNT/4 */
      {1, 1, 1, 8},    /* create1to8 COUNT, COUNT/8 */
      {1, 1, 1, 1000}, /* create1to1000 COUNT, COUNT/1000 */
      {4, 1, 1, 0},    /* update1to1 COUNT*4, 1 */
      {2, 1, 2, 0},    /* update2to1 COUNT*2, 2 */
      {1, 1, 4, 0},    /* update4to1 COUNT, 4 */
      {1, 250, 1000, 0}, /* update1000to1 COUNT/250, 1000 */
      {1, 1, 1, 0},    /* update1to2 COUNT, 1 */
      {1, 1, 1, 0},    /* update1to4 COUNT, 1 */
      {1, 1, 1, 0},    /* update1to1000 COUNT, 1 */
  };
  out->which = which;
  out->options = NULL;
  if ((unsigned)which >= WL_SB_CASES) {
    out->n = out->scount = 0;
    return;
  }
  /* The JS divides as reals and its loops run `i < n`, i.e. ceil(n) times
   * (COUNT 200: create1to1000 makes ceil(0.2) = 1 signal); ceil of ceil(x)/k
   * is ceil(x/k), so rounding up here keeps every later n / k loop exact. */
  out->n = sb_ceil_div(count * t[which].n_mul, t[which].n_div);
  out->scount = t[which].s_div ? sb_ceil_div(count * t[which].s_mul, t[which].s_div)
                               : t[which].s_mul;
}

/* Every effect of every case: sum n_read sources from first. */
static void sb_effect_fn(tether_effect_t e, void *user_data) {
  sb_effect_t *x = user_data;
  wl_sbench_t *s = x->owner;
  int64_t sum = 0, v;
  long i;
  (void)e;
  for (i = 0; i < x->n_read; i++) {
    int rc = tether_state_get_int(s->sources[x->first + i], &v);
    if (rc != TETHER_OK) {
      wl_expect_ok(&s->report, "effect: tether_state_get_int", rc);
      return;
    }
    sum += v;
  }
  s->runs++;
  s->seen += sum;
}

/* How many effects a case makes, which sources each reads, how many
 * sources it needs and how many writes its update does. */
static int sb_plan(wl_sbench_t *s) {
  long n = s->p.n, i, j, per = 0, k = 0;
  switch (s->p.which) {
    case WL_SB_CREATE_SIGNALS: s->n_effects = 0; return 0;
    case WL_SB_CREATE_0TO1: s->n_effects = n; per = 0; break;
    case WL_SB_CREATE_1TO1: s->n_effects = n; per = 1; break;
    case WL_SB_CREATE_2TO1: s->n_effects = n; per = 2; break;
    case WL_SB_CREATE_4TO1: s->n_effects = n; per = 4; break;
    case WL_SB_CREATE_1000TO1: s->n_effects = n; per = 1000; break;
    case WL_SB_CREATE_1TO2: k = 2; break;
    case WL_SB_CREATE_1TO4: k = 4; break;
    case WL_SB_CREATE_1TO8: k = 8; break;
    case WL_SB_CREATE_1TO1000: k = 1000; break;
    case WL_SB_UPDATE_1TO1: s->n_effects = 1; per = 1; s->writes = n; break;
    case WL_SB_UPDATE_2TO1: s->n_effects = 1; per = 2; s->writes = n; break;
    case WL_SB_UPDATE_4TO1: s->n_effects = 1; per = 4; s->writes = n; break;
    case WL_SB_UPDATE_1000TO1: s->n_effects = 1; per = 1000; s->writes = n; break;
    case WL_SB_UPDATE_1TO2: s->n_effects = 2; per = 1; s->writes = n; k = -1; break;
    case WL_SB_UPDATE_1TO4: s->n_effects = 4; per = 1; s->writes = n; k = -1; break;
    case WL_SB_UPDATE_1TO1000:
      s->n_effects = 1000;
      per = 1;
      s->writes = sb_ceil_div(n, 10); /* the JS writes n / 10 times */
      k = -1;
      break;
    default: return wl_fail(&s->report, "no such case %d", (int)s->p.which);
  }
  if (k > 0) s->n_effects = sb_ceil_div(n, k) * k; /* k effects on each of n/k sources */
  s->effects = calloc((size_t)(s->n_effects > 0 ? s->n_effects : 1), sizeof *s->effects);
  if (s->effects == NULL) return wl_fail(&s->report, "out of memory");
  for (i = 0; i < s->n_effects; i++) {
    s->effects[i].owner = s;
    if (k > 0) { /* 1 -> k: effect j of source i / k */
      s->effects[i].first = i / k;
      s->effects[i].n_read = 1;
    } else if (k < 0) { /* update 1 -> k: all read sources[0] */
      s->effects[i].first = 0;
      s->effects[i].n_read = 1;
    } else {
      s->effects[i].first = i * per;
      s->effects[i].n_read = per;
    }
  }
  /* Every source an effect reads must exist. */
  for (i = 0; i < s->n_effects; i++) {
    j = s->effects[i].first + s->effects[i].n_read;
    if (j > s->p.scount)
      return wl_fail(&s->report, "scount %ld is too small: an effect reads source %ld",
                     s->p.scount, j - 1);
  }
  /* update cases: the other sources an effect reads hold 1, 2, 3, ... */
  s->base = 0;
  if (s->p.which >= WL_SB_UPDATE_1TO1)
    for (i = 1; i < per; i++) s->base += i;
  return 0;
}

int wl_sbench_setup(const wl_sbench_params_t *p, wl_sbench_t **out) {
  wl_sbench_t *s;
  long i, extra;
  int r;
  int64_t v;
  *out = NULL;
  s = calloc(1, sizeof *s);
  if (s == NULL) return 1;
  s->p = *p;
  snprintf(s->name, sizeof s->name, "sbench %s",
           wl_sbench_name(p->which) ? wl_sbench_name(p->which) : "?");
  wl_report_init(&s->report, s->name);
  if (p->n < 0 || p->scount < 0 || sb_plan(s)) {
    if (p->n < 0 || p->scount < 0) wl_fail(&s->report, "negative n or scount");
    free(s->effects);
    free(s);
    return 1;
  }
  extra = p->which == WL_SB_CREATE_SIGNALS ? p->n : 0;
  s->sources = calloc((size_t)(p->scount + extra + 1), sizeof *s->sources);
  if (s->sources == NULL ||
      wl_scope_open(&s->scope, p->options, (size_t)(p->scount + extra + s->n_effects),
                    &s->report)) {
    free(s->sources);
    free(s->effects);
    free(s);
    return 1;
  }
  for (i = 0; i < p->scount; i++) {
    if (wl_signal_int(&s->scope, i, &s->sources[i])) goto fail;
    s->n_sources++;
  }
  /* The JS reads every source three times before starting the clock. */
  for (i = 0; i < p->scount; i++)
    for (r = 0; r < 3; r++)
      if (WL_OK(&s->report, tether_state_get_int(s->sources[i], &v)) ||
          wl_expect_int(&s->report, "source value", i, v))
        goto fail;
  *out = s;
  return 0;
fail:
  wl_scope_close(&s->scope);
  free(s->sources);
  free(s->effects);
  free(s);
  return 1;
}

/* What the effects must have done: each made effect ran once; an update
 * case's effects also ran once per changing write (writes - 1 of them: the
 * first writes 0 over 0), each time reading the new value plus `base`. */
static int sb_check(wl_sbench_t *s) {
  long long runs, seen = 0;
  long i;
  int failed = 0;
  if (s->p.which == WL_SB_CREATE_SIGNALS)
    return wl_expect_int(&s->report, "signals made", s->p.scount + s->p.n, s->n_sources);
  if (s->p.which >= WL_SB_UPDATE_1TO1) {
    long long w = s->writes > 1 ? s->writes : 1; /* distinct values of sources[0] seen */
    runs = (long long)s->n_effects * w;
    seen = (long long)s->n_effects * (w * (w - 1) / 2 + w * (long long)s->base);
  } else {
    runs = s->n_effects;
    for (i = 0; i < s->n_effects; i++) {
      /* effect i read sources first .. first + n_read - 1, holding their indexes */
      long long a = s->effects[i].first, b = a + s->effects[i].n_read; /* [a, b) */
      seen += (b * (b - 1) - a * (a - 1)) / 2;
    }
  }
  failed |= wl_expect_int(&s->report, "effect runs", runs, s->runs);
  failed |= wl_expect_int(&s->report, "sum of the values the effects read", seen, s->seen);
  return failed;
}

int wl_sbench_run(wl_sbench_t *s) {
  long i;
  int failed = 0;
  tether_effect_t e;
  if (s->ran++) return wl_fail(&s->report, "wl_sbench_run called twice on one setup");
  /* the case: creations */
  if (s->p.which == WL_SB_CREATE_SIGNALS) {
    for (i = 0; i < s->p.n; i++) {
      if (wl_signal_int(&s->scope, i, &s->sources[s->n_sources])) {
        failed = 1;
        break;
      }
      s->n_sources++;
    }
  }
  for (i = 0; i < s->n_effects && !failed; i++)
    failed |= wl_effect(&s->scope, sb_effect_fn, &s->effects[i], &e);
  /* its update: each write in its own batch */
  for (i = 0; i < s->writes && !failed; i++) {
    failed |= WL_OK(&s->report, tether_batch_begin(s->scope.rt));
    failed |= WL_OK(&s->report, tether_state_set_int(s->sources[0], i));
    failed |= WL_OK(&s->report, tether_batch_end(s->scope.rt));
  }
  /* cleanup(): disposal is timed too */
  failed |= wl_scope_close(&s->scope);
  if (!failed) failed |= sb_check(s);
  return failed;
}

int wl_sbench_free(wl_sbench_t *s) {
  long failures;
  if (s == NULL) return 0;
  if (!s->ran) wl_scope_close(&s->scope);
  failures = s->report.failures;
  free(s->sources);
  free(s->effects);
  free(s);
  return failures != 0;
}

int wl_sbench_workload(const wl_sbench_params_t *p) {
  wl_sbench_t *s;
  int failed;
  if (wl_sbench_setup(p, &s)) return 1;
  failed = wl_sbench_run(s);
  return wl_sbench_free(s) | failed;
}
