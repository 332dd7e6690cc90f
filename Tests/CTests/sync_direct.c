/*
 * sync_direct.c — SYNC observers of a state called by the write itself.
 *
 * A scalar write from outside callbacks to a state whose observers are all
 * TETHER_OBSERVE_SYNC on the whole value does not queue one call per
 * observer: the writer calls them in registration order with one prepared
 * change (docs/performance.md, "The hot path in one layer"). That must be
 * invisible: each case below records every call (observer, old, new) and
 * checks the exact sequence the queue gives, for the callbacks that disturb
 * a fan-out in the middle: a write to the same state, a write to another
 * state, an equal write that wakes a TETHER_OBSERVE_EQUAL observer, a
 * removal, a registration, and freeing the runtime.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define MAX_CALLS 32

typedef struct {
  char name;
  int64_t old_v, new_v;
} call_t;

static call_t calls[MAX_CALLS];
static int ncalls;

typedef struct obs {
  char name;
  int times;                 /* how many of its calls do `action` (1: the first only) */
  void (*action)(struct obs *self);
  tether_state_t state;      /* for actions */
  tether_observer_t victim;  /* for removals */
  tether_observer_t handle;
  tether_runtime_t rt;
  int rc;
  int destroyed;
} obs_t;

static void on_change(const tether_change_t *c, void *user_data) {
  obs_t *o = user_data;
  call_t r = {o->name, -1, -1};
  tether_value_get_int(c->old_value, &r.old_v);
  tether_value_get_int(c->new_value, &r.new_v);
  if (ncalls < MAX_CALLS) calls[ncalls] = r;
  ncalls++;
  if (o->action && o->times > 0) {
    o->times--;
    o->action(o);
  }
}

static void on_destroy(void *user_data) { ((obs_t *)user_data)->destroyed++; }

static void observe(obs_t *o, char name, tether_state_t s, unsigned flags) {
  memset(o, 0, sizeof *o);
  o->name = name;
  o->rc = 1;
  CHECK_OK(tether_observe(s, NULL, TETHER_OBSERVE_SYNC | flags, on_change, o, on_destroy, &o->handle));
}

/* The calls so far, as "A0>1 B0>2", for one CHECK_STR_EQ. */
static const char *sequence(void) {
  static char text[MAX_CALLS * 24];
  size_t n = 0;
  text[0] = '\0';
  for (int i = 0; i < ncalls && i < MAX_CALLS; i++) {
    n += (size_t)snprintf(text + n, sizeof text - n, "%s%c%lld>%lld", i ? " " : "", calls[i].name,
                          (long long)calls[i].old_v, (long long)calls[i].new_v);
  }
  return text;
}

/* Makes `o`'s first call do `action`, on `target` when it writes. */
static void on_first_call(obs_t *o, void (*action)(obs_t *), tether_state_t target) {
  o->action = action;
  o->state = target;
  o->times = 1;
}

static void write_two(obs_t *o) { o->rc = tether_state_set_int(o->state, 2); }
static void write_one(obs_t *o) { o->rc = tether_state_set_int(o->state, 1); }
static void remove_victim(obs_t *o) { o->rc = tether_observer_remove(o->victim); }
static void free_runtime(obs_t *o) { o->rc = tether_runtime_free(o->rt); }

static obs_t late; /* registered from inside a callback */
static void register_late(obs_t *o) {
  memset(&late, 0, sizeof late);
  late.name = 'L';
  o->rc = tether_observe(o->state, NULL, TETHER_OBSERVE_SYNC, on_change, &late, on_destroy, &late.handle);
}

static tether_runtime_t host_runtime(void) {
  tether_runtime_options_t opt;
  tether_runtime_t rt = {0};
  tether_runtime_options_init(&opt);
  opt.mode = TETHER_LOOP_HOST;
  CHECK_OK(tether_runtime_new(&opt, &rt));
  return rt;
}

/* A's first call writes the state again: B and C, not called yet, get one
 * coalesced call (first old value, newest new value); A gets the second
 * write in the next round. */
TEST_CASE(sync_direct_write_to_the_same_state) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  obs_t a, b, c;
  ncalls = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  observe(&a, 'A', s, 0);
  observe(&b, 'B', s, 0);
  observe(&c, 'C', s, 0);
  on_first_call(&a, write_two, s);
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(a.rc);
  CHECK_STR_EQ(sequence(), "A0>1 B0>2 C0>2 A1>2");
  ncalls = 0;
  CHECK_OK(tether_state_set_int(s, 3)); /* undisturbed: the direct call */
  CHECK_STR_EQ(sequence(), "A2>3 B2>3 C2>3");
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(a.destroyed + b.destroyed + c.destroyed, 3);
  return check_report("sync_direct_write_to_the_same_state");
}

