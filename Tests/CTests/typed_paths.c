/*
 * typed_paths.c — tether_state_get_path_bool / _int / _double and their
 * computed counterparts: the part of a value at a JSON Pointer, read as a
 * scalar without a value to free.
 *
 * Each is held to what tether_*_get_path followed by tether_value_get_*
 * gives: the same values, the same errors in the same order (out NULL, the
 * pointer's syntax, the handle, the path, then the type), nothing written
 * to *out on failure, the same tracking (a state's part, a computed whole)
 * and a transaction's staged values seen by its own thread.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define PROFILE                                                                         \
  "{\"user\":{\"age\":41,\"ratio\":0.5,\"ok\":true,\"name\":\"Ada\",\"none\":null}," \
  "\"list\":[1,2],\"a/b\":7}"

static tether_runtime_t host_runtime(void) {
  tether_runtime_options_t o;
  tether_runtime_t rt = {0};
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  CHECK_OK(tether_runtime_new(&o, &rt));
  return rt;
}

TEST_CASE(typed_paths_state_reads) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s, dead;
  int64_t i = -1;
  double d = -1;
  bool b = false;
  CHECK_OK(tether_state_new_json(rt, PROFILE, -1, 0, &s));
  CHECK_OK(tether_state_get_path_int(s, "/user/age", &i));
  CHECK_INT_EQ(i, 41);
  CHECK_OK(tether_state_get_path_double(s, "/user/age", &d)); /* an int read as a double */
  CHECK(d == 41.0);
  CHECK_OK(tether_state_get_path_double(s, "/user/ratio", &d));
  CHECK(d == 0.5);
  CHECK_OK(tether_state_get_path_bool(s, "/user/ok", &b));
  CHECK(b);
  CHECK_OK(tether_state_get_path_int(s, "/list/1", &i));
  CHECK_INT_EQ(i, 2);
  CHECK_OK(tether_state_get_path_int(s, "/a~1b", &i)); /* escaped name "a/b" */
  CHECK_INT_EQ(i, 7);

  /* Errors leave *out as it was. */
  i = 123;
  CHECK_ERR(tether_state_get_path_int(s, "/user/name", &i), TETHER_ETYPE);
  CHECK_MENTIONS("string");
  CHECK_ERR(tether_state_get_path_int(s, "/user/ratio", &i), TETHER_ETYPE); /* no rounding */
  CHECK_ERR(tether_state_get_path_int(s, "/user/none", &i), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_path_int(s, "/user", &i), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_path_int(s, "", &i), TETHER_ETYPE); /* the whole value */
  CHECK_ERR(tether_state_get_path_int(s, "/user/missing", &i), TETHER_ENOTFOUND);
  CHECK_ERR(tether_state_get_path_int(s, "/list/5", &i), TETHER_ERANGE);
  CHECK_ERR(tether_state_get_path_int(s, "user/age", &i), TETHER_EPATH);
  CHECK_ERR(tether_state_get_path_int(s, "/a~2b", &i), TETHER_EPATH);
  CHECK_ERR(tether_state_get_path_int(s, NULL, &i), TETHER_EINVAL);
  CHECK_INT_EQ(i, 123);
  CHECK_ERR(tether_state_get_path_bool(s, "/user/age", &b), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_path_double(s, "/user/ok", &d), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_path_int(s, "/user/age", NULL), TETHER_EINVAL);
  CHECK_MENTIONS("tether_state_get_path_int");
  /* The pointer's syntax is checked before the handle, as
   * tether_state_get_path checks it. */
  CHECK_OK(tether_state_new_int(rt, 1, 0, &dead));
  CHECK_OK(tether_state_free(dead));
  CHECK_ERR(tether_state_get_path_int(dead, "/x", &i), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_path_int(dead, "x", &i), TETHER_EPATH);
  {
    tether_value_t *part = NULL;
    CHECK_ERR(tether_state_get_path(dead, "x", &part), TETHER_EPATH);
  }
  CHECK_OK(tether_runtime_free(rt));
  return check_report("typed_paths_state_reads");
}

/* A compute reading /user/age as an int depends on that part only. */
typedef struct {
  tether_state_t s;
  long runs;
} age_reader_t;

static int age_plus_one(tether_value_t *result, void *user_data) {
  age_reader_t *r = user_data;
  int64_t age;
  int rc;
  r->runs++;
  rc = tether_state_get_path_int(r->s, "/user/age", &age);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, age + 1);
}

