/*
 * computed.c — computed values: SwiftUI's computed properties, read in a body.
 *
 *     @Observable final class Order {
 *         var price = 350, qty = 2
 *         var total: Int { price * qty }     // derived, never stored
 *     }
 *
 * A computed is a C callback that reads states (and other computeds) with the
 * ordinary get functions and fills in a result. The runtime records what it
 * read and keeps the result. What this program shows, each with a check:
 *  - lazy: the callback does not run until someone reads the value;
 *  - cached: two reads, one call; many writes, then one read: one call;
 *  - glitch-free: in the diamond A -> B, A -> C, (B, C) -> D, D runs once per
 *    change of A and never sees B new with C old;
 *  - equality cutoff: a computed that recomputes to an equal value does not
 *    re-run the computeds that read it, nor wake effects, observers or
 *    trackings downstream;
 *  - dynamic dependencies: after a branch switches, the state no longer read
 *    no longer wakes it;
 *  - cycles (A reads B, B reads A; a computed reading itself) are reported to
 *    the reader as TETHER_ECYCLE, not a crash or a stack overflow, and the
 *    graph recovers when the cycle is broken;
 *  - an error returned by the callback is cached, with its message, until a
 *    dependency changes;
 *  - tether_untracked_begin/end: a read that is not a dependency;
 *  - tether_computed_observe: called with old/new only when the value really
 *    changed (change->computed set, change->state {0}), also for a path into
 *    an object-valued computed;
 *  - tether_computed_get_path: part of an object-valued computed, a
 *    dependency on the whole computed even while the path names nothing;
 *  - chains of computeds, batches, freed states and freed computeds (their
 *    readers get TETHER_ESTALE), runtime teardown (each destroy exactly once),
 *    the in-place value setters a callback fills its result with, and bad
 *    input.
 *
 * Build: cc -std=c99 computed.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* One lock for the bookkeeping below (callbacks may run on the loop thread).
 * Never held while calling a tether_ function. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t main_thread;

/* ---- a computed's user_data: what it reads and how often it ran ---------- */

#define MAX_SEEN 32

typedef struct node {
  const char *name;
  tether_runtime_t rt;
  tether_state_t s[3];    /* states it reads (meaning depends on the callback) */
  tether_computed_t c[3]; /* computeds it reads */
  tether_computed_t self; /* for the computed that reads itself */
  int64_t mul, add;       /* linear(): result = input * mul + add */
  int calls;              /* how many times the callback ran */
  int result_not_null;    /* times `result` was not null on entry: must stay 0 */
  int off_thread;         /* times it ran on a thread other than main */
  int destroyed;          /* destroy calls: must end at exactly 1 */
  pthread_t destroy_thread;
  int last_rc;            /* a tether_ call made inside the callback */
  int untracked_rc[4];    /* results of the untracked begin/end calls */
  int nseen;              /* the diamond's D: what it saw */
  int64_t seen[MAX_SEEN][2];
} node_t;

static void node_init(node_t *n, const char *name, tether_runtime_t rt) {
  memset(n, 0, sizeof *n);
  n->name = name;
  n->rt = rt;
  n->mul = 1;
}

/* Every compute callback starts here: count the call, check the result slot
 * is null on entry (the header's promise), note the thread. */
static void enter(node_t *n, const tether_value_t *result) {
  int not_null = tether_value_type(result) != TETHER_TYPE_NULL;
  int off = !pthread_equal(pthread_self(), main_thread);
  pthread_mutex_lock(&mu);
  n->calls++;
  n->result_not_null += not_null;
  n->off_thread += off;
  pthread_mutex_unlock(&mu);
}

static void node_destroy(void *user_data) {
  node_t *n = user_data;
  pthread_mutex_lock(&mu);
  n->destroyed++;
  n->destroy_thread = pthread_self();
  pthread_mutex_unlock(&mu);
}

static int locked_int(const int *field) {
  int v;
  pthread_mutex_lock(&mu);
  v = *field;
  pthread_mutex_unlock(&mu);
  return v;
}
#define CALLS(n) locked_int(&(n)->calls)
#define DESTROYED(n) locked_int(&(n)->destroyed)

/* ---- compute callbacks -------------------------------------------------- */

/* result = s[0] * mul + add: a computed over one state. */
static int linear_of_state(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  int64_t x;
  int rc;
  enter(n, result);
  if ((rc = tether_state_get_int(n->s[0], &x)) != TETHER_OK) return rc; /* propagate */
  return tether_value_set_int(result, x * n->mul + n->add);
}

/* result = c[0] * mul + add: a computed over another computed. */
static int linear_of_computed(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  int64_t x;
  int rc;
  enter(n, result);
  if ((rc = tether_computed_get_int(n->c[0], &x)) != TETHER_OK) return rc;
  return tether_value_set_int(result, x * n->mul + n->add);
}

/* The diamond's D: B + C, remembering which (B, C) pair it saw. */
static int diamond_sum(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  int64_t b, c;
  int rc;
  enter(n, result);
  if ((rc = tether_computed_get_int(n->c[0], &b)) != TETHER_OK) return rc;
  if ((rc = tether_computed_get_int(n->c[1], &c)) != TETHER_OK) return rc;
  pthread_mutex_lock(&mu);
  if (n->nseen < MAX_SEEN) {
    n->seen[n->nseen][0] = b;
    n->seen[n->nseen][1] = c;
  }
  n->nseen++;
  pthread_mutex_unlock(&mu);
  return tether_value_set_int(result, b + c);
}

/* s[0] % 2: many inputs, two outputs — the equality cutoff's favourite. */
static int parity(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  int64_t x;
  int rc;
  enter(n, result);
  if ((rc = tether_state_get_int(n->s[0], &x)) != TETHER_OK) return rc;
  return tether_value_set_int(result, ((x % 2) + 2) % 2);
}

/* flag s[0] ? s[1] : s[2]: a dependency set that changes with the branch. */
static int pick(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  bool flag;
  int64_t x;
  int rc;
  enter(n, result);
  if ((rc = tether_state_get_bool(n->s[0], &flag)) != TETHER_OK) return rc;
  if ((rc = tether_state_get_int(flag ? n->s[1] : n->s[2], &x)) != TETHER_OK) return rc;
  return tether_value_set_int(result, x);
}

/* s[0] + s[1], where s[1] is read untracked (twice nested, to show nesting). */
static int plus_untracked(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  int64_t a, b = 0;
  int rc, r0, r1, r2, r3;
  enter(n, result);
  if ((rc = tether_state_get_int(n->s[0], &a)) != TETHER_OK) return rc;
  r0 = tether_untracked_begin(n->rt);
  r1 = tether_untracked_begin(n->rt); /* nests */
  rc = tether_state_get_int(n->s[1], &b);
  r2 = tether_untracked_end(n->rt);
  r3 = tether_untracked_end(n->rt);
  pthread_mutex_lock(&mu);
  n->untracked_rc[0] = r0;
  n->untracked_rc[1] = r1;
  n->untracked_rc[2] = r2;
  n->untracked_rc[3] = r3;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, a + b);
}

/* An object-valued computed: {"name": s[0], "age": s[1]}. */
static int profile(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  tether_value_t *obj = NULL, *name = NULL, *age = NULL;
  int rc;
  enter(n, result);
  rc = tether_state_get(n->s[0], &name);
  if (rc == TETHER_OK) rc = tether_state_get(n->s[1], &age);
  if (rc == TETHER_OK) rc = tether_value_new_object(&obj);
  if (rc == TETHER_OK) rc = tether_value_object_set(obj, "name", -1, name);
  if (rc == TETHER_OK) rc = tether_value_object_set(obj, "age", -1, age);
  if (rc == TETHER_OK) rc = tether_value_assign(result, obj); /* cheap: shared */
  tether_value_free(obj);
  tether_value_free(name);
  tether_value_free(age);
  return rc;
}

/* An address no tether_value_t can have: out-params left alone on error. */
static char sentinel_object;
#define SENTINEL_VALUE ((tether_value_t *)(void *)&sentinel_object)

/* The length of c[0]'s "/name", read with tether_computed_get_path; a
 * missing member counts as -1 (the read still depends on c[0]). */
static int name_length(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  tether_value_t *name = NULL;
  char buf[64];
  size_t len = 0;
  int rc;
  enter(n, result);
  rc = tether_computed_get_path(n->c[0], "/name", &name);
  n->last_rc = rc;
  if (rc == TETHER_ENOTFOUND) return tether_value_set_int(result, -1);
  if (rc != TETHER_OK) return rc;
  rc = tether_value_get_string(name, buf, sizeof buf, &len);
  tether_value_free(name);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, (int64_t)len);
}

/* The profile object while s[2] is true, else {}: a computed whose value
 * sometimes has no "/name". */
static int profile_or_empty(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  tether_value_t *empty = NULL;
  bool full = false;
  int rc = tether_state_get_bool(n->s[2], &full);
  if (rc != TETHER_OK) return rc;
  if (full) return profile(result, user_data);
  enter(n, result);
  rc = tether_value_new_object(&empty);
  if (rc == TETHER_OK) rc = tether_value_assign(result, empty);
  tether_value_free(empty);
  return rc;
}

