/*
 * scopes.c — ownership by scope: SwiftUI ties @State to the view that
 * installs it, and frees it when the view goes away.
 *
 *     tether_scope_new(rt, &view);
 *     tether_scope_enter(view);
 *       ... create states, bindings, observers, computeds, effects ...
 *     tether_scope_leave(view);
 *     ...
 *     tether_scope_free(view);   // everything above, newest first
 *
 * What this program checks:
 *  - every state, binding, observer, computed, effect and tracking a thread
 *    creates while a scope is entered belongs to the scope (also an observer
 *    on a state from outside the scope); tether_scope_free frees them all,
 *    newest first, calls each destroy function exactly once and makes every
 *    handle stale; objects freed by hand earlier are skipped;
 *  - objects created outside the scope, on another thread, or in another
 *    runtime are not the scope's;
 *  - nested scopes: a scope created while another is entered is freed with
 *    it, before the parent's own objects;
 *  - enter/leave discipline: leaving a scope that is not the innermost is
 *    TETHER_EINVAL, freeing twice is TETHER_ESTALE, more than 16 nested
 *    enters is TETHER_ENOMEM;
 *  - freeing a scope from inside a callback of an observer in it (SYNC and
 *    loop): the handles go stale at once, that observer's destroy runs once,
 *    after its callback returns;
 *  - a runtime freed with live scopes frees what they hold.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* One lock for all bookkeeping; never held while calling tether_. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- the order destroy functions ran in ---------------------------------- */

#define MAX_ORDER 64
static const char *order[MAX_ORDER];
static int norder = 0;

static void order_reset(void) {
  pthread_mutex_lock(&mu);
  norder = 0;
  pthread_mutex_unlock(&mu);
}

/* "name1 name2 ..." of the destroys since order_reset(). */
static const char *order_string(char *buf, size_t size) {
  int i;
  size_t used = 0;
  buf[0] = '\0';
  pthread_mutex_lock(&mu);
  for (i = 0; i < norder && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "", order[i]);
  pthread_mutex_unlock(&mu);
  return buf;
}

/* ---- an owned thing we can account for ----------------------------------- */

typedef struct thing {
  const char *name;
  int calls;
  int running;
  int destroyed;
  int destroyed_while_running;
  int cleanups; /* effects */
  int runs;     /* effects, computeds, trackings */
  /* what its callback does */
  tether_scope_t scope_to_free;
  tether_state_t probe;
  int rc, rc2;
} thing_t;

static void thing_init(thing_t *t, const char *name) {
  memset(t, 0, sizeof *t);
  t->name = name;
  t->rc = t->rc2 = 1;
}

static void thing_destroy(void *user_data) {
  thing_t *t = user_data;
  pthread_mutex_lock(&mu);
  t->destroyed++;
  if (t->running) t->destroyed_while_running++;
  if (norder < MAX_ORDER) order[norder++] = t->name;
  pthread_mutex_unlock(&mu);
}

static int thing_get(const int *field) {
  int v;
  pthread_mutex_lock(&mu);
  v = *field;
  pthread_mutex_unlock(&mu);
  return v;
}
#define DESTROYED(t) thing_get(&(t)->destroyed)
#define CALLS(t) thing_get(&(t)->calls)

static void expect_destroyed_once_(thing_t *t, const char *file, int line) {
  int d, w;
  pthread_mutex_lock(&mu);
  d = t->destroyed;
  w = t->destroyed_while_running;
  pthread_mutex_unlock(&mu);
  check_destroyed_once_(t->name, d, w, file, line);
}
#define EXPECT_DESTROYED_ONCE(t) expect_destroyed_once_((t), __FILE__, __LINE__)

/* ---- callbacks ------------------------------------------------------------- */

static void plain(const tether_change_t *change, void *user_data) {
  thing_t *t = user_data;
  (void)change;
  pthread_mutex_lock(&mu);
  t->calls++;
  pthread_mutex_unlock(&mu);
}

/* Frees t->scope_to_free (which owns this very observer), then probes a
 * state of that scope: stale at once. */
