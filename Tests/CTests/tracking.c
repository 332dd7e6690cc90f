/*
 * tracking.c — one-shot observation tracking: Swift's
 *
 *     withObservationTracking {
 *         view.body              // apply: runs now, its reads are recorded
 *     } onChange: {
 *         view.needsUpdate()     // called once, after the first change
 *     }
 *
 * in C, as tether_track(rt, flags, apply, on_change, user_data, destroy, &t).
 * What this program shows, each with a check:
 *  - apply runs now, on the calling thread, and its reads are recorded;
 *  - on_change is called exactly once, after the first change to anything
 *    apply read, with the runtime revision of that change; later changes do
 *    not call it again (it disarmed), and destroy runs once, after on_change;
 *  - a write to a state apply did not read does not fire it, nor does an
 *    equal write, nor a computed that recomputes to an equal value;
 *  - tether_tracking_cancel before any change: on_change never runs, destroy
 *    runs once, a second cancel is TETHER_ESTALE (so is cancelling a fired
 *    tracking);
 *  - delivery: by default on the loop thread (tether_runtime_flush waits for
 *    it); with TETHER_EFFECT_SYNC before the write returns;
 *  - batches: one on_change for the batch, with the revision of its first
 *    change; a value changed and changed back in a batch fires nothing;
 *  - re-arming, the SwiftUI render loop: on_change calls tether_track again,
 *    and the new tracking fires on the next change;
 *  - a change made on another thread while apply runs fires on_change right
 *    away;
 *  - runtime teardown with a live tracking, and bad input.
 *
 * Build: cc -std=c99 tracking.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* One lock for the bookkeeping (loop deliveries run on the loop thread).
 * Never held while calling a tether_ function. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t main_thread;

/* ---- a "view": what apply reads, and what happened ----------------------- */

typedef struct view {
  const char *name;
  tether_runtime_t rt;
  unsigned flags;            /* for re-arming with the same flags */
  tether_state_t reads[2];   /* apply reads these states ... */
  int nreads;
  tether_computed_t comp;    /* ... and this computed, when has_comp */
  int has_comp;
  int rearm;                 /* on_change calls tether_track again */
  int write_during_apply;    /* apply has another thread write reads[0] */
  /* what happened */
  int applies, applies_off_caller;
  int fires, fires_on_main;
  uint64_t revision;         /* of the last on_change */
  uint64_t fired_id;         /* the tracking handle on_change was given */
  int destroyed;
  tether_tracking_t current; /* the tracking armed last (re-arming) */
  int rearm_rc;
  uint64_t helper_revision;  /* revision right after the other thread's write */
  int helper_rc, helper_hung;
  pthread_t helper;
  int helper_started;
  char log[256];             /* "A" apply, "F" on_change, "D" destroy */
} view_t;

static void view_init(view_t *v, const char *name, tether_runtime_t rt, unsigned flags) {
  memset(v, 0, sizeof *v);
  v->name = name;
  v->rt = rt;
  v->flags = flags;
  v->rearm_rc = 1;
  v->helper_rc = 1;
}

static void log_locked(view_t *v, char event) {
  size_t used = strlen(v->log);
  if (used + 3 < sizeof v->log)
    snprintf(v->log + used, sizeof v->log - used, "%s%c", used ? " " : "", event);
}

/* The other thread of write_during_apply: writes reads[0] + 1 and notes the
 * revision it produced. */
static void *helper_main(void *arg) {
  view_t *v = arg;
  int64_t x = 0;
  uint64_t rev = 0;
  int rc = tether_state_get_int(v->reads[0], &x);
  if (rc == TETHER_OK) rc = tether_state_set_int(v->reads[0], x + 1);
  if (rc == TETHER_OK) rc = tether_runtime_revision(v->rt, &rev);
  pthread_mutex_lock(&mu);
  v->helper_rc = rc;
  v->helper_revision = rev;
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* apply: the view's body. */
static void apply(void *user_data) {
  view_t *v = user_data;
  int i;
  int64_t x;
  int off = !pthread_equal(pthread_self(), main_thread);

  for (i = 0; i < v->nreads; i++) (void)tether_state_get_int(v->reads[i], &x);
  if (v->has_comp) (void)tether_computed_get_int(v->comp, &x);
  pthread_mutex_lock(&mu);
  v->applies++;
  /* re-armed trackings run apply inside on_change, on the delivering thread */
  if (off && !v->rearm) v->applies_off_caller++;
  log_locked(v, 'A');
  pthread_mutex_unlock(&mu);

  if (v->write_during_apply) {
    /* Another thread changes what we just read, while apply still runs. We
     * wait until that change is committed (the state's revision moves), not
     * until the other thread's write returns: a writer that owes SYNC
     * callbacks waits for the delivering thread — here, us. The deadline
     * only turns a hang into a failed check; it is not a timing assertion. */
    struct timespec now, until;
    uint64_t before = 0, rev = 0;
    v->write_during_apply = 0;
    (void)tether_state_revision(v->reads[0], &before);
    if (pthread_create(&v->helper, NULL, helper_main, v) != 0) {
      CHECK(!"pthread_create failed");
      return;
    }
    v->helper_started = 1;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 60;
    for (;;) {
      if (tether_state_revision(v->reads[0], &rev) != TETHER_OK || rev != before) break;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec > until.tv_sec) {
        pthread_mutex_lock(&mu);
        v->helper_hung = 1;
        pthread_mutex_unlock(&mu);
        break;
      }
      sched_yield();
    }
  }
}