/* One half of a cycle: flag s[0] ? c[0] + 1 : 100. With the flag set it
 * reads the other half, which reads this one. */
static int cycle_a(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  bool flag;
  int64_t x;
  int rc;
  enter(n, result);
  if ((rc = tether_state_get_bool(n->s[0], &flag)) != TETHER_OK) return rc;
  if (!flag) return tether_value_set_int(result, 100);
  rc = tether_computed_get_int(n->c[0], &x);
  pthread_mutex_lock(&mu);
  n->last_rc = rc;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, x + 1);
}

/* A computed that reads itself. */
static int reads_itself(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  int64_t x;
  int rc;
  enter(n, result);
  rc = tether_computed_get_int(n->self, &x);
  pthread_mutex_lock(&mu);
  n->last_rc = rc;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, x + 1);
}

/* Reads the member "/rate" of the config state s[0]; when it is missing the
 * read fails with TETHER_ENOTFOUND (and a message naming "rate"), and the
 * callback returns that error: every reader gets it until config changes. */
static int rate_of(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  tether_value_t *rate = NULL;
  int rc;
  enter(n, result);
  if ((rc = tether_state_get_path(n->s[0], "/rate", &rate)) != TETHER_OK) return rc;
  rc = tether_value_assign(result, rate);
  tether_value_free(rate);
  return rc;
}

/* Returns an error code without any failing tether_ call before it. */
static int bare_error(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  enter(n, result);
  return TETHER_ERANGE;
}

/* Tries to write s[0] (a compute callback must not write: derived values
 * have no side effects), remembers what the write returned, yields 1. */
static int tries_to_write(tether_value_t *result, void *user_data) {
  node_t *n = user_data;
  int rc;
  enter(n, result);
  rc = tether_state_set_int(n->s[0], 99);
  pthread_mutex_lock(&mu);
  n->last_rc = rc;
  pthread_mutex_unlock(&mu);
  return tether_value_set_int(result, 1);
}

/* ---- observer recorder (for tether_computed_observe) -------------------- */

#define MAX_CALLS 16

typedef struct rec {
  int calls;
  int destroyed;
  char old_json[MAX_CALLS][96];
  char new_json[MAX_CALLS][96];
  uint64_t computed_id[MAX_CALLS];
  uint64_t state_id[MAX_CALLS];
  uint64_t observer_id[MAX_CALLS];
  unsigned flags[MAX_CALLS];
  char path[MAX_CALLS][32];
} rec_t;

static void record(const tether_change_t *ch, void *user_data) {
  rec_t *r = user_data;
  char o[96], nw[96];
  value_json(ch->old_value, o, sizeof o);
  value_json(ch->new_value, nw, sizeof nw);
  pthread_mutex_lock(&mu);
  if (r->calls < MAX_CALLS) {
    int i = r->calls;
    snprintf(r->old_json[i], sizeof r->old_json[i], "%s", o);
    snprintf(r->new_json[i], sizeof r->new_json[i], "%s", nw);
    r->computed_id[i] = ch->computed.id;
    r->state_id[i] = ch->state.id;
    r->observer_id[i] = ch->observer.id;
    r->flags[i] = ch->flags;
    snprintf(r->path[i], sizeof r->path[i], "%s", ch->path ? ch->path : "(NULL)");
  }
  r->calls++;
  pthread_mutex_unlock(&mu);
}

static void rec_destroy(void *user_data) {
  rec_t *r = user_data;
  pthread_mutex_lock(&mu);
  r->destroyed++;
  pthread_mutex_unlock(&mu);
}

/* Copies call i of r (under the lock) so checks can read it safely. */
static rec_t rec_snapshot(rec_t *r) {
  rec_t copy;
  pthread_mutex_lock(&mu);
  copy = *r;
  pthread_mutex_unlock(&mu);
  return copy;
}

/* ---- an effect and a tracking that only count --------------------------- */

typedef struct counter {
  tether_computed_t c; /* the computed it reads */
  tether_state_t poke; /* ... and, when has_poke, this state too */
  int has_poke;
  int runs;            /* effect runs, or tracking fires */
  int64_t last;        /* last value read */
  int last_rc;
  int destroyed;
} counter_t;

static void effect_reads_computed(tether_effect_t e, void *user_data) {
  counter_t *k = user_data;
  int64_t v = -1;
  int rc = tether_computed_get_int(k->c, &v);
  (void)e;
  if (k->has_poke) {
    int64_t p;
    (void)tether_state_get_int(k->poke, &p);
  }
  pthread_mutex_lock(&mu);
  k->runs++;
  k->last = v;
  k->last_rc = rc;
  pthread_mutex_unlock(&mu);
}

static void tracking_apply(void *user_data) {
  counter_t *k = user_data;
  int64_t v = -1;
  (void)tether_computed_get_int(k->c, &v);
}

static void tracking_fired(tether_tracking_t t, uint64_t revision, void *user_data) {
  counter_t *k = user_data;
  (void)t;
  (void)revision;
  pthread_mutex_lock(&mu);
  k->runs++;
  pthread_mutex_unlock(&mu);
}

static void counter_destroy(void *user_data) {
  counter_t *k = user_data;
  pthread_mutex_lock(&mu);
  k->destroyed++;
  pthread_mutex_unlock(&mu);
}

/* ---- small helpers ------------------------------------------------------ */

static int64_t computed_int(tether_computed_t c) {
  int64_t v = -999;
  CHECK_OK(tether_computed_get_int(c, &v));
  return v;
}

static int64_t state_int(tether_state_t s) {
  int64_t v = -999;
  CHECK_OK(tether_state_get_int(s, &v));
  return v;
}

static uint64_t revision_of(tether_runtime_t rt) {
  uint64_t r = 0;
  CHECK_OK(tether_runtime_revision(rt, &r));
  return r;
}

/* ==== the scenarios ====================================================== */

/* The result slot is an ordinary value: the in-place setters a compute
 * callback uses work on any owned value too. */