static void free_scope(const tether_change_t *change, void *user_data) {
  thing_t *t = user_data;
  int64_t v;
  int rc, rc2;
  (void)change;
  pthread_mutex_lock(&mu);
  t->calls++;
  t->running = 1;
  pthread_mutex_unlock(&mu);
  rc = tether_scope_free(t->scope_to_free);
  rc2 = tether_state_get_int(t->probe, &v);
  pthread_mutex_lock(&mu);
  if (t->rc == 1) t->rc = rc;
  if (t->rc2 == 1) t->rc2 = rc2;
  t->running = 0;
  pthread_mutex_unlock(&mu);
}

/* Computeds, effects, trackings and custom bindings read t->probe. */
static int compute_probe(tether_value_t *result, void *user_data) {
  thing_t *t = user_data;
  int64_t v = 0;
  int rc = tether_state_get_int(t->probe, &v);
  pthread_mutex_lock(&mu);
  t->runs++;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, v + 1);
}

static void effect_probe(tether_effect_t effect, void *user_data) {
  thing_t *t = user_data;
  int64_t v = 0;
  (void)effect;
  (void)tether_state_get_int(t->probe, &v);
  pthread_mutex_lock(&mu);
  t->runs++;
  pthread_mutex_unlock(&mu);
}

static void effect_cleanup(void *user_data) {
  thing_t *t = user_data;
  pthread_mutex_lock(&mu);
  t->cleanups++;
  pthread_mutex_unlock(&mu);
}

static void track_apply(void *user_data) {
  thing_t *t = user_data;
  int64_t v = 0;
  (void)tether_state_get_int(t->probe, &v);
  pthread_mutex_lock(&mu);
  t->runs++;
  pthread_mutex_unlock(&mu);
}

static void track_changed(tether_tracking_t tracking, uint64_t revision, void *user_data) {
  thing_t *t = user_data;
  (void)tracking;
  (void)revision;
  pthread_mutex_lock(&mu);
  t->calls++;
  pthread_mutex_unlock(&mu);
}

/* ==== a scope owns what is created in it ================================= */

