/*
 * threads_derived.c — computed values and effects under several threads.
 *
 * Four writer threads each increment their own counter state; a computed
 * sums the four; a loop-thread effect and a SYNC effect read the sum; a
 * reader thread keeps reading the computed while the writers write. What it
 * shows (and checks, also under ThreadSanitizer):
 *  - compute callbacks and effects never run concurrently with each other
 *    (an "inside a callback" flag is never found set on entry);
 *  - every value the reader thread sees is a sum the counters really had
 *    (never below an earlier one: each counter only grows);
 *  - after the writers are joined and tether_runtime_flush returns, the
 *    computed and both effects have seen the final sum;
 *  - tether_runtime_free with live computeds and effects from the main
 *    thread runs each destroy exactly once;
 *  - a read from outside every callback of a computed that must be
 *    recomputed waits while another thread is inside a callback, and then
 *    computes (a computed that is up to date is read without waiting).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define WRITERS 4
#define WRITES 2000

typedef struct shared {
  pthread_mutex_t mu;
  int inside;       /* callbacks running (they nest on one thread: an
                       effect reading the computed runs its compute) */
  pthread_t owner;  /* the thread running them */
  int overlaps;     /* a callback entered on another thread meanwhile */
  int64_t loop_seen;
  int64_t sync_seen;
  int destroyed;
} shared_t;

static tether_state_t counters[WRITERS];
static tether_computed_t total;
static shared_t shared;

static void enter(void) {
  pthread_mutex_lock(&shared.mu);
  if (shared.inside > 0 && !pthread_equal(shared.owner, pthread_self())) shared.overlaps++;
  shared.owner = pthread_self();
  shared.inside++;
  pthread_mutex_unlock(&shared.mu);
}

static void leave(void) {
  pthread_mutex_lock(&shared.mu);
  shared.inside--;
  pthread_mutex_unlock(&shared.mu);
}

static int sum_counters(tether_value_t *result, void *user_data) {
  int64_t sum = 0;
  (void)user_data;
  enter();
  for (int i = 0; i < WRITERS; i++) {
    int64_t v = 0;
    int rc = tether_state_get_int(counters[i], &v);
    if (rc != TETHER_OK) {
      leave();
      return rc;
    }
    sum += v;
  }
  leave();
  return tether_value_set_int(result, sum);
}

static void record_sum(tether_effect_t effect, void *user_data) {
  int64_t *seen = user_data;
  int64_t v = 0;
  (void)effect;
  enter();
  if (tether_computed_get_int(total, &v) == TETHER_OK) {
    pthread_mutex_lock(&shared.mu);
    *seen = v;
    pthread_mutex_unlock(&shared.mu);
  }
  leave();
}

static void count_destroy(void *user_data) {
  (void)user_data;
  pthread_mutex_lock(&shared.mu);
  shared.destroyed++;
  pthread_mutex_unlock(&shared.mu);
}

static void *writer(void *arg) {
  tether_state_t mine = *(tether_state_t *)arg;
  for (int i = 1; i <= WRITES; i++) {
    if (tether_state_set_int(mine, i) != TETHER_OK) return (void *)1;
  }
  return NULL;
}

typedef struct reader_result {
  int failures;
  int decreases;
  int reads;
} reader_result_t;

static volatile int writers_done; /* written under shared.mu */

static void *reader(void *arg) {
  reader_result_t *r = arg;
  int64_t last = 0;
  for (;;) {
    int64_t v = 0;
    int done;
    if (tether_computed_get_int(total, &v) != TETHER_OK) r->failures++;
    if (v < last) r->decreases++;
    last = v;
    r->reads++;
    pthread_mutex_lock(&shared.mu);
    done = writers_done;
    pthread_mutex_unlock(&shared.mu);
    if (done) break;
  }
  return NULL;
}

/* ---- an outside read of a stale computed waits for a running callback --- */

static struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int armed;          /* the effect's next run holds the door */
  int effect_running; /* inside that run */
  int reader_going;   /* the reader is about to read the computed */
  int computes;
  int overlaps;       /* the compute ran while the effect was running */
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0};

static tether_state_t gated_source;
static tether_computed_t gated;

static int gated_compute(tether_value_t *result, void *user_data) {
  int64_t v = 0;
  int rc;
  (void)user_data;
  pthread_mutex_lock(&gate.mu);
  if (gate.effect_running) gate.overlaps++;
  gate.computes++;
  pthread_mutex_unlock(&gate.mu);
  rc = tether_state_get_int(gated_source, &v);
  return rc != TETHER_OK ? rc : tether_value_set_int(result, v);
}

/* A SYNC effect on the source: when armed, it lets the reader go and then
 * stays inside for a while, giving a read that wrongly skipped the wait
 * every chance to run the compute now. */