static void value_setters(void) {
  tether_value_t *v = NULL, *obj = NULL, *copy = NULL, *item = NULL;
  bool b = false;
  double d = 0;
  char buf[16];
  size_t len = 0;

  if (!CHECK_OK(tether_value_new_int(7, &v))) return;
  CHECK_OK(tether_value_set_string(v, "tea", -1));
  CHECK_INT_EQ(tether_value_type(v), TETHER_TYPE_STRING);
  CHECK_OK(tether_value_get_string(v, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "tea");
  CHECK_OK(tether_value_set_string(v, "a\0b", 3)); /* a length lets NUL in */
  CHECK_OK(tether_value_length(v, &len));
  CHECK_INT_EQ(len, 3);
  CHECK_OK(tether_value_set_bool(v, true));
  CHECK_OK(tether_value_get_bool(v, &b));
  CHECK(b);
  CHECK_OK(tether_value_set_double(v, 2.5));
  CHECK_OK(tether_value_get_double(v, &d));
  CHECK(d == 2.5);
  CHECK_OK(tether_value_set_int(v, -3));
  CHECK_VALUE(v, "-3");
  CHECK_OK(tether_value_set_null(v));
  CHECK_INT_EQ(tether_value_type(v), TETHER_TYPE_NULL);

  /* assign copies: changing the source afterwards leaves v alone. */
  obj = JSON("{\"items\":[1,2]}");
  CHECK_OK(tether_value_assign(v, obj));
  CHECK_VALUE(v, "{\"items\":[1,2]}");
  item = JSON("3");
  CHECK_OK(tether_value_set_path(obj, "/items/-", item));
  CHECK_VALUE(obj, "{\"items\":[1,2,3]}");
  CHECK_VALUE(v, "{\"items\":[1,2]}");
  CHECK_OK(tether_value_copy(v, &copy));
  CHECK_OK(tether_value_set_int(v, 1)); /* a copy is independent too */
  CHECK_VALUE(copy, "{\"items\":[1,2]}");

  /* Bad input: nothing changes. */
  CHECK_ERR(tether_value_set_int(NULL, 1), TETHER_EINVAL);
  CHECK_ERR(tether_value_set_null(NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_set_bool(NULL, true), TETHER_EINVAL);
  CHECK_ERR(tether_value_set_double(NULL, 1.0), TETHER_EINVAL);
  CHECK_ERR(tether_value_set_string(NULL, "x", -1), TETHER_EINVAL);
  CHECK_ERR(tether_value_set_string(v, NULL, 3), TETHER_EINVAL);
  CHECK_ERR(tether_value_set_string(v, "\xff\xfe", 2), TETHER_EINVAL); /* not UTF-8 */
  CHECK_VALUE(v, "1");
  CHECK_ERR(tether_value_assign(NULL, obj), TETHER_EINVAL);
  CHECK_ERR(tether_value_assign(v, NULL), TETHER_EINVAL);
  CHECK_VALUE(v, "1");
  CHECK_OK(tether_value_set_string(v, NULL, 0)); /* NULL with length 0 is "" */
  CHECK_VALUE(v, "\"\"");

  tether_value_free(v);
  tether_value_free(obj);
  tether_value_free(copy);
  tether_value_free(item);
}

/* Lazy and cached: price * qty. */
static void lazy_and_cached(tether_runtime_t rt) {
  tether_state_t qty;
  tether_computed_t total;
  node_t n;
  uint64_t rev;

  node_init(&n, "total", rt);
  CHECK_OK(tether_state_new_int(rt, 2, 0, &qty));
  n.s[0] = qty;
  n.mul = 350; /* total = qty * 350 */
  CHECK_OK(tether_computed_new(rt, linear_of_state, &n, node_destroy, &total));
  CHECK_INT_EQ(CALLS(&n), 0); /* lazy: nobody has read it yet */

  CHECK_INT_EQ(computed_int(total), 700);
  CHECK_INT_EQ(CALLS(&n), 1);
  CHECK_INT_EQ(computed_int(total), 700); /* cached: */
  CHECK_INT_EQ(CALLS(&n), 1);             /* two reads, one call */

  /* A write marks it stale but does not run it (nobody is watching). */
  rev = revision_of(rt);
  CHECK_OK(tether_state_set_int(qty, 3));
  CHECK_OK(tether_state_set_int(qty, 4));
  CHECK_OK(tether_state_set_int(qty, 5));
  CHECK_INT_EQ(revision_of(rt), rev + 3); /* a computed is not a state: no commits */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&n), 1);
  CHECK_INT_EQ(computed_int(total), 1750); /* three writes, one recompute */
  CHECK_INT_EQ(CALLS(&n), 2);
  CHECK_OK(tether_state_set_int(qty, 5)); /* equal write: still valid */
  CHECK_INT_EQ(computed_int(total), 1750);
  CHECK_INT_EQ(CALLS(&n), 2);

  /* The other readers. */
  {
    double d = 0;
    char buf[32];
    size_t len = 0;
    tether_value_t *v = NULL;
    bool b;
    CHECK_OK(tether_computed_get_double(total, &d)); /* an int reads as a double */
    CHECK(d == 1750.0);
    CHECK_OK(tether_computed_get_json(total, 0, buf, sizeof buf, &len));
    CHECK_STR_EQ(buf, "1750");
    CHECK_INT_EQ(len, 4);
    CHECK_OK(tether_computed_get_json(total, 0, NULL, 0, &len)); /* ask the size */
    CHECK_INT_EQ(len, 4);
    CHECK_OK(tether_computed_get(total, &v));
    CHECK_VALUE(v, "1750");
    tether_value_free(v);
    CHECK_ERR(tether_computed_get_bool(total, &b), TETHER_ETYPE);
    CHECK_INT_EQ(CALLS(&n), 2); /* none of these recomputed */
  }

  /* Callbacks run on the reading thread (here: main), with a null result. */
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(n.off_thread, 0);
  CHECK_INT_EQ(n.result_not_null, 0);
  pthread_mutex_unlock(&mu);

  CHECK_OK(tether_computed_free(total));
  CHECK_INT_EQ(DESTROYED(&n), 1);
  CHECK_OK(tether_state_free(qty));
}

/* The diamond: B = 2A, C = A + 1, D = B + C. */
static void diamond(tether_runtime_t rt) {
  tether_state_t a;
  tether_computed_t hb, hc, hd;
  tether_observer_t obs;
  tether_effect_t fx;
  node_t b, c, d;
  rec_t r;
  counter_t k;
  int i, bad = 0, nseen;
  int64_t v;

  node_init(&b, "B", rt);
  node_init(&c, "C", rt);
  node_init(&d, "D", rt);
  memset(&r, 0, sizeof r);
  memset(&k, 0, sizeof k);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  b.s[0] = a;
  b.mul = 2;
  c.s[0] = a;
  c.add = 1;
  CHECK_OK(tether_computed_new(rt, linear_of_state, &b, node_destroy, &hb));
  CHECK_OK(tether_computed_new(rt, linear_of_state, &c, node_destroy, &hc));
  d.c[0] = hb;
  d.c[1] = hc;
  CHECK_OK(tether_computed_new(rt, diamond_sum, &d, node_destroy, &hd));

  CHECK_INT_EQ(computed_int(hd), 4); /* 2 + 2 */
  CHECK_INT_EQ(CALLS(&b), 1);
  CHECK_INT_EQ(CALLS(&c), 1);
  CHECK_INT_EQ(CALLS(&d), 1);

  /* Unobserved: three writes, then one read -> one run of each. */
  CHECK_OK(tether_state_set_int(a, 2));
  CHECK_OK(tether_state_set_int(a, 3));
  CHECK_OK(tether_state_set_int(a, 4));
  CHECK_INT_EQ(computed_int(hd), 13); /* 8 + 5 */
  CHECK_INT_EQ(CALLS(&b), 2);
  CHECK_INT_EQ(CALLS(&c), 2);
  CHECK_INT_EQ(CALLS(&d), 2);

  /* Observed (kept up to date): a SYNC observer and a SYNC effect on D. Each
   * write to A runs D exactly once, and each of them once. */
  k.c = hd;
  CHECK_OK(tether_computed_observe(hd, NULL, TETHER_OBSERVE_SYNC, record, &r, rec_destroy, &obs));
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, effect_reads_computed, NULL, &k,
                             counter_destroy, &fx));
  CHECK_INT_EQ(locked_int(&k.runs), 1); /* SYNC: ran before tether_effect_new returned */
  CHECK_INT_EQ(CALLS(&d), 2);           /* ... reading the cached D */
  for (i = 5; i <= 8; i++) {
    CHECK_OK(tether_state_set_int(a, i));
    CHECK_INT_EQ(CALLS(&b), 2 + (i - 4));
    CHECK_INT_EQ(CALLS(&c), 2 + (i - 4));
    CHECK_INT_EQ(CALLS(&d), 2 + (i - 4)); /* once per change of A */
    CHECK_INT_EQ(locked_int(&r.calls), i - 4);
    CHECK_INT_EQ(locked_int(&k.runs), 1 + (i - 4));
  }
  {
    rec_t s = rec_snapshot(&r);
    CHECK_STR_EQ(s.old_json[0], "13");
    CHECK_STR_EQ(s.new_json[0], "16"); /* A = 5: 10 + 6 */
    CHECK_STR_EQ(s.old_json[3], "22");
    CHECK_STR_EQ(s.new_json[3], "25"); /* A = 8: 16 + 9 */
  }
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(k.last, 25);
  CHECK_INT_EQ(k.last_rc, TETHER_OK);
  pthread_mutex_unlock(&mu);

  /* A batch of writes to A: one run of D at the end, with the final A. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(a, 100));
  CHECK_OK(tether_state_set_int(a, 10));
  CHECK_INT_EQ(locked_int(&r.calls), 4); /* held back */
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(locked_int(&r.calls), 5);
  CHECK_INT_EQ(locked_int(&k.runs), 6);
  CHECK_OK(tether_computed_get_int(hd, &v));
  CHECK_INT_EQ(v, 31); /* 20 + 11 */

  /* Glitch-free: every (B, C) pair D ever saw belongs to one value of A:
   * B == 2A and C == A + 1, so B == 2 * (C - 1). */
  pthread_mutex_lock(&mu);
  nseen = d.nseen < MAX_SEEN ? d.nseen : MAX_SEEN;
  for (i = 0; i < nseen; i++) {
    if (d.seen[i][0] != 2 * (d.seen[i][1] - 1)) {
      bad++;
      fprintf(stderr, "computed: D saw B = %lld with C = %lld (a glitch)\n",
              (long long)d.seen[i][0], (long long)d.seen[i][1]);
    }
  }
  pthread_mutex_unlock(&mu);
  CHECK_INT_EQ(bad, 0);
  CHECK_INT_EQ(nseen, CALLS(&d));

  CHECK_OK(tether_effect_free(fx));
  CHECK_INT_EQ(locked_int(&k.destroyed), 1);
  CHECK_OK(tether_computed_free(hd));
  CHECK_INT_EQ(locked_int(&r.destroyed), 1); /* its observers end with it */
  CHECK_ERR(tether_observer_remove(obs), TETHER_ESTALE);
  CHECK_OK(tether_computed_free(hb));
  CHECK_OK(tether_computed_free(hc));
  CHECK_INT_EQ(DESTROYED(&b), 1);
  CHECK_INT_EQ(DESTROYED(&c), 1);
  CHECK_INT_EQ(DESTROYED(&d), 1);
  CHECK_OK(tether_state_free(a));
}