static void test_owns(tether_runtime_t rt) {
  tether_scope_t sc;
  tether_state_t st, sj, str, outside, after;
  tether_binding_t bnd, proj, custom, bound;
  tether_observer_t obs, obs2, bobs, cobs, obs_out, obs_after;
  tether_computed_t comp, comp2;
  tether_effect_t eff;
  tether_tracking_t trk;
  thing_t t_obs, t_obs2, t_bobs, t_custom, t_bind, t_comp, t_cobs, t_eff, t_trk, t_obs_out,
      t_comp2, t_after;
  tether_value_t *v = NULL;
  int64_t n = 0;
  char buf[512];

  printf("scopes: a scope owns what is created in it\n");
  thing_init(&t_obs, "observer");
  thing_init(&t_obs2, "observer2");
  thing_init(&t_bobs, "binding-observer");
  thing_init(&t_custom, "custom-binding");
  thing_init(&t_bind, "bind");
  thing_init(&t_comp, "computed");
  thing_init(&t_cobs, "computed-observer");
  thing_init(&t_eff, "effect");
  thing_init(&t_trk, "tracking");
  thing_init(&t_obs_out, "observer-of-outside-state");
  thing_init(&t_comp2, "computed-freed-by-hand");
  thing_init(&t_after, "observer-after-leave");

  CHECK_OK(tether_state_new_int(rt, 0, 0, &outside)); /* before the scope: not in it */
  if (!CHECK_OK(tether_scope_new(rt, &sc))) return;
  CHECK(sc.id != 0);
  CHECK_OK(tether_scope_enter(sc));
  CHECK_OK(tether_state_new_int(rt, 1, 0, &st));
  CHECK_OK(tether_state_new_json(rt, "{\"x\":0}", -1, 0, &sj));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &str)); /* read by the tracking only */
  t_comp.probe = t_custom.probe = t_eff.probe = st;
  t_trk.probe = str;
  CHECK_OK(tether_observe(st, NULL, 0, plain, &t_obs, thing_destroy, &obs));
  CHECK_OK(tether_observe(sj, "/x", TETHER_OBSERVE_SYNC, plain, &t_obs2, thing_destroy, &obs2));
  CHECK_OK(tether_state_binding(sj, &bnd));
  CHECK_OK(tether_binding_project(bnd, "/x", &proj));
  CHECK_OK(tether_binding_observe(proj, NULL, TETHER_OBSERVE_SYNC, plain, &t_bobs, thing_destroy,
                                  &bobs));
  CHECK_OK(tether_binding_new_custom(rt, compute_probe, NULL, &t_custom, thing_destroy, &custom));
  CHECK_OK(tether_binding_bind(st, NULL, sj, "/x", TETHER_BIND_SYNC_CREATE, NULL, NULL, &t_bind,
                               thing_destroy, &bound));
  CHECK_OK(tether_computed_new(rt, compute_probe, &t_comp, thing_destroy, &comp));
  CHECK_OK(tether_computed_observe(comp, NULL, 0, plain, &t_cobs, thing_destroy, &cobs));
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, effect_probe, effect_cleanup, &t_eff,
                             thing_destroy, &eff));
  CHECK_OK(tether_track(rt, TETHER_EFFECT_SYNC, track_apply, track_changed, &t_trk,
                        thing_destroy, &trk));
  CHECK_OK(tether_observe(outside, NULL, 0, plain, &t_obs_out, thing_destroy, &obs_out));
  CHECK_OK(tether_computed_new(rt, compute_probe, &t_comp2, thing_destroy, &comp2));
  CHECK_OK(tether_scope_leave(sc));

  /* Created after leaving: no scope's. */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &after));
  CHECK_OK(tether_observe(after, NULL, 0, plain, &t_after, thing_destroy, &obs_after));

  /* Everything works as usual while the scope lives. */
  CHECK_INT_EQ(DESTROYED(&t_comp2), 0);
  CHECK_OK(tether_computed_free(comp2)); /* freed by hand: skipped later */
  EXPECT_DESTROYED_ONCE(&t_comp2);
  CHECK_OK(tether_state_set_int(st, 2));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_computed_get_int(comp, &n));
  CHECK_INT_EQ(n, 3);
  CHECK_OK(tether_binding_get_int(custom, &n));
  CHECK_INT_EQ(n, 3);
  CHECK_OK(tether_binding_get_int(proj, &n));
  CHECK_INT_EQ(n, 2); /* carried by the bind */
  CHECK_INT_EQ(CALLS(&t_obs), 1);
  CHECK_INT_EQ(CALLS(&t_bobs), 2); /* SYNC_CREATE's write, then this one */
  CHECK_INT_EQ(thing_get(&t_eff.runs), 2);
  CHECK_INT_EQ(thing_get(&t_trk.runs), 1);
  CHECK_INT_EQ(CALLS(&t_trk), 0);

  /* Free the scope: everything in it goes, newest first, each destroy once. */
  order_reset();
  CHECK_OK(tether_scope_free(sc));
  EXPECT_DESTROYED_ONCE(&t_obs);
  EXPECT_DESTROYED_ONCE(&t_obs2);
  EXPECT_DESTROYED_ONCE(&t_bobs);
  EXPECT_DESTROYED_ONCE(&t_custom);
  EXPECT_DESTROYED_ONCE(&t_bind);
  EXPECT_DESTROYED_ONCE(&t_comp);
  EXPECT_DESTROYED_ONCE(&t_cobs);
  EXPECT_DESTROYED_ONCE(&t_eff);
  EXPECT_DESTROYED_ONCE(&t_trk);
  EXPECT_DESTROYED_ONCE(&t_obs_out);
  EXPECT_DESTROYED_ONCE(&t_comp2); /* skipped: not destroyed twice */
  CHECK_INT_EQ(thing_get(&t_eff.cleanups), thing_get(&t_eff.runs)); /* the owed cleanup ran */
  CHECK_INT_EQ(CALLS(&t_trk), 0); /* cancelled, not fired */
  CHECK_STR_EQ(order_string(buf, sizeof buf),
               "observer-of-outside-state tracking effect computed-observer computed bind "
               "custom-binding binding-observer observer2 observer");

  /* Every handle of the scope is stale. */
  CHECK_ERR(tether_state_get_int(st, &n), TETHER_ESTALE);
  CHECK_ERR(tether_state_get(sj, &v), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(str, 1), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(obs), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(obs2), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(bobs), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(cobs), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(obs_out), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get(bnd, &v), TETHER_ESTALE);
  CHECK_ERR(tether_binding_free(bnd), TETHER_ESTALE);
  CHECK_ERR(tether_binding_free(proj), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get_int(custom, &n), TETHER_ESTALE);
  CHECK_ERR(tether_binding_free(custom), TETHER_ESTALE);
  CHECK_ERR(tether_binding_free(bound), TETHER_ESTALE);
  CHECK_ERR(tether_computed_get_int(comp, &n), TETHER_ESTALE);
  CHECK_ERR(tether_computed_free(comp), TETHER_ESTALE);
  CHECK_ERR(tether_effect_free(eff), TETHER_ESTALE);
  CHECK_ERR(tether_tracking_cancel(trk), TETHER_ESTALE);

  /* What was not the scope's lives on: the outside state (its scope-owned
   * observer is gone) and everything created after leaving. */
  CHECK_OK(tether_state_set_int(outside, 1));
  CHECK_OK(tether_state_set_int(after, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&t_obs_out), 0);
  CHECK_INT_EQ(CALLS(&t_after), 1);
  CHECK_INT_EQ(DESTROYED(&t_after), 0);

  /* A freed scope is stale for every scope function. */
  CHECK_ERR(tether_scope_free(sc), TETHER_ESTALE);
  CHECK_ERR(tether_scope_enter(sc), TETHER_ESTALE);
  CHECK_ERR(tether_scope_leave(sc), TETHER_ESTALE);

  CHECK_OK(tether_state_free(outside));
  CHECK_OK(tether_state_free(after));
  EXPECT_DESTROYED_ONCE(&t_after);
}