/* on_change: the view's needsUpdate(). */
static void on_change(tether_tracking_t t, uint64_t revision, void *user_data) {
  view_t *v = user_data;
  int on_main = pthread_equal(pthread_self(), main_thread);
  pthread_mutex_lock(&mu);
  v->fires++;
  v->fires_on_main += on_main;
  v->revision = revision;
  v->fired_id = t.id;
  log_locked(v, 'F');
  pthread_mutex_unlock(&mu);
  if (v->rearm) {
    /* Re-render: run the body again under a new tracking. */
    tether_tracking_t next;
    int rc = tether_track(v->rt, v->flags, apply, on_change, v, NULL, &next);
    pthread_mutex_lock(&mu);
    v->rearm_rc = rc;
    if (rc == TETHER_OK) v->current = next;
    pthread_mutex_unlock(&mu);
  }
}

static void view_destroy(void *user_data) {
  view_t *v = user_data;
  pthread_mutex_lock(&mu);
  v->destroyed++;
  log_locked(v, 'D');
  pthread_mutex_unlock(&mu);
}

static int get_(const int *field) {
  int x;
  pthread_mutex_lock(&mu);
  x = *field;
  pthread_mutex_unlock(&mu);
  return x;
}
#define FIRES(v) get_(&(v)->fires)
#define APPLIES(v) get_(&(v)->applies)
#define DESTROYED(v) get_(&(v)->destroyed)

static uint64_t revision_of(view_t *v) {
  uint64_t r;
  pthread_mutex_lock(&mu);
  r = v->revision;
  pthread_mutex_unlock(&mu);
  return r;
}

static void check_log_(view_t *v, const char *expected, const char *file, int line) {
  char copy[sizeof v->log];
  pthread_mutex_lock(&mu);
  memcpy(copy, v->log, sizeof copy);
  pthread_mutex_unlock(&mu);
  if (strcmp(copy, expected) == 0) {
    check_pass_();
  } else {
    check_fail_(file, line, "tracking \"%s\": events\n    expected \"%s\"\n    got      \"%s\"",
                v->name, expected, copy);
  }
}
/* The apply/on_change/destroy events so far, exactly. */
#define CHECK_LOG(v, expected) check_log_((v), (expected), __FILE__, __LINE__)

static uint64_t rt_revision(tether_runtime_t rt) {
  uint64_t r = 0;
  CHECK_OK(tether_runtime_revision(rt, &r));
  return r;
}

/* ==== the scenarios ====================================================== */

/* The basic contract, delivered on the loop (flags 0) or SYNC. */
static void fires_once(tether_runtime_t rt, unsigned flags) {
  tether_state_t a, b, c;
  tether_tracking_t t;
  view_t v;
  uint64_t rev;
  int sync = (flags & TETHER_EFFECT_SYNC) != 0;

  view_init(&v, sync ? "SYNC" : "loop", rt, flags);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 2, 0, &b));
  CHECK_OK(tether_state_new_int(rt, 3, 0, &c));
  v.reads[0] = a;
  v.reads[1] = b;
  v.nreads = 2;

  CHECK_OK(tether_track(rt, flags, apply, on_change, &v, view_destroy, &t));
  CHECK_INT_EQ(APPLIES(&v), 1); /* apply ran now ... */
  CHECK_INT_EQ(get_(&v.applies_off_caller), 0); /* ... on this thread */
  CHECK_LOG(&v, "A");

  /* Not read, or not changed: nothing. */
  CHECK_OK(tether_state_set_int(c, 30));
  CHECK_OK(tether_state_set_int(a, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 0);

  /* The first change of something apply read. */
  CHECK_OK(tether_state_set_int(b, 20));
  rev = rt_revision(rt);
  if (sync) CHECK_INT_EQ(FIRES(&v), 1); /* SYNC: before the write returned */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 1);
  CHECK_INT_EQ(revision_of(&v), rev); /* the revision of that write */
  if (!sync) CHECK_INT_EQ(get_(&v.fires_on_main), 0); /* loop: on the loop thread */
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(v.fired_id, t.id);
  pthread_mutex_unlock(&mu);
  CHECK_LOG(&v, "A F D"); /* destroy once, after on_change */

  /* Disarmed: later changes call nothing. */
  CHECK_OK(tether_state_set_int(a, 10));
  CHECK_OK(tether_state_set_int(b, 21));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 1);
  CHECK_INT_EQ(DESTROYED(&v), 1);
  CHECK_ERR(tether_tracking_cancel(t), TETHER_ESTALE); /* fired already */
  CHECK_INT_EQ(DESTROYED(&v), 1);

  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
  CHECK_OK(tether_state_free(c));
}

