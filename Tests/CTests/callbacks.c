/*
 * callbacks.c — what a callback may do, and what then happens.
 *
 * An observer callback may call any tether_ function. This program shows
 * each kind of call from inside callbacks, both loop-delivered (the default)
 * and TETHER_OBSERVE_SYNC:
 *  - writes: delivered after the callback returns, as a new round, so a
 *    derived state follows its source within one tether_runtime_flush();
 *  - feedback: two observers that keep writing each other never settle; after
 *    max_rounds rounds the write in the callback fails with TETHER_ELOOP
 *    (instead of a hang) and the flush reports it;
 *  - tether_observer_remove of itself or of another observer;
 *  - tether_state_free of the state being observed;
 *  - tether_runtime_free of the runtime itself;
 *  - tether_runtime_flush: TETHER_EBUSY while loop deliveries are owed
 *    (waiting would wait on itself).
 * Throughout, every destroy function must run exactly once, and never while
 * its registration's callback is still running.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* One lock for all the bookkeeping below. It is never held while calling a
 * tether_ function: destroy functions may run inside those calls. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* ---- a registration we can account for ----------------------------------- */

typedef struct reg {
  const char *name;
  tether_observer_t handle;
  int calls;
  int running;                  /* inside its callback right now */
  int destroyed;                /* destroy calls: must end at exactly 1 */
  int destroyed_while_running;  /* must stay 0 */
  pthread_t destroy_thread;
  /* what the callback does, and what came back */
  tether_state_t target;
  tether_observer_t victim;
  tether_runtime_t rt;
  int rc;       /* result of the callback's action */
  int rc2;      /* result of a second action */
  int64_t last_new;
} reg_t;

static void reg_init(reg_t *r, const char *name) {
  memset(r, 0, sizeof *r);
  r->name = name;
  r->rc = r->rc2 = 1; /* "not called" */
}

static void begin(reg_t *r, const tether_change_t *change) {
  pthread_mutex_lock(&mu);
  r->calls++;
  r->running = 1;
  r->last_new = value_int_or(change->new_value, -1);
  pthread_mutex_unlock(&mu);
}

