/*
 * plain_path.c — the typed getters' and setters' plain path.
 *
 * tether_state_get_int/_double/_bool and tether_state_set_int/_double/_bool take a short
 * path when the case is plain (docs/performance.md, "The plain path"): a
 * live scalar of the asked type, a thread outside transactions and scopes
 * (and, for a write, outside callbacks), the runtime's lock free. Anything
 * else goes the full way. These cases hold the plain path to the full
 * path's answers at every edge where one could differ from the other:
 * forged and stale handles, other types, reads from callbacks (tracked only
 * in a compute callback of the state's own runtime, not in an untracked
 * section), transactions, states with readers and observers of each kind,
 * a single-threaded runtime used from another thread, and readers racing a
 * writer. tether_computed_get_double reads a double (or an int, converted)
 * the same way, and tether_value_get_int/_double/_bool read the value's own
 * type in place: a case each holds them to the full answers.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

static tether_runtime_t host_runtime(unsigned flags) {
  tether_runtime_options_t o;
  tether_runtime_t rt = {0};
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  o.flags = flags;
  CHECK_OK(tether_runtime_new(&o, &rt));
  return rt;
}

TEST_CASE(plain_path_forged_and_stale_handles) {
  tether_runtime_t rt = host_runtime(0);
  tether_state_t s, freed, gen0, other_kind;
  int64_t v = 7;
  double d = 0;
  bool b = false;
  CHECK_OK(tether_state_new_int(rt, 41, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 1, 0, &freed));
  CHECK_OK(tether_state_free(freed));

  /* Generation 0 is never issued: it names a free slot, which must not read as a state. */
  gen0.id = freed.id & ~(uint64_t)0x3FFFFFF;
  CHECK_ERR(tether_state_get_int(gen0, &v), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(gen0, 5), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_int(freed, &v), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_double(freed, &d), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_bool(freed, &b), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(freed, 5), TETHER_ESTALE);
  CHECK_MENTIONS("stale");
  CHECK_INT_EQ(v, 7);  /* a failed get leaves *out alone */

  /* Another kind of handle with the same bits (kind field 2: an observer). */
  other_kind.id = (s.id & ~((uint64_t)0xF << 50)) | ((uint64_t)2 << 50);
  CHECK_ERR(tether_state_get_int(other_kind, &v), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(other_kind, 5), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_int(s, NULL), TETHER_EINVAL);

  CHECK_OK(tether_state_get_int(s, &v));
  CHECK_INT_EQ(v, 41);
  CHECK_OK(tether_runtime_free(rt));
  CHECK_ERR(tether_state_get_int(s, &v), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(s, 1), TETHER_ESTALE);
  return check_report("plain_path_forged_and_stale_handles");
}

TEST_CASE(plain_path_other_types) {
  tether_runtime_t rt = host_runtime(0);
  tether_state_t i, x, flag, locked;
  int64_t v = 0;
  double d = 0;
  bool b = false;
  CHECK_OK(tether_state_new_int(rt, 3, 0, &i));
  CHECK_OK(tether_state_new_double(rt, 2.5, 0, &x));
  CHECK_OK(tether_state_new_bool(rt, true, 0, &flag));
  CHECK_OK(tether_state_new_double(rt, 1.5, TETHER_STATE_LOCK_TYPE, &locked));

  CHECK_OK(tether_state_get_double(i, &d));  /* an int reads as a double */
  CHECK(d == 3.0);
  CHECK_ERR(tether_state_get_int(x, &v), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_bool(i, &b), TETHER_ETYPE);
  CHECK_OK(tether_state_get_bool(flag, &b));
  CHECK(b);

  /* An int over a double: a type change, the full path's to make. */
  CHECK_OK(tether_state_set_int(x, 9));
  CHECK_OK(tether_state_get_int(x, &v));
  CHECK_INT_EQ(v, 9);
  /* A type-locked double stores an int as a double; a locked bool refuses it. */
  CHECK_OK(tether_state_set_int(locked, 9));
  CHECK_OK(tether_state_get_double(locked, &d));
  CHECK(d == 9.0);
  CHECK_ERR(tether_state_get_int(locked, &v), TETHER_ETYPE);
  CHECK_OK(tether_state_new_bool(rt, false, TETHER_STATE_LOCK_TYPE, &locked));
  CHECK_ERR(tether_state_set_int(locked, 9), TETHER_ETYPE);
  CHECK_OK(tether_state_get_bool(locked, &b));
  CHECK(!b);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_other_types");
}

/* A computed reading `source` (of its own or another runtime), counting runs;
 * `untracked` reads it inside an untracked section. */