TEST_CASE(typed_paths_state_tracking_and_transactions) {
  tether_runtime_t rt = host_runtime();
  age_reader_t r = {{0}, 0};
  tether_computed_t c;
  tether_transaction_t txn;
  int64_t v = 0;
  CHECK_OK(tether_state_new_json(rt, PROFILE, -1, 0, &r.s));
  CHECK_OK(tether_computed_new(rt, age_plus_one, &r, NULL, &c));
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(v, 42);
  CHECK_INT_EQ(r.runs, 1);
  /* A sibling's write does not re-run it; its own part's does. */
  CHECK_OK(tether_state_set_path_json(r.s, "/user/name", "\"Grace\"", -1));
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(r.runs, 1);
  CHECK_OK(tether_state_set_path_json(r.s, "/user/age", "50", -1));
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(v, 51);
  CHECK_INT_EQ(r.runs, 2);
  /* The part gone: the compute fails with the read's error, cached until
   * the part comes back. */
  CHECK_OK(tether_state_remove_path(r.s, "/user/age"));
  CHECK_ERR(tether_computed_get_int(c, &v), TETHER_ENOTFOUND);
  CHECK_OK(tether_state_set_path_json(r.s, "/user/age", "\"old\"", -1));
  CHECK_ERR(tether_computed_get_int(c, &v), TETHER_ETYPE);
  CHECK_OK(tether_state_set_path_json(r.s, "/user/age", "60", -1));
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(v, 61);
  /* Inside a transaction this thread reads its staged value. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(r.s, "/user/age", "70", -1));
  CHECK_OK(tether_state_get_path_int(r.s, "/user/age", &v));
  CHECK_INT_EQ(v, 70);
  CHECK_OK(tether_transaction_abort(txn));
  CHECK_OK(tether_state_get_path_int(r.s, "/user/age", &v));
  CHECK_INT_EQ(v, 60);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("typed_paths_state_tracking_and_transactions");
}

/* A computed producing {"x": n, "ok": n is even, "half": n / 2.0, "s": "t"}
 * from a state, or failing with TETHER_ERANGE when n is negative. */
static int shape(tether_value_t *result, void *user_data) {
  tether_state_t *src = user_data;
  tether_value_t *obj = NULL, *v = NULL;
  int64_t n;
  int rc = tether_state_get_int(*src, &n);
  if (rc != TETHER_OK) return rc;
  if (n < 0) return TETHER_ERANGE;
  rc = tether_value_new_object(&obj);
  if (rc == TETHER_OK) rc = tether_value_new_int(n, &v);
  if (rc == TETHER_OK) rc = tether_value_object_set(obj, "x", -1, v);
  if (rc == TETHER_OK) rc = tether_value_set_bool(v, n % 2 == 0);
  if (rc == TETHER_OK) rc = tether_value_object_set(obj, "ok", -1, v);
  if (rc == TETHER_OK) rc = tether_value_set_double(v, (double)n / 2.0);
  if (rc == TETHER_OK) rc = tether_value_object_set(obj, "half", -1, v);
  if (rc == TETHER_OK) rc = tether_value_set_string(v, "t", -1);
  if (rc == TETHER_OK) rc = tether_value_object_set(obj, "s", -1, v);
  if (rc == TETHER_OK) rc = tether_value_assign(result, obj);
  tether_value_free(v);
  tether_value_free(obj);
  return rc;
}

/* The last error's words after "fn(computed 0x...): ", the part that does
 * not name the function ("" when there is no such prefix). */
static void message_after_subject(char *out, size_t size) {
  const char *rest = strstr(tether_last_error(), "): ");
  snprintf(out, size, "%s", rest ? rest + 3 : "");
}

/* A computed holding escaped names, arrays and nesting, from JSON. */
static int from_json(tether_value_t *result, void *user_data) {
  tether_value_t *v = NULL;
  int rc = tether_value_from_json((const char *)user_data, -1, &v);
  if (rc == TETHER_OK) rc = tether_value_assign(result, v);
  tether_value_free(v);
  return rc;
}

/* Reads shape's /x from inside another compute: a dependency on the whole
 * computed. */
typedef struct {
  tether_computed_t shaped;
  long runs;
} x_reader_t;

static int x_times_ten(tether_value_t *result, void *user_data) {
  x_reader_t *r = user_data;
  int64_t x;
  int rc;
  r->runs++;
  rc = tether_computed_get_path_int(r->shaped, "/x", &x);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, x * 10);
}

