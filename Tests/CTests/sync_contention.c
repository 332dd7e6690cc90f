/*
 * sync_contention.c — the contract of TETHER_OBSERVE_SYNC under concurrent
 * writers (include/tether.h, TETHER_OBSERVE_SYNC): writes that land while the
 * observer's previous change is still pending are coalesced into one call.
 * What holds, checked here with eight writer threads:
 *  - the calls chain: each call's old value is the previous call's new value,
 *    and the first old value is the initial one (no change is lost or skipped);
 *  - no call reports old == new, and none is delivered twice;
 *  - the last call reports the final value;
 *  - at most one call per changing write;
 *  - when a write returns, a call that covers it has run (the observer's call
 *    count has grown since before the write).
 */
#include <pthread.h>
#include <stdlib.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define WRITERS 8
#define WRITES 2000

typedef struct {
  int64_t old_v, new_v;
} call_record_t;

static tether_state_t contended;
static call_record_t *calls; /* written only by the observer: calls never overlap */
static long call_count;
static pthread_mutex_t count_mutex = PTHREAD_MUTEX_INITIALIZER;
static long not_covered;

static long calls_so_far(void) {
  long n;
  pthread_mutex_lock(&count_mutex);
  n = call_count;
  pthread_mutex_unlock(&count_mutex);
  return n;
}

static void record(const tether_change_t *change, void *user_data) {
  call_record_t r = {0, 0};
  (void)user_data;
  tether_value_get_int(change->old_value, &r.old_v);
  tether_value_get_int(change->new_value, &r.new_v);
  pthread_mutex_lock(&count_mutex);
  if (call_count < (long)WRITERS * WRITES) calls[call_count] = r;
  call_count++;
  pthread_mutex_unlock(&count_mutex);
}

static void *writer(void *arg) {
  int64_t base = ((int64_t)(intptr_t)arg + 1) * 1000000;
  long misses = 0;
  for (int64_t i = 1; i <= WRITES; i++) {
    long before = calls_so_far();
    tether_state_set_int(contended, base + i); /* unique: every write changes it */
    if (calls_so_far() <= before) misses++;
  }
  pthread_mutex_lock(&count_mutex);
  not_covered += misses;
  pthread_mutex_unlock(&count_mutex);
  return NULL;
}

TEST_CASE(sync_contention_calls_chain) {
  tether_runtime_t rt;
  tether_observer_t o;
  pthread_t threads[WRITERS];
  int64_t final_v = -1;
  long n, broken = 0, same = 0;

  calls = calloc((size_t)WRITERS * WRITES, sizeof *calls);
  if (!CHECK(calls != NULL)) return check_report("sync_contention_calls_chain");
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("sync_contention_calls_chain");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &contended));
  CHECK_OK(tether_observe(contended, NULL, TETHER_OBSERVE_SYNC, record, NULL, NULL, &o));

  for (intptr_t t = 0; t < WRITERS; t++) CHECK(pthread_create(&threads[t], NULL, writer, (void *)t) == 0);
  for (int t = 0; t < WRITERS; t++) CHECK(pthread_join(threads[t], NULL) == 0);
  CHECK_OK(tether_runtime_flush(rt));

  n = calls_so_far();
  CHECK(n >= 1);
  CHECK(n <= (long)WRITERS * WRITES);
  CHECK_INT_EQ(not_covered, 0);
  if (n >= 1) CHECK_INT_EQ(calls[0].old_v, 0);
  for (long i = 0; i < n; i++) {
    if (calls[i].old_v == calls[i].new_v) same++;
    if (i > 0 && calls[i].old_v != calls[i - 1].new_v) broken++;
  }
  CHECK_INT_EQ(broken, 0);
  CHECK_INT_EQ(same, 0);
  CHECK_OK(tether_state_get_int(contended, &final_v));
  if (n >= 1) CHECK_INT_EQ(calls[n - 1].new_v, final_v);
  printf("sync_contention: %d writes, %ld SYNC calls\n", WRITERS * WRITES, n);

  CHECK_OK(tether_runtime_free(rt));
  free(calls);
  return check_report("sync_contention_calls_chain");
}