typedef struct {
  tether_state_t source;
  tether_runtime_t own;
  int untracked;
  int runs;
} reader_t;

static int read_source(tether_value_t *out, void *user_data) {
  reader_t *r = user_data;
  int64_t v = 0;
  r->runs++;
  if (r->untracked) tether_untracked_begin(r->own);
  int rc = tether_state_get_int(r->source, &v);
  if (r->untracked) tether_untracked_end(r->own);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(out, v * 10);
}

TEST_CASE(plain_path_reads_in_compute_callbacks) {
  tether_runtime_t rt = host_runtime(0), other = host_runtime(0);
  tether_state_t s;
  tether_computed_t tracked, untracked, foreign;
  reader_t t = {{0}, {0}, 0, 0}, u = {{0}, {0}, 1, 0}, f = {{0}, {0}, 0, 0};
  int64_t v = 0;
  CHECK_OK(tether_state_new_int(rt, 1, 0, &s));
  t.source = u.source = f.source = s;
  t.own = u.own = rt;
  f.own = other;
  CHECK_OK(tether_computed_new(rt, read_source, &t, NULL, &tracked));
  CHECK_OK(tether_computed_new(rt, read_source, &u, NULL, &untracked));
  /* A computed of another runtime reading this state: not a dependency. */
  CHECK_OK(tether_computed_new(other, read_source, &f, NULL, &foreign));
  CHECK_OK(tether_computed_get_int(tracked, &v));
  CHECK_INT_EQ(v, 10);
  CHECK_OK(tether_computed_get_int(untracked, &v));
  CHECK_INT_EQ(v, 10);
  CHECK_OK(tether_computed_get_int(foreign, &v));
  CHECK_INT_EQ(v, 10);

  CHECK_OK(tether_state_set_int(s, 2));  /* a state with a reader: not the inline write */
  CHECK_OK(tether_computed_get_int(tracked, &v));
  CHECK_INT_EQ(v, 20);
  CHECK_INT_EQ(t.runs, 2);
  CHECK_OK(tether_computed_get_int(untracked, &v));
  CHECK_INT_EQ(v, 10);  /* nothing tracked: still the first result */
  CHECK_INT_EQ(u.runs, 1);
  CHECK_OK(tether_computed_get_int(foreign, &v));
  CHECK_INT_EQ(v, 10);
  CHECK_INT_EQ(f.runs, 1);

  /* The same write again is no change: nothing recomputes. */
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_OK(tether_computed_get_int(tracked, &v));
  CHECK_INT_EQ(t.runs, 2);
  CHECK_OK(tether_runtime_free(other));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_reads_in_compute_callbacks");
}

typedef struct {
  tether_state_t s;
  int64_t seen;
  int calls;
} watch_t;

static void on_change_read(const tether_change_t *c, void *user_data) {
  watch_t *w = user_data;
  (void)c;
  w->calls++;
  /* A read from an observer callback: the new value, and no dependency. */
  CHECK_OK(tether_state_get_int(w->s, &w->seen));
}

TEST_CASE(plain_path_writes_to_watched_states) {
  tether_runtime_t rt = host_runtime(0);
  tether_state_t s;
  tether_observer_t sync_obs, loop_obs, equal_obs;
  watch_t sw = {{0}, 0, 0}, lw = {{0}, 0, 0}, ew = {{0}, 0, 0};
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  sw.s = lw.s = ew.s = s;
  CHECK_OK(tether_observe(s, NULL, TETHER_OBSERVE_SYNC, on_change_read, &sw, NULL, &sync_obs));
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_INT_EQ(sw.calls, 1);
  CHECK_INT_EQ(sw.seen, 1);

  CHECK_OK(tether_observe(s, NULL, 0, on_change_read, &lw, NULL, &loop_obs));
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_INT_EQ(sw.calls, 2);
  CHECK_INT_EQ(lw.calls, 0);  /* a loop observer waits for the loop */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(lw.calls, 1);
  CHECK_INT_EQ(lw.seen, 2);

  /* An equal write wakes an observer that asked for equal writes only. */
  CHECK_OK(tether_observe(s, NULL, TETHER_OBSERVE_SYNC | TETHER_OBSERVE_EQUAL, on_change_read, &ew, NULL,
                          &equal_obs));
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_INT_EQ(ew.calls, 1);
  CHECK_INT_EQ(sw.calls, 2);
  CHECK_OK(tether_observer_remove(equal_obs));
  CHECK_OK(tether_observer_remove(loop_obs));
  CHECK_OK(tether_observer_remove(sync_obs));

  /* No observers left: the inline write, and its revision still advances. */
  uint64_t before = 0, after = 0;
  CHECK_OK(tether_state_revision(s, &before));
  CHECK_OK(tether_state_set_int(s, 3));
  CHECK_OK(tether_state_revision(s, &after));
  CHECK(after > before);
  CHECK_OK(tether_state_set_int(s, 3));
  CHECK_OK(tether_state_revision(s, &before));
  CHECK_INT_EQ(before, after);  /* an equal write is no change */
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_writes_to_watched_states");
}