static void end(reg_t *r) {
  pthread_mutex_lock(&mu);
  r->running = 0;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void reg_destroy(void *user_data) {
  reg_t *r = user_data;
  pthread_mutex_lock(&mu);
  r->destroyed++;
  if (r->running) r->destroyed_while_running++;
  r->destroy_thread = pthread_self();
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static int get(reg_t *r, const int *field) {
  int v;
  (void)r;
  pthread_mutex_lock(&mu);
  v = *field;
  pthread_mutex_unlock(&mu);
  return v;
}
#define CALLS(r) get((r), &(r)->calls)
#define RC(r) get((r), &(r)->rc)
#define RC2(r) get((r), &(r)->rc2)

static void expect_destroyed_once_(reg_t *r, const char *file, int line) {
  int d, w;
  pthread_mutex_lock(&mu);
  d = r->destroyed;
  w = r->destroyed_while_running;
  pthread_mutex_unlock(&mu);
  check_destroyed_once_(r->name, d, w, file, line);
}
#define EXPECT_DESTROYED_ONCE(r) expect_destroyed_once_((r), __FILE__, __LINE__)

/* Waits (no sleeping: a condition variable) until r's destroy has run; the
 * 60 s limit only turns a hang into a failed check. */
static void wait_destroyed_(reg_t *r, const char *file, int line) {
  struct timespec until;
  int rc = 0;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 60;
  pthread_mutex_lock(&mu);
  while (r->destroyed == 0 && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&cv, &mu, &until);
  pthread_mutex_unlock(&mu);
  if (rc == ETIMEDOUT)
    check_fail_(file, line, "observer \"%s\": destroy never ran", r->name);
  else
    check_pass_();
}
#define WAIT_DESTROYED(r) wait_destroyed_((r), __FILE__, __LINE__)

static int64_t state_int(tether_state_t s) {
  int64_t v = -1;
  CHECK_OK(tether_state_get_int(s, &v));
  return v;
}

/* ---- callbacks --------------------------------------------------------------- */

/* Just counts. */
static void plain(const tether_change_t *change, void *user_data) {
  begin(user_data, change);
  end(user_data);
}

/* Writes new * 9 / 5 + 32 into target: a derived state. */
static void to_fahrenheit(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int64_t c = value_int_or(change->new_value, 0);
  int rc;
  begin(r, change);
  rc = tether_state_set_int(r->target, c * 9 / 5 + 32);
  pthread_mutex_lock(&mu);
  r->rc = rc;
  pthread_mutex_unlock(&mu);
  end(r);
}

/* Adds one to its own state until it reaches 5: one round per step. */
static void climb_to_five(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int64_t v = value_int_or(change->new_value, 0);
  begin(r, change);
  if (v < 5) {
    int rc = tether_state_set_int(change->state, v + 1);
    pthread_mutex_lock(&mu);
    r->rc = rc;
    pthread_mutex_unlock(&mu);
  }
  end(r);
}

/* Ping-pong: writes new + 1 into target, forever. Counts what the writes
 * return. A safety cap stops a library that never says ELOOP. */
typedef struct pingpong {
  int ok, eloop, other, calls;
} pingpong_t;
static pingpong_t pp;

static void ping(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc, calls;
  begin(r, change);
  pthread_mutex_lock(&mu);
  calls = ++pp.calls;
  pthread_mutex_unlock(&mu);
  if (calls <= 10000) {
    rc = tether_state_set_int(r->target, value_int_or(change->new_value, 0) + 1);
    pthread_mutex_lock(&mu);
    if (rc == TETHER_OK) pp.ok++;
    else if (rc == TETHER_ELOOP) pp.eloop++;
    else pp.other++;
    pthread_mutex_unlock(&mu);
  }
  end(r);
}

static void pingpong_reset(void) {
  pthread_mutex_lock(&mu);
  memset(&pp, 0, sizeof pp);
  pthread_mutex_unlock(&mu);
}

static pingpong_t pingpong_get(void) {
  pingpong_t p;
  pthread_mutex_lock(&mu);
  p = pp;
  pthread_mutex_unlock(&mu);
  return p;
}

/* Removes itself on its first call. */
static void remove_self(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc;
  begin(r, change);
  rc = tether_observer_remove(change->observer);
  pthread_mutex_lock(&mu);
  if (r->rc == 1) r->rc = rc;
  pthread_mutex_unlock(&mu);
  end(r);
}

/* Removes r->victim. */
static void remove_other(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc;
  begin(r, change);
  rc = tether_observer_remove(r->victim);
  pthread_mutex_lock(&mu);
  if (r->rc == 1) r->rc = rc;
  pthread_mutex_unlock(&mu);
  end(r);
}

/* Frees the state it observes, then checks the handle is stale at once. */
static void free_my_state(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc, rc2;
  int64_t v;
  begin(r, change);
  rc = tether_state_free(change->state);
  rc2 = tether_state_get_int(change->state, &v);
  pthread_mutex_lock(&mu);
  if (r->rc == 1) r->rc = rc;
  if (r->rc2 == 1) r->rc2 = rc2;
  pthread_mutex_unlock(&mu);
  end(r);
}

/* Frees the whole runtime, then checks its handles are stale at once. */
static void free_my_runtime(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc, rc2;
  int64_t v;
  begin(r, change);
  rc = tether_runtime_free(r->rt);
  rc2 = tether_state_get_int(change->state, &v);
  pthread_mutex_lock(&mu);
  if (r->rc == 1) r->rc = rc;
  if (r->rc2 == 1) r->rc2 = rc2;
  pthread_mutex_unlock(&mu);
  end(r);
}

/* Writes r->target (whose loop observer is then owed a call), then flushes:
 * rc = the write, rc2 = the flush. */
static void write_then_flush(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc, rc2;
  begin(r, change);
  rc = tether_state_set_int(r->target, value_int_or(change->new_value, 0));
  rc2 = tether_runtime_flush(r->rt);
  pthread_mutex_lock(&mu);
  if (r->rc == 1) r->rc = rc;
  if (r->rc2 == 1) r->rc2 = rc2;
  pthread_mutex_unlock(&mu);
  end(r);
}

/* Flushes with nothing else owed: rc = the flush. */
static void just_flush(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc;
  begin(r, change);
  rc = tether_runtime_flush(r->rt);
  pthread_mutex_lock(&mu);
  if (r->rc == 1) r->rc = rc;
  pthread_mutex_unlock(&mu);
  end(r);
}

/* ==== the scenarios ========================================================= */

static void writes_from_callbacks(tether_runtime_t rt) {
  tether_state_t celsius, fahrenheit, climber;
  reg_t conv, view, climb;

  /* A derived state: fahrenheit follows celsius. */
  reg_init(&conv, "celsius->fahrenheit");
  reg_init(&view, "fahrenheit view");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &celsius));
  CHECK_OK(tether_state_new_int(rt, 32, 0, &fahrenheit));
  conv.target = fahrenheit;
  CHECK_OK(tether_observe(celsius, NULL, 0, to_fahrenheit, &conv, reg_destroy, &conv.handle));
  CHECK_OK(tether_observe(fahrenheit, NULL, 0, plain, &view, reg_destroy, &view.handle));
  CHECK_OK(tether_state_set_int(celsius, 100));
  CHECK_OK(tether_runtime_flush(rt)); /* includes the round the converter caused */
  CHECK_INT_EQ(RC(&conv), TETHER_OK);
  CHECK_INT_EQ(state_int(fahrenheit), 212);
  CHECK_INT_EQ(CALLS(&view), 1);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(view.last_new, 212);
  pthread_mutex_unlock(&mu);

  /* Each write from a callback is a new round: 0->1, 1->2, ... 4->5. */
  reg_init(&climb, "climber");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &climber));
  CHECK_OK(tether_observe(climber, NULL, 0, climb_to_five, &climb, reg_destroy, &climb.handle));
  CHECK_OK(tether_state_set_int(climber, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(state_int(climber), 5);
  CHECK_INT_EQ(CALLS(&climb), 5);
  CHECK_INT_EQ(RC(&climb), TETHER_OK);

  CHECK_OK(tether_state_free(celsius));
  CHECK_OK(tether_state_free(fahrenheit));
  CHECK_OK(tether_state_free(climber));
  EXPECT_DESTROYED_ONCE(&conv);
  EXPECT_DESTROYED_ONCE(&view);
  EXPECT_DESTROYED_ONCE(&climb);
}

/* Two observers that write each other never settle. */
static void feedback_loop(unsigned max_rounds, unsigned flags) {
  tether_runtime_options_t opts;
  tether_runtime_t rt;
  tether_state_t p, q;
  reg_t a, b;
  pingpong_t got;
  int rc;
  unsigned rounds = max_rounds ? max_rounds : 100; /* 0 means the default, 100 */
  const char *kind = (flags & TETHER_OBSERVE_SYNC) ? "SYNC" : "loop";

  tether_runtime_options_init(&opts);
  opts.max_rounds = max_rounds;
  if (!CHECK_OK(tether_runtime_new(&opts, &rt))) return;
  reg_init(&a, "ping");
  reg_init(&b, "pong");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &p));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &q));
  a.target = q;
  b.target = p;
  CHECK_OK(tether_observe(p, NULL, flags, ping, &a, reg_destroy, &a.handle));
  CHECK_OK(tether_observe(q, NULL, flags, ping, &b, reg_destroy, &b.handle));
  pingpong_reset();

  /* The main thread's write itself succeeds (it is not in a callback). */
  CHECK_OK(tether_state_set_int(p, 1));
  rc = tether_runtime_flush(rt);
  got = pingpong_get();
  printf("callbacks: %s ping-pong, max_rounds %u: %d writes ok, %d TETHER_ELOOP, flush %s\n",
         kind, max_rounds, got.ok, got.eloop, check_errname(rc));
  if (flags & TETHER_OBSERVE_SYNC) {
    CHECK_INT_EQ(rc, TETHER_OK); /* the loop was cut inside the write */
  } else {
    CHECK_INT_EQ(rc, TETHER_ELOOP); /* flush reports that the owed callbacks hit max_rounds */
  }
  CHECK_INT_EQ(got.eloop, 1);  /* exactly one callback write was refused: the chain ended */
  CHECK_INT_EQ(got.other, 0);
  CHECK((unsigned)got.ok + 1 >= rounds && (unsigned)got.ok <= rounds + 1);
  CHECK_INT_EQ(got.calls, got.ok + got.eloop);
  /* Nothing is left owed, and the runtime still works. */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_observer_remove(a.handle));
  CHECK_OK(tether_observer_remove(b.handle));
  CHECK_OK(tether_state_set_int(p, 1000));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(state_int(p), 1000);
  EXPECT_DESTROYED_ONCE(&a);
  EXPECT_DESTROYED_ONCE(&b);
  CHECK_OK(tether_runtime_free(rt));
}

