/*
 * profile.c — a structured state and per-field observers (fine-grained
 * observation, as @Observable tracks each property).
 *
 * A state holds JSON; parts are named by JSON Pointers ("/name",
 * "/address/city"). An observer of "/name" is woken by writes to /name,
 * never by writes to /age; an observer of "" (the whole) by every change.
 */
#include <stdio.h>

#include "check.h"
#include "tether.h"

static int name_calls, age_calls, whole_calls;

static void count_call(const tether_change_t *change, void *user_data) {
  (void)change;
  (*(int *)user_data)++;
}

int main(void) {
  tether_runtime_t rt;
  tether_state_t user;
  tether_observer_t o1, o2, o3;
  tether_value_t *city = NULL;
  int64_t age = 0;
  char json[128];

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("profile");
  CHECK_OK(tether_state_new_json(rt, "{\"name\":\"Ada\",\"age\":36,\"address\":{\"city\":\"London\"}}", -1, 0, &user));

  /* SYNC, so each call has run when the write returns. */
  CHECK_OK(tether_observe(user, "/name", TETHER_OBSERVE_SYNC, count_call, &name_calls, NULL, &o1));
  CHECK_OK(tether_observe(user, "/age", TETHER_OBSERVE_SYNC, count_call, &age_calls, NULL, &o2));
  CHECK_OK(tether_observe(user, "", TETHER_OBSERVE_SYNC, count_call, &whole_calls, NULL, &o3));

  CHECK_OK(tether_state_set_path_json(user, "/age", "37", -1)); /* wakes /age and "" */
  CHECK_INT_EQ(age_calls, 1);
  CHECK_INT_EQ(name_calls, 0);
  CHECK_INT_EQ(whole_calls, 1);

  CHECK_OK(tether_state_set_path_json(user, "/name", "\"Grace\"", -1)); /* wakes /name and "" */
  CHECK_INT_EQ(name_calls, 1);
  CHECK_INT_EQ(whole_calls, 2);

  /* Reading a part: an owned value, freed by the caller... */
  CHECK_OK(tether_state_get_path(user, "/address/city", &city));
  CHECK_VALUE(city, "\"London\"");
  tether_value_free(city);
  /* ...or, for a scalar, straight into a C variable (nothing to free). */
  CHECK_OK(tether_state_get_path_int(user, "/age", &age));
  CHECK_INT_EQ(age, 37);
  CHECK_ERR(tether_state_get_path_int(user, "/name", &age), TETHER_ETYPE); /* a string */

  /* A malformed pointer is an error with a message, not a crash. */
  CHECK_ERR(tether_state_set_path_json(user, "name", "1", -1), TETHER_EPATH);
  printf("profile: last error says: %s\n", tether_last_error());

  CHECK_OK(tether_state_get_json(user, 0, json, sizeof json, NULL));
  printf("profile: %s\n", json);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("profile");
}