/* tether_state_set_double's plain path: equal doubles (a NaN over a NaN,
 * -0.0 over 0.0) are no change, as the full write compares them; a double
 * over another type, a type-locked state, observers, readers, a
 * transaction and a stale handle go the full way, with its answers. */
typedef struct {
  tether_state_t s;
  double old_value, new_value, seen;
  int calls;
} dwatch_t;

static void on_double_change(const tether_change_t *c, void *user_data) {
  dwatch_t *w = user_data;
  w->calls++;
  CHECK_OK(tether_value_get_double(c->old_value, &w->old_value));
  CHECK_OK(tether_value_get_double(c->new_value, &w->new_value));
  CHECK_OK(tether_state_get_double(w->s, &w->seen));
}

static int double_plus_one(tether_value_t *result, void *user_data) {
  dwatch_t *w = user_data;
  double x;
  int rc;
  w->calls++;
  if ((rc = tether_state_get_double(w->s, &x)) != TETHER_OK) return rc;
  return tether_value_set_double(result, x + 1.0);
}

TEST_CASE(plain_path_double_writes) {
  tether_runtime_t rt = host_runtime(0);
  tether_state_t s, locked_int, freed;
  tether_observer_t ob;
  tether_computed_t c;
  tether_transaction_t txn;
  dwatch_t w = {{0}, 0, 0, 0, 0}, cw = {{0}, 0, 0, 0, 0};
  uint64_t before = 0, after = 0;
  double d = 0;
  int64_t i = 0;
  CHECK_OK(tether_state_new_double(rt, 0.0, 0, &s));
  /* No observer: a store, and an equal one is no change. */
  CHECK_OK(tether_state_revision(s, &before));
  CHECK_OK(tether_state_set_double(s, -0.0)); /* equal to 0.0 */
  CHECK_OK(tether_state_revision(s, &after));
  CHECK_INT_EQ(after, before);
  CHECK_OK(tether_state_get_double(s, &d));
  CHECK(d == 0.0 && !signbit(d)); /* the old zero kept */
  CHECK_OK(tether_state_set_double(s, 2.5));
  CHECK_OK(tether_state_revision(s, &after));
  CHECK(after > before);
  CHECK_OK(tether_state_set_double(s, NAN));
  CHECK_OK(tether_state_revision(s, &before));
  CHECK_OK(tether_state_set_double(s, -NAN)); /* a NaN over a NaN */
  CHECK_OK(tether_state_revision(s, &after));
  CHECK_INT_EQ(after, before);
  CHECK_OK(tether_state_set_double(s, 1.0));
  CHECK_OK(tether_state_get_double(s, &d));
  CHECK(d == 1.0);

  /* A SYNC observer sees the old and new doubles; equal writes wake nothing. */
  w.s = s;
  CHECK_OK(tether_observe(s, NULL, TETHER_OBSERVE_SYNC, on_double_change, &w, NULL, &ob));
  CHECK_OK(tether_state_set_double(s, 1.5));
  CHECK_INT_EQ(w.calls, 1);
  CHECK(w.old_value == 1.0 && w.new_value == 1.5 && w.seen == 1.5);
  CHECK_OK(tether_state_set_double(s, 1.5));
  CHECK_INT_EQ(w.calls, 1);
  CHECK_OK(tether_observer_remove(ob));

  /* A computed reader re-runs on a change, not on an equal write. */
  cw.s = s;
  CHECK_OK(tether_computed_new(rt, double_plus_one, &cw, NULL, &c));
  CHECK_OK(tether_computed_get_double(c, &d));
  CHECK(d == 2.5);
  CHECK_OK(tether_state_set_double(s, 1.5));
  CHECK_OK(tether_computed_get_double(c, &d));
  CHECK_INT_EQ(cw.calls, 1);
  CHECK_OK(tether_state_set_double(s, 3.0));
  CHECK_OK(tether_computed_get_double(c, &d));
  CHECK(d == 4.0);
  CHECK_INT_EQ(cw.calls, 2);

  /* Inside a transaction the write is staged, seen by this thread only. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_double(s, 7.0));
  CHECK_OK(tether_state_get_double(s, &d));
  CHECK(d == 7.0);
  CHECK_OK(tether_transaction_abort(txn));
  CHECK_OK(tether_state_get_double(s, &d));
  CHECK(d == 3.0);

  /* Over an int: the state becomes a double, unless its type is locked. */
  CHECK_OK(tether_state_set_int(s, 4));
  CHECK_OK(tether_state_set_double(s, 4.5));
  CHECK_ERR(tether_state_get_int(s, &i), TETHER_ETYPE);
  CHECK_OK(tether_state_new_int(rt, 1, TETHER_STATE_LOCK_TYPE, &locked_int));
  CHECK_ERR(tether_state_set_double(locked_int, 2.5), TETHER_ETYPE);
  CHECK_OK(tether_state_get_int(locked_int, &i));
  CHECK_INT_EQ(i, 1);

  /* A stale handle fails as the full path says. */
  CHECK_OK(tether_state_new_double(rt, 1.0, 0, &freed));
  CHECK_OK(tether_state_free(freed));
  CHECK_ERR(tether_state_set_double(freed, 2.0), TETHER_ESTALE);
  CHECK_MENTIONS("tether_state_set_double");
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_double_writes");
}