TEST_CASE(typed_paths_computed_reads) {
  tether_runtime_t rt = host_runtime();
  tether_state_t n;
  tether_computed_t shaped, outer, dead;
  x_reader_t r = {{0}, 0};
  int64_t i = -1;
  double d = -1;
  bool b = false;
  CHECK_OK(tether_state_new_int(rt, 4, 0, &n));
  CHECK_OK(tether_computed_new(rt, shape, &n, NULL, &shaped));
  CHECK_OK(tether_computed_get_path_int(shaped, "/x", &i));
  CHECK_INT_EQ(i, 4);
  CHECK_OK(tether_computed_get_path_bool(shaped, "/ok", &b));
  CHECK(b);
  CHECK_OK(tether_computed_get_path_double(shaped, "/half", &d));
  CHECK(d == 2.0);
  CHECK_OK(tether_computed_get_path_double(shaped, "/x", &d));
  CHECK(d == 4.0);
  i = 99;
  CHECK_ERR(tether_computed_get_path_int(shaped, "/s", &i), TETHER_ETYPE);
  CHECK_ERR(tether_computed_get_path_int(shaped, "/half", &i), TETHER_ETYPE);
  CHECK_ERR(tether_computed_get_path_int(shaped, "/nope", &i), TETHER_ENOTFOUND);
  CHECK_ERR(tether_computed_get_path_int(shaped, "x", &i), TETHER_EPATH);
  CHECK_ERR(tether_computed_get_path_int(shaped, NULL, &i), TETHER_EINVAL);
  CHECK_ERR(tether_computed_get_path_int(shaped, "", &i), TETHER_ETYPE);
  CHECK_INT_EQ(i, 99);
  CHECK_ERR(tether_computed_get_path_bool(shaped, "/x", NULL), TETHER_EINVAL);

  /* From another compute: re-run by any change of the computed. */
  r.shaped = shaped;
  CHECK_OK(tether_computed_new(rt, x_times_ten, &r, NULL, &outer));
  CHECK_OK(tether_computed_get_int(outer, &i));
  CHECK_INT_EQ(i, 40);
  CHECK_OK(tether_state_set_int(n, 5));
  CHECK_OK(tether_computed_get_int(outer, &i));
  CHECK_INT_EQ(i, 50);
  CHECK_INT_EQ(r.runs, 2);
  /* The computed's own error reaches the typed reader and the reader's
   * reader, until the source changes. */
  CHECK_OK(tether_state_set_int(n, -1));
  CHECK_ERR(tether_computed_get_path_int(shaped, "/x", &i), TETHER_ERANGE);
  CHECK_ERR(tether_computed_get_int(outer, &i), TETHER_ERANGE);
  CHECK_OK(tether_state_set_int(n, 6));
  CHECK_OK(tether_computed_get_int(outer, &i));
  CHECK_INT_EQ(i, 60);

  /* Escaped names, array indexes and nesting, up to date (the in-place
   * walk) and each error worded as tether_computed_get_path words it. */
  {
    static char doc[] = "{\"a/b\":3,\"m~n\":true,\"list\":[10,20,{\"k\":2.5}],\"\":{\"\":4}}";
    tether_computed_t j;
    tether_value_t *part = NULL;
    char typed[256], generic[256];
    CHECK_OK(tether_computed_new(rt, from_json, doc, NULL, &j));
    CHECK_OK(tether_computed_get_path_int(j, "/a~1b", &i));
    CHECK_INT_EQ(i, 3);
    CHECK_OK(tether_computed_get_path_bool(j, "/m~0n", &b));
    CHECK(b);
    CHECK_OK(tether_computed_get_path_int(j, "/list/1", &i)); /* now up to date: in place */
    CHECK_INT_EQ(i, 20);
    CHECK_OK(tether_computed_get_path_double(j, "/list/2/k", &d));
    CHECK(d == 2.5);
    CHECK_OK(tether_computed_get_path_double(j, "/list/0", &d));
    CHECK(d == 10.0);
    CHECK_OK(tether_computed_get_path_int(j, "//", &i)); /* the empty name, twice */
    CHECK_INT_EQ(i, 4);
    CHECK_ERR(tether_computed_get_path_int(j, "/list/3", &i), TETHER_ERANGE);
    message_after_subject(typed, sizeof typed);
    CHECK_ERR(tether_computed_get_path(j, "/list/3", &part), TETHER_ERANGE);
    message_after_subject(generic, sizeof generic);
    CHECK(typed[0] != '\0');
    CHECK_STR_EQ(typed, generic); /* the same words after the function's name */
    CHECK_ERR(tether_computed_get_path_int(j, "/list/-", &i), TETHER_EPATH); /* only for appending */
    CHECK_ERR(tether_computed_get_path_int(j, "/list/2/k", &i), TETHER_ETYPE);
    CHECK_ERR(tether_computed_get_path_int(j, "/a~1b/x", &i), TETHER_ETYPE); /* into an int */
    CHECK_ERR(tether_computed_get_path_int(j, "/list", &i), TETHER_ETYPE);
    CHECK_INT_EQ(i, 4);
  }

  /* A freed computed: stale (the pointer's syntax is checked first, as
   * tether_computed_get_path checks it). */
  CHECK_OK(tether_computed_new(rt, shape, &n, NULL, &dead));
  CHECK_OK(tether_computed_free(dead));
  CHECK_ERR(tether_computed_get_path_int(dead, "/x", &i), TETHER_ESTALE);
  CHECK_ERR(tether_computed_get_path_double(dead, "x", &d), TETHER_EPATH);
  /* And the reader of a computed freed under it fails, stale. */
  CHECK_OK(tether_computed_free(shaped));
  CHECK_ERR(tether_computed_get_int(outer, &i), TETHER_ESTALE);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("typed_paths_computed_reads");
}