/* ==== nested scopes ======================================================== */

static void test_nested(tether_runtime_t rt) {
  tether_scope_t parent, child, parent2, child2;
  tether_state_t p1, p2, c1, q1, d1;
  tether_observer_t o;
  thing_t tp1, tp2, tc1, tq1, td1;
  int64_t n;
  char buf[256];

  printf("scopes: nested scopes\n");
  thing_init(&tp1, "parent-1");
  thing_init(&tp2, "parent-2");
  thing_init(&tc1, "child-1");
  CHECK_OK(tether_scope_new(rt, &parent));
  CHECK_OK(tether_scope_enter(parent));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &p1));
  CHECK_OK(tether_observe(p1, NULL, 0, plain, &tp1, thing_destroy, &o));
  CHECK_OK(tether_scope_new(rt, &child)); /* belongs to parent */
  CHECK_OK(tether_scope_enter(child));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &c1));
  CHECK_OK(tether_observe(c1, NULL, 0, plain, &tc1, thing_destroy, &o));
  CHECK_OK(tether_scope_leave(child));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &p2)); /* parent's again */
  CHECK_OK(tether_observe(p2, NULL, 0, plain, &tp2, thing_destroy, &o));
  CHECK_OK(tether_scope_leave(parent));

  /* The child goes with the parent, before the parent's own objects. */
  order_reset();
  CHECK_OK(tether_scope_free(parent));
  EXPECT_DESTROYED_ONCE(&tp1);
  EXPECT_DESTROYED_ONCE(&tp2);
  EXPECT_DESTROYED_ONCE(&tc1);
  CHECK_STR_EQ(order_string(buf, sizeof buf), "child-1 parent-2 parent-1");
  CHECK_ERR(tether_state_get_int(c1, &n), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_int(p1, &n), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_int(p2, &n), TETHER_ESTALE);
  CHECK_ERR(tether_scope_free(child), TETHER_ESTALE);
  CHECK_ERR(tether_scope_enter(child), TETHER_ESTALE);
  CHECK_ERR(tether_scope_free(parent), TETHER_ESTALE);

  /* A child freed by hand first is skipped by its parent. */
  thing_init(&tq1, "parent2-1");
  thing_init(&td1, "child2-1");
  CHECK_OK(tether_scope_new(rt, &parent2));
  CHECK_OK(tether_scope_enter(parent2));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &q1));
  CHECK_OK(tether_observe(q1, NULL, 0, plain, &tq1, thing_destroy, &o));
  CHECK_OK(tether_scope_new(rt, &child2));
  CHECK_OK(tether_scope_leave(parent2));
  /* Entered later, outside the parent: still the child's objects. */
  CHECK_OK(tether_scope_enter(child2));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &d1));
  CHECK_OK(tether_observe(d1, NULL, 0, plain, &td1, thing_destroy, &o));
  CHECK_OK(tether_scope_leave(child2));
  CHECK_OK(tether_scope_free(child2));
  EXPECT_DESTROYED_ONCE(&td1);
  CHECK_INT_EQ(DESTROYED(&tq1), 0);
  CHECK_OK(tether_state_get_int(q1, &n));
  CHECK_ERR(tether_state_get_int(d1, &n), TETHER_ESTALE);
  CHECK_OK(tether_scope_free(parent2));
  EXPECT_DESTROYED_ONCE(&tq1);
  EXPECT_DESTROYED_ONCE(&td1);
  CHECK_ERR(tether_state_get_int(q1, &n), TETHER_ESTALE);
}

