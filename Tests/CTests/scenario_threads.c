/*
 * threads.c — many threads writing, callbacks that never overlap.
 *
 * Every tether_ function may be called from any thread. Four writer threads
 * each increment their own counter state many times and also increment one
 * shared state (guarded by the application's own mutex, because
 * "read, add one, write" is three steps). Meanwhile:
 *  - loop observers (the default) count changes on the runtime's loop
 *    thread; coalescing means they see fewer calls than writes, but each call
 *    picks up where the previous one left off (old == previous new), and
 *    after the threads are joined and tether_runtime_flush() returns, each
 *    has seen the final value;
 *  - SYNC observers run inside each write: exactly one call per changing
 *    write, each with old + 1 == new;
 *  - no two callbacks ever run at the same time, loop or SYNC: every
 *    callback sets an "inside" flag on entry and clears it on exit, and
 *    must never find it already set.
 * The runtime revision ends exactly one step per changing write further on.
 *
 * This program is a ThreadSanitizer target (make tsan): everything the
 * threads share is behind a pthread mutex (the build is C99, no atomics).
 *
 * THREADS_WRITES=n in the environment changes the writes per thread
 * (default 10000), e.g. to keep valgrind runs short.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define NTHREADS 4

static int writes_per_thread = 10000;

/* ---- "callbacks never run concurrently" --------------------------------- */

static pthread_mutex_t inside_mu = PTHREAD_MUTEX_INITIALIZER;
static int inside = 0;      /* 1 while some callback is running */
static long overlaps = 0;   /* times a callback found another one running */
static long callbacks = 0;  /* every callback, loop and SYNC */

static void callback_enter(void) {
  pthread_mutex_lock(&inside_mu);
  if (inside) overlaps++;
  inside = 1;
  callbacks++;
  pthread_mutex_unlock(&inside_mu);
  sched_yield(); /* widen the window a little: let others try to get in */
}

static void callback_leave(void) {
  pthread_mutex_lock(&inside_mu);
  inside = 0;
  pthread_mutex_unlock(&inside_mu);
}

/* ---- what one observer saw ----------------------------------------------- */

typedef struct tally {
  pthread_mutex_t mu;
  long calls;
  int64_t last_new;     /* the new value of the last call */
  long broken_chain;    /* loop: old != previous new; SYNC: new != old + 1 */
  int sync;             /* SYNC observer: every call must be a single step */
  int have_thread;
  pthread_t thread;     /* the thread of the first call */
  long other_thread;    /* calls on a different thread (loop observers) */
} tally_t;