/* A's call writes another state, observed by T: the rest of this round (B)
 * first, then T in the next. */
TEST_CASE(sync_direct_write_to_another_state) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s, t;
  obs_t a, b, tw;
  ncalls = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &t));
  observe(&tw, 'T', t, 0); /* registered first: still called after B, a round later */
  observe(&a, 'A', s, 0);
  observe(&b, 'B', s, 0);
  on_first_call(&a, write_two, t);
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(a.rc);
  CHECK_STR_EQ(sequence(), "A0>1 B0>1 T0>2");
  CHECK_OK(tether_runtime_free(rt));
  return check_report("sync_direct_write_to_another_state");
}

/* A's call writes the value the state already holds: only E (which asked
 * for equal writes) wakes, and its call owed by the first write absorbs it
 * (one call, as the queue coalesces it). */
TEST_CASE(sync_direct_equal_write_inside) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  obs_t a, e;
  ncalls = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  observe(&a, 'A', s, 0);
  observe(&e, 'E', s, TETHER_OBSERVE_EQUAL);
  on_first_call(&a, write_one, s);
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(a.rc);
  CHECK_STR_EQ(sequence(), "A0>1 E0>1");
  ncalls = 0;
  CHECK_OK(tether_state_set_int(s, 1)); /* an equal write from outside: E only */
  CHECK_STR_EQ(sequence(), "E1>1");
  CHECK_OK(tether_runtime_free(rt));
  return check_report("sync_direct_equal_write_inside");
}

/* A removes C before C's turn and registers L: C is not called and its
 * destroy runs once; L is not called for a write made before it existed,
 * but is for the next one. */
TEST_CASE(sync_direct_remove_and_register_inside) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  obs_t a, b, c, r;
  ncalls = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  observe(&a, 'A', s, 0);
  observe(&r, 'R', s, 0);
  observe(&b, 'B', s, 0);
  observe(&c, 'C', s, 0);
  on_first_call(&a, remove_victim, (tether_state_t){0});
  a.victim = c.handle;
  on_first_call(&r, register_late, s);
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(a.rc);
  CHECK_OK(r.rc);
  CHECK_STR_EQ(sequence(), "A0>1 R0>1 B0>1");
  CHECK_INT_EQ(c.destroyed, 1);
  ncalls = 0;
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_STR_EQ(sequence(), "A1>2 R1>2 B1>2 L1>2");
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(a.destroyed + r.destroyed + b.destroyed + late.destroyed, 4);
  CHECK_INT_EQ(c.destroyed, 1);
  return check_report("sync_direct_remove_and_register_inside");
}

/* A frees the runtime: B is never called, the write still succeeds, every
 * destroy function runs once. */
TEST_CASE(sync_direct_free_runtime_inside) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  obs_t a, b;
  ncalls = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  observe(&a, 'A', s, 0);
  observe(&b, 'B', s, 0);
  on_first_call(&a, free_runtime, (tether_state_t){0});
  a.rt = rt;
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(a.rc);
  CHECK_STR_EQ(sequence(), "A0>1");
  CHECK_INT_EQ(a.destroyed, 1);
  CHECK_INT_EQ(b.destroyed, 1);
  CHECK_ERR(tether_state_set_int(s, 2), TETHER_ESTALE);
  return check_report("sync_direct_free_runtime_inside");
}

/* Inside a batch the calls wait for its end, one per observer (the direct
 * call is not used there); a string write takes the queue too. Both give
 * the same calls as before. */
TEST_CASE(sync_direct_not_used_in_batches) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  obs_t a, b;
  ncalls = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  observe(&a, 'A', s, 0);
  observe(&b, 'B', s, 0);
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_INT_EQ(ncalls, 0);
  CHECK_OK(tether_batch_end(rt));
  CHECK_STR_EQ(sequence(), "A0>2 B0>2");
  CHECK_OK(tether_runtime_free(rt));
  return check_report("sync_direct_not_used_in_batches");
}

/* ---- pinned calls: removals while the calls run ---------------------------- */
/* The writer makes the calls without the runtime's lock, every observer
 * pinned by the write (docs/performance.md, "Pinned calls"). The contract
 * still holds: after tether_observer_remove returns, the observer is not
 * called again, and its destroy has run unless its call is running (then
 * it runs when the call returns). */

static int destroyed_at_return, remove_again_rc;
static obs_t *watched; /* whose `destroyed` remove_victim_checked reads */