/* ==== enter and leave ====================================================== */

static void test_enter_leave(tether_runtime_t rt) {
  tether_scope_t a, b, zero = {0};
  tether_scope_t out = {8080};
  tether_state_t s1, s2, s3;
  int64_t n;
  int i, ok = 1;

  printf("scopes: enter and leave\n");
  CHECK_OK(tether_scope_new(rt, &a));
  CHECK_OK(tether_scope_new(rt, &b));

  /* Leaving must undo the innermost enter. */
  CHECK_ERR(tether_scope_leave(a), TETHER_EINVAL); /* not entered at all */
  CHECK_OK(tether_scope_enter(a));
  CHECK_OK(tether_scope_enter(b));
  CHECK_ERR(tether_scope_leave(a), TETHER_EINVAL); /* b is innermost */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s1));   /* still b's: the refusal changed nothing */
  CHECK_OK(tether_scope_leave(b));
  CHECK_ERR(tether_scope_leave(b), TETHER_EINVAL); /* not entered any more */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s2)); /* a's */
  CHECK_OK(tether_scope_leave(a));
  CHECK_ERR(tether_scope_leave(a), TETHER_EINVAL);

  /* Enters of one scope nest too: it stays current until the last leave. */
  CHECK_OK(tether_scope_enter(a));
  CHECK_OK(tether_scope_enter(a));
  CHECK_OK(tether_scope_leave(a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s3)); /* a's */
  CHECK_OK(tether_scope_leave(a));

  /* At most 16 nested enters. */
  for (i = 0; i < 16; i++)
    if (!CHECK_OK(tether_scope_enter(a))) ok = 0;
  if (ok) {
    CHECK_ERR(tether_scope_enter(a), TETHER_ENOMEM);
    CHECK_ERR(tether_scope_enter(b), TETHER_ENOMEM);
  }
  for (i = 0; i < 16; i++) CHECK_OK(tether_scope_leave(a));
  CHECK_ERR(tether_scope_leave(a), TETHER_EINVAL);

  CHECK_OK(tether_scope_free(b));
  CHECK_ERR(tether_state_get_int(s1, &n), TETHER_ESTALE);
  CHECK_OK(tether_state_get_int(s2, &n));
  CHECK_OK(tether_scope_free(a));
  CHECK_ERR(tether_state_get_int(s2, &n), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_int(s3, &n), TETHER_ESTALE);
  CHECK_ERR(tether_scope_free(a), TETHER_ESTALE); /* twice */

  /* Bad handles and arguments. */
  CHECK_ERR(tether_scope_new(rt, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_scope_enter(zero), TETHER_ESTALE);
  CHECK_ERR(tether_scope_leave(zero), TETHER_ESTALE);
  CHECK_ERR(tether_scope_free(zero), TETHER_ESTALE);
  CHECK_ERR(tether_scope_free((tether_scope_t){0x7777777777777777ull}), TETHER_ESTALE);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s1));
  CHECK_ERR(tether_scope_free((tether_scope_t){s1.id}), TETHER_ESTALE); /* a state is no scope */
  CHECK_ERR(tether_scope_enter((tether_scope_t){s1.id}), TETHER_ESTALE);
  CHECK_OK(tether_state_get_int(s1, &n));
  CHECK_OK(tether_state_free(s1));
  {
    tether_runtime_t dead;
    CHECK_OK(tether_runtime_new(NULL, &dead));
    CHECK_OK(tether_runtime_free(dead));
    CHECK_ERR(tether_scope_new(dead, &out), TETHER_ESTALE);
  }
  CHECK_INT_EQ(out.id, 8080);
}

/* ==== freeing a scope from a callback of its own observer ================= */

