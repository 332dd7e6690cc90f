/*
 * graph_dot.c — tether_runtime_graph_dot: the runtime's graph as Graphviz DOT.
 *
 * What this program checks:
 *  - bad input: a stale or zero runtime (TETHER_ESTALE), a NULL buffer with a
 *    size (TETHER_EINVAL); the snprintf convention (size 0 asks the length,
 *    a short buffer is cut and NUL-terminated, *len is the full length);
 *  - what the text says: every kind of node with its handle as id, named
 *    states by name, edges with the JSON Pointer read, an observer's,
 *    binding's and scope's edges, and the marks of a computed never
 *    evaluated (fresh) and one whose source changed (stale);
 *  - calls from inside every kind of callback (compute, SYNC and loop
 *    effects and observers) and from several threads while others create,
 *    write and free nodes;
 *  - names that are hostile to DOT (quotes, backslashes, newlines, control
 *    characters, "\N") give text that Graphviz's own reader (`dot -Tjson`)
 *    accepts, each name coming back as written.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* The DOT text, malloc'd (NULL on failure). */
static char *dot_of(tether_runtime_t rt) {
  size_t len = 0, size = 0;
  char *buf = NULL;
  if (tether_runtime_graph_dot(rt, NULL, 0, &len) != TETHER_OK) return NULL;
  do {
    size = len + 1;
    char *grown = realloc(buf, size);
    if (!grown) {
      free(buf);
      return NULL;
    }
    buf = grown;
    if (tether_runtime_graph_dot(rt, buf, size, &len) != TETHER_OK) {
      free(buf);
      return NULL;
    }
  } while (len >= size);
  return buf;
}

/* Whether the DOT text is whole: starts as a digraph and ends with "}\n". */
static int dot_is_whole(const char *dot) {
  size_t n = dot ? strlen(dot) : 0;
  return n > 20 && strncmp(dot, "digraph tether {", 16) == 0 && strcmp(dot + n - 2, "}\n") == 0;
}

static void name_state(tether_state_t s, const char *name) {
  tether_state_descriptor_t d;
  tether_state_descriptor_init(&d);
  d.name = name;
  CHECK_OK(tether_state_describe(s, &d));
}

TEST_CASE(graph_dot_bad_input) {
  tether_runtime_t zero = {0}, rt;
  char buf[16];
  size_t len = 0;
  CHECK_ERR(tether_runtime_graph_dot(zero, buf, sizeof buf, &len), TETHER_ESTALE);
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("graph_dot_bad_input");
  CHECK_ERR(tether_runtime_graph_dot(rt, NULL, 5, &len), TETHER_EINVAL);
  CHECK_OK(tether_runtime_graph_dot(rt, NULL, 0, &len));
  size_t full = len;
  CHECK(full > sizeof buf);
  memset(buf, 'x', sizeof buf);
  CHECK_OK(tether_runtime_graph_dot(rt, buf, sizeof buf, &len));
  CHECK_INT_EQ(len, full);
  CHECK_INT_EQ(buf[sizeof buf - 1], 0); /* cut and terminated */
  CHECK(strncmp(buf, "digraph tether {", sizeof buf - 1) == 0);
  CHECK_OK(tether_runtime_graph_dot(rt, buf, sizeof buf, NULL)); /* len may be NULL */
  tether_state_t s;
  CHECK_OK(tether_state_new_int(rt, 1, 0, &s));
  tether_runtime_t as_runtime = {s.id}; /* a state handle passed as a runtime */
  CHECK_ERR(tether_runtime_graph_dot(as_runtime, buf, sizeof buf, &len), TETHER_ESTALE);
  CHECK_OK(tether_runtime_free(rt));
  CHECK_ERR(tether_runtime_graph_dot(rt, buf, sizeof buf, &len), TETHER_ESTALE);
  return check_report("graph_dot_bad_input");
}

static tether_state_t doc;