static void removing_observers(tether_runtime_t rt, unsigned flags) {
  tether_state_t s;
  reg_t self, killer, victim, after;

  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));

  /* An observer that removes itself is called once. */
  reg_init(&self, "removes itself");
  CHECK_OK(tether_observe(s, NULL, flags, remove_self, &self, reg_destroy, &self.handle));
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&self), 1);
  CHECK_INT_EQ(RC(&self), TETHER_OK);
  EXPECT_DESTROYED_ONCE(&self);
  CHECK_ERR(tether_observer_remove(self.handle), TETHER_ESTALE);
  EXPECT_DESTROYED_ONCE(&self);

  /* An observer that removes a later one in the same round: the victim is
   * not called at all, the one after it still is. */
  reg_init(&killer, "removes victim");
  reg_init(&victim, "victim");
  reg_init(&after, "after victim");
  CHECK_OK(tether_observe(s, NULL, flags, remove_other, &killer, reg_destroy, &killer.handle));
  CHECK_OK(tether_observe(s, NULL, flags, plain, &victim, reg_destroy, &victim.handle));
  CHECK_OK(tether_observe(s, NULL, flags, plain, &after, reg_destroy, &after.handle));
  killer.victim = victim.handle; /* set before any write: no race */
  CHECK_OK(tether_state_set_int(s, 3));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&killer), 1);
  CHECK_INT_EQ(RC(&killer), TETHER_OK);
  CHECK_INT_EQ(CALLS(&victim), 0);
  CHECK_INT_EQ(CALLS(&after), 1);
  EXPECT_DESTROYED_ONCE(&victim);
  /* Next time the killer's remove finds nothing: TETHER_ESTALE, harmless. */
  pthread_mutex_lock(&mu);
  killer.rc = 1;
  pthread_mutex_unlock(&mu);
  CHECK_OK(tether_state_set_int(s, 4));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RC(&killer), TETHER_ESTALE);
  EXPECT_DESTROYED_ONCE(&victim);

  CHECK_OK(tether_state_free(s));
  EXPECT_DESTROYED_ONCE(&killer);
  EXPECT_DESTROYED_ONCE(&after);
}