static void free_from_callback(tether_runtime_t rt, unsigned flags) {
  const char *kind = (flags & TETHER_OBSERVE_SYNC) ? "SYNC" : "loop";
  tether_scope_t sc;
  tether_state_t s, other;
  tether_observer_t o;
  thing_t freer, sibling, t_other;
  int64_t n;

  printf("scopes: freeing a scope from its own %s observer\n", kind);
  thing_init(&freer, "frees its scope");
  thing_init(&sibling, "sibling in the scope");
  thing_init(&t_other, "observer outside the scope");
  CHECK_OK(tether_scope_new(rt, &sc));
  CHECK_OK(tether_scope_enter(sc));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  freer.scope_to_free = sc;
  freer.probe = s;
  CHECK_OK(tether_observe(s, NULL, flags, free_scope, &freer, thing_destroy, &o));
  CHECK_OK(tether_observe(s, NULL, flags, plain, &sibling, thing_destroy, &o));
  CHECK_OK(tether_scope_leave(sc));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &other));
  CHECK_OK(tether_observe(other, NULL, flags, plain, &t_other, thing_destroy, &o));

  CHECK_OK(tether_state_set_int(s, 1)); /* the write was applied before the callback */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&freer), 1);
  CHECK_INT_EQ(thing_get(&freer.rc), TETHER_OK);
  CHECK_INT_EQ(thing_get(&freer.rc2), TETHER_ESTALE); /* stale at once */
  EXPECT_DESTROYED_ONCE(&freer);                      /* after its call returned */
  EXPECT_DESTROYED_ONCE(&sibling);
  CHECK_INT_EQ(CALLS(&sibling), 0); /* its state was freed before its turn */
  CHECK_ERR(tether_state_get_int(s, &n), TETHER_ESTALE);
  CHECK_ERR(tether_scope_free(sc), TETHER_ESTALE);

  /* Nothing outside the scope was touched. */
  CHECK_OK(tether_state_set_int(other, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&t_other), 1);
  CHECK_OK(tether_state_free(other));
  EXPECT_DESTROYED_ONCE(&t_other);
}

/* ==== other threads, other runtimes ======================================= */

typedef struct maker {
  tether_runtime_t rt;
  tether_state_t s;
  thing_t *t;
  int rc;
  int leave_rc;
} maker_t;

static void *make_on_thread(void *arg) {
  maker_t *m = arg;
  tether_observer_t o;
  m->rc = tether_state_new_int(m->rt, 5, 0, &m->s);
  if (m->rc == TETHER_OK) m->rc = tether_observe(m->s, NULL, 0, plain, m->t, thing_destroy, &o);
  return NULL;
}

typedef struct leaver {
  tether_scope_t sc;
  int rc;
} leaver_t;

static void *leave_on_thread(void *arg) {
  leaver_t *l = arg;
  l->rc = tether_scope_leave(l->sc); /* this thread never entered it */
  return NULL;
}

static void test_threads(tether_runtime_t rt) {
  tether_runtime_t rt2;
  tether_scope_t sc;
  tether_state_t mine, in_rt2;
  thing_t t_thread, t_mine;
  tether_observer_t o;
  maker_t m;
  leaver_t l;
  pthread_t th;
  int64_t n = 0;

  printf("scopes: other threads and other runtimes\n");
  thing_init(&t_thread, "made on another thread");
  thing_init(&t_mine, "made on this thread");
  CHECK_OK(tether_runtime_new(NULL, &rt2));
  CHECK_OK(tether_scope_new(rt, &sc));
  CHECK_OK(tether_scope_enter(sc));
  CHECK_OK(tether_state_new_int(rt, 1, 0, &mine));
  CHECK_OK(tether_observe(mine, NULL, 0, plain, &t_mine, thing_destroy, &o));
  /* Another thread creates objects while this thread is inside the scope. */
  m.rt = rt;
  m.t = &t_thread;
  m.rc = 1;
  pthread_create(&th, NULL, make_on_thread, &m);
  pthread_join(th, NULL);
  CHECK_INT_EQ(m.rc, TETHER_OK);
  /* Another thread cannot leave this thread's scope. */
  l.sc = sc;
  l.rc = 1;
  pthread_create(&th, NULL, leave_on_thread, &l);
  pthread_join(th, NULL);
  CHECK_INT_EQ(l.rc, TETHER_EINVAL);
  /* Another runtime's objects are not this scope's either. */
  CHECK_OK(tether_state_new_int(rt2, 2, 0, &in_rt2));
  CHECK_OK(tether_scope_leave(sc));

  CHECK_OK(tether_scope_free(sc));
  EXPECT_DESTROYED_ONCE(&t_mine);
  CHECK_ERR(tether_state_get_int(mine, &n), TETHER_ESTALE);
  CHECK_OK(tether_state_get_int(m.s, &n));
  CHECK_INT_EQ(n, 5);
  CHECK_INT_EQ(DESTROYED(&t_thread), 0);
  CHECK_OK(tether_state_get_int(in_rt2, &n));
  CHECK_INT_EQ(n, 2);

  CHECK_OK(tether_state_free(m.s));
  EXPECT_DESTROYED_ONCE(&t_thread);
  CHECK_OK(tether_runtime_free(rt2));
}