static int read_title(tether_value_t *result, void *user_data) {
  (void)user_data;
  tether_value_t *v = NULL;
  int rc = tether_state_get_path(doc, "/title", &v);
  if (rc != TETHER_OK) return rc;
  rc = tether_value_assign(result, v);
  tether_value_free(v);
  return rc;
}

static void ignore_change(const tether_change_t *change, void *user_data) {
  (void)change;
  (void)user_data;
}

TEST_CASE(graph_dot_nodes_edges_and_marks) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("graph_dot_nodes_edges_and_marks");
  tether_scope_t scope;
  CHECK_OK(tether_scope_new(rt, &scope));
  CHECK_OK(tether_scope_enter(scope));
  CHECK_OK(tether_state_new_json(rt, "{\"title\": \"a\", \"body\": \"b\"}", -1, 0, &doc));
  CHECK_OK(tether_scope_leave(scope));
  name_state(doc, "doc");
  tether_computed_t title;
  CHECK_OK(tether_computed_new(rt, read_title, NULL, NULL, &title));
  tether_observer_t obs;
  CHECK_OK(tether_observe(doc, "/body", 0, ignore_change, NULL, NULL, &obs));
  tether_binding_t whole, body;
  CHECK_OK(tether_state_binding(doc, &whole));
  CHECK_OK(tether_binding_project(whole, "/body", &body));

  char *dot = dot_of(rt);
  CHECK(dot_is_whole(dot));
  if (dot) {
    CHECK(strstr(dot, "tether_kind=\"state\"") != NULL);
    CHECK(strstr(dot, "[label=\"doc\"") != NULL);
    CHECK(strstr(dot, "tether_kind=\"computed\"") != NULL);
    CHECK(strstr(dot, "tether_marks=\"fresh\"") != NULL); /* never evaluated */
    CHECK(strstr(dot, "tether_kind=\"observer\"") != NULL);
    CHECK(strstr(dot, "tether_pointer=\"/body\", tether_edge=\"observes\"") != NULL);
    CHECK(strstr(dot, "tether_pointer=\"/body\", tether_edge=\"binds\"") != NULL);
    CHECK(strstr(dot, "tether_kind=\"scope\"") != NULL);
    CHECK(strstr(dot, "tether_edge=\"owns\"") != NULL);
    CHECK(strstr(dot, "tether_edge=\"reads\"") == NULL); /* nothing read yet */
  }
  free(dot);

  tether_value_t *v = NULL;
  CHECK_OK(tether_computed_get(title, &v)); /* evaluates: reads /title */
  tether_value_free(v);
  dot = dot_of(rt);
  if (CHECK(dot != NULL)) {
    CHECK(strstr(dot, "label=\"/title\", tether_pointer=\"/title\", tether_edge=\"reads\"") != NULL);
    CHECK(strstr(dot, "tether_marks=") == NULL); /* up to date */
  }
  free(dot);

  CHECK_OK(tether_state_set_path_json(doc, "/title", "\"c\"", -1));
  dot = dot_of(rt);
  if (CHECK(dot != NULL)) {
    CHECK(strstr(dot, "tether_marks=\"stale\"") != NULL);
    CHECK(strstr(dot, "color=\"red\"") != NULL);
  }
  free(dot);
  CHECK_OK(tether_binding_free(body));
  CHECK_OK(tether_binding_free(whole));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("graph_dot_nodes_edges_and_marks");
}

/* Calls from inside callbacks: each records whether its DOT was whole. */
static tether_runtime_t cb_rt;
static tether_state_t cb_state;
static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static int cb_whole, cb_calls;

static void graph_from_callback(void) {
  char *dot = dot_of(cb_rt);
  int whole = dot_is_whole(dot);
  free(dot);
  pthread_mutex_lock(&cb_mu);
  cb_calls++;
  cb_whole += whole;
  pthread_mutex_unlock(&cb_mu);
}