/* Equality cutoff: P = A % 2; Q = 10 * P. */
static void equality_cutoff(tether_runtime_t rt) {
  tether_state_t a;
  tether_computed_t hp, hq;
  tether_observer_t loop_obs, sync_obs;
  tether_effect_t fx;
  tether_tracking_t trk;
  node_t p, q;
  rec_t loop_rec, sync_rec;
  counter_t fx_count, trk_count;

  node_init(&p, "P", rt);
  node_init(&q, "Q", rt);
  memset(&loop_rec, 0, sizeof loop_rec);
  memset(&sync_rec, 0, sizeof sync_rec);
  memset(&fx_count, 0, sizeof fx_count);
  memset(&trk_count, 0, sizeof trk_count);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  p.s[0] = a;
  CHECK_OK(tether_computed_new(rt, parity, &p, node_destroy, &hp));
  q.c[0] = hp;
  q.mul = 10;
  CHECK_OK(tether_computed_new(rt, linear_of_computed, &q, node_destroy, &hq));
  CHECK_INT_EQ(computed_int(hq), 10);
  CHECK_INT_EQ(CALLS(&p), 1);
  CHECK_INT_EQ(CALLS(&q), 1);

  /* Everything that can depend on P. */
  fx_count.c = hp;
  trk_count.c = hp;
  CHECK_OK(tether_computed_observe(hp, NULL, 0, record, &loop_rec, rec_destroy, &loop_obs));
  CHECK_OK(tether_computed_observe(hp, NULL, TETHER_OBSERVE_SYNC, record, &sync_rec, rec_destroy,
                                   &sync_obs));
  CHECK_OK(tether_effect_new(rt, 0, effect_reads_computed, NULL, &fx_count, counter_destroy, &fx));
  CHECK_OK(tether_track(rt, 0, tracking_apply, tracking_fired, &trk_count, counter_destroy, &trk));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(locked_int(&fx_count.runs), 1);
  CHECK_INT_EQ(CALLS(&p), 1); /* all of them read the cached P */

  /* A: 1 -> 3. P runs again (it is observed, so kept up to date) and gets 1
   * again: nothing downstream moves. */
  CHECK_OK(tether_state_set_int(a, 3));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&p), 2);
  CHECK_INT_EQ(locked_int(&sync_rec.calls), 0);
  CHECK_INT_EQ(locked_int(&loop_rec.calls), 0);
  CHECK_INT_EQ(locked_int(&fx_count.runs), 1);
  CHECK_INT_EQ(locked_int(&trk_count.runs), 0);
  CHECK_INT_EQ(computed_int(hq), 10);
  CHECK_INT_EQ(CALLS(&q), 1); /* Q was not re-run */
  CHECK_INT_EQ(CALLS(&p), 2);

  /* A: 3 -> 4. P becomes 0: everything downstream moves, once. */
  CHECK_OK(tether_state_set_int(a, 4));
  CHECK_INT_EQ(locked_int(&sync_rec.calls), 1); /* SYNC: before the write returned */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&p), 3);
  CHECK_INT_EQ(locked_int(&loop_rec.calls), 1);
  CHECK_INT_EQ(locked_int(&fx_count.runs), 2);
  CHECK_INT_EQ(locked_int(&trk_count.runs), 1);
  {
    rec_t s = rec_snapshot(&sync_rec);
    CHECK_STR_EQ(s.old_json[0], "1");
    CHECK_STR_EQ(s.new_json[0], "0");
    s = rec_snapshot(&loop_rec);
    CHECK_STR_EQ(s.old_json[0], "1");
    CHECK_STR_EQ(s.new_json[0], "0");
  }
  CHECK_INT_EQ(computed_int(hq), 0);
  CHECK_INT_EQ(CALLS(&q), 2);

  CHECK_OK(tether_effect_free(fx));
  CHECK_OK(tether_observer_remove(loop_obs));
  CHECK_OK(tether_observer_remove(sync_obs));
  CHECK_INT_EQ(locked_int(&loop_rec.destroyed), 1);
  CHECK_INT_EQ(locked_int(&sync_rec.destroyed), 1);
  CHECK_INT_EQ(locked_int(&fx_count.destroyed), 1);
  CHECK_INT_EQ(locked_int(&trk_count.destroyed), 1); /* fired: ended */
  CHECK_OK(tether_computed_free(hq));
  CHECK_OK(tether_computed_free(hp));
  CHECK_OK(tether_state_free(a));
}

/* Dynamic dependencies: K = flag ? x : y. */
static void dynamic_dependencies(tether_runtime_t rt) {
  tether_state_t flag, x, y;
  tether_computed_t hk;
  tether_observer_t obs;
  node_t k;
  rec_t r;

  node_init(&k, "K", rt);
  memset(&r, 0, sizeof r);
  CHECK_OK(tether_state_new_bool(rt, true, 0, &flag));
  CHECK_OK(tether_state_new_int(rt, 1, 0, &x));
  CHECK_OK(tether_state_new_int(rt, 2, 0, &y));
  k.s[0] = flag;
  k.s[1] = x;
  k.s[2] = y;
  CHECK_OK(tether_computed_new(rt, pick, &k, node_destroy, &hk));

  CHECK_INT_EQ(computed_int(hk), 1);
  CHECK_INT_EQ(CALLS(&k), 1);
  CHECK_OK(tether_state_set_int(y, 20)); /* y was never read: no effect */
  CHECK_INT_EQ(computed_int(hk), 1);
  CHECK_INT_EQ(CALLS(&k), 1);

  CHECK_OK(tether_state_set_bool(flag, false)); /* the branch switches to y */
  CHECK_INT_EQ(computed_int(hk), 20);
  CHECK_INT_EQ(CALLS(&k), 2);
  CHECK_OK(tether_state_set_int(x, 100)); /* x is no longer read: no wake */
  CHECK_INT_EQ(computed_int(hk), 20);
  CHECK_INT_EQ(CALLS(&k), 2);
  CHECK_OK(tether_state_set_int(y, 30));
  CHECK_INT_EQ(computed_int(hk), 30);
  CHECK_INT_EQ(CALLS(&k), 3);

  /* The same while observed (eager): x does not wake it at all. */
  CHECK_OK(tether_computed_observe(hk, NULL, TETHER_OBSERVE_SYNC, record, &r, rec_destroy, &obs));
  CHECK_OK(tether_state_set_int(x, 101));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&k), 3);
  CHECK_INT_EQ(locked_int(&r.calls), 0);
  CHECK_OK(tether_state_set_bool(flag, true)); /* back to x */
  CHECK_INT_EQ(locked_int(&r.calls), 1);
  CHECK_INT_EQ(CALLS(&k), 4);
  CHECK_OK(tether_state_set_int(y, 31)); /* now y is the unread one */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&k), 4);
  CHECK_INT_EQ(locked_int(&r.calls), 1);
  {
    rec_t s = rec_snapshot(&r);
    CHECK_STR_EQ(s.old_json[0], "30");
    CHECK_STR_EQ(s.new_json[0], "101");
  }

  CHECK_OK(tether_computed_free(hk));
  CHECK_INT_EQ(locked_int(&r.destroyed), 1);
  CHECK_INT_EQ(DESTROYED(&k), 1);
  CHECK_OK(tether_state_free(flag));
  CHECK_OK(tether_state_free(x));
  CHECK_OK(tether_state_free(y));
}

/* Cycles are errors for the reader, never a crash. */
static void cycles(tether_runtime_t rt) {
  tether_state_t flag;
  tether_computed_t ha, hb, hs;
  node_t a, b, s;
  int64_t v = -1;

  node_init(&a, "cycle A", rt);
  node_init(&b, "cycle B", rt);
  node_init(&s, "reads itself", rt);
  CHECK_OK(tether_state_new_bool(rt, true, 0, &flag));
  a.s[0] = flag;
  CHECK_OK(tether_computed_new(rt, cycle_a, &a, node_destroy, &ha));
  b.c[0] = ha; /* B = A + 1 */
  b.add = 1;
  CHECK_OK(tether_computed_new(rt, linear_of_computed, &b, node_destroy, &hb));
  a.c[0] = hb; /* A = flag ? B + 1 : 100 (set before anyone reads A) */

  /* A -> B -> A: the inner read of A fails with TETHER_ECYCLE; both
   * callbacks pass the error on, so the reader sees it. */
  CHECK_ERR(tether_computed_get_int(ha, &v), TETHER_ECYCLE);
  CHECK_INT_EQ(v, -1); /* out-parameters are written only on success */
  CHECK_ERR(tether_computed_get_int(hb, &v), TETHER_ECYCLE);
  CHECK_ERR(tether_computed_get_int(ha, &v), TETHER_ECYCLE); /* and again */
  CHECK(CALLS(&a) >= 1);
  CHECK(CALLS(&b) >= 1);
  /* TETHER_ECYCLE is a tether error code: it has a description. */
  CHECK(strcmp(tether_strerror(TETHER_ECYCLE), "unknown error") != 0);
  printf("computed: cycle A <-> B reported as %s (\"%s\")\n", tether_strerror(TETHER_ECYCLE),
         tether_last_error());

  /* Breaking the cycle: A no longer reads B. A's read of the flag was
   * recorded before the error, so the flag's change recomputes it. */
  CHECK_OK(tether_state_set_bool(flag, false));
  CHECK_INT_EQ(computed_int(ha), 100);
  CHECK_INT_EQ(computed_int(hb), 101);
  /* ... and closing it again. */
  CHECK_OK(tether_state_set_bool(flag, true));
  CHECK_ERR(tether_computed_get_int(hb, &v), TETHER_ECYCLE);
  CHECK_ERR(tether_computed_get_int(ha, &v), TETHER_ECYCLE);

  /* A computed that reads itself. */
  CHECK_OK(tether_computed_new(rt, reads_itself, &s, node_destroy, &hs));
  s.self = hs;
  CHECK_ERR(tether_computed_get_int(hs, &v), TETHER_ECYCLE);
  CHECK_INT_EQ(locked_int(&s.last_rc), TETHER_ECYCLE); /* what its own read got */
  CHECK_INT_EQ(CALLS(&s), 1); /* its error is cached: it has no other dependency */
  CHECK_ERR(tether_computed_get_int(hs, &v), TETHER_ECYCLE);
  CHECK_INT_EQ(CALLS(&s), 1);

  CHECK_OK(tether_computed_free(ha));
  CHECK_OK(tether_computed_free(hb));
  CHECK_OK(tether_computed_free(hs));
  CHECK_INT_EQ(DESTROYED(&a), 1);
  CHECK_INT_EQ(DESTROYED(&b), 1);
  CHECK_INT_EQ(DESTROYED(&s), 1);
  CHECK_OK(tether_state_free(flag));
}

