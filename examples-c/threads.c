/*
 * threads.c — every function may be called from any thread, and callbacks
 * never run at the same time. Four threads write one counter; a SYNC
 * observer checks that no two calls overlap; flush waits for the rest.
 */
#include <pthread.h>
#include <stdio.h>

#include "check.h"
#include "tether.h"

#define WRITERS 4
#define WRITES 1000

static tether_state_t counter;
static int inside, overlaps, sync_calls; /* touched only by callbacks: never concurrent */

static void on_write(const tether_change_t *change, void *user_data) {
  (void)change;
  (void)user_data;
  if (inside++) overlaps++;
  sync_calls++;
  inside--;
}

static void *writer(void *arg) {
  int64_t base = (int64_t)(intptr_t)arg * WRITES;
  for (int64_t i = 1; i <= WRITES; i++) tether_state_set_int(counter, base + i); /* each write changes it */
  return NULL;
}

int main(void) {
  tether_runtime_t rt;
  tether_observer_t o;
  pthread_t t[WRITERS];

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("threads");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &counter));
  CHECK_OK(tether_observe(counter, NULL, TETHER_OBSERVE_SYNC, on_write, NULL, NULL, &o));

  for (intptr_t i = 0; i < WRITERS; i++) CHECK(pthread_create(&t[i], NULL, writer, (void *)i) == 0);
  for (int i = 0; i < WRITERS; i++) CHECK(pthread_join(t[i], NULL) == 0);
  CHECK_OK(tether_runtime_flush(rt));

  CHECK_INT_EQ(overlaps, 0);
  /* Writes that arrive while another thread delivers may be coalesced into
   * its calls (see the header), so at most one call per write. */
  CHECK(sync_calls >= 1 && sync_calls <= WRITERS * WRITES);
  printf("threads: %d writes, %d SYNC calls, %d overlaps\n", WRITERS * WRITES, sync_calls, overlaps);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("threads");
}