static int compute_with_graph(tether_value_t *result, void *user_data) {
  (void)user_data;
  int64_t n = 0;
  int rc = tether_state_get_int(cb_state, &n);
  if (rc != TETHER_OK) return rc;
  graph_from_callback();
  return tether_value_set_int(result, n * 2);
}

static void effect_with_graph(tether_effect_t e, void *user_data) {
  (void)e;
  tether_computed_t c = *(tether_computed_t *)user_data;
  int64_t n = 0;
  tether_computed_get_int(c, &n);
  graph_from_callback();
}

static void observer_with_graph(const tether_change_t *change, void *user_data) {
  (void)change;
  (void)user_data;
  graph_from_callback();
}

TEST_CASE(graph_dot_inside_callbacks) {
  if (!CHECK_OK(tether_runtime_new(NULL, &cb_rt))) return check_report("graph_dot_inside_callbacks");
  CHECK_OK(tether_state_new_int(cb_rt, 1, 0, &cb_state));
  tether_computed_t doubled;
  CHECK_OK(tether_computed_new(cb_rt, compute_with_graph, NULL, NULL, &doubled));
  tether_effect_t sync_effect, loop_effect;
  CHECK_OK(tether_effect_new(cb_rt, TETHER_EFFECT_SYNC, effect_with_graph, NULL, &doubled, NULL, &sync_effect));
  CHECK_OK(tether_effect_new(cb_rt, 0, effect_with_graph, NULL, &doubled, NULL, &loop_effect));
  tether_observer_t sync_obs, loop_obs;
  CHECK_OK(tether_observe(cb_state, NULL, TETHER_OBSERVE_SYNC, observer_with_graph, NULL, NULL, &sync_obs));
  CHECK_OK(tether_observe(cb_state, NULL, 0, observer_with_graph, NULL, NULL, &loop_obs));
  for (int i = 2; i < 6; i++) CHECK_OK(tether_state_set_int(cb_state, i));
  CHECK_OK(tether_runtime_flush(cb_rt));
  pthread_mutex_lock(&cb_mu);
  int calls = cb_calls, whole = cb_whole;
  pthread_mutex_unlock(&cb_mu);
  /* 5 computes + 5 SYNC effect runs + 4 SYNC observer calls at least. */
  CHECK(calls >= 14);
  CHECK_INT_EQ(whole, calls);
  CHECK_OK(tether_runtime_free(cb_rt));
  return check_report("graph_dot_inside_callbacks");
}

/* Threads: two churn the graph, two draw it. */
static tether_runtime_t th_rt;
static int th_bad;

static int compute_one(tether_value_t *result, void *user_data) {
  tether_state_t s = *(tether_state_t *)user_data;
  int64_t n = 0;
  int rc = tether_state_get_int(s, &n);
  return rc != TETHER_OK ? rc : tether_value_set_int(result, n + 1);
}

static void *churn(void *arg) {
  (void)arg;
  for (int i = 0; i < 300; i++) {
    tether_state_t s;
    tether_computed_t c;
    if (tether_state_new_int(th_rt, i, 0, &s) != TETHER_OK) continue;
    if (tether_computed_new(th_rt, compute_one, &s, NULL, &c) == TETHER_OK) {
      int64_t n = 0;
      tether_computed_get_int(c, &n);
      tether_state_set_int(s, i + 1);
      tether_computed_free(c);
    }
    tether_state_free(s);
  }
  return NULL;
}

static void *draw(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; i++) {
    char *dot = dot_of(th_rt);
    if (!dot_is_whole(dot)) __atomic_add_fetch(&th_bad, 1, __ATOMIC_RELAXED);
    free(dot);
  }
  return NULL;
}