/* An error from the callback is cached, with its message. */
static void cached_errors(tether_runtime_t rt) {
  tether_state_t config, gone;
  tether_computed_t rate, doubled, bare;
  node_t r, d, e;
  int64_t v = -1;
  int rc;

  node_init(&r, "rate", rt);
  node_init(&d, "2 * rate", rt);
  node_init(&e, "bare error", rt);
  CHECK_OK(tether_state_new_json(rt, "{\"currency\":\"EUR\"}", -1, 0, &config));
  r.s[0] = config;
  CHECK_OK(tether_computed_new(rt, rate_of, &r, node_destroy, &rate));
  d.c[0] = rate;
  d.mul = 2;
  CHECK_OK(tether_computed_new(rt, linear_of_computed, &d, node_destroy, &doubled));

  CHECK_ERR(tether_computed_get_int(rate, &v), TETHER_ENOTFOUND);
  CHECK_MENTIONS("rate"); /* the message of the failed read inside the callback */
  CHECK_INT_EQ(CALLS(&r), 1);

  /* Make this thread's last error something else, then read again: the
   * cached error comes back with its own message, without a new call. */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &gone));
  CHECK_OK(tether_state_free(gone));
  CHECK_ERR(tether_state_get_int(gone, &v), TETHER_ESTALE);
  CHECK_ERR(tether_computed_get_int(rate, &v), TETHER_ENOTFOUND);
  CHECK_MENTIONS("rate");
  CHECK_INT_EQ(CALLS(&r), 1);

  /* A computed reading it gets the error too (its callback passes it on). */
  CHECK_ERR(tether_computed_get_int(doubled, &v), TETHER_ENOTFOUND);
  CHECK_MENTIONS("rate");
  CHECK_INT_EQ(CALLS(&r), 1);
  CHECK_INT_EQ(CALLS(&d), 1);
  CHECK_ERR(tether_computed_get_int(doubled, &v), TETHER_ENOTFOUND);
  CHECK_INT_EQ(CALLS(&d), 1);

  /* A dependency changes: both run again and succeed. */
  CHECK_OK(tether_state_set_path_json(config, "/rate", "3", -1));
  CHECK_INT_EQ(computed_int(doubled), 6);
  CHECK_INT_EQ(CALLS(&r), 2);
  CHECK_INT_EQ(CALLS(&d), 2);
  CHECK_OK(tether_state_remove_path(config, "/rate"));
  CHECK_ERR(tether_computed_get_int(rate, &v), TETHER_ENOTFOUND);
  CHECK_INT_EQ(CALLS(&r), 3);
  CHECK_INT_EQ(v, -1);

  /* A callback that returns an error without a failed call first: the code
   * is what readers get. (Which message goes with it is not specified; it
   * is printed here.) */
  CHECK_OK(tether_computed_new(rt, bare_error, &e, node_destroy, &bare));
  rc = tether_computed_get_int(bare, &v);
  CHECK_INT_EQ(rc, TETHER_ERANGE);
  printf("computed: a bare TETHER_ERANGE from a callback reads with the message \"%s\"\n",
         tether_last_error());
  rc = tether_computed_get_int(bare, &v);
  CHECK_INT_EQ(rc, TETHER_ERANGE);
  CHECK_INT_EQ(CALLS(&e), 1); /* cached: it has no dependency to change */

  CHECK_OK(tether_computed_free(doubled));
  CHECK_OK(tether_computed_free(rate));
  CHECK_OK(tether_computed_free(bare));
  CHECK_INT_EQ(DESTROYED(&r), 1);
  CHECK_INT_EQ(DESTROYED(&d), 1);
  CHECK_INT_EQ(DESTROYED(&e), 1);
  CHECK_OK(tether_state_free(config));
}

/* Untracked reads: S = a + (b, untracked). */
static void untracked(tether_runtime_t rt) {
  tether_state_t a, b;
  tether_computed_t hs;
  node_t s;
  int i;

  node_init(&s, "a + untracked b", rt);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 10, 0, &b));
  s.s[0] = a;
  s.s[1] = b;
  CHECK_OK(tether_computed_new(rt, plus_untracked, &s, node_destroy, &hs));
  CHECK_INT_EQ(computed_int(hs), 11);
  CHECK_INT_EQ(CALLS(&s), 1);
  pthread_mutex_lock(&mu);
  for (i = 0; i < 4; i++) CHECK_INT_EQ(s.untracked_rc[i], TETHER_OK);
  pthread_mutex_unlock(&mu);

  CHECK_OK(tether_state_set_int(b, 20)); /* b was read untracked: no wake */
  CHECK_INT_EQ(computed_int(hs), 11);    /* the cached value, on purpose */
  CHECK_INT_EQ(CALLS(&s), 1);
  CHECK_OK(tether_state_set_int(a, 2)); /* a was tracked */
  CHECK_INT_EQ(computed_int(hs), 22);   /* and now it sees the new b */
  CHECK_INT_EQ(CALLS(&s), 2);

  /* Outside any callback an untracked section is allowed and harmless. */
  CHECK_OK(tether_untracked_begin(rt));
  CHECK_INT_EQ(state_int(b), 20);
  CHECK_OK(tether_untracked_end(rt));
  CHECK_ERR(tether_untracked_end(rt), TETHER_EINVAL); /* none open */

  CHECK_OK(tether_computed_free(hs));
  CHECK_INT_EQ(DESTROYED(&s), 1);
  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
}