/* tether_state_set_bool and tether_computed_get_bool on the plain path,
 * held to the full answers: toggles, equal writes, observers, readers
 * (tracked from a compute callback), transactions, other types, stale
 * handles. */
typedef struct {
  tether_state_t s;
  tether_computed_t c;
  bool old_value, new_value;
  int calls;
} bwatch_t;

static void on_bool_change(const tether_change_t *ch, void *user_data) {
  bwatch_t *w = user_data;
  w->calls++;
  CHECK_OK(tether_value_get_bool(ch->old_value, &w->old_value));
  CHECK_OK(tether_value_get_bool(ch->new_value, &w->new_value));
}

static int bool_not(tether_value_t *result, void *user_data) {
  bwatch_t *w = user_data;
  bool b;
  int rc;
  w->calls++;
  if ((rc = tether_state_get_bool(w->s, &b)) != TETHER_OK) return rc;
  return tether_value_set_bool(result, !b);
}

/* Reads a bool computed from a compute callback: tracked. */
static int bool_count(tether_value_t *result, void *user_data) {
  bwatch_t *w = user_data;
  bool b;
  int rc;
  w->calls++;
  if ((rc = tether_computed_get_bool(w->c, &b)) != TETHER_OK) return rc;
  return tether_value_set_int(result, b ? 1 : 0);
}

TEST_CASE(plain_path_bool_writes_and_reads) {
  tether_runtime_t rt = host_runtime(0);
  tether_state_t s, freed, n;
  tether_observer_t ob;
  tether_computed_t negated, counted, not_bool;
  tether_transaction_t txn;
  bwatch_t w = {{0}, {0}, 0, 0, 0}, nw = {{0}, {0}, 0, 0, 0}, cw = {{0}, {0}, 0, 0, 0};
  uint64_t before = 0, after = 0;
  bool b = false;
  int64_t i = 0;
  CHECK_OK(tether_state_new_bool(rt, false, 0, &s));
  CHECK_OK(tether_state_revision(s, &before));
  CHECK_OK(tether_state_set_bool(s, false)); /* equal: no change */
  CHECK_OK(tether_state_revision(s, &after));
  CHECK_INT_EQ(after, before);
  CHECK_OK(tether_state_set_bool(s, true));
  CHECK_OK(tether_state_revision(s, &after));
  CHECK(after > before);
  CHECK_OK(tether_state_get_bool(s, &b));
  CHECK(b);

  w.s = s;
  CHECK_OK(tether_observe(s, NULL, TETHER_OBSERVE_SYNC, on_bool_change, &w, NULL, &ob));
  CHECK_OK(tether_state_set_bool(s, false));
  CHECK_INT_EQ(w.calls, 1);
  CHECK(w.old_value && !w.new_value);
  CHECK_OK(tether_state_set_bool(s, false));
  CHECK_INT_EQ(w.calls, 1);
  CHECK_OK(tether_observer_remove(ob));

  /* A bool computed, read plainly and from another compute (tracked). */
  nw.s = s;
  CHECK_OK(tether_computed_new(rt, bool_not, &nw, NULL, &negated));
  cw.c = negated;
  CHECK_OK(tether_computed_new(rt, bool_count, &cw, NULL, &counted));
  CHECK_OK(tether_computed_get_int(counted, &i));
  CHECK_INT_EQ(i, 1);
  CHECK_OK(tether_computed_get_bool(negated, &b)); /* up to date: the plain read */
  CHECK(b);
  CHECK_INT_EQ(nw.calls, 1);
  CHECK_OK(tether_state_set_bool(s, true));
  CHECK_OK(tether_computed_get_int(counted, &i));
  CHECK_INT_EQ(i, 0);
  CHECK_INT_EQ(cw.calls, 2);
  CHECK_OK(tether_computed_get_bool(negated, &b));
  CHECK(!b);
  CHECK_ERR(tether_computed_get_bool(counted, &b), TETHER_ETYPE); /* an int */
  CHECK_ERR(tether_computed_get_bool(negated, NULL), TETHER_EINVAL);
  CHECK_OK(tether_state_new_int(rt, 3, 0, &n));
  nw.s = n; /* the next run of `negated` reads an int: its error is cached */
  CHECK_OK(tether_computed_new(rt, bool_not, &nw, NULL, &not_bool));
  CHECK_ERR(tether_computed_get_bool(not_bool, &b), TETHER_ETYPE);
  nw.s = s;

  /* A transaction stages; another type changes the state's type. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_bool(s, false));
  CHECK_OK(tether_state_get_bool(s, &b));
  CHECK(!b);
  CHECK_OK(tether_transaction_abort(txn));
  CHECK_OK(tether_state_get_bool(s, &b));
  CHECK(b);
  CHECK_OK(tether_state_set_bool(n, true)); /* an int state becomes a bool */
  CHECK_ERR(tether_state_get_int(n, &i), TETHER_ETYPE);
  CHECK_OK(tether_state_get_bool(n, &b));
  CHECK(b);

  CHECK_OK(tether_state_new_bool(rt, true, 0, &freed));
  CHECK_OK(tether_state_free(freed));
  CHECK_ERR(tether_state_set_bool(freed, false), TETHER_ESTALE);
  CHECK_MENTIONS("tether_state_set_bool");
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_bool_writes_and_reads");
}