static void freeing_the_state(tether_runtime_t rt, unsigned flags) {
  tether_state_t s, bystander;
  reg_t freer, sibling, other;

  reg_init(&freer, "frees its state");
  reg_init(&sibling, "sibling on the freed state");
  reg_init(&other, "observer of another state");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &bystander));
  CHECK_OK(tether_observe(s, NULL, flags, free_my_state, &freer, reg_destroy, &freer.handle));
  CHECK_OK(tether_observe(s, NULL, flags, plain, &sibling, reg_destroy, &sibling.handle));
  CHECK_OK(tether_observe(bystander, NULL, flags, plain, &other, reg_destroy, &other.handle));

  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&freer), 1);
  CHECK_INT_EQ(RC(&freer), TETHER_OK);
  CHECK_INT_EQ(RC2(&freer), TETHER_ESTALE); /* stale at once, inside the callback */
  CHECK_INT_EQ(CALLS(&sibling), 0);         /* its undelivered call was dropped */
  EXPECT_DESTROYED_ONCE(&freer);            /* after its callback returned */
  EXPECT_DESTROYED_ONCE(&sibling);
  CHECK_ERR(tether_state_set_int(s, 2), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(freer.handle), TETHER_ESTALE);

  /* Observers of other states are untouched. */
  CHECK_OK(tether_state_set_int(bystander, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&other), 1);
  CHECK_OK(tether_state_free(bystander));
  EXPECT_DESTROYED_ONCE(&other);
}

