/*
 * shop.c — derived values and effects: a cart total that is computed, not
 * stored, and a "view" that re-renders only when what it read changed.
 *
 *     var total: Int { items.reduce(0) { $0 + $1.price * $1.qty } }   a computed
 *     var body: some View { Text("\(total)") }                         an effect
 *
 * A computed is lazy (runs on first read), cached (reads again cost no
 * call), and cut off by equality (an unchanged result wakes nobody).
 */
#include <stdio.h>

#include "check.h"
#include "tether.h"

static tether_state_t price, qty;
static int computes, renders;

/* The computed: reads become its dependencies. */
static int compute_total(tether_value_t *result, void *user_data) {
  int64_t p = 0, q = 0;
  (void)user_data;
  computes++;
  tether_state_get_int(price, &p);
  tether_state_get_int(qty, &q);
  return tether_value_set_int(result, p * q);
}

/* The effect (the view's body): re-run when the total changes. */
static void render(tether_effect_t effect, void *user_data) {
  int64_t total = 0;
  (void)effect;
  tether_computed_get_int(*(tether_computed_t *)user_data, &total);
  renders++;
  printf("shop: total %lld\n", (long long)total);
}

int main(void) {
  tether_runtime_t rt;
  tether_computed_t total;
  tether_effect_t view;
  int64_t t = 0;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("shop");
  CHECK_OK(tether_state_new_int(rt, 5, 0, &price));
  CHECK_OK(tether_state_new_int(rt, 2, 0, &qty));
  CHECK_OK(tether_computed_new(rt, compute_total, NULL, NULL, &total));
  CHECK_INT_EQ(computes, 0); /* lazy: nothing read it yet */

  /* SYNC: the effect's runs happen inside the writes that cause them. */
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, render, NULL, &total, NULL, &view));
  CHECK_INT_EQ(renders, 1);
  CHECK_OK(tether_computed_get_int(total, &t));
  CHECK_INT_EQ(t, 10);
  CHECK_INT_EQ(computes, 1); /* cached: the effect's read computed it */

  CHECK_OK(tether_state_set_int(qty, 3));
  CHECK_INT_EQ(renders, 2);

  /* Price and quantity swap: the total stays 15, so the view does not re-render. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(price, 3));
  CHECK_OK(tether_state_set_int(qty, 5));
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(renders, 2);

  CHECK_OK(tether_runtime_free(rt));
  return check_report("shop");
}