/* tether_computed_observe, on the whole value and on paths inside it. */
static void observing(tether_runtime_t rt) {
  tether_state_t name, age;
  tether_computed_t prof;
  tether_observer_t whole_obs, name_obs, age_obs, init_obs;
  node_t p;
  rec_t whole, by_name, by_age, initial;
  rec_t s;
  char buf[64];
  int64_t v;

  node_init(&p, "profile", rt);
  memset(&whole, 0, sizeof whole);
  memset(&by_name, 0, sizeof by_name);
  memset(&by_age, 0, sizeof by_age);
  memset(&initial, 0, sizeof initial);
  CHECK_OK(tether_state_new_string(rt, "Ada", -1, 0, &name));
  CHECK_OK(tether_state_new_int(rt, 36, 0, &age));
  p.s[0] = name;
  p.s[1] = age;
  CHECK_OK(tether_computed_new(rt, profile, &p, node_destroy, &prof));

  CHECK_OK(tether_computed_observe(prof, NULL, 0, record, &whole, rec_destroy, &whole_obs));
  CHECK_OK(tether_computed_observe(prof, "/name", 0, record, &by_name, rec_destroy, &name_obs));
  CHECK_OK(tether_computed_observe(prof, "/age", TETHER_OBSERVE_SYNC, record, &by_age,
                                   rec_destroy, &age_obs));
  CHECK_OK(tether_computed_get_json(prof, 0, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "{\"name\":\"Ada\",\"age\":36}");

  /* age: 36 -> 37. The /age observer (SYNC) has run when the write returns;
   * the whole-value observer runs on the loop; the /name one stays asleep. */
  CHECK_OK(tether_state_set_int(age, 37));
  CHECK_INT_EQ(locked_int(&by_age.calls), 1);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(locked_int(&whole.calls), 1);
  CHECK_INT_EQ(locked_int(&by_name.calls), 0);
  s = rec_snapshot(&by_age);
  CHECK_STR_EQ(s.old_json[0], "36");
  CHECK_STR_EQ(s.new_json[0], "37");
  CHECK_STR_EQ(s.path[0], "/age");
  CHECK_INT_EQ(s.computed_id[0], prof.id); /* a computed's observer: */
  CHECK_INT_EQ(s.state_id[0], 0);          /* change->state is {0} */
  CHECK_INT_EQ(s.observer_id[0], age_obs.id);
  CHECK_INT_EQ(s.flags[0], 0);
  s = rec_snapshot(&whole);
  CHECK_STR_EQ(s.old_json[0], "{\"name\":\"Ada\",\"age\":36}");
  CHECK_STR_EQ(s.new_json[0], "{\"name\":\"Ada\",\"age\":37}");
  CHECK_STR_EQ(s.path[0], "");
  CHECK_INT_EQ(s.computed_id[0], prof.id);
  CHECK_INT_EQ(s.state_id[0], 0);

  /* name: Ada -> Grace. */
  CHECK_OK(tether_state_set_string(name, "Grace", -1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(locked_int(&by_name.calls), 1);
  CHECK_INT_EQ(locked_int(&whole.calls), 2);
  CHECK_INT_EQ(locked_int(&by_age.calls), 1);
  s = rec_snapshot(&by_name);
  CHECK_STR_EQ(s.old_json[0], "\"Ada\"");
  CHECK_STR_EQ(s.new_json[0], "\"Grace\"");
  CHECK_STR_EQ(s.path[0], "/name");
  CHECK_INT_EQ(s.computed_id[0], prof.id);

  /* An equal write: the computed does not even re-run. */
  CHECK_OK(tether_state_set_string(name, "Grace", -1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(locked_int(&whole.calls), 2);
  CHECK_INT_EQ(CALLS(&p), 3);

  /* TETHER_OBSERVE_INITIAL with SYNC: called before tether_computed_observe
   * returns, with the current value as both old and new. */
  CHECK_OK(tether_computed_observe(prof, "/name", TETHER_OBSERVE_SYNC | TETHER_OBSERVE_INITIAL,
                                   record, &initial, rec_destroy, &init_obs));
  CHECK_INT_EQ(locked_int(&initial.calls), 1);
  s = rec_snapshot(&initial);
  CHECK_INT_EQ(s.flags[0], TETHER_CHANGE_INITIAL);
  CHECK_STR_EQ(s.old_json[0], "\"Grace\"");
  CHECK_STR_EQ(s.new_json[0], "\"Grace\"");
  CHECK_INT_EQ(s.computed_id[0], prof.id);
  CHECK_OK(tether_observer_remove(init_obs));
  CHECK_INT_EQ(locked_int(&initial.destroyed), 1);

  CHECK_ERR(tether_computed_get_int(prof, &v), TETHER_ETYPE); /* it is an object */
  CHECK_OK(tether_observer_remove(name_obs));
  CHECK_INT_EQ(locked_int(&by_name.destroyed), 1);
  CHECK_ERR(tether_observer_remove(name_obs), TETHER_ESTALE);
  CHECK_OK(tether_computed_free(prof)); /* ends the other two */
  CHECK_INT_EQ(locked_int(&whole.destroyed), 1);
  CHECK_INT_EQ(locked_int(&by_age.destroyed), 1);
  CHECK_INT_EQ(locked_int(&by_name.destroyed), 1);
  CHECK_INT_EQ(DESTROYED(&p), 1);
  CHECK_OK(tether_state_free(name));
  CHECK_OK(tether_state_free(age));
}

/* tether_computed_get_path: part of a computed's value, from outside and
 * inside callbacks; the reader depends on the whole computed, also while
 * the path names nothing. */
static void reading_paths(tether_runtime_t rt) {
  tether_state_t name, age, full;
  tether_computed_t prof, len_c, freed;
  tether_value_t *v = SENTINEL_VALUE;
  node_t p, l;
  int64_t i;
  char buf[32];

  node_init(&p, "profile-or-empty", rt);
  node_init(&l, "name-length", rt);
  CHECK_OK(tether_state_new_string(rt, "Ada", -1, 0, &name));
  CHECK_OK(tether_state_new_int(rt, 36, 0, &age));
  CHECK_OK(tether_state_new_bool(rt, true, 0, &full));
  p.s[0] = name;
  p.s[1] = age;
  p.s[2] = full;
  CHECK_OK(tether_computed_new(rt, profile_or_empty, &p, node_destroy, &prof));
  l.c[0] = prof;
  CHECK_OK(tether_computed_new(rt, name_length, &l, node_destroy, &len_c));

  /* From outside callbacks: a new owned value, the whole with "". */
  if (CHECK_OK(tether_computed_get_path(prof, "/age", &v))) {
    CHECK_OK(tether_value_get_int(v, &i));
    CHECK_INT_EQ(i, 36);
    tether_value_free(v);
  }
  if (CHECK_OK(tether_computed_get_path(prof, "", &v))) {
    CHECK_OK(tether_value_to_json(v, 0, buf, sizeof buf, NULL));
    CHECK_STR_EQ(buf, "{\"name\":\"Ada\",\"age\":36}");
    tether_value_free(v);
  }

  /* Inside a compute: a dependency on the computed. */
  CHECK_OK(tether_computed_get_int(len_c, &i));
  CHECK_INT_EQ(i, 3);
  CHECK_OK(tether_state_set_string(name, "Grace", -1));
  CHECK_OK(tether_computed_get_int(len_c, &i));
  CHECK_INT_EQ(i, 5);
  CHECK_INT_EQ(CALLS(&l), 2);

  /* The value loses its "/name": ENOTFOUND inside the callback, which
   * still depends on prof and recovers when the member comes back. */
  CHECK_OK(tether_state_set_bool(full, false));
  CHECK_OK(tether_computed_get_int(len_c, &i));
  CHECK_INT_EQ(i, -1);
  CHECK_INT_EQ(l.last_rc, TETHER_ENOTFOUND);
  CHECK_OK(tether_state_set_bool(full, true));
  CHECK_OK(tether_computed_get_int(len_c, &i));
  CHECK_INT_EQ(i, 5);
  CHECK_INT_EQ(CALLS(&l), 4);

  /* Bad input: *out untouched, nothing read. */
  v = SENTINEL_VALUE;
  CHECK_ERR(tether_computed_get_path(prof, "/missing", &v), TETHER_ENOTFOUND);
  CHECK(v == SENTINEL_VALUE);
  CHECK_MENTIONS("missing");
  CHECK_ERR(tether_computed_get_path(prof, "/age/x", &v), TETHER_ETYPE);
  CHECK_ERR(tether_computed_get_path(prof, "age", &v), TETHER_EPATH); /* no leading '/' */
  CHECK_ERR(tether_computed_get_path(prof, "/m~2", &v), TETHER_EPATH);
  CHECK_ERR(tether_computed_get_path(prof, NULL, &v), TETHER_EINVAL);
  CHECK_ERR(tether_computed_get_path(prof, "/age", NULL), TETHER_EINVAL);
  CHECK(v == SENTINEL_VALUE);
  CHECK_OK(tether_computed_new(rt, profile, &p, NULL, &freed));
  CHECK_OK(tether_computed_free(freed));
  CHECK_ERR(tether_computed_get_path(freed, "/age", &v), TETHER_ESTALE);
  CHECK_ERR(tether_computed_get_path((tether_computed_t){0}, "/age", &v), TETHER_ESTALE);
  CHECK_ERR(tether_computed_get_path((tether_computed_t){name.id}, "/age", &v), TETHER_ESTALE); /* a state's handle */
  CHECK(v == SENTINEL_VALUE);

  CHECK_OK(tether_computed_free(len_c));
  CHECK_OK(tether_computed_free(prof));
  CHECK_INT_EQ(DESTROYED(&l), 1);
  CHECK_INT_EQ(DESTROYED(&p), 1);
  CHECK_OK(tether_state_free(name));
  CHECK_OK(tether_state_free(age));
  CHECK_OK(tether_state_free(full));
}

/* A chain: c1 = a + 1, c2 = 2 * c1, c3 = c2 - 3. */
static void chains(tether_runtime_t rt) {
  tether_state_t a;
  tether_computed_t c1, c2, c3;
  node_t n1, n2, n3;

  node_init(&n1, "a + 1", rt);
  node_init(&n2, "2 * c1", rt);
  node_init(&n3, "c2 - 3", rt);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  n1.s[0] = a;
  n1.add = 1;
  CHECK_OK(tether_computed_new(rt, linear_of_state, &n1, node_destroy, &c1));
  n2.c[0] = c1;
  n2.mul = 2;
  CHECK_OK(tether_computed_new(rt, linear_of_computed, &n2, node_destroy, &c2));
  n3.c[0] = c2;
  n3.add = -3;
  CHECK_OK(tether_computed_new(rt, linear_of_computed, &n3, node_destroy, &c3));

  CHECK_INT_EQ(computed_int(c3), 1); /* (1 + 1) * 2 - 3 */
  CHECK_INT_EQ(CALLS(&n1), 1);
  CHECK_INT_EQ(CALLS(&n2), 1);
  CHECK_INT_EQ(CALLS(&n3), 1);
  CHECK_OK(tether_state_set_int(a, 5));
  CHECK_INT_EQ(computed_int(c3), 9); /* (5 + 1) * 2 - 3 */
  CHECK_INT_EQ(computed_int(c1), 6); /* already up to date: no call */
  CHECK_INT_EQ(CALLS(&n1), 2);
  CHECK_INT_EQ(CALLS(&n2), 2);
  CHECK_INT_EQ(CALLS(&n3), 2);

  /* A batch: reads inside it see the new values at once. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_batch_begin(rt)); /* nests */
  CHECK_OK(tether_state_set_int(a, 10));
  CHECK_INT_EQ(computed_int(c3), 19);
  CHECK_OK(tether_batch_end(rt));
  CHECK_OK(tether_batch_end(rt));
  CHECK_ERR(tether_batch_end(rt), TETHER_EINVAL); /* none open any more */
  CHECK_INT_EQ(computed_int(c3), 19);

  CHECK_OK(tether_computed_free(c3));
  CHECK_OK(tether_computed_free(c2));
  CHECK_OK(tether_computed_free(c1));
  CHECK_INT_EQ(DESTROYED(&n1) + DESTROYED(&n2) + DESTROYED(&n3), 3);
  CHECK_OK(tether_state_free(a));
}

/* A compute that reads a freed state gets TETHER_ESTALE, and so do its
 * readers. */
static void freed_states(tether_runtime_t rt) {
  tether_state_t s, t;
  tether_computed_t f, g;
  node_t nf, ng;
  int64_t v = -1;

  node_init(&nf, "reads s", rt);
  node_init(&ng, "reads t (freed before the first read)", rt);
  CHECK_OK(tether_state_new_int(rt, 7, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 8, 0, &t));
  nf.s[0] = s;
  ng.s[0] = t;
  CHECK_OK(tether_computed_new(rt, linear_of_state, &nf, node_destroy, &f));
  CHECK_OK(tether_computed_new(rt, linear_of_state, &ng, node_destroy, &g));

  CHECK_OK(tether_state_free(t));
  CHECK_ERR(tether_computed_get_int(g, &v), TETHER_ESTALE);
  CHECK_INT_EQ(CALLS(&ng), 1);

  /* Freed after the value was cached: a freed dependency is a change. */
  CHECK_INT_EQ(computed_int(f), 7);
  CHECK_OK(tether_state_free(s));
  CHECK_ERR(tether_computed_get_int(f, &v), TETHER_ESTALE);
  CHECK_INT_EQ(v, -1);

  CHECK_OK(tether_computed_free(f));
  CHECK_OK(tether_computed_free(g));
  CHECK_INT_EQ(DESTROYED(&nf), 1);
  CHECK_INT_EQ(DESTROYED(&ng), 1);
}

/* Freeing a computed: its readers get TETHER_ESTALE; destroy runs once. */
static void freeing_computeds(tether_runtime_t rt) {
  tether_state_t s, poke;
  tether_computed_t c, r;
  tether_observer_t obs, h;
  tether_effect_t fx;
  node_t nc, nr;
  rec_t rc_obs;
  counter_t k;
  int64_t v = -1;
  int runs;

  node_init(&nc, "C = s", rt);
  node_init(&nr, "R = 2 * C", rt);
  memset(&rc_obs, 0, sizeof rc_obs);
  memset(&k, 0, sizeof k);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &poke));
  nc.s[0] = s;
  CHECK_OK(tether_computed_new(rt, linear_of_state, &nc, node_destroy, &c));
  nr.c[0] = c;
  nr.mul = 2;
  CHECK_OK(tether_computed_new(rt, linear_of_computed, &nr, node_destroy, &r));
  CHECK_INT_EQ(computed_int(r), 2);
  CHECK_OK(tether_computed_observe(c, NULL, 0, record, &rc_obs, rec_destroy, &obs));
  /* An effect that reads C and the state poke. */
  k.c = c;
  k.poke = poke;
  k.has_poke = 1;
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, effect_reads_computed, NULL, &k,
                             counter_destroy, &fx));
  CHECK_INT_EQ(locked_int(&k.runs), 1);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(k.last, 1);
  pthread_mutex_unlock(&mu);

  CHECK_OK(tether_computed_free(c));
  CHECK_INT_EQ(DESTROYED(&nc), 1);
  CHECK_INT_EQ(locked_int(&rc_obs.destroyed), 1); /* its observer ended */
  CHECK_ERR(tether_computed_get_int(c, &v), TETHER_ESTALE);
  CHECK_ERR(tether_computed_get_int(r, &v), TETHER_ESTALE); /* R read C */
  CHECK_ERR(tether_computed_free(c), TETHER_ESTALE);
  CHECK_ERR(tether_computed_observe(c, NULL, 0, record, &rc_obs, rec_destroy, &h), TETHER_ESTALE);
  CHECK_INT_EQ(DESTROYED(&nc), 1);
  CHECK_INT_EQ(locked_int(&rc_obs.destroyed), 1); /* not called for the refused observe */
  CHECK_ERR(tether_observer_remove(obs), TETHER_ESTALE);
  CHECK_INT_EQ(v, -1);
  /* Writing s now wakes nothing that is gone. */
  CHECK_OK(tether_state_set_int(s, 5));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&nc), 1);

  /* Whether the free itself re-runs the effect is not specified; once it
   * runs again (poke changed), its read of C fails with TETHER_ESTALE. */
  runs = locked_int(&k.runs);
  printf("computed: freeing a computed re-ran the effect reading it: %s\n",
         runs > 1 ? "yes" : "no");
  CHECK_OK(tether_state_set_int(poke, 1));
  CHECK_INT_EQ(locked_int(&k.runs), runs + 1);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(k.last_rc, TETHER_ESTALE);
  pthread_mutex_unlock(&mu);
  CHECK_OK(tether_effect_free(fx));
  CHECK_INT_EQ(locked_int(&k.destroyed), 1);

  CHECK_OK(tether_computed_free(r));
  CHECK_INT_EQ(DESTROYED(&nr), 1);
  CHECK_OK(tether_state_free(s));
  CHECK_OK(tether_state_free(poke));
}