static void freeing_the_runtime(unsigned flags) {
  tether_runtime_t rt;
  tether_state_t s, t;
  reg_t freer, sibling, other;
  pthread_t me = pthread_self();
  int sync = (flags & TETHER_OBSERVE_SYNC) != 0;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  reg_init(&freer, "frees the runtime");
  reg_init(&sibling, "sibling");
  reg_init(&other, "other state's observer");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &t));
  freer.rt = rt;
  CHECK_OK(tether_observe(s, NULL, flags, free_my_runtime, &freer, reg_destroy, &freer.handle));
  CHECK_OK(tether_observe(s, NULL, flags, plain, &sibling, reg_destroy, &sibling.handle));
  CHECK_OK(tether_observe(t, NULL, 0, plain, &other, reg_destroy, &other.handle));

  CHECK_OK(tether_state_set_int(s, 1)); /* the write itself succeeded */
  if (sync) {
    /* The SYNC callback ran on this thread inside the write; the teardown
     * completed right after it returned, before the write returned. */
    CHECK_INT_EQ(get(&freer, &freer.destroyed), 1);
    pthread_mutex_lock(&mu);
    CHECK(pthread_equal(freer.destroy_thread, me));
    pthread_mutex_unlock(&mu);
  } else {
    /* The loop thread runs the teardown after the callback; we can no longer
     * flush (the runtime is gone), so wait for the destroy functions. */
    WAIT_DESTROYED(&freer);
  }
  WAIT_DESTROYED(&sibling);
  WAIT_DESTROYED(&other);
  CHECK_INT_EQ(CALLS(&freer), 1);
  CHECK_INT_EQ(RC(&freer), TETHER_OK);
  CHECK_INT_EQ(RC2(&freer), TETHER_ESTALE);
  CHECK_INT_EQ(CALLS(&sibling), 0);
  CHECK_INT_EQ(CALLS(&other), 0);
  EXPECT_DESTROYED_ONCE(&freer);
  EXPECT_DESTROYED_ONCE(&sibling);
  EXPECT_DESTROYED_ONCE(&other);
  CHECK_ERR(tether_runtime_flush(rt), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_free(rt), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(t, 1), TETHER_ESTALE);
}

/* Freeing a runtime with live observers calls every destroy exactly once,
 * on the calling thread. */
static void freeing_with_live_observers(void) {
  tether_runtime_t rt;
  tether_state_t a, b, c;
  reg_t r[6];
  tether_observer_t h;
  int i;
  pthread_t me = pthread_self();

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  for (i = 0; i < 6; i++) reg_init(&r[i], "live observer");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  CHECK_OK(tether_state_new_json(rt, "{\"x\":1}", -1, 0, &b));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &c));
  CHECK_OK(tether_observe(a, NULL, 0, plain, &r[0], reg_destroy, &h));
  CHECK_OK(tether_observe(a, NULL, TETHER_OBSERVE_SYNC, plain, &r[1], reg_destroy, &h));
  CHECK_OK(tether_observe(b, "/x", 0, plain, &r[2], reg_destroy, &h));
  CHECK_OK(tether_observe(b, "/y", TETHER_OBSERVE_EQUAL, plain, &r[3], reg_destroy, &h));
  CHECK_OK(tether_observe(c, NULL, TETHER_OBSERVE_INITIAL, plain, &r[4], reg_destroy, &h));
  CHECK_OK(tether_observe(c, NULL, TETHER_OBSERVE_SYNC | TETHER_OBSERVE_INITIAL, plain, &r[5],
                          reg_destroy, &h));
  CHECK_OK(tether_state_set_int(a, 1)); /* owed, and dropped by the free */
  CHECK_OK(tether_runtime_free(rt));
  for (i = 0; i < 6; i++) {
    EXPECT_DESTROYED_ONCE(&r[i]);
    pthread_mutex_lock(&mu);
    CHECK(pthread_equal(r[i].destroy_thread, me));
    pthread_mutex_unlock(&mu);
  }
}