TEST_CASE(graph_dot_threads) {
  if (!CHECK_OK(tether_runtime_new(NULL, &th_rt))) return check_report("graph_dot_threads");
  pthread_t t[4];
  for (int i = 0; i < 4; i++) CHECK_INT_EQ(pthread_create(&t[i], NULL, i < 2 ? churn : draw, NULL), 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  CHECK_INT_EQ(__atomic_load_n(&th_bad, __ATOMIC_RELAXED), 0);
  CHECK_OK(tether_runtime_free(th_rt));
  return check_report("graph_dot_threads");
}

/* Hostile names, read back by Graphviz: dot -Tjson keeps an attribute's
 * escapes as written except \" (so a newline comes back as the two
 * characters \n), which is what `expected` spells. */
static const struct {
  const char *name, *expected;
} hostile[] = {
    {"say \"hi\"", "say \"hi\""},
    {"back\\slash", "back\\\\slash"},
    {"ends with \\", "ends with \\\\"},
    {"two\nlines", "two\\nlines"},
    {"tab\there", "tab\\\\u{9}here"},
    {"\\N is the node name", "\\\\N is the node name"},
    {"<b>not html</b> {x} [y]; z -> w", "<b>not html</b> {x} [y]; z -> w"},
};

TEST_CASE(graph_dot_hostile_names) {
  if (system("command -v dot >/dev/null 2>&1") != 0) {
    return check_skip("graph_dot_hostile_names", "Graphviz's dot is not installed: apt-get install graphviz");
  }
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("graph_dot_hostile_names");
  size_t n = sizeof hostile / sizeof hostile[0];
  for (size_t i = 0; i < n; i++) {
    tether_state_t s;
    CHECK_OK(tether_state_new_int(rt, (int64_t)i, 0, &s));
    name_state(s, hostile[i].name);
  }
  char *dot = dot_of(rt);
  CHECK_OK(tether_runtime_free(rt));
  if (!CHECK(dot != NULL)) return check_report("graph_dot_hostile_names");

  char in[] = "/tmp/tether-graph-XXXXXX";
  int fd = mkstemp(in);
  if (!CHECK(fd >= 0)) return check_report("graph_dot_hostile_names");
  CHECK_INT_EQ(write(fd, dot, strlen(dot)), (long)strlen(dot));
  close(fd);
  free(dot);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "dot -Tjson %s 2>&1", in);
  FILE *p = popen(cmd, "r");
  size_t cap = 1 << 16, used = 0;
  char *json = malloc(cap);
  if (CHECK(p != NULL) && CHECK(json != NULL)) {
    size_t got;
    while ((got = fread(json + used, 1, cap - used - 1, p)) > 0) {
      used += got;
      if (used + 1 == cap) {
        char *grown = realloc(json, cap *= 2);
        if (!grown) break;
        json = grown;
      }
    }
    json[used] = 0;
    CHECK_INT_EQ(pclose(p), 0); /* Graphviz accepted the text */
  }
  unlink(in);
  tether_value_t *graph = NULL;
  if (json && CHECK_OK(tether_value_from_json(json, (ptrdiff_t)used, &graph))) {
    size_t found = 0, count = 0;
    tether_value_t *objects = NULL;
    if (CHECK_OK(tether_value_get_path(graph, "/objects", &objects))) {
      CHECK_OK(tether_value_length(objects, &count));
      for (size_t o = 0; o < count; o++) {
        char ptr[64], got[256];
        snprintf(ptr, sizeof ptr, "/%zu/tether_name", o);
        tether_value_t *name = NULL;
        if (tether_value_get_path(objects, ptr, &name) != TETHER_OK) continue;
        size_t len = 0;
        CHECK_OK(tether_value_get_string(name, got, sizeof got, &len));
        tether_value_free(name);
        int matched = 0;
        for (size_t i = 0; i < n; i++) matched |= strcmp(got, hostile[i].expected) == 0;
        if (!CHECK(matched)) printf("    unexpected tether_name: %s\n", got);
        found++;
      }
      tether_value_free(objects);
    }
    CHECK_INT_EQ(found, n);
    tether_value_free(graph);
  }
  free(json);
  return check_report("graph_dot_hostile_names");
}
