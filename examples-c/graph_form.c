/*
 * graph_form.c — seeing the graph: a small sign-up form drawn as Graphviz
 * DOT with tether_runtime_graph_dot, so a picture answers "what reads what"
 * instead of the code.
 *
 *     form    {"name": "Ada", "email": "ada@example.org"}    states, named
 *     agreed  false                                          by descriptors
 *     age     36
 *     greeting    = "Hello, " + form/name                    two computeds,
 *     can_submit  = form/email != "" && agreed && age >= 18  reading parts
 *     button      shows greeting, enabled when can_submit    an effect
 *
 * In the picture, each state is a box labelled with its descriptor's name,
 * the computeds are ellipses, the effect a hexagon; each edge goes from what
 * was read to its reader, labelled with the JSON Pointer read ("/name"; no
 * label: the whole value). A computed waiting to be brought up to date is
 * drawn dashed and red.
 *
 *     ./graph_form              prints the DOT text
 *     ./graph_form form.dot     writes it to form.dot
 *     dot -Tpng form.dot -o form.png     (apt-get install graphviz)
 *
 * docs/graph_form.png is this lesson's picture; Tests/graph/check_picture.py
 * renders it with `dot -Tjson` and checks its nodes and edges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tether.h"

static tether_state_t form, agreed, age;
static tether_computed_t greeting, can_submit;

static int compute_greeting(tether_value_t *result, void *user_data) {
  (void)user_data;
  char buf[128], name[64];
  tether_value_t *v = NULL;
  int rc = tether_state_get_path(form, "/name", &v); /* depends on /name only */
  if (rc != TETHER_OK) return rc;
  size_t len = 0;
  tether_value_get_string(v, name, sizeof name, &len);
  tether_value_free(v);
  snprintf(buf, sizeof buf, "Hello, %s", name);
  return tether_value_set_string(result, buf, -1);
}

static int compute_can_submit(tether_value_t *result, void *user_data) {
  (void)user_data;
  char email[128];
  size_t len = 0;
  bool ok = false;
  int64_t years = 0;
  tether_value_t *v = NULL;
  int rc = tether_state_get_path(form, "/email", &v);
  if (rc != TETHER_OK) return rc;
  tether_value_get_string(v, email, sizeof email, &len);
  tether_value_free(v);
  if ((rc = tether_state_get_bool(agreed, &ok)) != TETHER_OK) return rc;
  if ((rc = tether_state_get_int(age, &years)) != TETHER_OK) return rc;
  return tether_value_set_bool(result, len > 0 && ok && years >= 18);
}

static int button_runs;
static bool button_enabled;

/* The "view": the submit button, redrawn when what it shows changed. */
static void button(tether_effect_t e, void *user_data) {
  (void)e;
  (void)user_data;
  char text[128];
  tether_computed_get_json(greeting, 0, text, sizeof text, NULL);
  tether_computed_get_bool(can_submit, &button_enabled);
  button_runs++;
}

static void name_state(tether_state_t s, const char *name) {
  tether_state_descriptor_t d;
  tether_state_descriptor_init(&d);
  d.name = name;
  CHECK_OK(tether_state_describe(s, &d));
}

/* The graph's DOT text in a malloc'd buffer: sized first, then filled; the
 * graph may grow between the two calls, hence the loop. */
static char *graph_text(tether_runtime_t rt) {
  size_t len = 0, size = 0;
  char *buf = NULL;
  if (!CHECK_OK(tether_runtime_graph_dot(rt, NULL, 0, &len))) return NULL;
  do {
    size = len + 1;
    char *grown = realloc(buf, size);
    if (!grown) break;
    buf = grown;
    if (!CHECK_OK(tether_runtime_graph_dot(rt, buf, size, &len))) break;
  } while (len >= size);
  return buf;
}

int main(int argc, char **argv) {
  tether_runtime_t rt;
  tether_effect_t shown;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("graph_form");
  CHECK_OK(tether_state_new_json(rt, "{\"name\": \"Ada\", \"email\": \"ada@example.org\"}", -1, 0, &form));
  CHECK_OK(tether_state_new_bool(rt, false, 0, &agreed));
  CHECK_OK(tether_state_new_int(rt, 36, 0, &age));
  name_state(form, "form");
  name_state(agreed, "agreed");
  name_state(age, "age");
  CHECK_OK(tether_computed_new(rt, compute_greeting, NULL, NULL, &greeting));
  CHECK_OK(tether_computed_new(rt, compute_can_submit, NULL, NULL, &can_submit));
  /* SYNC: it has run by the time the call (and each write) returns. */
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, button, NULL, NULL, NULL, &shown));
  CHECK_INT_EQ(button_runs, 1);
  CHECK(!button_enabled);

  CHECK_OK(tether_state_set_bool(agreed, true)); /* ticks the box */
  CHECK_INT_EQ(button_runs, 2);
  CHECK(button_enabled);

  char *dot = graph_text(rt);
  if (dot) {
    CHECK(strncmp(dot, "digraph tether {", 16) == 0);
    CHECK(strstr(dot, "label=\"/email\"") != NULL); /* can_submit read form at /email */
    CHECK(strstr(dot, "tether_name=\"agreed\"") != NULL);
    FILE *out = argc > 1 ? fopen(argv[1], "w") : stdout;
    if (CHECK(out != NULL)) {
      fputs(dot, out);
      if (out != stdout) fclose(out);
    }
    free(dot);
  }

  CHECK_OK(tether_runtime_free(rt));
  return check_report("graph_form");
}