static void tally_init(tally_t *t, int sync) {
  memset(t, 0, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
  t->sync = sync;
}

static void count_change(const tether_change_t *change, void *user_data) {
  tally_t *t = user_data;
  int64_t old_v = value_int_or(change->old_value, -1);
  int64_t new_v = value_int_or(change->new_value, -1);
  callback_enter();
  pthread_mutex_lock(&t->mu);
  if (t->sync ? new_v != old_v + 1 : (old_v != t->last_new || new_v <= old_v)) t->broken_chain++;
  t->last_new = new_v;
  t->calls++;
  if (!t->have_thread) {
    t->thread = pthread_self();
    t->have_thread = 1;
  } else if (!t->sync && !pthread_equal(t->thread, pthread_self())) {
    t->other_thread++;
  }
  pthread_mutex_unlock(&t->mu);
  callback_leave();
}

/* ---- the writers ----------------------------------------------------------- */

static tether_state_t shared;
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER; /* the app's lock */

typedef struct writer {
  int index;
  tether_state_t own;
  pthread_t thread;
  long failures;
} writer_t;

static void *writer_main(void *arg) {
  writer_t *wr = arg;
  int64_t v = 0, s = 0;
  int i;
  for (i = 1; i <= writes_per_thread; i++) {
    /* Its own counter: nobody else writes it, so it reads back i - 1. */
    if (!CHECK_OK(tether_state_get_int(wr->own, &v)) || !CHECK_INT_EQ(v, i - 1) ||
        !CHECK_OK(tether_state_set_int(wr->own, v + 1))) {
      wr->failures++;
      break;
    }
    /* The shared counter: read-modify-write under the application's lock. */
    pthread_mutex_lock(&shared_mu);
    if (!CHECK_OK(tether_state_get_int(shared, &s)) ||
        !CHECK_OK(tether_state_set_int(shared, s + 1))) {
      wr->failures++;
      pthread_mutex_unlock(&shared_mu);
      break;
    }
    pthread_mutex_unlock(&shared_mu);
  }
  return NULL;
}

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_threads) {
  tether_runtime_t rt;
  writer_t writers[NTHREADS];
  tally_t loop_own[NTHREADS], sync_own[NTHREADS], loop_shared, sync_shared;
  tether_observer_t obs;
  uint64_t rev_start = 0, rev_end = 0;
  int64_t v = 0;
  int i;
  const char *env = getenv("THREADS_WRITES");

  if (env != NULL && atoi(env) > 0) writes_per_thread = atoi(env);
  printf("threads: %d writer threads x %d writes\n", NTHREADS, writes_per_thread);

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("threads");
  CHECK_OK(tether_state_new_int(rt, 0, TETHER_STATE_LOCK_TYPE, &shared));
  tally_init(&loop_shared, 0);
  tally_init(&sync_shared, 1);
  CHECK_OK(tether_observe(shared, NULL, 0, count_change, &loop_shared, NULL, &obs));
  CHECK_OK(
      tether_observe(shared, NULL, TETHER_OBSERVE_SYNC, count_change, &sync_shared, NULL, &obs));
  for (i = 0; i < NTHREADS; i++) {
    writers[i].index = i;
    writers[i].failures = 0;
    CHECK_OK(tether_state_new_int(rt, 0, 0, &writers[i].own));
    tally_init(&loop_own[i], 0);
    tally_init(&sync_own[i], 1);
    CHECK_OK(tether_observe(writers[i].own, NULL, 0, count_change, &loop_own[i], NULL, &obs));
    CHECK_OK(tether_observe(writers[i].own, NULL, TETHER_OBSERVE_SYNC, count_change, &sync_own[i],
                            NULL, &obs));
  }
  CHECK_OK(tether_runtime_revision(rt, &rev_start));

  for (i = 0; i < NTHREADS; i++) pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]);
  for (i = 0; i < NTHREADS; i++) pthread_join(writers[i].thread, NULL);

  /* Everything written before this call has been delivered when it returns. */
  CHECK_OK(tether_runtime_flush(rt));

  /* Final values. */
  CHECK_OK(tether_state_get_int(shared, &v));
  CHECK_INT_EQ(v, (int64_t)NTHREADS * writes_per_thread);
  for (i = 0; i < NTHREADS; i++) {
    CHECK_INT_EQ(writers[i].failures, 0);
    CHECK_OK(tether_state_get_int(writers[i].own, &v));
    CHECK_INT_EQ(v, writes_per_thread);
  }
  /* One commit per changing write: NTHREADS*N own increments + as many shared. */
  CHECK_OK(tether_runtime_revision(rt, &rev_end));
  CHECK_INT_EQ(rev_end - rev_start, 2 * (uint64_t)NTHREADS * (uint64_t)writes_per_thread);

  /* Loop observers: saw the last value, calls chained, all on one thread
   * which is none of ours. */
  {
    tally_t *all[NTHREADS + 1];
    for (i = 0; i < NTHREADS; i++) all[i] = &loop_own[i];
    all[NTHREADS] = &loop_shared;
    for (i = 0; i <= NTHREADS; i++) {
      int64_t want = i < NTHREADS ? writes_per_thread : (int64_t)NTHREADS * writes_per_thread;
      int j;
      pthread_mutex_lock(&all[i]->mu);
      CHECK_INT_EQ(all[i]->last_new, want);
      CHECK(all[i]->calls >= 1 && all[i]->calls <= want);
      CHECK_INT_EQ(all[i]->broken_chain, 0);
      CHECK_INT_EQ(all[i]->other_thread, 0);
      CHECK(!pthread_equal(all[i]->thread, pthread_self()));
      for (j = 0; j < NTHREADS; j++) CHECK(!pthread_equal(all[i]->thread, writers[j].thread));
      if (i > 0) CHECK(pthread_equal(all[i]->thread, all[0]->thread));
      printf("threads: loop observer %d: %ld calls for %lld writes (coalesced)\n", i,
             all[i]->calls, (long long)want);
      pthread_mutex_unlock(&all[i]->mu);
    }
  }

  /* SYNC observers: exactly one single-step call per write. */
  for (i = 0; i < NTHREADS; i++) {
    pthread_mutex_lock(&sync_own[i].mu);
    CHECK_INT_EQ(sync_own[i].calls, writes_per_thread);
    CHECK_INT_EQ(sync_own[i].last_new, writes_per_thread);
    CHECK_INT_EQ(sync_own[i].broken_chain, 0);
    pthread_mutex_unlock(&sync_own[i].mu);
  }
  pthread_mutex_lock(&sync_shared.mu);
  CHECK_INT_EQ(sync_shared.calls, (long)NTHREADS * writes_per_thread);
  CHECK_INT_EQ(sync_shared.last_new, (int64_t)NTHREADS * writes_per_thread);
  CHECK_INT_EQ(sync_shared.broken_chain, 0);
  pthread_mutex_unlock(&sync_shared.mu);

  /* No callback ever started while another was running. */
  pthread_mutex_lock(&inside_mu);
  printf("threads: %ld callbacks, %ld overlaps\n", callbacks, overlaps);
  CHECK_INT_EQ(overlaps, 0);
  CHECK_INT_EQ(inside, 0);
  pthread_mutex_unlock(&inside_mu);

  CHECK_OK(tether_runtime_free(rt));
  return check_report("threads");
}