/* Cancelled before any change. */
static void cancel_before_change(tether_runtime_t rt, unsigned flags) {
  tether_state_t a;
  tether_tracking_t t;
  view_t v;

  view_init(&v, "cancelled", rt, flags);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  v.reads[0] = a;
  v.nreads = 1;
  CHECK_OK(tether_track(rt, flags, apply, on_change, &v, view_destroy, &t));
  CHECK_OK(tether_tracking_cancel(t));
  CHECK_INT_EQ(DESTROYED(&v), 1);
  CHECK_OK(tether_state_set_int(a, 2));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 0);
  CHECK_ERR(tether_tracking_cancel(t), TETHER_ESTALE); /* second cancel */
  CHECK_LOG(&v, "A D");
  CHECK_OK(tether_state_free(a));
}

/* Cancelled after the change was made but before the loop delivered it: the
 * owed call is dropped. (The batch keeps it owed without any timing.) */
static void cancel_while_owed(tether_runtime_t rt) {
  tether_state_t a;
  tether_tracking_t t;
  view_t v;

  view_init(&v, "cancelled while owed", rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  v.reads[0] = a;
  v.nreads = 1;
  CHECK_OK(tether_track(rt, TETHER_EFFECT_SYNC, apply, on_change, &v, view_destroy, &t));
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(a, 2)); /* owed until the batch ends */
  CHECK_OK(tether_tracking_cancel(t));
  CHECK_OK(tether_batch_end(rt));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 0);
  CHECK_INT_EQ(DESTROYED(&v), 1);
  CHECK_LOG(&v, "A D");
  CHECK_OK(tether_state_free(a));
}

/* Batches: one on_change with the revision of the first change; a change
 * undone within the batch fires nothing. */
static void batches(tether_runtime_t rt, unsigned flags) {
  tether_state_t a, b;
  tether_tracking_t t;
  view_t v, w;
  uint64_t first_rev;
  int sync = (flags & TETHER_EFFECT_SYNC) != 0;

  view_init(&v, sync ? "SYNC batch" : "loop batch", rt, flags);
  view_init(&w, sync ? "SYNC changed back" : "loop changed back", rt, flags);
  CHECK_OK(tether_state_new_int(rt, 42, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &b));
  v.reads[0] = w.reads[0] = a;
  v.reads[1] = w.reads[1] = b;
  v.nreads = w.nreads = 2;

  CHECK_OK(tether_track(rt, flags, apply, on_change, &v, view_destroy, &t));
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(a, 1));
  first_rev = rt_revision(rt);
  CHECK_OK(tether_state_set_int(b, 2));
  CHECK_OK(tether_state_set_int(a, 3));
  CHECK_INT_EQ(FIRES(&v), 0); /* held back by the batch */
  CHECK_OK(tether_batch_end(rt));
  if (sync) CHECK_INT_EQ(FIRES(&v), 1);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 1);
  CHECK_INT_EQ(revision_of(&v), first_rev); /* the first change's revision */
  CHECK_LOG(&v, "A F D");

  /* 3 -> 0 -> 3 and 2 -> 5 -> 2 in one batch: no change at all. */
  CHECK_OK(tether_track(rt, flags, apply, on_change, &w, view_destroy, &t));
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(a, 0));
  CHECK_OK(tether_state_set_int(b, 5));
  CHECK_OK(tether_state_set_int(a, 3));
  CHECK_OK(tether_state_set_int(b, 2));
  CHECK_OK(tether_batch_end(rt));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&w), 0);
  CHECK_OK(tether_tracking_cancel(t)); /* still armed */
  CHECK_LOG(&w, "A D");

  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
}

