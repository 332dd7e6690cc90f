/*
 * profile.c — one structured state, many fine-grained observers.
 *
 * In SwiftUI an @Observable model tracks each property on its own: a view
 * that reads user.firstName is not re-rendered when user.lastName changes.
 * Tether does the same for one state holding a JSON-like value:
 *
 *     {"user": {"firstName": "Ada", "lastName": "Lovelace", "age": 36},
 *      "tags": ["math"]}
 *
 * Parts of it are named by JSON Pointers (RFC 6901): "/user/firstName",
 * "/tags/0", "" for the whole value. What it shows:
 *  - tether_state_set_path_json / set_path / get_path / remove_path;
 *  - an observer of /user/firstName is NOT called when /user/lastName
 *    changes; an observer of /user IS called for both; the root observer
 *    for everything; siblings are never woken;
 *  - an observer of a member that does not exist yet is called when it
 *    appears (old_value NULL) and when it goes away (new_value NULL);
 *  - JSON in and out (tether_state_get_json, compact and pretty), with the
 *    size-query idiom (size 0 first, then allocate);
 *  - the values API: building a value in C (object_set, array_append),
 *    reading it (get_path, length, object_key), equal, copy, free.
 *
 * Build: cc -std=c99 profile.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define PROFILE_JSON \
  "{\"user\":{\"firstName\":\"Ada\",\"lastName\":\"Lovelace\",\"age\":36},\"tags\":[\"math\"]}"

/* ---- a recorder that keeps copies of the values it was shown ------------ */

#define MAX_CALLS 32

typedef struct call {
  tether_value_t *old_value; /* owned copies (the callback's are borrowed) */
  tether_value_t *new_value;
  char path[64];
  uint64_t revision;
} call_t;

typedef struct watcher {
  const char *pointer; /* what it observes */
  pthread_mutex_t mu;
  call_t calls[MAX_CALLS];
  int ncalls;
  int destroyed;
  tether_observer_t handle;
} watcher_t;

static void on_change(const tether_change_t *change, void *user_data) {
  watcher_t *w = user_data;
  call_t c;
  memset(&c, 0, sizeof c);
  /* change->old_value / new_value are borrowed: copy them to keep them. */
  if (change->old_value) tether_value_copy(change->old_value, &c.old_value);
  if (change->new_value) tether_value_copy(change->new_value, &c.new_value);
  snprintf(c.path, sizeof c.path, "%s", change->path ? change->path : "(NULL)");
  c.revision = change->revision;
  pthread_mutex_lock(&w->mu);
  if (w->ncalls < MAX_CALLS) {
    w->calls[w->ncalls] = c;
  } else {
    tether_value_free(c.old_value);
    tether_value_free(c.new_value);
  }
  w->ncalls++;
  pthread_mutex_unlock(&w->mu);
}

static void on_destroy(void *user_data) {
  watcher_t *w = user_data;
  pthread_mutex_lock(&w->mu);
  w->destroyed++;
  pthread_mutex_unlock(&w->mu);
}

static void watch(watcher_t *w, tether_state_t s, const char *pointer) {
  memset(w, 0, sizeof *w);
  w->pointer = pointer;
  pthread_mutex_init(&w->mu, NULL);
  CHECK_OK(tether_observe(s, pointer, 0, on_change, w, on_destroy, &w->handle));
}

static int ncalls(watcher_t *w) {
  int n;
  pthread_mutex_lock(&w->mu);
  n = w->ncalls;
  pthread_mutex_unlock(&w->mu);
  return n;
}

/* The last call (after a flush the loop thread is done with it). */
static call_t *last_call(watcher_t *w) {
  static call_t none;
  call_t *c;
  pthread_mutex_lock(&w->mu);
  c = (w->ncalls > 0 && w->ncalls <= MAX_CALLS) ? &w->calls[w->ncalls - 1] : &none;
  pthread_mutex_unlock(&w->mu);
  return c;
}

static void watcher_clear(watcher_t *w) {
  int i;
  pthread_mutex_lock(&w->mu);
  for (i = 0; i < w->ncalls && i < MAX_CALLS; i++) {
    tether_value_free(w->calls[i].old_value);
    tether_value_free(w->calls[i].new_value);
  }
  pthread_mutex_unlock(&w->mu);
}

/* Calls so far of every watcher, compared in one line with what we expect
 * (-1: not checked here, so one wrong count is reported once, not again in
 * every later step). */
enum { FIRST, LAST, USER, ROOT, NICK, TAGS, TAG1, PET, NWATCHERS };
static watcher_t w[NWATCHERS];