static void gated_effect(tether_effect_t effect, void *user_data) {
  int64_t v = 0;
  (void)effect;
  (void)user_data;
  CHECK_OK(tether_state_get_int(gated_source, &v));
  pthread_mutex_lock(&gate.mu);
  if (!gate.armed) {
    pthread_mutex_unlock(&gate.mu);
    return;
  }
  gate.effect_running = 1;
  pthread_cond_broadcast(&gate.cv);
  while (!gate.reader_going) pthread_cond_wait(&gate.cv, &gate.mu);
  pthread_mutex_unlock(&gate.mu);
  for (int i = 0; i < 20000; i++) sched_yield();
  pthread_mutex_lock(&gate.mu);
  gate.effect_running = 0;
  pthread_mutex_unlock(&gate.mu);
}

static void *gated_reader(void *arg) {
  int64_t v = 0;
  (void)arg;
  pthread_mutex_lock(&gate.mu);
  while (!gate.effect_running) pthread_cond_wait(&gate.cv, &gate.mu);
  gate.reader_going = 1;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
  CHECK_OK(tether_computed_get_int(gated, &v)); /* stale: waits, then computes */
  CHECK_INT_EQ(v, 1);
  return NULL;
}

static void outside_read_waits_for_callbacks(void) {
  tether_runtime_t rt;
  tether_effect_t fx;
  pthread_t reader_thread;
  int64_t v = -1;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &gated_source));
  CHECK_OK(tether_computed_new(rt, gated_compute, NULL, NULL, &gated));
  CHECK_OK(tether_computed_get_int(gated, &v)); /* computed once, now up to date */
  CHECK_OK(tether_computed_get_int(gated, &v)); /* up to date: read without a call */
  CHECK_INT_EQ(v, 0);
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, gated_effect, NULL, NULL, NULL, &fx));
  CHECK(pthread_create(&reader_thread, NULL, gated_reader, NULL) == 0);
  pthread_mutex_lock(&gate.mu);
  gate.armed = 1;
  pthread_mutex_unlock(&gate.mu);
  CHECK_OK(tether_state_set_int(gated_source, 1)); /* the effect runs here, on this thread */
  CHECK(pthread_join(reader_thread, NULL) == 0);
  pthread_mutex_lock(&gate.mu);
  CHECK_INT_EQ(gate.computes, 2);
  CHECK_INT_EQ(gate.overlaps, 0);
  pthread_mutex_unlock(&gate.mu);
  CHECK_OK(tether_runtime_free(rt));
}

/* Writers on several threads, a reader on another: a computed over every
 * counter, a loop and a SYNC effect; totals exact, callbacks never overlap. */
static void writers_and_reader(void) {
  tether_runtime_t rt;
  tether_effect_t loop_effect, sync_effect;
  pthread_t writers[WRITERS], reader_thread;
  reader_result_t reads = {0, 0, 0};
  int64_t v = 0;

  pthread_mutex_init(&shared.mu, NULL);
  CHECK_OK(tether_runtime_new(NULL, &rt));
  for (int i = 0; i < WRITERS; i++) CHECK_OK(tether_state_new_int(rt, 0, 0, &counters[i]));
  CHECK_OK(tether_computed_new(rt, sum_counters, NULL, count_destroy, &total));
  CHECK_OK(tether_effect_new(rt, 0, record_sum, NULL, &shared.loop_seen, count_destroy, &loop_effect));
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, record_sum, NULL, &shared.sync_seen, count_destroy,
                             &sync_effect));

  CHECK(pthread_create(&reader_thread, NULL, reader, &reads) == 0);
  for (int i = 0; i < WRITERS; i++) CHECK(pthread_create(&writers[i], NULL, writer, &counters[i]) == 0);
  for (int i = 0; i < WRITERS; i++) {
    void *rc = NULL;
    CHECK(pthread_join(writers[i], &rc) == 0);
    CHECK(rc == NULL);
  }
  pthread_mutex_lock(&shared.mu);
  writers_done = 1;
  pthread_mutex_unlock(&shared.mu);
  CHECK(pthread_join(reader_thread, NULL) == 0);
  CHECK_OK(tether_runtime_flush(rt));

  CHECK_OK(tether_computed_get_int(total, &v));
  CHECK_INT_EQ(v, (int64_t)WRITERS * WRITES);
  pthread_mutex_lock(&shared.mu);
  CHECK_INT_EQ(shared.loop_seen, (int64_t)WRITERS * WRITES);
  CHECK_INT_EQ(shared.sync_seen, (int64_t)WRITERS * WRITES);
  CHECK_INT_EQ(shared.overlaps, 0);
  pthread_mutex_unlock(&shared.mu);
  CHECK_INT_EQ(reads.failures, 0);
  CHECK_INT_EQ(reads.decreases, 0);
  CHECK(reads.reads > 0);

  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(shared.destroyed, 3);
}

/* The cases of this suite, registered in cases.h. */
TEST_CASE(threads_derived_writers_and_reader) {
  writers_and_reader();
  return check_report("threads_derived_writers_and_reader");
}

TEST_CASE(threads_derived_outside_read_waits) {
  outside_read_waits_for_callbacks();
  return check_report("threads_derived_outside_read_waits");
}