static void remove_victim_checked(obs_t *o) {
  o->rc = tether_observer_remove(o->victim);
  destroyed_at_return = watched->destroyed;
  remove_again_rc = tether_observer_remove(o->victim);
}

/* A removes C, not called yet: its destroy has run when the removal
 * returns, and removing it again is refused; B then removes A, already
 * called: its destroy runs at once too. */
TEST_CASE(sync_direct_remove_pinned_destroys_at_once) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  obs_t a, b, c;
  int c_at_return;
  ncalls = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  observe(&a, 'A', s, 0);
  observe(&b, 'B', s, 0);
  observe(&c, 'C', s, 0);
  on_first_call(&a, remove_victim_checked, (tether_state_t){0});
  a.victim = c.handle;
  watched = &c;
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(a.rc);
  CHECK_INT_EQ(destroyed_at_return, 1);
  CHECK_ERR(remove_again_rc, TETHER_ESTALE);
  c_at_return = destroyed_at_return;
  on_first_call(&b, remove_victim_checked, (tether_state_t){0});
  b.victim = a.handle;
  watched = &a;
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_OK(b.rc);
  CHECK_INT_EQ(destroyed_at_return, 1);
  CHECK_STR_EQ(sequence(), "A0>1 B0>1 A1>2 B1>2");
  ncalls = 0;
  CHECK_OK(tether_state_set_int(s, 3));
  CHECK_STR_EQ(sequence(), "B2>3");
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(a.destroyed + b.destroyed + c.destroyed + c_at_return, 4);
  return check_report("sync_direct_remove_pinned_destroys_at_once");
}

/* A removes itself: its destroy waits for its call to return, the calls
 * after it are made, and it is not called again. */
TEST_CASE(sync_direct_remove_self_destroys_after_call) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  obs_t a, b;
  ncalls = 0;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  observe(&a, 'A', s, 0);
  observe(&b, 'B', s, 0);
  on_first_call(&a, remove_victim_checked, (tether_state_t){0});
  a.victim = a.handle;
  watched = &a;
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(a.rc);
  CHECK_INT_EQ(destroyed_at_return, 0);
  CHECK_ERR(remove_again_rc, TETHER_ESTALE);
  CHECK_INT_EQ(a.destroyed, 1);
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_STR_EQ(sequence(), "A0>1 B0>1 B1>2");
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(a.destroyed + b.destroyed, 2);
  return check_report("sync_direct_remove_self_destroys_after_call");
}

/* From another thread, while B's call runs (B waits for that thread): A,
 * already called, and D, not called yet, are destroyed when their removal
 * returns; B, whose call is running, when its call returns. D is never
 * called; C is. */
static obs_t pa, pb, pc, pd;
static int pa_at_return, pd_at_return, pb_at_return, premove_rc;

static void *remove_three(void *arg) {
  (void)arg;
  premove_rc = tether_observer_remove(pa.handle);
  pa_at_return = pa.destroyed;
  premove_rc |= tether_observer_remove(pd.handle);
  pd_at_return = pd.destroyed;
  premove_rc |= tether_observer_remove(pb.handle);
  pb_at_return = pb.destroyed;
  return NULL;
}

static void remove_from_thread(obs_t *o) {
  pthread_t t;
  o->rc = pthread_create(&t, NULL, remove_three, NULL);
  if (o->rc == 0) o->rc = pthread_join(t, NULL);
}

TEST_CASE(sync_direct_remove_from_another_thread) {
  tether_runtime_t rt;
  tether_state_t s;
  ncalls = 0;
  CHECK_OK(tether_runtime_new(NULL, &rt));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  observe(&pa, 'A', s, 0);
  observe(&pb, 'B', s, 0);
  observe(&pc, 'C', s, 0);
  observe(&pd, 'D', s, 0);
  on_first_call(&pb, remove_from_thread, (tether_state_t){0});
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(pb.rc);
  CHECK_OK(premove_rc);
  CHECK_INT_EQ(pa_at_return, 1);
  CHECK_INT_EQ(pd_at_return, 1);
  CHECK_INT_EQ(pb_at_return, 0);
  CHECK_INT_EQ(pb.destroyed, 1);
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_STR_EQ(sequence(), "A0>1 B0>1 C0>1 C1>2");
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(pa.destroyed + pb.destroyed + pc.destroyed + pd.destroyed, 4);
  return check_report("sync_direct_remove_from_another_thread");
}

/* Another thread writes the state while B's call runs (B waits until the
 * write is stored; the writer then waits for the delivery this thread
 * makes): C, not called yet, gets one call for both writes, then A and B
 * the second write, as the queue would have made them. */
static tether_state_t pinned_state;
static int pwrite_rc, pfree_rc;
static pthread_t helper; /* started by a callback, joined by the case */