static void expect_calls(const char *what, int first, int last, int user, int root, int nick,
                         int tags, int tag1, int pet, const char *file, int line) {
  int want[NWATCHERS], i, ok = 1;
  char got_s[128], want_s[128];
  want[FIRST] = first, want[LAST] = last, want[USER] = user, want[ROOT] = root;
  want[NICK] = nick, want[TAGS] = tags, want[TAG1] = tag1, want[PET] = pet;
  got_s[0] = want_s[0] = '\0';
  for (i = 0; i < NWATCHERS; i++) {
    int n = ncalls(&w[i]);
    if (want[i] >= 0 && n != want[i]) ok = 0;
    snprintf(got_s + strlen(got_s), sizeof got_s - strlen(got_s), " %s=%d", w[i].pointer, n);
    snprintf(want_s + strlen(want_s), sizeof want_s - strlen(want_s), " %s=%d", w[i].pointer,
             want[i]);
  }
  if (ok) {
    check_pass_();
  } else {
    check_fail_(file, line, "observer calls after %s\n    expected%s\n    got     %s", what,
                want_s, got_s);
  }
}
#define EXPECT_CALLS(what, a, b, c, d, e, f, g, h) \
  expect_calls((what), (a), (b), (c), (d), (e), (f), (g), (h), __FILE__, __LINE__)

/* Reads a whole state as JSON with the size-query idiom; caller frees. */
static char *state_json(tether_state_t s, unsigned flags) {
  size_t len = 0, len2 = 0;
  char *buf;
  if (!CHECK_OK(tether_state_get_json(s, flags, NULL, 0, &len))) return NULL;
  buf = malloc(len + 1);
  if (buf == NULL) return NULL;
  CHECK_OK(tether_state_get_json(s, flags, buf, len + 1, &len2));
  CHECK_INT_EQ(len2, len);
  CHECK_INT_EQ(strlen(buf), len);
  return buf;
}

static void part_of_state(tether_state_t s, const char *pointer, const char *expected_json) {
  tether_value_t *v = NULL;
  CHECK_OK(tether_state_get_path(s, pointer, &v));
  CHECK_VALUE(v, expected_json);
  tether_value_free(v);
}