/* Four threads writing doubles, each to its own watched state and all to
 * a shared unwatched one (the plain store, contended): every change reaches
 * its SYNC observer once, in order, never two observer calls at once. */
#define DOUBLE_WRITERS 4
#define DOUBLE_WRITES 3000

static atomic_int double_in_callback;

typedef struct {
  tether_state_t own, shared;
  long calls, out_of_order, overlapping, errors;
  double last;
} dwriter_t;

static void on_own_double(const tether_change_t *c, void *user_data) {
  dwriter_t *w = user_data;
  double v = -1;
  if (atomic_fetch_add(&double_in_callback, 1) != 0) w->overlapping++;
  if (tether_value_get_double(c->new_value, &v) != TETHER_OK || v <= w->last) w->out_of_order++;
  w->last = v;
  w->calls++;
  atomic_fetch_sub(&double_in_callback, 1);
}

static void *double_writer(void *arg) {
  dwriter_t *w = arg;
  for (int i = 1; i <= DOUBLE_WRITES; i++) {
    if (tether_state_set_double(w->own, i + 0.25) != TETHER_OK) w->errors++;
    if (tether_state_set_double(w->shared, i + 0.5) != TETHER_OK) w->errors++;
  }
  return NULL;
}

TEST_CASE(plain_path_double_writers_race) {
  tether_runtime_t rt = host_runtime(0);
  tether_state_t shared;
  tether_observer_t ob[DOUBLE_WRITERS];
  dwriter_t w[DOUBLE_WRITERS];
  pthread_t t[DOUBLE_WRITERS];
  double d = 0;
  int k;
  CHECK_OK(tether_state_new_double(rt, 0.0, 0, &shared));
  for (k = 0; k < DOUBLE_WRITERS; k++) {
    memset(&w[k], 0, sizeof w[k]);
    w[k].shared = shared;
    CHECK_OK(tether_state_new_double(rt, 0.0, 0, &w[k].own));
    CHECK_OK(tether_observe(w[k].own, NULL, TETHER_OBSERVE_SYNC, on_own_double, &w[k], NULL, &ob[k]));
  }
  for (k = 0; k < DOUBLE_WRITERS; k++) CHECK(pthread_create(&t[k], NULL, double_writer, &w[k]) == 0);
  for (k = 0; k < DOUBLE_WRITERS; k++) CHECK(pthread_join(t[k], NULL) == 0);
  for (k = 0; k < DOUBLE_WRITERS; k++) {
    CHECK_INT_EQ(w[k].errors, 0);
    CHECK_INT_EQ(w[k].calls, DOUBLE_WRITES);
    CHECK_INT_EQ(w[k].out_of_order, 0);
    CHECK_INT_EQ(w[k].overlapping, 0);
    CHECK_OK(tether_state_get_double(w[k].own, &d));
    CHECK(d == DOUBLE_WRITES + 0.25);
  }
  CHECK_OK(tether_state_get_double(shared, &d));
  CHECK(d == DOUBLE_WRITES + 0.5); /* every writer's last write */
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_double_writers_race");
}