static void *write_two_from_thread(void *arg) {
  (void)arg;
  pwrite_rc = tether_state_set_int(pinned_state, 2);
  return NULL;
}

static void write_from_thread(obs_t *o) {
  int64_t v = 0;
  double until = check_deadline();
  o->rc = pthread_create(&helper, NULL, write_two_from_thread, NULL);
  while (o->rc == 0 && tether_state_get_int(pinned_state, &v) == TETHER_OK && v != 2 &&
         !CHECK_PAST(until, "the other thread's write of 2"))
    sched_yield();
}

TEST_CASE(sync_direct_write_from_another_thread) {
  tether_runtime_t rt;
  obs_t a, b, c;
  ncalls = 0;
  CHECK_OK(tether_runtime_new(NULL, &rt));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &pinned_state));
  observe(&a, 'A', pinned_state, 0);
  observe(&b, 'B', pinned_state, 0);
  observe(&c, 'C', pinned_state, 0);
  on_first_call(&b, write_from_thread, (tether_state_t){0});
  CHECK_OK(tether_state_set_int(pinned_state, 1));
  CHECK_OK(b.rc);
  CHECK(pthread_join(helper, NULL) == 0);
  CHECK_OK(pwrite_rc);
  CHECK_STR_EQ(sequence(), "A0>1 B0>1 C0>2 A1>2 B1>2");
  CHECK_OK(tether_runtime_free(rt));
  return check_report("sync_direct_write_from_another_thread");
}

/* Another thread frees the runtime while A's call runs (A waits until its
 * state is stale; the free then waits for this thread's delivery): B is
 * never called, and every destroy runs once. */
static tether_runtime_t pinned_runtime;

static void *free_from_thread(void *arg) {
  (void)arg;
  pfree_rc = tether_runtime_free(pinned_runtime);
  return NULL;
}

static void free_runtime_from_thread(obs_t *o) {
  int64_t v = 0;
  double until = check_deadline();
  o->rc = pthread_create(&helper, NULL, free_from_thread, NULL);
  while (o->rc == 0 && tether_state_get_int(pinned_state, &v) != TETHER_ESTALE &&
         !CHECK_PAST(until, "the other thread's free to make the state stale"))
    sched_yield();
}

TEST_CASE(sync_direct_free_runtime_from_another_thread) {
  obs_t a, b;
  ncalls = 0;
  CHECK_OK(tether_runtime_new(NULL, &pinned_runtime));
  CHECK_OK(tether_state_new_int(pinned_runtime, 0, 0, &pinned_state));
  observe(&a, 'A', pinned_state, 0);
  observe(&b, 'B', pinned_state, 0);
  on_first_call(&a, free_runtime_from_thread, (tether_state_t){0});
  CHECK_OK(tether_state_set_int(pinned_state, 1));
  CHECK_OK(a.rc);
  CHECK(pthread_join(helper, NULL) == 0);
  CHECK_OK(pfree_rc);
  CHECK_STR_EQ(sequence(), "A0>1");
  CHECK_INT_EQ(a.destroyed, 1);
  CHECK_INT_EQ(b.destroyed, 1);
  return check_report("sync_direct_free_runtime_from_another_thread");
}

/* A thread nested in callbacks of 16 runtimes skips deeper callbacks
 * (docs/runtime.md, limits): runtime i's observer writes runtime i+1's
 * state, so observer i runs 1 + i deep; observer 16's direct call is not
 * entered, and ends without being made. Every write still succeeds. */
#define NEST 18
static tether_state_t nest_states[NEST];
static int nest_calls[NEST], nest_rc;

static void on_nested(const tether_change_t *c, void *user_data) {
  int i = (int)(intptr_t)user_data;
  (void)c;
  nest_calls[i]++;
  if (i + 1 < NEST) nest_rc |= tether_state_set_int(nest_states[i + 1], 1);
}

