/*
 * recipe_editor.c — bindings: a parent owns the state, a child edits one
 * field through a binding, as SwiftUI passes $recipe.servings to a stepper.
 *
 * A projected binding names a part of the parent's value; writes through
 * it update that part, and the parent's observers of that part see them.
 */
#include <stdio.h>

#include "check.h"
#include "tether.h"

/* The child: knows only a binding of an int, not where it lives. */
static void stepper_increment(tether_binding_t servings) {
  int64_t n = 0;
  CHECK_OK(tether_binding_get_int(servings, &n));
  CHECK_OK(tether_binding_set_int(servings, n + 1));
}

static int servings_changes;

static void on_servings(const tether_change_t *change, void *user_data) {
  (void)change;
  (void)user_data;
  servings_changes++;
}

int main(void) {
  tether_runtime_t rt;
  tether_state_t recipe;
  tether_binding_t whole, servings, first_step;
  tether_observer_t o;
  int64_t n = 0;
  char step[64];

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("recipe_editor");
  CHECK_OK(tether_state_new_json(rt, "{\"title\":\"Bread\",\"servings\":2,\"steps\":[\"mix\",\"bake\"]}", -1, 0,
                                 &recipe));
  CHECK_OK(tether_observe(recipe, "/servings", TETHER_OBSERVE_SYNC, on_servings, NULL, NULL, &o));

  CHECK_OK(tether_state_binding(recipe, &whole));                   /* $recipe */
  CHECK_OK(tether_binding_project(whole, "/servings", &servings));  /* $recipe.servings */
  /* An index projection needs an array: of the object itself, reading it
   * says so (the binding is made; it names nothing readable). */
  CHECK_OK(tether_binding_index(whole, 0, &first_step));
  CHECK_ERR(tether_binding_get_string(first_step, step, sizeof step, NULL), TETHER_ETYPE);
  CHECK_OK(tether_binding_free(first_step));

  stepper_increment(servings);
  CHECK_OK(tether_binding_get_int(servings, &n));
  CHECK_INT_EQ(n, 3);
  CHECK_INT_EQ(servings_changes, 1);

  /* An index projection of the steps array: $recipe.steps[1]. */
  {
    tether_binding_t steps, second;
    CHECK_OK(tether_binding_project(whole, "/steps", &steps));
    CHECK_OK(tether_binding_index(steps, 1, &second));
    CHECK_OK(tether_binding_set_string(second, "bake 40 min", -1));
    CHECK_OK(tether_binding_get_string(second, step, sizeof step, NULL));
    CHECK_STR_EQ(step, "bake 40 min");
  }
  printf("recipe_editor: servings %lld, step 2 \"%s\"\n", (long long)n, step);
  CHECK_OK(tether_runtime_free(rt)); /* frees the bindings too */
  return check_report("recipe_editor");
}