/* ---- a computed in apply ---------------------------------------------- */

static int parity(tether_value_t *result, void *user_data) {
  tether_state_t *s = user_data;
  int64_t x;
  int rc = tether_state_get_int(*s, &x);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, x % 2);
}

/* apply reads a computed: only a change of the computed's value fires. */
static void through_a_computed(tether_runtime_t rt) {
  tether_state_t a;
  tether_computed_t odd;
  tether_tracking_t t;
  view_t v;

  view_init(&v, "reads a % 2", rt, 0);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  CHECK_OK(tether_computed_new(rt, parity, &a, NULL, &odd));
  v.comp = odd;
  v.has_comp = 1;
  CHECK_OK(tether_track(rt, 0, apply, on_change, &v, view_destroy, &t));
  CHECK_OK(tether_state_set_int(a, 3)); /* 1 -> 1: equal */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 0);
  CHECK_OK(tether_state_set_int(a, 4)); /* 1 -> 0 */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 1);
  CHECK_LOG(&v, "A F D");
  CHECK_OK(tether_computed_free(odd));
  CHECK_OK(tether_state_free(a));
}

/* Re-arming from on_change, like a SwiftUI view re-rendering. */
static void rearming(tether_runtime_t rt, unsigned flags) {
  tether_state_t a, b;
  tether_tracking_t first, cur;
  view_t v;
  uint64_t rev;
  int sync = (flags & TETHER_EFFECT_SYNC) != 0;

  view_init(&v, sync ? "SYNC re-arming" : "loop re-arming", rt, flags);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &b));
  v.reads[0] = a;
  v.reads[1] = b;
  v.nreads = 2;
  v.rearm = 1;
  CHECK_OK(tether_track(rt, flags, apply, on_change, &v, view_destroy, &first));

  /* Change 1: the first tracking fires and arms a second one (its apply runs
   * inside on_change). Only the first had a destroy function. */
  CHECK_OK(tether_state_set_int(a, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 1);
  CHECK_INT_EQ(APPLIES(&v), 2);
  CHECK_INT_EQ(get_(&v.rearm_rc), TETHER_OK);
  CHECK_LOG(&v, "A F A D");

  /* Change 2 (another state the body read): the second tracking fires. */
  CHECK_OK(tether_state_set_int(b, 1));
  rev = rt_revision(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 2);
  CHECK_INT_EQ(APPLIES(&v), 3);
  CHECK_INT_EQ(revision_of(&v), rev);
  pthread_mutex_lock(&mu);
  CHECK(v.fired_id != first.id); /* a new tracking each time */
  pthread_mutex_unlock(&mu);

  /* Change 3. */
  CHECK_OK(tether_state_set_int(a, 2));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 3);
  CHECK_INT_EQ(APPLIES(&v), 4);
  CHECK_LOG(&v, "A F A D F A F A");

  /* Stop re-rendering: cancel the one armed now. */
  pthread_mutex_lock(&mu);
  cur = v.current;
  pthread_mutex_unlock(&mu);
  CHECK_OK(tether_tracking_cancel(cur));
  CHECK_OK(tether_state_set_int(a, 3));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 3);
  CHECK_INT_EQ(DESTROYED(&v), 1);
  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
}

/* A change made by another thread while apply runs fires right away. */
static void change_during_apply(tether_runtime_t rt, unsigned flags) {
  tether_state_t a;
  tether_tracking_t t;
  view_t v;
  int sync = (flags & TETHER_EFFECT_SYNC) != 0;

  view_init(&v, sync ? "SYNC changed during apply" : "loop changed during apply", rt, flags);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  v.reads[0] = a;
  v.nreads = 1;
  v.write_during_apply = 1;
  CHECK_OK(tether_track(rt, flags, apply, on_change, &v, view_destroy, &t));
  if (v.helper_started) pthread_join(v.helper, NULL);
  CHECK_INT_EQ(get_(&v.helper_hung), 0);
  CHECK_INT_EQ(get_(&v.helper_rc), TETHER_OK);
  /* SYNC: fired by the time the other thread's write returned (whichever
   * thread delivered it). */
  if (sync) CHECK_INT_EQ(FIRES(&v), 1);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&v), 1);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(v.revision, v.helper_revision);
  pthread_mutex_unlock(&mu);
  CHECK_LOG(&v, "A F D");
  CHECK_OK(tether_state_free(a));
}