/* tether_runtime_flush inside a callback. */
static void flush_inside(tether_runtime_t rt) {
  tether_state_t src, dst, quiet, sync_src;
  reg_t flusher, dst_view, calm, sync_flusher;

  reg_init(&flusher, "writes then flushes");
  reg_init(&dst_view, "loop observer of dst");
  reg_init(&calm, "flushes with nothing owed");
  reg_init(&sync_flusher, "SYNC: writes then flushes");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &src));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &dst));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &quiet));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &sync_src));
  flusher.target = dst;
  flusher.rt = rt;
  calm.rt = rt;
  sync_flusher.target = dst;
  sync_flusher.rt = rt;
  CHECK_OK(tether_observe(src, NULL, 0, write_then_flush, &flusher, reg_destroy, &flusher.handle));
  CHECK_OK(tether_observe(dst, NULL, 0, plain, &dst_view, reg_destroy, &dst_view.handle));
  CHECK_OK(tether_observe(quiet, NULL, 0, just_flush, &calm, reg_destroy, &calm.handle));
  CHECK_OK(tether_observe(sync_src, NULL, TETHER_OBSERVE_SYNC, write_then_flush, &sync_flusher,
                          reg_destroy, &sync_flusher.handle));

  /* Loop callback: its own write is owed to dst's loop observer -> EBUSY. */
  CHECK_OK(tether_state_set_int(src, 7));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RC(&flusher), TETHER_OK);
  CHECK_INT_EQ(RC2(&flusher), TETHER_EBUSY);
  CHECK_INT_EQ(CALLS(&dst_view), 1); /* and it was delivered after all */

  /* SYNC callback on this thread: the same. */
  CHECK_OK(tether_state_set_int(sync_src, 8));
  CHECK_INT_EQ(RC(&sync_flusher), TETHER_OK);
  CHECK_INT_EQ(RC2(&sync_flusher), TETHER_EBUSY);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&dst_view), 2);

  /* With nothing owed, a flush inside a callback has nothing to wait for. */
  CHECK_OK(tether_state_set_int(quiet, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&calm), 1);
  CHECK_INT_EQ(RC(&calm), TETHER_OK);

  CHECK_OK(tether_state_free(src));
  CHECK_OK(tether_state_free(dst));
  CHECK_OK(tether_state_free(quiet));
  CHECK_OK(tether_state_free(sync_src));
  EXPECT_DESTROYED_ONCE(&flusher);
  EXPECT_DESTROYED_ONCE(&dst_view);
  EXPECT_DESTROYED_ONCE(&calm);
  EXPECT_DESTROYED_ONCE(&sync_flusher);
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(callbacks_writes_from_callbacks) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  writes_from_callbacks(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("callbacks_writes_from_callbacks");
}

TEST_CASE(callbacks_feedback_loop_10_loop) {
  feedback_loop(10, 0);
  return check_report("callbacks_feedback_loop_10_loop");
}

TEST_CASE(callbacks_feedback_loop_10_sync) {
  feedback_loop(10, TETHER_OBSERVE_SYNC);
  return check_report("callbacks_feedback_loop_10_sync");
}

TEST_CASE(callbacks_feedback_loop_0_loop) {
  feedback_loop(0, 0);
  return check_report("callbacks_feedback_loop_0_loop");
}

TEST_CASE(callbacks_removing_observers_loop) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  removing_observers(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("callbacks_removing_observers_loop");
}

TEST_CASE(callbacks_removing_observers_sync) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  removing_observers(rt, TETHER_OBSERVE_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("callbacks_removing_observers_sync");
}

TEST_CASE(callbacks_freeing_the_state_loop) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  freeing_the_state(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("callbacks_freeing_the_state_loop");
}

TEST_CASE(callbacks_freeing_the_state_sync) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  freeing_the_state(rt, TETHER_OBSERVE_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("callbacks_freeing_the_state_sync");
}

TEST_CASE(callbacks_freeing_the_runtime_loop) {
  freeing_the_runtime(0);
  return check_report("callbacks_freeing_the_runtime_loop");
}

TEST_CASE(callbacks_freeing_the_runtime_sync) {
  freeing_the_runtime(TETHER_OBSERVE_SYNC);
  return check_report("callbacks_freeing_the_runtime_sync");
}

TEST_CASE(callbacks_freeing_with_live_observers) {
  freeing_with_live_observers();
  return check_report("callbacks_freeing_with_live_observers");
}

TEST_CASE(callbacks_flush_inside) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  flush_inside(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("callbacks_flush_inside");
}