typedef struct {
  tether_state_t s;
  int64_t got;
  int rc;
} peer_t;

static void *peer_reads(void *arg) {
  peer_t *p = arg;
  p->rc = tether_state_get_int(p->s, &p->got);
  return NULL;
}

static void *peer_writes(void *arg) {
  peer_t *p = arg;
  p->rc = tether_state_set_int(p->s, 99);
  return NULL;
}

static void *peer_writes_double(void *arg) {
  peer_t *p = arg;
  p->rc = tether_state_set_double(p->s, 99.5);
  return NULL;
}

static void *peer_writes_bool(void *arg) {
  peer_t *p = arg;
  p->rc = tether_state_set_bool(p->s, false);
  return NULL;
}

TEST_CASE(plain_path_transactions_and_threads) {
  tether_runtime_t rt = host_runtime(0);
  tether_state_t s;
  tether_transaction_t txn;
  pthread_t t;
  peer_t peer = {{0}, -1, -1};
  int64_t v = 0;
  CHECK_OK(tether_state_new_int(rt, 1, 0, &s));
  peer.s = s;
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(s, 5));  /* staged */
  CHECK_OK(tether_state_get_int(s, &v));
  CHECK_INT_EQ(v, 5);  /* this thread reads its own staged write */
  CHECK(pthread_create(&t, NULL, peer_reads, &peer) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK_OK(peer.rc);
  CHECK_INT_EQ(peer.got, 1);  /* others still see the committed value */
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK(pthread_create(&t, NULL, peer_reads, &peer) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK_INT_EQ(peer.got, 5);
  CHECK_OK(tether_runtime_free(rt));

  /* A single-threaded runtime refuses every other thread, plain case or not. */
  rt = host_runtime(TETHER_RUNTIME_SINGLE_THREAD);
  CHECK_OK(tether_state_new_int(rt, 4, 0, &s));
  peer.s = s;
  CHECK(pthread_create(&t, NULL, peer_reads, &peer) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK_INT_EQ(peer.rc, TETHER_ETHREAD);
  CHECK(pthread_create(&t, NULL, peer_writes, &peer) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK_INT_EQ(peer.rc, TETHER_ETHREAD);
  CHECK_OK(tether_state_get_int(s, &v));
  CHECK_INT_EQ(v, 4);
  CHECK_OK(tether_state_set_int(s, 6));
  CHECK_OK(tether_state_get_int(s, &v));
  CHECK_INT_EQ(v, 6);
  /* Doubles and bools the same way, observed and read by a computed. */
  {
    tether_state_t ds, bs;
    tether_observer_t ob;
    tether_computed_t plus_one;
    dwatch_t w = {{0}, 0, 0, 0, 0}, cw = {{0}, 0, 0, 0, 0};
    double d = 0;
    bool b = false;
    CHECK_OK(tether_state_new_double(rt, 1.0, 0, &ds));
    CHECK_OK(tether_state_new_bool(rt, false, 0, &bs));
    w.s = cw.s = ds;
    CHECK_OK(tether_observe(ds, NULL, TETHER_OBSERVE_SYNC, on_double_change, &w, NULL, &ob));
    CHECK_OK(tether_computed_new(rt, double_plus_one, &cw, NULL, &plus_one));
    CHECK_OK(tether_state_set_double(ds, 2.0));
    CHECK_INT_EQ(w.calls, 1);
    CHECK(w.old_value == 1.0 && w.new_value == 2.0);
    CHECK_OK(tether_computed_get_double(plus_one, &d));
    CHECK(d == 3.0);
    CHECK_OK(tether_state_set_double(ds, 2.0)); /* equal: nobody woken */
    CHECK_INT_EQ(w.calls, 1);
    CHECK_OK(tether_state_set_bool(bs, true));
    CHECK_OK(tether_state_get_bool(bs, &b));
    CHECK(b);
    peer.s = ds;
    CHECK(pthread_create(&t, NULL, peer_writes_double, &peer) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_INT_EQ(peer.rc, TETHER_ETHREAD);
    peer.s = bs;
    CHECK(pthread_create(&t, NULL, peer_writes_bool, &peer) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_INT_EQ(peer.rc, TETHER_ETHREAD);
    CHECK_OK(tether_state_get_double(ds, &d));
    CHECK(d == 2.0);
    CHECK_OK(tether_state_get_bool(bs, &b));
    CHECK(b);
  }
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_transactions_and_threads");
}

/* Readers racing one writer that counts up: every read is a value the writer
 * wrote, never smaller than the reader's previous read (the lock orders
 * them; a contended reader takes the full path and waits). */
#define RACE_WRITES 20000
#define RACE_READERS 3

typedef struct {
  tether_state_t s;
  long backwards, errors;
} racer_t;

static void *race_reader(void *arg) {
  racer_t *r = arg;
  int64_t last = 0, v = 0;
  for (int i = 0; i < RACE_WRITES; i++) {
    if (tether_state_get_int(r->s, &v) != TETHER_OK || v < 0 || v > RACE_WRITES) r->errors++;
    if (v < last) r->backwards++;
    last = v;
  }
  return NULL;
}

TEST_CASE(plain_path_readers_race_a_writer) {
  tether_runtime_t rt = host_runtime(0);
  tether_state_t s;
  pthread_t readers[RACE_READERS];
  racer_t r[RACE_READERS];
  int64_t v = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  for (int k = 0; k < RACE_READERS; k++) {
    r[k].s = s;
    r[k].backwards = r[k].errors = 0;
    CHECK(pthread_create(&readers[k], NULL, race_reader, &r[k]) == 0);
  }
  for (int64_t i = 1; i <= RACE_WRITES; i++) {
    if (tether_state_set_int(s, i) != TETHER_OK) CHECK_OK(tether_state_set_int(s, i));
  }
  for (int k = 0; k < RACE_READERS; k++) {
    CHECK(pthread_join(readers[k], NULL) == 0);
    CHECK_INT_EQ(r[k].errors, 0);
    CHECK_INT_EQ(r[k].backwards, 0);
  }
  CHECK_OK(tether_state_get_int(s, &v));
  CHECK_INT_EQ(v, RACE_WRITES);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_readers_race_a_writer");
}

/* tether_value_get_int/_double/_bool take the value's own type in place and
 * everything else the checked way: every getter on every kind of value, and
 * NULLs, answer as documented (an int reads as a double; nothing else
 * converts), leave *out alone on an error, and name themselves in it. */
TEST_CASE(plain_path_value_reads_of_every_type) {
  tether_value_t *vals[8];
  int k;
  int64_t i;
  double d;
  bool b;
  CHECK_OK(tether_value_new_null(&vals[0]));
  CHECK_OK(tether_value_new_bool(true, &vals[1]));
  CHECK_OK(tether_value_new_int(-42, &vals[2]));
  CHECK_OK(tether_value_new_double(2.5, &vals[3]));
  CHECK_OK(tether_value_new_string("7", -1, &vals[4]));
  CHECK_OK(tether_value_new_bytes("\x01", 1, &vals[5]));
  CHECK_OK(tether_value_new_array(&vals[6]));
  CHECK_OK(tether_value_new_object(&vals[7]));

  CHECK_OK(tether_value_get_bool(vals[1], &b));
  CHECK(b == true);
  CHECK_OK(tether_value_get_int(vals[2], &i));
  CHECK_INT_EQ(i, -42);
  CHECK_OK(tether_value_get_double(vals[3], &d));
  CHECK(d == 2.5);
  CHECK_OK(tether_value_get_double(vals[2], &d)); /* an int reads as a double */
  CHECK(d == -42.0);

  for (k = 0; k < 8; k++) {
    i = 99;
    d = 99.0;
    b = false;
    if (k != 2) {
      CHECK_ERR(tether_value_get_int(vals[k], &i), TETHER_ETYPE);
      CHECK_MENTIONS("tether_value_get_int");
      CHECK_INT_EQ(i, 99);
    }
    if (k != 2 && k != 3) {
      CHECK_ERR(tether_value_get_double(vals[k], &d), TETHER_ETYPE);
      CHECK_MENTIONS("tether_value_get_double");
      CHECK(d == 99.0);
    }
    if (k != 1) {
      CHECK_ERR(tether_value_get_bool(vals[k], &b), TETHER_ETYPE);
      CHECK_MENTIONS("tether_value_get_bool");
      CHECK(b == false);
    }
  }
  /* NULLs: the out pointer is checked first, as before the in-place read. */
  CHECK_ERR(tether_value_get_int(NULL, NULL), TETHER_EINVAL);
  CHECK_MENTIONS("out is NULL");
  CHECK_ERR(tether_value_get_double(NULL, &d), TETHER_EINVAL);
  CHECK_MENTIONS("value is NULL");
  CHECK_ERR(tether_value_get_bool(vals[1], NULL), TETHER_EINVAL);
  CHECK_MENTIONS("out is NULL");
  for (k = 0; k < 8; k++) tether_value_free(vals[k]);
  return check_report("plain_path_value_reads_of_every_type");
}

/* A computed of what its source computed says, as a double: source is a
 * computed (read with tether_computed_get_double: tracked), kind picks the
 * result's type (0 double, 1 int, 2 string). */
typedef struct {
  tether_computed_t source;
  tether_state_t state;
  int kind;
  int runs;
} dbl_reader_t;

static int state_as_number(tether_value_t *out, void *user_data) {
  dbl_reader_t *r = user_data;
  int64_t v = 0;
  r->runs++;
  int rc = tether_state_get_int(r->state, &v);
  if (rc != TETHER_OK) return rc;
  if (r->kind == 1) return tether_value_set_int(out, v);
  if (r->kind == 2) return tether_value_set_string(out, "text", -1);
  return tether_value_set_double(out, (double)v + 0.5);
}

static int half_of_source(tether_value_t *out, void *user_data) {
  dbl_reader_t *r = user_data;
  double d = 0;
  r->runs++;
  int rc = tether_computed_get_double(r->source, &d);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_double(out, d / 2);
}

/* tether_computed_get_double, whose plain path reads an up-to-date double
 * or int computed in place: every answer as the full path gives it, from
 * outside callbacks and from a compute callback (a tracked dependency), in
 * both runtime modes; wrong types, NULL out, a freed computed. */
static void computed_doubles_in(tether_runtime_t rt) {
  tether_state_t s;
  tether_computed_t as_double, as_int, as_string, half;
  dbl_reader_t d = {{0}, {0}, 0, 0}, i = {{0}, {0}, 1, 0}, str = {{0}, {0}, 2, 0}, h = {{0}, {0}, 0, 0};
  double v = 0;
  CHECK_OK(tether_state_new_int(rt, 3, 0, &s));
  d.state = i.state = str.state = s;
  CHECK_OK(tether_computed_new(rt, state_as_number, &d, NULL, &as_double));
  CHECK_OK(tether_computed_new(rt, state_as_number, &i, NULL, &as_int));
  CHECK_OK(tether_computed_new(rt, state_as_number, &str, NULL, &as_string));
  h.source = as_double;
  CHECK_OK(tether_computed_new(rt, half_of_source, &h, NULL, &half));

  /* First reads evaluate (the full path), later ones are up to date. */
  CHECK_OK(tether_computed_get_double(as_double, &v));
  CHECK(v == 3.5);
  CHECK_OK(tether_computed_get_double(as_double, &v));
  CHECK(v == 3.5);
  CHECK_INT_EQ(d.runs, 1);
  CHECK_OK(tether_computed_get_double(as_int, &v)); /* an int reads as a double */
  CHECK(v == 3.0);
  CHECK_OK(tether_computed_get_double(as_int, &v));
  CHECK(v == 3.0);
  CHECK_OK(tether_computed_get_double(half, &v)); /* reads as_double inside */
  CHECK(v == 1.75);

  /* The read inside half's compute was a dependency. */
  CHECK_OK(tether_state_set_int(s, 5));
  CHECK_OK(tether_computed_get_double(half, &v));
  CHECK(v == 2.75);
  CHECK_INT_EQ(h.runs, 2);
  CHECK_INT_EQ(d.runs, 2);
  CHECK_OK(tether_computed_get_double(half, &v)); /* up to date: no run */
  CHECK_INT_EQ(h.runs, 2);

  /* Wrong type, twice (evaluated, then up to date): an error naming the
   * getter, *out untouched. */
  v = 99;
  CHECK_ERR(tether_computed_get_double(as_string, &v), TETHER_ETYPE);
  CHECK_MENTIONS("tether_computed_get_double");
  CHECK_ERR(tether_computed_get_double(as_string, &v), TETHER_ETYPE);
  CHECK(v == 99);
  CHECK_ERR(tether_computed_get_int(as_double, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_computed_get_double(as_double, NULL), TETHER_EINVAL);
  CHECK_MENTIONS("tether_computed_get_double");

  CHECK_OK(tether_computed_free(half));
  CHECK_ERR(tether_computed_get_double(half, &v), TETHER_ESTALE);
  CHECK(v == 99);
  CHECK_OK(tether_computed_free(as_string));
  CHECK_OK(tether_computed_free(as_int));
  CHECK_OK(tether_computed_free(as_double));
}

TEST_CASE(plain_path_computed_doubles) {
  tether_runtime_t rt = host_runtime(0), single = host_runtime(TETHER_RUNTIME_SINGLE_THREAD);
  computed_doubles_in(rt);
  computed_doubles_in(single);
  CHECK_OK(tether_runtime_free(single));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("plain_path_computed_doubles");
}