TEST_CASE(sync_direct_nested_too_deep_skips_the_call) {
  tether_runtime_t rts[NEST];
  tether_observer_t o;
  int64_t v = -1;
  nest_rc = 0;
  for (int i = 0; i < NEST; i++) {
    rts[i] = host_runtime();
    nest_calls[i] = 0;
    CHECK_OK(tether_state_new_int(rts[i], 0, 0, &nest_states[i]));
    CHECK_OK(tether_observe(nest_states[i], NULL, TETHER_OBSERVE_SYNC, on_nested, (void *)(intptr_t)i, NULL, &o));
  }
  CHECK_OK(tether_state_set_int(nest_states[0], 1));
  CHECK_OK(nest_rc);
  for (int i = 0; i < 16; i++) CHECK_INT_EQ(nest_calls[i], 1);
  CHECK_INT_EQ(nest_calls[16], 0);
  CHECK_OK(tether_state_get_int(nest_states[16], &v));
  CHECK_INT_EQ(v, 1);
  CHECK_OK(tether_state_get_int(nest_states[17], &v));
  CHECK_INT_EQ(v, 0);
  /* Not owed later either: the next write is called as usual. */
  CHECK_OK(tether_state_set_int(nest_states[16], 2));
  CHECK_INT_EQ(nest_calls[16], 1);
  for (int i = 0; i < NEST; i++) CHECK_OK(tether_runtime_free(rts[i]));
  return check_report("sync_direct_nested_too_deep_skips_the_call");
}

/* ---- under contention ------------------------------------------------------ */

#define THREADS 4
#define THREAD_WRITES 1500
#define WATCHERS 3

typedef struct {
  int64_t *old_v, *new_v;
  long n;
} chain_t;

static tether_state_t contended, echo;
static chain_t chains[WATCHERS];
static pthread_mutex_t chain_mutex = PTHREAD_MUTEX_INITIALIZER;

static void on_contended(const tether_change_t *c, void *user_data) {
  chain_t *ch = user_data;
  int64_t o = -1, n = -1;
  tether_value_get_int(c->old_value, &o);
  tether_value_get_int(c->new_value, &n);
  pthread_mutex_lock(&chain_mutex);
  if (ch->n < (long)THREADS * THREAD_WRITES) {
    ch->old_v[ch->n] = o;
    ch->new_v[ch->n] = n;
  }
  ch->n++;
  pthread_mutex_unlock(&chain_mutex);
  /* The middle watcher writes another state from every call: each direct
   * call is interrupted after it, and the last watcher's call goes back to
   * the queue, while other threads write too. */
  if (ch == &chains[1]) tether_state_set_int(echo, n);
}

static void *contending_writer(void *arg) {
  int64_t base = ((int64_t)(intptr_t)arg + 1) * 1000000;
  for (int64_t i = 1; i <= THREAD_WRITES; i++) tether_state_set_int(contended, base + i);
  return NULL;
}

/* Four threads write one state with three SYNC observers. Whatever mix of
 * direct calls and queued ones that gives, each observer's calls chain
 * (every old value is its previous new value, starting from 0), none
 * reports old == new, and the last reports the final value. */
TEST_CASE(sync_direct_threads_chain_per_observer) {
  tether_runtime_t rt;
  tether_observer_t handles[WATCHERS];
  pthread_t threads[THREADS];
  int64_t final_v = -1;

  CHECK_OK(tether_runtime_new(NULL, &rt));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &contended));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &echo));
  for (int w = 0; w < WATCHERS; w++) {
    chains[w].old_v = calloc((size_t)THREADS * THREAD_WRITES, sizeof(int64_t));
    chains[w].new_v = calloc((size_t)THREADS * THREAD_WRITES, sizeof(int64_t));
    chains[w].n = 0;
    CHECK(chains[w].old_v != NULL && chains[w].new_v != NULL);
    CHECK_OK(tether_observe(contended, NULL, TETHER_OBSERVE_SYNC, on_contended, &chains[w], NULL, &handles[w]));
  }
  for (intptr_t t = 0; t < THREADS; t++) CHECK(pthread_create(&threads[t], NULL, contending_writer, (void *)t) == 0);
  for (int t = 0; t < THREADS; t++) CHECK(pthread_join(threads[t], NULL) == 0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_state_get_int(contended, &final_v));

  for (int w = 0; w < WATCHERS; w++) {
    chain_t *ch = &chains[w];
    long broken = 0, same = 0, n = ch->n;
    CHECK(n >= 1 && n <= (long)THREADS * THREAD_WRITES);
    if (n < 1 || n > (long)THREADS * THREAD_WRITES) continue;
    CHECK_INT_EQ(ch->old_v[0], 0);
    for (long i = 0; i < n; i++) {
      if (ch->old_v[i] == ch->new_v[i]) same++;
      if (i > 0 && ch->old_v[i] != ch->new_v[i - 1]) broken++;
    }
    CHECK_INT_EQ(broken, 0);
    CHECK_INT_EQ(same, 0);
    CHECK_INT_EQ(ch->new_v[n - 1], final_v);
  }
  CHECK_OK(tether_runtime_free(rt));
  for (int w = 0; w < WATCHERS; w++) {
    free(chains[w].old_v);
    free(chains[w].new_v);
  }
  return check_report("sync_direct_threads_chain_per_observer");
}