/* tether_runtime_free with live computeds: each destroy once, on this thread. */
static void runtime_free_with_computeds(void) {
  tether_runtime_t rt;
  tether_state_t a;
  tether_computed_t never_read, read_once, observed, reader;
  tether_observer_t obs;
  tether_effect_t fx;
  node_t n[4];
  rec_t r;
  counter_t k;
  int i;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  memset(&r, 0, sizeof r);
  memset(&k, 0, sizeof k);
  for (i = 0; i < 4; i++) node_init(&n[i], "live computed", rt);
  CHECK_OK(tether_state_new_int(rt, 3, 0, &a));
  n[0].s[0] = n[1].s[0] = n[2].s[0] = a;
  CHECK_OK(tether_computed_new(rt, linear_of_state, &n[0], node_destroy, &never_read));
  CHECK_OK(tether_computed_new(rt, linear_of_state, &n[1], node_destroy, &read_once));
  CHECK_OK(tether_computed_new(rt, linear_of_state, &n[2], node_destroy, &observed));
  n[3].c[0] = read_once;
  CHECK_OK(tether_computed_new(rt, linear_of_computed, &n[3], node_destroy, &reader));
  CHECK_INT_EQ(computed_int(reader), 3);
  CHECK_OK(tether_computed_observe(observed, NULL, 0, record, &r, rec_destroy, &obs));
  k.c = observed;
  CHECK_OK(tether_effect_new(rt, 0, effect_reads_computed, NULL, &k, counter_destroy, &fx));
  CHECK_OK(tether_state_set_int(a, 4)); /* owed deliveries: dropped by the free */

  CHECK_OK(tether_runtime_free(rt));
  for (i = 0; i < 4; i++) {
    CHECK_INT_EQ(DESTROYED(&n[i]), 1);
    pthread_mutex_lock(&mu);
    CHECK(n[i].destroyed == 0 || pthread_equal(n[i].destroy_thread, main_thread));
    pthread_mutex_unlock(&mu);
  }
  CHECK_INT_EQ(CALLS(&n[0]), 0); /* never read: never ran */
  CHECK_INT_EQ(locked_int(&r.destroyed), 1);
  CHECK_INT_EQ(locked_int(&k.destroyed), 1);
  CHECK_ERR(tether_computed_get_int(read_once, &(int64_t){0}), TETHER_ESTALE);
  CHECK_ERR(tether_computed_free(never_read), TETHER_ESTALE);
}