static void values_api(void);

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_profile) {
  tether_runtime_t rt;
  tether_state_t profile, copy_state;
  tether_value_t *v = NULL, *whole = NULL, *again = NULL;
  uint64_t rev;
  char *json;
  int i;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("profile");
  CHECK_OK(tether_state_new_json(rt, PROFILE_JSON, -1, 0, &profile));

  /* Per-field observers, all delivered on the loop thread. */
  watch(&w[FIRST], profile, "/user/firstName");
  watch(&w[LAST], profile, "/user/lastName");
  watch(&w[USER], profile, "/user");
  watch(&w[ROOT], profile, "");
  watch(&w[NICK], profile, "/user/nickname"); /* does not exist yet */
  watch(&w[TAGS], profile, "/tags");
  watch(&w[TAG1], profile, "/tags/1"); /* does not exist yet */
  watch(&w[PET], profile, "/pets/0/name"); /* nor does its parent */
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("registering", 0, 0, 0, 0, 0, 0, 0, 0);

  /* Reading parts. */
  part_of_state(profile, "/user/firstName", "\"Ada\"");
  part_of_state(profile, "/user/age", "36");
  part_of_state(profile, "/tags/0", "\"math\"");
  part_of_state(profile, "", PROFILE_JSON);

  /* 1. lastName changes: its observer, /user and the root are told;
   *    firstName (a sibling) is not. */
  CHECK_OK(tether_state_set_path_json(profile, "/user/lastName", "\"Byron\"", -1));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("setting /user/lastName", 0, 1, 1, 1, 0, 0, 0, 0);
  CHECK_VALUE(last_call(&w[LAST])->old_value, "\"Lovelace\"");
  CHECK_VALUE(last_call(&w[LAST])->new_value, "\"Byron\"");
  CHECK_STR_EQ(last_call(&w[LAST])->path, "/user/lastName");
  CHECK_VALUE(last_call(&w[USER])->old_value,
              "{\"firstName\":\"Ada\",\"lastName\":\"Lovelace\",\"age\":36}");
  CHECK_VALUE(last_call(&w[USER])->new_value,
              "{\"firstName\":\"Ada\",\"lastName\":\"Byron\",\"age\":36}");
  CHECK_STR_EQ(last_call(&w[ROOT])->path, "");
  CHECK_VALUE(last_call(&w[ROOT])->old_value, PROFILE_JSON);

  /* 2. firstName changes: now lastName's observer sleeps. */
  CHECK_OK(tether_state_set_path_json(profile, "/user/firstName", "\"Augusta Ada\"", -1));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("setting /user/firstName", 1, 1, 2, 2, 0, 0, 0, 0);
  CHECK_VALUE(last_call(&w[FIRST])->old_value, "\"Ada\"");
  CHECK_VALUE(last_call(&w[FIRST])->new_value, "\"Augusta Ada\"");

  /* 3. A member that did not exist appears: old_value is NULL. */
  CHECK_OK(tether_state_set_path_json(profile, "/user/nickname", "\"Ada\"", -1));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("adding /user/nickname", 1, 1, 3, 3, 1, 0, 0, 0);
  CHECK_VALUE(last_call(&w[NICK])->old_value, NULL);
  CHECK_VALUE(last_call(&w[NICK])->new_value, "\"Ada\"");

  /* 4. set_path with a value built in C. */
  CHECK_OK(tether_value_new_int(37, &v));
  CHECK_OK(tether_state_set_path(profile, "/user/age", v));
  tether_value_free(v); /* the state stored a copy */
  v = NULL;
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("setting /user/age", 1, 1, 4, 4, 1, 0, 0, 0);
  part_of_state(profile, "/user/age", "37");

  /* 5. Appending to /tags ("-" means past the end) wakes /tags, /tags/1
   *    (which appears) and the root, but not /user. */
  CHECK_OK(tether_state_set_path_json(profile, "/tags/-", "\"poetry\"", -1));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("appending to /tags", 1, 1, 4, 5, 1, 1, 1, 0);
  CHECK_VALUE(last_call(&w[TAGS])->old_value, "[\"math\"]");
  CHECK_VALUE(last_call(&w[TAGS])->new_value, "[\"math\",\"poetry\"]");
  CHECK_VALUE(last_call(&w[TAG1])->old_value, NULL);
  CHECK_VALUE(last_call(&w[TAG1])->new_value, "\"poetry\"");

  /* 6. A deep path whose parent did not exist appears in one write. */
  CHECK_OK(tether_state_set_path_json(profile, "/pets", "[{\"name\":\"Rex\"}]", -1));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("adding /pets", 1, 1, 4, 6, 1, 1, -1, 1);
  CHECK_VALUE(last_call(&w[PET])->old_value, NULL);
  CHECK_VALUE(last_call(&w[PET])->new_value, "\"Rex\"");

  /* 7. Removing a member: its observer gets new_value NULL. */
  CHECK_OK(tether_state_remove_path(profile, "/user/nickname"));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("removing /user/nickname", 1, 1, 5, 7, 2, 1, -1, 1);
  CHECK_VALUE(last_call(&w[NICK])->old_value, "\"Ada\"");
  CHECK_VALUE(last_call(&w[NICK])->new_value, NULL);
  CHECK_ERR(tether_state_get_path(profile, "/user/nickname", &v), TETHER_ENOTFOUND);
  CHECK_OK(tether_state_remove_path(profile, "/pets"));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("removing /pets", 1, 1, 5, 8, 2, 1, -1, 2);
  CHECK_VALUE(last_call(&w[PET])->new_value, NULL);

  /* 8. Replacing /user whole: only the descendants whose part changed are
   *    told (lastName yes, firstName no: it is equal). */
  CHECK_OK(tether_state_set_path_json(
      profile, "/user", "{\"firstName\":\"Augusta Ada\",\"lastName\":\"King\",\"age\":37}", -1));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("replacing /user", 1, 2, 6, 9, 2, 1, -1, 2);
  CHECK_VALUE(last_call(&w[LAST])->old_value, "\"Byron\"");
  CHECK_VALUE(last_call(&w[LAST])->new_value, "\"King\"");

  /* 9. Writing what is already there: no commit, nobody told. */
  CHECK_OK(tether_runtime_revision(rt, &rev));
  CHECK_OK(tether_state_set_path_json(profile, "/user/lastName", "\"King\"", -1));
  CHECK_OK(tether_state_set_path_json(profile, "/tags", "[\"math\", \"poetry\"]", -1));
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_CALLS("equal writes", 1, 2, 6, 9, 2, 1, -1, 2);
  {
    uint64_t rev2 = 0;
    CHECK_OK(tether_runtime_revision(rt, &rev2));
    CHECK_INT_EQ(rev2, rev);
  }
  /* The revision in a change is the commit that caused it. */
  CHECK_OK(tether_state_set_path_json(profile, "/user/age", "38", -1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(last_call(&w[USER])->revision, rev + 1);

  /* 10. JSON out, compact and pretty, and back in. */
  json = state_json(profile, 0);
  if (json) {
    printf("profile (compact): %s\n", json);
    CHECK(strchr(json, '\n') == NULL);
    CHECK_OK(tether_value_from_json(json, -1, &again));
    CHECK_OK(tether_state_get(profile, &whole));
    CHECK_INT_EQ(tether_value_equal(again, whole), 1);
    /* A new state made from that text holds an equal value. */
    CHECK_OK(tether_state_new_json(rt, json, (ptrdiff_t)strlen(json), 0, &copy_state));
    tether_value_free(again);
    again = NULL;
    CHECK_OK(tether_state_get(copy_state, &again));
    CHECK_INT_EQ(tether_value_equal(again, whole), 1);
    CHECK_OK(tether_state_free(copy_state));
    free(json);
  }
  json = state_json(profile, TETHER_JSON_PRETTY);
  if (json) {
    printf("profile (pretty):\n%s\n", json);
    CHECK(strstr(json, "\n  \"user\"") != NULL);           /* two-space indent */
    CHECK(strstr(json, "\n    \"firstName\"") != NULL);     /* nested: four */
    tether_value_free(again);
    again = NULL;
    CHECK_OK(tether_value_from_json(json, -1, &again));
    CHECK_INT_EQ(tether_value_equal(again, whole), 1);
    free(json);
  }
  /* Member order is insertion order: nickname went away, pets too. */
  {
    char key[32];
    size_t n = 0;
    CHECK_OK(tether_state_get_path(profile, "/user", &v));
    CHECK_OK(tether_value_length(v, &n));
    CHECK_INT_EQ(n, 3);
    CHECK_OK(tether_value_object_key(v, 0, key, sizeof key, NULL));
    CHECK_STR_EQ(key, "firstName");
    CHECK_OK(tether_value_object_key(v, 2, key, sizeof key, NULL));
    CHECK_STR_EQ(key, "age");
    tether_value_free(v);
    v = NULL;
  }
  tether_value_free(again);
  tether_value_free(whole);

  /* 11. Ending: freeing the state ends every observer on it, once each. */
  CHECK_OK(tether_state_free(profile));
  for (i = 0; i < NWATCHERS; i++) {
    pthread_mutex_lock(&w[i].mu);
    CHECK_INT_EQ(w[i].destroyed, 1);
    pthread_mutex_unlock(&w[i].mu);
    CHECK_ERR(tether_observer_remove(w[i].handle), TETHER_ESTALE);
    watcher_clear(&w[i]);
  }

  values_api();

  CHECK_OK(tether_runtime_free(rt));
  return check_report("profile");
}

/* The same profile built with the values API, without JSON text. */
static void values_api(void) {
  tether_value_t *profile = NULL, *user = NULL, *tags = NULL, *item = NULL, *got = NULL;
  tether_value_t *copy = NULL, *reordered = NULL, *parsed = NULL;
  char buf[512], key[16];
  size_t n = 0, len = 0;
  int64_t age = 0;
  bool b = false;

  CHECK_OK(tether_value_new_object(&user));
  CHECK_OK(tether_value_new_string("Ada", -1, &item));
  CHECK_OK(tether_value_object_set(user, "firstName", -1, item)); /* stores a copy */
  tether_value_free(item);
  CHECK_OK(tether_value_new_string("Lovelace", 8, &item));
  CHECK_OK(tether_value_object_set(user, "lastName", -1, item));
  tether_value_free(item);
  CHECK_OK(tether_value_new_int(36, &item));
  CHECK_OK(tether_value_object_set(user, "age", 3, item));
  tether_value_free(item);

  CHECK_OK(tether_value_new_array(&tags));
  CHECK_OK(tether_value_new_string("math", -1, &item));
  CHECK_OK(tether_value_array_append(tags, item));
  tether_value_free(item);

  CHECK_OK(tether_value_new_object(&profile));
  CHECK_OK(tether_value_object_set(profile, "user", -1, user));
  CHECK_OK(tether_value_object_set(profile, "tags", -1, tags));
  CHECK_VALUE(profile, PROFILE_JSON);

  /* Types, lengths and keys. */
  CHECK_INT_EQ(tether_value_type(profile), TETHER_TYPE_OBJECT);
  CHECK_INT_EQ(tether_value_type(tags), TETHER_TYPE_ARRAY);
  CHECK_OK(tether_value_length(profile, &n));
  CHECK_INT_EQ(n, 2);
  CHECK_OK(tether_value_object_key(profile, 0, key, sizeof key, &len));
  CHECK_STR_EQ(key, "user");
  CHECK_INT_EQ(len, 4);
  CHECK_OK(tether_value_object_key(profile, 1, key, sizeof key, NULL));
  CHECK_STR_EQ(key, "tags");
  CHECK_OK(tether_value_object_key(profile, 1, NULL, 0, &len)); /* size query */
  CHECK_INT_EQ(len, 4);
  CHECK_OK(tether_value_length(tags, &n));
  CHECK_INT_EQ(n, 1);

  /* Reading by path. */
  CHECK_OK(tether_value_get_path(profile, "/user/age", &got));
  CHECK_OK(tether_value_get_int(got, &age));
  CHECK_INT_EQ(age, 36);
  tether_value_free(got);
  CHECK_OK(tether_value_get_path(profile, "/user/lastName", &got));
  CHECK_OK(tether_value_get_string(got, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "Lovelace");
  CHECK_INT_EQ(len, 8);
  CHECK_OK(tether_value_length(got, &n)); /* a string's length is in bytes */
  CHECK_INT_EQ(n, 8);
  tether_value_free(got);
  CHECK_OK(tether_value_get_path(profile, "", &got)); /* "" is the value itself */
  CHECK_INT_EQ(tether_value_equal(got, profile), 1);
  tether_value_free(got);

  /* Writing by path: JSON Patch "add". */
  CHECK_OK(tether_value_new_bool(true, &item));
  CHECK_OK(tether_value_set_path(profile, "/user/active", item));
  tether_value_free(item);
  CHECK_OK(tether_value_get_path(profile, "/user/active", &got));
  CHECK_OK(tether_value_get_bool(got, &b));
  CHECK(b);
  tether_value_free(got);
  CHECK_OK(tether_value_remove_path(profile, "/user/active"));
  CHECK_VALUE(profile, PROFILE_JSON);

  /* Member names with '/' and '~' are escaped in pointers as ~1 and ~0. */
  CHECK_OK(tether_value_new_string("https://example.org", -1, &item));
  CHECK_OK(tether_value_object_set(user, "web/home", -1, item));
  CHECK_OK(tether_value_object_set(user, "a~b", -1, item));
  tether_value_free(item);
  CHECK_OK(tether_value_get_path(user, "/web~1home", &got));
  CHECK_VALUE(got, "\"https://example.org\"");
  tether_value_free(got);
  CHECK_OK(tether_value_get_path(user, "/a~0b", &got));
  CHECK_VALUE(got, "\"https://example.org\"");
  tether_value_free(got);
  got = NULL;

  /* Pretty JSON, for people. */
  CHECK_OK(tether_value_to_json(profile, TETHER_JSON_PRETTY, buf, sizeof buf, &len));
  CHECK(len < sizeof buf);
  printf("built with the values API:\n%s\n", buf);
  CHECK(strstr(buf, "\n  \"user\"") != NULL);
  CHECK_OK(tether_value_from_json(buf, (ptrdiff_t)len, &parsed));
  CHECK_INT_EQ(tether_value_equal(parsed, profile), 1);

  /* Equality is structural: member order does not matter, types do. */
  reordered = JSON("{\"tags\":[\"math\"],"
                   "\"user\":{\"age\":36,\"lastName\":\"Lovelace\",\"firstName\":\"Ada\"}}");
  CHECK_INT_EQ(tether_value_equal(profile, reordered), 1);
  CHECK_OK(tether_value_new_double(36.0, &item));
  CHECK_OK(tether_value_set_path(reordered, "/user/age", item)); /* 36.0 is not 36 */
  tether_value_free(item);
  CHECK_INT_EQ(tether_value_equal(profile, reordered), 0);

  /* A copy is independent of the original. */
  CHECK_OK(tether_value_copy(profile, &copy));
  CHECK_INT_EQ(tether_value_equal(copy, profile), 1);
  CHECK_OK(tether_value_new_int(99, &item));
  CHECK_OK(tether_value_set_path(copy, "/user/age", item));
  tether_value_free(item);
  CHECK_INT_EQ(tether_value_equal(copy, profile), 0);
  CHECK_OK(tether_value_get_path(profile, "/user/age", &got));
  CHECK_VALUE(got, "36"); /* the original is untouched */
  tether_value_free(got);
  /* ...and so is what was stored from user earlier: object_set copied it. */
  CHECK_ERR(tether_value_get_path(profile, "/user/web~1home", &got), TETHER_ENOTFOUND);

  tether_value_free(copy);
  tether_value_free(reordered);
  tether_value_free(parsed);
  tether_value_free(profile);
  tether_value_free(tags);
  tether_value_free(user);
}