/* A tracking that read nothing never fires; runtime teardown ends it. */
static void runtime_free_with_tracking(void) {
  tether_runtime_t rt;
  tether_state_t a;
  tether_tracking_t t1, t2, t3;
  view_t nothing, armed, owed;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  view_init(&nothing, "reads nothing", rt, 0);
  view_init(&armed, "armed at teardown", rt, 0);
  view_init(&owed, "owed at teardown", rt, 0);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  armed.reads[0] = a;
  armed.nreads = 1;
  CHECK_OK(tether_track(rt, 0, apply, on_change, &nothing, view_destroy, &t1));
  CHECK_OK(tether_track(rt, TETHER_EFFECT_SYNC, apply, on_change, &armed, view_destroy, &t2));
  CHECK_OK(tether_state_set_int(a, 0)); /* equal */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(FIRES(&nothing), 0);
  CHECK_INT_EQ(FIRES(&armed), 0);
  owed.reads[0] = a;
  owed.nreads = 1;
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_track(rt, TETHER_EFFECT_SYNC, apply, on_change, &owed, view_destroy, &t3));
  CHECK_OK(tether_state_set_int(a, 5)); /* owes armed and owed a call ... */
  CHECK_OK(tether_runtime_free(rt));    /* ... dropped: freed with the batch open */
  CHECK_INT_EQ(DESTROYED(&nothing), 1);
  CHECK_INT_EQ(DESTROYED(&armed), 1);
  CHECK_INT_EQ(DESTROYED(&owed), 1);
  CHECK_INT_EQ(FIRES(&nothing) + FIRES(&armed) + FIRES(&owed), 0);
  CHECK_ERR(tether_tracking_cancel(t1), TETHER_ESTALE);
  CHECK_ERR(tether_tracking_cancel(t3), TETHER_ESTALE);
}

/* Bad input: an error, a message, and nothing registered. */
static void bad_input(tether_runtime_t rt) {
  tether_runtime_t dead;
  tether_tracking_t out, zero = {0}, forged;
  tether_state_t s;
  view_t v;

  view_init(&v, "never registered", rt, 0);
  out.id = 99;
  CHECK_ERR(tether_track(rt, 0, NULL, on_change, &v, view_destroy, &out), TETHER_EINVAL);
  CHECK_ERR(tether_track(rt, 0, apply, NULL, &v, view_destroy, &out), TETHER_EINVAL);
  CHECK_ERR(tether_track(rt, 0, apply, on_change, &v, view_destroy, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_track(rt, 0x40u, apply, on_change, &v, view_destroy, &out), TETHER_EINVAL);
  CHECK_OK(tether_runtime_new(NULL, &dead));
  CHECK_OK(tether_runtime_free(dead));
  CHECK_ERR(tether_track(dead, 0, apply, on_change, &v, view_destroy, &out), TETHER_ESTALE);
  CHECK_INT_EQ(out.id, 99);
  CHECK_INT_EQ(DESTROYED(&v), 0); /* the caller still owns user_data */
  printf("tracking: apply ran %d times for refused calls\n", APPLIES(&v));
  CHECK_INT_EQ(APPLIES(&v), 0);

  CHECK_ERR(tether_tracking_cancel(zero), TETHER_ESTALE);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  forged.id = s.id;
  CHECK_ERR(tether_tracking_cancel(forged), TETHER_ESTALE);
  CHECK_OK(tether_state_free(s));
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(tracking_fires_once_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  fires_once(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_fires_once_loop");
}

TEST_CASE(tracking_fires_once_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  fires_once(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_fires_once_sync");
}

TEST_CASE(tracking_cancel_before_change_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  cancel_before_change(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_cancel_before_change_loop");
}

TEST_CASE(tracking_cancel_before_change_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  cancel_before_change(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_cancel_before_change_sync");
}

TEST_CASE(tracking_cancel_while_owed) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  cancel_while_owed(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_cancel_while_owed");
}

TEST_CASE(tracking_batches_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  batches(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_batches_loop");
}

TEST_CASE(tracking_batches_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  batches(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_batches_sync");
}

TEST_CASE(tracking_through_a_computed) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  through_a_computed(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_through_a_computed");
}

TEST_CASE(tracking_rearming_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  rearming(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_rearming_loop");
}

TEST_CASE(tracking_rearming_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  rearming(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_rearming_sync");
}

TEST_CASE(tracking_change_during_apply_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  change_during_apply(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_change_during_apply_loop");
}

TEST_CASE(tracking_change_during_apply_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  change_during_apply(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_change_during_apply_sync");
}

TEST_CASE(tracking_runtime_free_with_tracking) {
  main_thread = pthread_self();
  runtime_free_with_tracking();
  return check_report("tracking_runtime_free_with_tracking");
}

TEST_CASE(tracking_bad_input) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  bad_input(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("tracking_bad_input");
}