/* Bad input: an error code, a message, and nothing changed. */
static void bad_input(tether_runtime_t rt) {
  tether_runtime_t dead;
  tether_state_t s;
  tether_computed_t c, out;
  tether_computed_t zero = {0};
  tether_computed_t forged;
  tether_observer_t obs;
  node_t n;
  rec_t r;
  int64_t v = -1;
  tether_value_t *val = NULL;

  node_init(&n, "bad input", rt);
  memset(&r, 0, sizeof r);
  out.id = 12345;
  CHECK_ERR(tether_computed_new(rt, NULL, &n, node_destroy, &out), TETHER_EINVAL);
  CHECK_INT_EQ(out.id, 12345); /* out-parameters are written only on success */
  CHECK_ERR(tether_computed_new(rt, linear_of_state, &n, node_destroy, NULL), TETHER_EINVAL);
  CHECK_OK(tether_runtime_new(NULL, &dead));
  CHECK_OK(tether_runtime_free(dead));
  CHECK_ERR(tether_computed_new(dead, linear_of_state, &n, node_destroy, &out), TETHER_ESTALE);
  CHECK_ERR(tether_computed_new((tether_runtime_t){0}, linear_of_state, &n, node_destroy, &out),
            TETHER_ESTALE);
  CHECK_INT_EQ(DESTROYED(&n), 0); /* refused: the caller still owns user_data */
  CHECK_INT_EQ(CALLS(&n), 0);

  CHECK_OK(tether_state_new_int(rt, 1, 0, &s));
  n.s[0] = s;
  CHECK_OK(tether_computed_new(rt, linear_of_state, &n, node_destroy, &c));
  CHECK_ERR(tether_computed_get(c, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_computed_get_int(c, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_computed_get_int(zero, &v), TETHER_ESTALE);
  forged.id = s.id; /* a state's id is not a computed */
  CHECK_ERR(tether_computed_get_int(forged, &v), TETHER_ESTALE);
  CHECK_ERR(tether_computed_get(zero, &val), TETHER_ESTALE);
  CHECK(val == NULL);
  CHECK_ERR(tether_computed_free(zero), TETHER_ESTALE);
  CHECK_ERR(tether_computed_free(forged), TETHER_ESTALE);
  CHECK_INT_EQ(state_int(s), 1); /* the state survived the forged free */
  CHECK_ERR(tether_computed_observe(c, NULL, 0, NULL, &r, rec_destroy, &obs), TETHER_EINVAL);
  CHECK_ERR(tether_computed_observe(c, NULL, 0, record, &r, rec_destroy, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_computed_observe(c, NULL, 0x100u, record, &r, rec_destroy, &obs),
            TETHER_EINVAL);
  CHECK_ERR(tether_computed_observe(c, "no-slash", 0, record, &r, rec_destroy, &obs),
            TETHER_EPATH);
  CHECK_ERR(tether_computed_observe(zero, NULL, 0, record, &r, rec_destroy, &obs), TETHER_ESTALE);
  CHECK_INT_EQ(locked_int(&r.destroyed), 0);
  CHECK_INT_EQ(computed_int(c), 1); /* still works */

  /* A compute callback that writes: the write is refused with TETHER_EBUSY
   * (docs/runtime.md) and the state is unchanged. */
  {
    node_t w;
    tether_computed_t hw;
    uint64_t rev = 0, rev2 = 0;
    node_init(&w, "tries to write", rt);
    w.s[0] = s;
    CHECK_OK(tether_state_revision(s, &rev));
    CHECK_OK(tether_computed_new(rt, tries_to_write, &w, node_destroy, &hw));
    CHECK_INT_EQ(computed_int(hw), 1);
    CHECK_INT_EQ(locked_int(&w.last_rc), TETHER_EBUSY);
    CHECK_INT_EQ(state_int(s), 1);
    CHECK_OK(tether_state_revision(s, &rev2));
    CHECK_INT_EQ(rev2, rev);
    CHECK_OK(tether_computed_free(hw));
    CHECK_INT_EQ(DESTROYED(&w), 1);
  }

  CHECK_ERR(tether_untracked_begin(dead), TETHER_ESTALE);
  CHECK_ERR(tether_untracked_end(dead), TETHER_ESTALE);
  CHECK_ERR(tether_untracked_end(rt), TETHER_EINVAL); /* unbalanced */
  CHECK_ERR(tether_batch_begin(dead), TETHER_ESTALE);
  CHECK_ERR(tether_batch_end(dead), TETHER_ESTALE);
  CHECK_ERR(tether_batch_end(rt), TETHER_EINVAL); /* no batch open */

  /* The runtime still delivers normally after the refused batch_end. */
  CHECK_OK(tether_computed_observe(c, NULL, TETHER_OBSERVE_SYNC, record, &r, rec_destroy, &obs));
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_INT_EQ(locked_int(&r.calls), 1);

  CHECK_OK(tether_computed_free(c));
  CHECK_INT_EQ(DESTROYED(&n), 1);
  CHECK_INT_EQ(locked_int(&r.destroyed), 1);
  CHECK_OK(tether_state_free(s));
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(computed_value_setters) {
  main_thread = pthread_self();
  value_setters();
  return check_report("computed_value_setters");
}

TEST_CASE(computed_lazy_and_cached) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  lazy_and_cached(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_lazy_and_cached");
}

TEST_CASE(computed_diamond) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  diamond(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_diamond");
}

TEST_CASE(computed_equality_cutoff) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  equality_cutoff(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_equality_cutoff");
}

TEST_CASE(computed_dynamic_dependencies) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  dynamic_dependencies(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_dynamic_dependencies");
}

TEST_CASE(computed_cycles) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  cycles(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_cycles");
}

TEST_CASE(computed_cached_errors) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  cached_errors(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_cached_errors");
}

TEST_CASE(computed_untracked) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  untracked(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_untracked");
}

TEST_CASE(computed_observing) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  observing(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_observing");
}

TEST_CASE(computed_reading_paths) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  reading_paths(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_reading_paths");
}

TEST_CASE(computed_chains) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  chains(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_chains");
}

TEST_CASE(computed_freed_states) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  freed_states(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_freed_states");
}

TEST_CASE(computed_freeing_computeds) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  freeing_computeds(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_freeing_computeds");
}

TEST_CASE(computed_runtime_free_with_computeds) {
  main_thread = pthread_self();
  runtime_free_with_computeds();
  return check_report("computed_runtime_free_with_computeds");
}

TEST_CASE(computed_bad_input) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  bad_input(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_bad_input");
}

/* ---- a computed's own equality (tether_computed_new_with_equal) --------- */

typedef struct {
  tether_state_t source;
  tether_state_t victim; /* the equality tries to write it: refused */
  int equal_calls;
  int write_refused;
} near_t;

static int copy_source(tether_value_t *result, void *user_data) {
  near_t *n = user_data;
  double v = 0;
  int rc = tether_state_get_double(n->source, &v);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_double(result, v);
}

/* Within 1.0 counts as unchanged. */
static bool within_one(const tether_value_t *old_value, const tether_value_t *new_value, void *user_data) {
  near_t *n = user_data;
  double a = 0, b = 0;
  n->equal_calls++;
  if (tether_state_set_int(n->victim, 1) == TETHER_ELOOP) n->write_refused++;
  tether_value_get_double(old_value, &a);
  tether_value_get_double(new_value, &b);
  return a - b < 1.0 && b - a < 1.0;
}

static void count_calls(const tether_change_t *change, void *user_data) {
  (void)change;
  (*(int *)user_data)++;
}

TEST_CASE(computed_custom_equality) {
  tether_runtime_t rt;
  tether_computed_t c, plain;
  tether_observer_t o;
  near_t n = {{0}, {0}, 0, 0};
  int observed = 0;
  double v = 0;
  int64_t victim = 0;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("computed_custom_equality");
  CHECK_OK(tether_state_new_double(rt, 1.0, 0, &n.source));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &n.victim));
  CHECK_OK(tether_computed_new_with_equal(rt, copy_source, within_one, &n, NULL, &c));
  CHECK_OK(tether_computed_observe(c, NULL, TETHER_OBSERVE_SYNC, count_calls, &observed, NULL, &o));
  CHECK_INT_EQ(n.equal_calls, 0); /* the first result is never compared */

  CHECK_OK(tether_state_set_double(n.source, 1.5)); /* within 1.0: unchanged */
  CHECK_INT_EQ(n.equal_calls, 1);
  CHECK_INT_EQ(observed, 0);
  CHECK_OK(tether_computed_get_double(c, &v));
  CHECK(v == 1.0); /* keeps its old value */

  CHECK_OK(tether_state_set_double(n.source, 3.0)); /* 2.0 away: changed */
  CHECK_INT_EQ(observed, 1);
  CHECK_OK(tether_computed_get_double(c, &v));
  CHECK(v == 3.0);

  /* The equality is a callback that must not write. */
  CHECK_INT_EQ(n.write_refused, n.equal_calls);
  CHECK_OK(tether_state_get_int(n.victim, &victim));
  CHECK_INT_EQ(victim, 0);

  /* NULL equality: the structural one, as tether_computed_new. */
  CHECK_OK(tether_computed_new_with_equal(rt, copy_source, NULL, &n, NULL, &plain));
  CHECK_OK(tether_computed_get_double(plain, &v));
  CHECK(v == 3.0);
  CHECK_ERR(tether_computed_new_with_equal(rt, NULL, within_one, &n, NULL, &plain), TETHER_EINVAL);
  CHECK_ERR(tether_computed_new_with_equal(rt, copy_source, within_one, &n, NULL, NULL), TETHER_EINVAL);

  CHECK_OK(tether_runtime_free(rt));
  return check_report("computed_custom_equality");
}
