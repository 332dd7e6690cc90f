/*
 * temperature.c — two states kept in step by a two-way transform binding
 * (GLib's g_object_bind_property_full): Celsius and Fahrenheit.
 *
 * A write to either side has written the other by the time it returns.
 * Each binding carries a change across at most once per write, so the two
 * never chase each other (even though conversions round).
 */
#include <stdio.h>

#include "check.h"
#include "tether.h"

static int to_fahrenheit(const tether_value_t *from, tether_value_t *to, void *user_data) {
  double c = 0;
  (void)user_data;
  if (tether_value_get_double(from, &c) != TETHER_OK) return TETHER_ETYPE;
  return tether_value_set_double(to, c * 9.0 / 5.0 + 32.0);
}

static int to_celsius(const tether_value_t *from, tether_value_t *to, void *user_data) {
  double f = 0;
  (void)user_data;
  if (tether_value_get_double(from, &f) != TETHER_OK) return TETHER_ETYPE;
  if (f < -459.67) return 1; /* below absolute zero: decline, leave Celsius alone */
  return tether_value_set_double(to, (f - 32.0) * 5.0 / 9.0);
}

int main(void) {
  tether_runtime_t rt;
  tether_state_t celsius, fahrenheit;
  tether_binding_t link;
  double c = 0, f = 0;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("temperature");
  CHECK_OK(tether_state_new_double(rt, 100.0, 0, &celsius));
  CHECK_OK(tether_state_new_double(rt, 0.0, 0, &fahrenheit));

  /* SYNC_CREATE sets Fahrenheit from Celsius right away. */
  CHECK_OK(tether_binding_bind(celsius, NULL, fahrenheit, NULL,
                               TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE,
                               to_fahrenheit, to_celsius, NULL, NULL, &link));
  CHECK_OK(tether_state_get_double(fahrenheit, &f));
  CHECK(f == 212.0);

  CHECK_OK(tether_state_set_double(fahrenheit, 32.0)); /* back the other way */
  CHECK_OK(tether_state_get_double(celsius, &c));
  CHECK(c == 0.0);

  CHECK_OK(tether_state_set_double(fahrenheit, -500.0)); /* declined by to_celsius */
  CHECK_OK(tether_state_get_double(celsius, &c));
  CHECK(c == 0.0);
  printf("temperature: %.1f C, %.1f F\n", c, -500.0);

  CHECK_OK(tether_binding_free(link)); /* the states stay; they no longer follow each other */
  CHECK_OK(tether_state_set_double(celsius, 37.0));
  CHECK_OK(tether_state_get_double(fahrenheit, &f));
  CHECK(f == -500.0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("temperature");
}