/* ==== a scope freed while entered; a runtime freed with live scopes ======= */

static void test_free_while_entered(tether_runtime_t rt) {
  tether_scope_t sc, fresh;
  tether_state_t before, later, in_fresh;
  int64_t n;
  int rc;

  printf("scopes: freeing a scope that is still entered\n");
  CHECK_OK(tether_scope_new(rt, &sc));
  CHECK_OK(tether_scope_enter(sc));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &before));
  CHECK_OK(tether_scope_free(sc));
  CHECK_ERR(tether_state_get_int(before, &n), TETHER_ESTALE);
  /* The enter is now a no-op: later objects belong to no scope. */
  CHECK_OK(tether_state_new_int(rt, 7, 0, &later));
  rc = tether_scope_leave(sc);
  CHECK(rc == TETHER_OK || rc == TETHER_ESTALE); /* either way, nothing to undo */
  CHECK_OK(tether_state_get_int(later, &n));
  CHECK_INT_EQ(n, 7);
  /* Scopes work normally afterwards. */
  CHECK_OK(tether_scope_new(rt, &fresh));
  CHECK_OK(tether_scope_enter(fresh));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &in_fresh));
  CHECK_OK(tether_scope_leave(fresh));
  CHECK_OK(tether_scope_free(fresh));
  CHECK_ERR(tether_state_get_int(in_fresh, &n), TETHER_ESTALE);
  CHECK_OK(tether_state_get_int(later, &n));
  CHECK_OK(tether_state_free(later));
}

static void test_runtime_teardown(void) {
  tether_runtime_t rt;
  tether_scope_t sc, child;
  tether_state_t s, c;
  tether_binding_t b;
  tether_observer_t o;
  thing_t t1, t2;

  printf("scopes: freeing a runtime with live scopes\n");
  thing_init(&t1, "in a live scope");
  thing_init(&t2, "in a live child scope");
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  CHECK_OK(tether_scope_new(rt, &sc));
  CHECK_OK(tether_scope_enter(sc));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  CHECK_OK(tether_observe(s, NULL, 0, plain, &t1, thing_destroy, &o));
  CHECK_OK(tether_state_binding(s, &b));
  CHECK_OK(tether_scope_new(rt, &child));
  CHECK_OK(tether_scope_enter(child));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &c));
  CHECK_OK(tether_observe(c, NULL, TETHER_OBSERVE_SYNC, plain, &t2, thing_destroy, &o));
  CHECK_OK(tether_scope_leave(child));
  CHECK_OK(tether_scope_leave(sc));
  CHECK_OK(tether_runtime_free(rt));
  EXPECT_DESTROYED_ONCE(&t1);
  EXPECT_DESTROYED_ONCE(&t2);
  CHECK_ERR(tether_scope_free(sc), TETHER_ESTALE);
  CHECK_ERR(tether_scope_free(child), TETHER_ESTALE);
  CHECK_ERR(tether_binding_free(b), TETHER_ESTALE);
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(scopes_owns) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_owns(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("scopes_owns");
}

TEST_CASE(scopes_nested) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_nested(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("scopes_nested");
}

TEST_CASE(scopes_enter_leave) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_enter_leave(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("scopes_enter_leave");
}

TEST_CASE(scopes_free_from_callback_sync) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  free_from_callback(rt, TETHER_OBSERVE_SYNC);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("scopes_free_from_callback_sync");
}

TEST_CASE(scopes_free_from_callback_loop) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  free_from_callback(rt, 0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("scopes_free_from_callback_loop");
}

TEST_CASE(scopes_threads) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_threads(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("scopes_threads");
}

TEST_CASE(scopes_free_while_entered) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_free_while_entered(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("scopes_free_while_entered");
}

TEST_CASE(scopes_runtime_teardown) {
  test_runtime_teardown();
  return check_report("scopes_runtime_teardown");
}
