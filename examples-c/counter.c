/*
 * counter.c — the SwiftUI counter, in C: a state, a view that observes it,
 * and flush instead of sleep.
 *
 *     @State var count = 0                 tether_state_new_int
 *     Text("\(count)")                     an observer (the "view")
 *     Button("+") { count += 1 }           tether_state_set_int
 *
 * Observers run on the runtime's loop thread, coalesced per loop turn: three
 * quick writes may reach the view as one call, with the first old value and
 * the last new one. A TETHER_OBSERVE_SYNC observer runs inside each write.
 */
#include <stdio.h>

#include "check.h"
#include "tether.h"

static int view_calls, sync_calls;
static int64_t shown;

/* The view: called on the loop thread when count changed. */
static void view(const tether_change_t *change, void *user_data) {
  (void)user_data;
  tether_value_get_int(change->new_value, &shown);
  view_calls++;
}

/* A SYNC observer: has run by the time tether_state_set_int returns. */
static void on_each_write(const tether_change_t *change, void *user_data) {
  (void)change;
  (void)user_data;
  sync_calls++;
}

int main(void) {
  tether_runtime_t rt;
  tether_state_t count;
  tether_observer_t v, s;
  int64_t n = 0;

  /* NULL options: the runtime runs its loop on its own thread. */
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("counter");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &count));
  CHECK_OK(tether_observe(count, NULL, 0, view, NULL, NULL, &v));
  CHECK_OK(tether_observe(count, NULL, TETHER_OBSERVE_SYNC, on_each_write, NULL, NULL, &s));

  for (int i = 0; i < 3; i++) {
    CHECK_OK(tether_state_get_int(count, &n));
    CHECK_OK(tether_state_set_int(count, n + 1)); /* the button */
  }
  CHECK_INT_EQ(sync_calls, 3); /* one SYNC call per changing write, already run */

  /* Wait until the view has been told: never sleep. */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(shown, 3);
  CHECK(view_calls >= 1 && view_calls <= 3); /* coalesced: 1 to 3 calls */
  printf("counter: the view shows %lld after %d call(s)\n", (long long)shown, view_calls);

  /* Writing the value it already has wakes nobody. */
  CHECK_OK(tether_state_set_int(count, 3));
  CHECK_INT_EQ(sync_calls, 3);

  CHECK_OK(tether_runtime_free(rt)); /* frees the state and both observers */
  return check_report("counter");
}
