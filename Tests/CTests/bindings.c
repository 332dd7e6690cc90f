/*
 * bindings.c — SwiftUI's Binding in C: every kind, and every way to hold one
 * wrong.
 *
 *     @State var user = User(...)      tether_state_new_json
 *     $user                            tether_state_binding
 *     $user.name.first                 tether_binding_project (chainable)
 *     $list[3]                         tether_binding_index
 *     Binding.constant(x)              tether_binding_new_constant
 *     Binding(get:set:)                tether_binding_new_custom
 *     GBinding between two properties  tether_binding_bind
 *
 * A binding is a two-way reference to a value someone else owns. What this
 * program checks, section by section:
 *  - state bindings read and write the state (typed getters and setters,
 *    JSON), with the state's own rules (type lock, equal writes);
 *  - projections narrow by a JSON Pointer, chain, and are checked against the
 *    value at each use: a missing member is TETHER_ENOTFOUND to a reader but
 *    is created by a writer; a step into a scalar is TETHER_ETYPE; a bad
 *    pointer is TETHER_EPATH at once;
 *  - index projections need an array (TETHER_ETYPE otherwise, even on an
 *    object with a member "3", which the pointer "/3" would name) and never
 *    append (TETHER_ERANGE past the end, for reads and writes);
 *  - constant bindings read, refuse writes (TETHER_EREADONLY), and give an
 *    INITIAL observer exactly one call, ever;
 *  - custom bindings: get's error code reaches the reader, a NULL set makes
 *    the binding read-only, results are cached and observers are woken only
 *    when the result changes;
 *  - NULL out-parameters (TETHER_EINVAL) and zero, forged, freed or
 *    wrong-kind handles (TETHER_ESTALE, never a crash);
 *  - observers on bindings: woken by writes to their path and its ancestors,
 *    never by siblings; and callbacks that write, remove observers, free the
 *    binding or free the state — SYNC and loop — with every destroy function
 *    run exactly once and never during its own callback;
 *  - tether_binding_bind: synchronous propagation, transforms, inversion,
 *    and every refusal (on which nothing is bound and destroy is not called).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* One lock for all bookkeeping (loop callbacks run on the loop thread). It is
 * never held while calling a tether_ function: destroy functions may run
 * inside those calls. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- destroy counters ---------------------------------------------------- */

static void count_destroy(void *user_data) {
  pthread_mutex_lock(&mu);
  (*(int *)user_data)++;
  pthread_mutex_unlock(&mu);
}

static int counted(const int *counter) {
  int n;
  pthread_mutex_lock(&mu);
  n = *counter;
  pthread_mutex_unlock(&mu);
  return n;
}

/* ---- small readers with the caller's line in failures -------------------- */

static void expect_state_(tether_state_t s, const char *json, const char *file, int line) {
  tether_value_t *v = NULL;
  int rc = tether_state_get(s, &v);
  if (rc != TETHER_OK) {
    check_fail_(file, line, "tether_state_get: %s (%s)", check_errname(rc), tether_last_error());
    return;
  }
  check_value_json_(v, json, "state value", file, line);
  tether_value_free(v);
}
#define EXPECT_STATE(s, json) expect_state_((s), (json), __FILE__, __LINE__)

static void expect_binding_(tether_binding_t b, const char *json, const char *file, int line) {
  tether_value_t *v = NULL;
  int rc = tether_binding_get(b, &v);
  if (rc != TETHER_OK) {
    check_fail_(file, line, "tether_binding_get: %s (%s)", check_errname(rc),
                tether_last_error());
    return;
  }
  check_value_json_(v, json, "binding value", file, line);
  tether_value_free(v);
}
#define EXPECT_BINDING(b, json) expect_binding_((b), (json), __FILE__, __LINE__)

static uint64_t runtime_rev(tether_runtime_t rt) {
  uint64_t r = 0;
  CHECK_OK(tether_runtime_revision(rt, &r));
  return r;
}

/* ---- an observer registration we can account for -------------------------- */

typedef struct reg {
  const char *name;
  tether_observer_t handle;
  int calls;
  int running;
  int destroyed;
  int destroyed_while_running;
  /* the last call */
  unsigned flags;
  uint64_t binding_id, state_id;
  char path[64];
  char old_json[128], new_json[128];
  /* what the callback does, and what came back */
  tether_binding_t target;    /* write_through: where to write */
  tether_observer_t victim;   /* remove_victim: whom to remove */
  int rc, rc2;                /* 1 = "not called" */
} reg_t;

static void reg_init(reg_t *r, const char *name) {
  memset(r, 0, sizeof *r);
  r->name = name;
  r->rc = r->rc2 = 1;
}

static void enter_cb(reg_t *r, const tether_change_t *change) {
  pthread_mutex_lock(&mu);
  r->calls++;
  r->running = 1;
  r->flags = change->flags;
  r->binding_id = change->binding.id;
  r->state_id = change->state.id;
  snprintf(r->path, sizeof r->path, "%s", change->path ? change->path : "(NULL)");
  value_json(change->old_value, r->old_json, sizeof r->old_json);
  value_json(change->new_value, r->new_json, sizeof r->new_json);
  pthread_mutex_unlock(&mu);
}

static void leave_cb(reg_t *r, int rc, int rc2) {
  pthread_mutex_lock(&mu);
  if (r->rc == 1) r->rc = rc;
  if (r->rc2 == 1) r->rc2 = rc2;
  r->running = 0;
  pthread_mutex_unlock(&mu);
}

static void reg_destroy(void *user_data) {
  reg_t *r = user_data;
  pthread_mutex_lock(&mu);
  r->destroyed++;
  if (r->running) r->destroyed_while_running++;
  pthread_mutex_unlock(&mu);
}

static int reg_get(const int *field) {
  int v;
  pthread_mutex_lock(&mu);
  v = *field;
  pthread_mutex_unlock(&mu);
  return v;
}
#define CALLS(r) reg_get(&(r)->calls)
#define RC(r) reg_get(&(r)->rc)
#define RC2(r) reg_get(&(r)->rc2)

static void expect_destroyed_once_(reg_t *r, const char *file, int line) {
  int d, w;
  pthread_mutex_lock(&mu);
  d = r->destroyed;
  w = r->destroyed_while_running;
  pthread_mutex_unlock(&mu);
  check_destroyed_once_(r->name, d, w, file, line);
}
#define EXPECT_DESTROYED_ONCE(r) expect_destroyed_once_((r), __FILE__, __LINE__)

/* A field of the last call, copied under the lock. */
static const char *reg_str(reg_t *r, const char *field, char *buf, size_t size) {
  pthread_mutex_lock(&mu);
  snprintf(buf, size, "%s", field);
  pthread_mutex_unlock(&mu);
  (void)r;
  return buf;
}
#define LAST_NEW(r, buf) reg_str((r), (r)->new_json, (buf), sizeof(buf))
#define LAST_OLD(r, buf) reg_str((r), (r)->old_json, (buf), sizeof(buf))
#define LAST_PATH(r, buf) reg_str((r), (r)->path, (buf), sizeof(buf))

/* ---- observer callbacks ---------------------------------------------------- */

/* Just records the call. */
static void plain(const tether_change_t *change, void *user_data) {
  enter_cb(user_data, change);
  leave_cb(user_data, 1, 1);
}

/* Writes ten times the new value through another binding. */
static void write_through(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc;
  enter_cb(r, change);
  rc = tether_binding_set_int(r->target, value_int_or(change->new_value, 0) * 10);
  leave_cb(r, rc, 1);
}

/* Removes its own registration. */
static void remove_self(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc;
  enter_cb(r, change);
  rc = tether_observer_remove(change->observer);
  leave_cb(r, rc, 1);
}

/* Removes another registration (r->victim). */
static void remove_victim(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int rc;
  enter_cb(r, change);
  rc = tether_observer_remove(r->victim);
  leave_cb(r, rc, 1);
}

/* Frees the binding it observes; the handle is stale at once. */
static void free_my_binding(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  tether_value_t *v = NULL;
  int rc, rc2;
  enter_cb(r, change);
  rc = tether_binding_free(change->binding);
  rc2 = tether_binding_get(change->binding, &v);
  if (rc2 == TETHER_OK) tether_value_free(v);
  leave_cb(r, rc, rc2);
}

/* Frees the state behind the binding it observes; the binding then reads
 * TETHER_ESTALE at once. */
static void free_my_state(const tether_change_t *change, void *user_data) {
  reg_t *r = user_data;
  int64_t i;
  int rc, rc2;
  enter_cb(r, change);
  rc = tether_state_free(change->state);
  rc2 = tether_binding_get_int(change->binding, &i);
  leave_cb(r, rc, rc2);
}

/* ==== state bindings ===================================================== */

static void test_state_binding(tether_runtime_t rt) {
  tether_state_t s, locked, ld, str;
  tether_binding_t b, bl, bld, bs;
  tether_value_t *v = NULL;
  tether_type_t type;
  int64_t i = 0;
  double d = 0;
  bool flag = false;
  char buf[64];
  size_t len = 0;
  uint64_t rev0, rev1, srev = 0;

  printf("bindings: state bindings ($state)\n");
  CHECK_OK(tether_state_new_int(rt, 5, 0, &s));
  if (!CHECK_OK(tether_state_binding(s, &b))) return;
  CHECK(b.id != 0);
  CHECK(b.id != s.id); /* a binding is its own object, not the state */

  /* Typed getters follow tether_state_get_*: double reads an int too. */
  CHECK_OK(tether_binding_get_int(b, &i));
  CHECK_INT_EQ(i, 5);
  CHECK_OK(tether_binding_get_double(b, &d));
  CHECK(d == 5.0);
  CHECK_ERR(tether_binding_get_bool(b, &flag), TETHER_ETYPE);
  CHECK_ERR(tether_binding_get_string(b, buf, sizeof buf, &len), TETHER_ETYPE);
  CHECK_OK(tether_binding_get_json(b, 0, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "5");
  CHECK_INT_EQ(len, 1);
  if (CHECK_OK(tether_binding_get(b, &v))) {
    CHECK_VALUE(v, "5");
    tether_value_free(v);
  }

  /* A write through the binding is a write to the state: one revision. */
  rev0 = runtime_rev(rt);
  CHECK_OK(tether_binding_set_int(b, 6));
  CHECK_OK(tether_state_get_int(s, &i));
  CHECK_INT_EQ(i, 6);
  rev1 = runtime_rev(rt);
  CHECK_INT_EQ(rev1, rev0 + 1);
  CHECK_OK(tether_state_revision(s, &srev));
  CHECK_INT_EQ(srev, rev1);
  /* An equal write changes nothing, not even the revision. */
  CHECK_OK(tether_binding_set_int(b, 6));
  CHECK_INT_EQ(runtime_rev(rt), rev1);

  /* The state is not type-locked: the binding may change its type. */
  CHECK_OK(tether_binding_set_double(b, 2.5));
  CHECK_OK(tether_binding_get_double(b, &d));
  CHECK(d == 2.5);
  CHECK_ERR(tether_binding_get_int(b, &i), TETHER_ETYPE); /* get_int never reads a double */
  CHECK_OK(tether_binding_set_bool(b, true));
  CHECK_OK(tether_binding_get_bool(b, &flag));
  CHECK(flag);
  CHECK_OK(tether_binding_set_string(b, "hello", -1));
  EXPECT_STATE(s, "\"hello\"");
  CHECK_OK(tether_binding_set_json(b, "{\"k\":[1,2]}", -1));
  EXPECT_STATE(s, "{\"k\":[1,2]}");
  CHECK_OK(tether_binding_get_json(b, 0, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "{\"k\":[1,2]}");
  v = JSON("[true,null]");
  CHECK_OK(tether_binding_set(b, v));
  tether_value_free(v);
  EXPECT_STATE(s, "[true,null]");

  /* Refused writes change nothing. */
  rev0 = runtime_rev(rt);
  CHECK_ERR(tether_binding_set_json(b, "{\"k\":", -1), TETHER_EJSON);
  CHECK_ERR(tether_binding_set_string(b, "\xff", -1), TETHER_EINVAL);
  CHECK_MENTIONS("UTF-8");
  CHECK_ERR(tether_binding_set(b, NULL), TETHER_EINVAL);
  EXPECT_STATE(s, "[true,null]");
  CHECK_INT_EQ(runtime_rev(rt), rev0);

  /* A type-locked state keeps its lock through a binding. */
  CHECK_OK(tether_state_new_int(rt, 1, TETHER_STATE_LOCK_TYPE, &locked));
  CHECK_OK(tether_state_binding(locked, &bl));
  CHECK_ERR(tether_binding_set_string(bl, "one", -1), TETHER_ETYPE);
  CHECK_ERR(tether_binding_set_json(bl, "1.5", -1), TETHER_ETYPE);
  CHECK_OK(tether_binding_set_int(bl, 2));
  EXPECT_STATE(locked, "2");
  /* ... and an int written to a locked double is stored as a double. */
  CHECK_OK(tether_state_new_double(rt, 0.5, TETHER_STATE_LOCK_TYPE, &ld));
  CHECK_OK(tether_state_binding(ld, &bld));
  CHECK_OK(tether_binding_set_int(bld, 3));
  CHECK_OK(tether_state_type(ld, &type));
  CHECK_INT_EQ(type, TETHER_TYPE_DOUBLE);
  CHECK_OK(tether_binding_get_double(bld, &d));
  CHECK(d == 3.0);

  /* Strings come out snprintf-style: truncated, but *len is the full size. */
  CHECK_OK(tether_state_new_string(rt, "Lovelace", -1, 0, &str));
  CHECK_OK(tether_state_binding(str, &bs));
  CHECK_OK(tether_binding_get_string(bs, buf, 4, &len));
  CHECK_STR_EQ(buf, "Lov");
  CHECK_INT_EQ(len, 8);
  CHECK_OK(tether_binding_get_string(bs, NULL, 0, &len)); /* size query */
  CHECK_INT_EQ(len, 8);
  CHECK_OK(tether_binding_get_json(bs, 0, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "\"Lovelace\"");

  /* Two bindings of one state are two handles onto the same value. */
  {
    tether_binding_t b2;
    CHECK_OK(tether_state_binding(str, &b2));
    CHECK(b2.id != bs.id);
    CHECK_OK(tether_binding_set_string(b2, "Byron", -1));
    CHECK_OK(tether_binding_get_string(bs, buf, sizeof buf, &len));
    CHECK_STR_EQ(buf, "Byron");
    CHECK_OK(tether_binding_free(b2));
  }

  /* Freeing a binding never frees its state. */
  CHECK_OK(tether_binding_free(b));
  CHECK_OK(tether_binding_free(bl));
  CHECK_OK(tether_binding_free(bld));
  CHECK_OK(tether_binding_free(bs));
  EXPECT_STATE(s, "[true,null]");
  EXPECT_STATE(str, "\"Byron\"");
  CHECK_OK(tether_state_free(s));
  CHECK_OK(tether_state_free(locked));
  CHECK_OK(tether_state_free(ld));
  CHECK_OK(tether_state_free(str));
}

/* ==== projections ($user.name.first) ===================================== */

static void test_projection(tether_runtime_t rt) {
  tether_state_t s, n;
  tether_binding_t b, pu, pn, pf, pf2, whole, pe, pmail, pcity, pstep, bn, pna, keep;
  tether_binding_t out = {12345};
  char buf[64];
  size_t len = 0;
  int64_t i = 0;
  tether_value_t *v = NULL;
  uint64_t rev0;

  printf("bindings: projections\n");
  CHECK_OK(tether_state_new_json(
      rt,
      "{\"user\":{\"name\":{\"first\":\"Ada\",\"last\":\"Lovelace\"},\"age\":36},\"a/b\":1}",
      -1, 0, &s));
  CHECK_OK(tether_state_binding(s, &b));

  /* Chained projections append their paths: $user.name.first. */
  CHECK_OK(tether_binding_project(b, "/user", &pu));
  CHECK_OK(tether_binding_project(pu, "/name", &pn));
  CHECK_OK(tether_binding_project(pn, "/first", &pf));
  CHECK_OK(tether_binding_project(b, "/user/name/first", &pf2));
  CHECK_OK(tether_binding_get_string(pf, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "Ada");
  CHECK_OK(tether_binding_get_string(pf2, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "Ada");
  EXPECT_BINDING(pn, "{\"first\":\"Ada\",\"last\":\"Lovelace\"}");
  CHECK_OK(tether_binding_get_json(pu, 0, buf, sizeof buf, &len));
  CHECK_OK(tether_binding_project(pu, "/age", &keep));
  CHECK_OK(tether_binding_get_int(keep, &i));
  CHECK_INT_EQ(i, 36);
  CHECK_OK(tether_binding_free(keep));
  /* "" is the binding itself. */
  CHECK_OK(tether_binding_project(b, "", &whole));
  EXPECT_BINDING(whole, "{\"user\":{\"name\":{\"first\":\"Ada\",\"last\":\"Lovelace\"},"
                        "\"age\":36},\"a/b\":1}");
  /* Pointer escapes: "~1" is "/" inside a member name. */
  CHECK_OK(tether_binding_project(b, "/a~1b", &pe));
  CHECK_OK(tether_binding_get_int(pe, &i));
  CHECK_INT_EQ(i, 1);

  /* A write through a projection updates only that part of the parent. */
  CHECK_OK(tether_binding_set_string(pf, "Augusta", -1));
  EXPECT_STATE(s, "{\"user\":{\"name\":{\"first\":\"Augusta\",\"last\":\"Lovelace\"},"
                  "\"age\":36},\"a/b\":1}");
  CHECK_OK(tether_binding_get_string(pf2, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "Augusta");
  v = JSON("{\"first\":\"Ada\",\"last\":\"King\"}");
  CHECK_OK(tether_binding_set(pn, v));
  tether_value_free(v);
  CHECK_OK(tether_binding_get_string(pf, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "Ada");

  /* Malformed pointers are refused at once; out is left alone. */
  CHECK_ERR(tether_binding_project(b, "user", &out), TETHER_EPATH);
  CHECK_ERR(tether_binding_project(b, "/a~2", &out), TETHER_EPATH);
  CHECK_ERR(tether_binding_project(pu, "/name~", &out), TETHER_EPATH);
  CHECK_INT_EQ(out.id, 12345);

  /* A missing member: readers get TETHER_ENOTFOUND, a writer creates it. */
  CHECK_OK(tether_binding_project(pu, "/email", &pmail)); /* syntax only, now */
  CHECK_ERR(tether_binding_get(pmail, &v), TETHER_ENOTFOUND);
  CHECK_ERR(tether_binding_get_string(pmail, buf, sizeof buf, &len), TETHER_ENOTFOUND);
  CHECK_OK(tether_binding_set_string(pmail, "ada@example.org", -1));
  if (CHECK_OK(tether_state_get_path(s, "/user/email", &v))) {
    CHECK_VALUE(v, "\"ada@example.org\"");
    tether_value_free(v);
  }
  CHECK_OK(tether_binding_get_string(pmail, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "ada@example.org");
  /* A missing ancestor reads TETHER_ENOTFOUND too. */
  CHECK_OK(tether_binding_project(b, "/user/address/city", &pcity));
  CHECK_ERR(tether_binding_get(pcity, &v), TETHER_ENOTFOUND);

  /* A step into a scalar is TETHER_ETYPE, for reads and writes. */
  CHECK_OK(tether_binding_project(pf, "/x", &pstep)); /* into the string "Ada" */
  CHECK_ERR(tether_binding_get(pstep, &v), TETHER_ETYPE);
  CHECK_OK(tether_state_new_int(rt, 5, 0, &n));
  CHECK_OK(tether_state_binding(n, &bn));
  CHECK_OK(tether_binding_project(bn, "/a", &pna));
  CHECK_ERR(tether_binding_get(pna, &v), TETHER_ETYPE);
  CHECK_ERR(tether_binding_get_int(pna, &i), TETHER_ETYPE);
  rev0 = runtime_rev(rt);
  CHECK_ERR(tether_binding_set_int(pna, 1), TETHER_ETYPE);
  EXPECT_STATE(n, "5");
  CHECK_INT_EQ(runtime_rev(rt), rev0);

  /* The path is checked against the value at each use: the value may change
   * shape under a projection, and back. */
  CHECK_OK(tether_state_set_json(s, "{\"user\":7}", -1));
  CHECK_ERR(tether_binding_get(pn, &v), TETHER_ETYPE);
  CHECK_ERR(tether_binding_set_string(pf, "Ada", -1), TETHER_ETYPE);
  CHECK_OK(tether_state_set_json(s, "{\"user\":{\"name\":{\"first\":\"Grace\"}}}", -1));
  CHECK_OK(tether_binding_get_string(pf, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "Grace");

  CHECK_OK(tether_binding_free(pstep));
  CHECK_OK(tether_binding_free(pcity));
  CHECK_OK(tether_binding_free(pmail));
  CHECK_OK(tether_binding_free(pe));
  CHECK_OK(tether_binding_free(whole));
  CHECK_OK(tether_binding_free(pf2));
  CHECK_OK(tether_binding_free(pf));
  CHECK_OK(tether_binding_free(pn));
  CHECK_OK(tether_binding_free(pu));
  CHECK_OK(tether_binding_free(b));
  CHECK_OK(tether_binding_free(pna));
  CHECK_OK(tether_binding_free(bn));
  CHECK_OK(tether_state_free(s));
  CHECK_OK(tether_state_free(n));
}

/* ==== index projections ($list[3]) ======================================= */

static void test_index(tether_runtime_t rt) {
  tether_state_t list, obj, scalar, grid, doc;
  tether_binding_t bl, i1, i3, ibig, p3, bo, io3, po3, bsc, isc, bg, row, cell, bd, items, it1,
      itn;
  tether_binding_t out = {777};
  tether_value_t *v = NULL;
  char buf[64];
  size_t len = 0;
  int64_t n = 0;
  uint64_t rev0;

  printf("bindings: index projections\n");
  CHECK_OK(tether_state_new_json(rt, "[\"a\",\"b\",\"c\"]", -1, 0, &list));
  CHECK_OK(tether_state_binding(list, &bl));
  CHECK_OK(tether_binding_index(bl, 1, &i1));
  CHECK_OK(tether_binding_get_string(i1, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "b");
  CHECK_OK(tether_binding_set_string(i1, "B", -1));
  EXPECT_STATE(list, "[\"a\",\"B\",\"c\"]");

  /* Past the end: TETHER_ERANGE for reads and writes (an index projection
   * never appends), and the state is untouched. */
  CHECK_OK(tether_binding_index(bl, 3, &i3)); /* checked on use, not now */
  CHECK_OK(tether_binding_index(bl, 1000, &ibig));
  CHECK_ERR(tether_binding_get(i3, &v), TETHER_ERANGE);
  CHECK_ERR(tether_binding_get(ibig, &v), TETHER_ERANGE);
  rev0 = runtime_rev(rt);
  CHECK_ERR(tether_binding_set_string(i3, "d", -1), TETHER_ERANGE);
  CHECK_ERR(tether_binding_set_string(ibig, "d", -1), TETHER_ERANGE);
  EXPECT_STATE(list, "[\"a\",\"B\",\"c\"]");
  CHECK_INT_EQ(runtime_rev(rt), rev0);

  /* The pointer "/3" is JSON Patch "add": on a 3-element array it reads
   * past the end, but a write there appends. */
  CHECK_OK(tether_binding_project(bl, "/3", &p3));
  CHECK_ERR(tether_binding_get(p3, &v), TETHER_ERANGE);
  CHECK_OK(tether_binding_set_string(p3, "d", -1));
  EXPECT_STATE(list, "[\"a\",\"B\",\"c\",\"d\"]");
  /* The index projection is checked at each use: now element 3 exists. */
  CHECK_OK(tether_binding_get_string(i3, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "d");
  CHECK_OK(tether_binding_set_string(i3, "D", -1));
  EXPECT_STATE(list, "[\"a\",\"B\",\"c\",\"D\"]");
  /* ... and shrinking the array puts it past the end again. */
  CHECK_OK(tether_state_remove_path(list, "/0"));
  CHECK_ERR(tether_binding_get(i3, &v), TETHER_ERANGE);
  CHECK_OK(tether_binding_get_string(i1, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "c"); /* elements shifted; the index stayed */

  /* An object with a member "3": "/3" names it, index 3 does not. */
  CHECK_OK(tether_state_new_json(rt, "{\"3\":\"three\",\"0\":\"zero\"}", -1, 0, &obj));
  CHECK_OK(tether_state_binding(obj, &bo));
  CHECK_OK(tether_binding_project(bo, "/3", &po3));
  CHECK_OK(tether_binding_get_string(po3, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "three");
  CHECK_OK(tether_binding_index(bo, 3, &io3));
  CHECK_ERR(tether_binding_get(io3, &v), TETHER_ETYPE);
  CHECK_ERR(tether_binding_get_string(io3, buf, sizeof buf, &len), TETHER_ETYPE);
  CHECK_ERR(tether_binding_set_string(io3, "THREE", -1), TETHER_ETYPE);
  EXPECT_STATE(obj, "{\"3\":\"three\",\"0\":\"zero\"}");
  /* A scalar is not an array either. */
  CHECK_OK(tether_state_new_int(rt, 9, 0, &scalar));
  CHECK_OK(tether_state_binding(scalar, &bsc));
  CHECK_OK(tether_binding_index(bsc, 0, &isc));
  CHECK_ERR(tether_binding_get_int(isc, &n), TETHER_ETYPE);
  CHECK_ERR(tether_binding_set_int(isc, 1), TETHER_ETYPE);
  EXPECT_STATE(scalar, "9");

  /* Index projections chain with each other and with pointers. */
  CHECK_OK(tether_state_new_json(rt, "[[1,2],[3,4]]", -1, 0, &grid));
  CHECK_OK(tether_state_binding(grid, &bg));
  CHECK_OK(tether_binding_index(bg, 1, &row));
  CHECK_OK(tether_binding_index(row, 0, &cell));
  CHECK_OK(tether_binding_get_int(cell, &n));
  CHECK_INT_EQ(n, 3);
  CHECK_OK(tether_binding_set_int(cell, 30));
  EXPECT_STATE(grid, "[[1,2],[30,4]]");
  CHECK_OK(tether_state_new_json(rt, "{\"items\":[{\"n\":1},{\"n\":2}]}", -1, 0, &doc));
  CHECK_OK(tether_state_binding(doc, &bd));
  CHECK_OK(tether_binding_project(bd, "/items", &items));
  CHECK_OK(tether_binding_index(items, 1, &it1));
  CHECK_OK(tether_binding_project(it1, "/n", &itn));
  CHECK_OK(tether_binding_get_int(itn, &n));
  CHECK_INT_EQ(n, 2);
  CHECK_OK(tether_binding_set_int(itn, 20));
  EXPECT_STATE(doc, "{\"items\":[{\"n\":1},{\"n\":20}]}");

  /* NULL out: nothing created. */
  CHECK_ERR(tether_binding_index(bl, 0, NULL), TETHER_EINVAL);
  CHECK_INT_EQ(out.id, 777);

  CHECK_OK(tether_binding_free(itn));
  CHECK_OK(tether_binding_free(it1));
  CHECK_OK(tether_binding_free(items));
  CHECK_OK(tether_binding_free(bd));
  CHECK_OK(tether_binding_free(cell));
  CHECK_OK(tether_binding_free(row));
  CHECK_OK(tether_binding_free(bg));
  CHECK_OK(tether_binding_free(isc));
  CHECK_OK(tether_binding_free(bsc));
  CHECK_OK(tether_binding_free(io3));
  CHECK_OK(tether_binding_free(po3));
  CHECK_OK(tether_binding_free(bo));
  CHECK_OK(tether_binding_free(p3));
  CHECK_OK(tether_binding_free(ibig));
  CHECK_OK(tether_binding_free(i3));
  CHECK_OK(tether_binding_free(i1));
  CHECK_OK(tether_binding_free(bl));
  CHECK_OK(tether_state_free(list));
  CHECK_OK(tether_state_free(obj));
  CHECK_OK(tether_state_free(scalar));
  CHECK_OK(tether_state_free(grid));
  CHECK_OK(tether_state_free(doc));
}

/* ==== constant bindings (Binding.constant) =============================== */

static void test_constant(tether_runtime_t rt) {
  tether_binding_t c, cn, pk, plist, i1;
  tether_value_t *init, *v = NULL;
  reg_t sync_initial, loop_initial, sync_plain, loop_plain, proj_initial;
  int64_t n = 0;
  char buf[64];
  size_t len = 0;

  printf("bindings: constant bindings\n");
  init = JSON("{\"k\":1,\"list\":[10,20]}");
  if (!CHECK_OK(tether_binding_new_constant(rt, init, &c))) {
    tether_value_free(init);
    return;
  }
  /* The binding holds a copy: changing ours changes nothing there. */
  v = JSON("2");
  CHECK_OK(tether_value_set_path(init, "/k", v));
  tether_value_free(v);
  tether_value_free(init);
  EXPECT_BINDING(c, "{\"k\":1,\"list\":[10,20]}");
  CHECK_ERR(tether_binding_get_int(c, &n), TETHER_ETYPE);
  CHECK_OK(tether_binding_get_json(c, 0, buf, sizeof buf, &len));
  /* Projections of a constant read its parts... */
  CHECK_OK(tether_binding_project(c, "/k", &pk));
  CHECK_OK(tether_binding_get_int(pk, &n));
  CHECK_INT_EQ(n, 1);
  CHECK_OK(tether_binding_project(c, "/list", &plist));
  CHECK_OK(tether_binding_index(plist, 1, &i1));
  CHECK_OK(tether_binding_get_int(i1, &n));
  CHECK_INT_EQ(n, 20);
  /* ... and every write, however it is spelled, is TETHER_EREADONLY. */
  v = JSON("2");
  CHECK_ERR(tether_binding_set(c, v), TETHER_EREADONLY);
  CHECK_ERR(tether_binding_set(pk, v), TETHER_EREADONLY);
  tether_value_free(v);
  CHECK_ERR(tether_binding_set_int(c, 2), TETHER_EREADONLY);
  CHECK_ERR(tether_binding_set_json(c, "{}", -1), TETHER_EREADONLY);
  CHECK_ERR(tether_binding_set_string(c, "x", -1), TETHER_EREADONLY);
  CHECK_ERR(tether_binding_set_int(pk, 2), TETHER_EREADONLY);
  CHECK_ERR(tether_binding_set_int(i1, 2), TETHER_EREADONLY);
  EXPECT_BINDING(c, "{\"k\":1,\"list\":[10,20]}");

  /* NULL means null. */
  CHECK_OK(tether_binding_new_constant(rt, NULL, &cn));
  EXPECT_BINDING(cn, "null");
  CHECK_OK(tether_binding_get_json(cn, 0, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "null");

  /* Observers: INITIAL gets the value once (SYNC: before observe returns);
   * nothing else ever comes. */
  reg_init(&sync_initial, "constant SYNC|INITIAL");
  reg_init(&loop_initial, "constant loop INITIAL");
  reg_init(&sync_plain, "constant SYNC");
  reg_init(&loop_plain, "constant loop");
  reg_init(&proj_initial, "constant projection SYNC|INITIAL");
  CHECK_OK(tether_binding_observe(c, NULL, TETHER_OBSERVE_SYNC | TETHER_OBSERVE_INITIAL, plain,
                                  &sync_initial, reg_destroy, &sync_initial.handle));
  CHECK_INT_EQ(CALLS(&sync_initial), 1);
  CHECK_OK(tether_binding_observe(c, "", TETHER_OBSERVE_INITIAL, plain, &loop_initial,
                                  reg_destroy, &loop_initial.handle));
  CHECK_OK(tether_binding_observe(c, NULL, TETHER_OBSERVE_SYNC, plain, &sync_plain, reg_destroy,
                                  &sync_plain.handle));
  CHECK_OK(tether_binding_observe(c, NULL, 0, plain, &loop_plain, reg_destroy,
                                  &loop_plain.handle));
  CHECK_OK(tether_binding_observe(pk, NULL, TETHER_OBSERVE_SYNC | TETHER_OBSERVE_INITIAL, plain,
                                  &proj_initial, reg_destroy, &proj_initial.handle));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&sync_initial), 1);
  CHECK_INT_EQ(CALLS(&loop_initial), 1);
  CHECK_INT_EQ(CALLS(&proj_initial), 1);
  pthread_mutex_lock(&mu);
  CHECK(sync_initial.flags & TETHER_CHANGE_INITIAL);
  CHECK(loop_initial.flags & TETHER_CHANGE_INITIAL);
  CHECK_INT_EQ(sync_initial.binding_id, c.id);
  CHECK_INT_EQ(loop_initial.binding_id, c.id);
  CHECK_INT_EQ(proj_initial.binding_id, pk.id);
  CHECK_STR_EQ(sync_initial.new_json, "{\"k\":1,\"list\":[10,20]}");
  CHECK_STR_EQ(sync_initial.old_json, sync_initial.new_json); /* both the current value */
  CHECK_STR_EQ(proj_initial.new_json, "1");
  pthread_mutex_unlock(&mu);
  /* Refused writes and more flushes bring nothing more. */
  CHECK_ERR(tether_binding_set_int(c, 3), TETHER_EREADONLY);
  CHECK_ERR(tether_binding_set_int(pk, 3), TETHER_EREADONLY);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&sync_initial), 1);
  CHECK_INT_EQ(CALLS(&loop_initial), 1);
  CHECK_INT_EQ(CALLS(&proj_initial), 1);
  CHECK_INT_EQ(CALLS(&sync_plain), 0);
  CHECK_INT_EQ(CALLS(&loop_plain), 0);

  /* Freeing the constant ends its observers, and projections of a constant
   * go stale with it (they have no state to name). */
  CHECK_OK(tether_binding_free(c));
  EXPECT_DESTROYED_ONCE(&sync_initial);
  EXPECT_DESTROYED_ONCE(&loop_initial);
  EXPECT_DESTROYED_ONCE(&sync_plain);
  EXPECT_DESTROYED_ONCE(&loop_plain);
  CHECK_ERR(tether_binding_get(c, &v), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get_int(pk, &n), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get_int(i1, &n), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(loop_plain.handle), TETHER_ESTALE);
  CHECK_OK(tether_binding_free(pk)); /* the projection handle itself is still ours */
  EXPECT_DESTROYED_ONCE(&proj_initial);
  CHECK_OK(tether_binding_free(i1));
  CHECK_OK(tether_binding_free(plist));
  CHECK_OK(tether_binding_free(cn));
}

/* ==== custom bindings (Binding(get:set:)) ================================ */

/* A Fahrenheit view of a Celsius state. */
typedef struct temp {
  tether_state_t celsius;
  int gets, sets;
  int set_saw_transaction; /* set was given a non-NULL transaction */
  int destroyed;
} temp_t;

static void temp_destroy(void *user_data) {
  temp_t *t = user_data;
  pthread_mutex_lock(&mu);
  t->destroyed++;
  pthread_mutex_unlock(&mu);
}

static int fahrenheit_get(tether_value_t *result, void *user_data) {
  temp_t *t = user_data;
  int64_t c = 0;
  int rc = tether_state_get_int(t->celsius, &c);
  pthread_mutex_lock(&mu);
  t->gets++;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, c * 9 / 5 + 32);
}

static int fahrenheit_set(const tether_value_t *value,
                          const tether_transaction_info_t *transaction, void *user_data) {
  temp_t *t = user_data;
  int64_t f = 0;
  int rc = tether_value_get_int(value, &f); /* a string: TETHER_ETYPE, returned */
  pthread_mutex_lock(&mu);
  t->sets++;
  if (transaction != NULL) t->set_saw_transaction++;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  return tether_state_set_int(t->celsius, (f - 32) * 5 / 9);
}

/* Refuses every write in the custom set itself. */
static int refusing_set(const tether_value_t *value, const tether_transaction_info_t *transaction,
                        void *user_data) {
  (void)value;
  (void)transaction;
  (void)user_data;
  return TETHER_EREJECTED;
}

/* Reads member "/name" of a state: TETHER_ENOTFOUND until it exists. */
static int member_get(tether_value_t *result, void *user_data) {
  tether_state_t *s = user_data;
  tether_value_t *v = NULL;
  int rc = tether_state_get_path(*s, "/name", &v);
  if (rc != TETHER_OK) return rc;
  rc = tether_value_assign(result, v);
  tether_value_free(v);
  return rc;
}

/* Returns a plain error code, without a failing call before it. */
static int always_erange(tether_value_t *result, void *user_data) {
  (void)result;
  (void)user_data;
  return TETHER_ERANGE;
}

/* The parity of an int state: 0 or 1. */
static int parity_get(tether_value_t *result, void *user_data) {
  temp_t *t = user_data;
  int64_t c = 0;
  int rc = tether_state_get_int(t->celsius, &c);
  pthread_mutex_lock(&mu);
  t->gets++;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, c & 1);
}

static void test_custom(tether_runtime_t rt) {
  temp_t t, par, ro_data, rej_data;
  tether_state_t cel, rec;
  tether_binding_t f, ro, rej, mem, err, bp, proj;
  tether_binding_t out = {4242};
  reg_t fobs, pobs;
  int destroyed_bad = 0;
  int64_t n = 0;
  int gets_before;
  tether_value_t *v = NULL;
  char buf[64];
  size_t len = 0;

  printf("bindings: custom bindings\n");
  memset(&t, 0, sizeof t);
  memset(&par, 0, sizeof par);
  memset(&ro_data, 0, sizeof ro_data);
  memset(&rej_data, 0, sizeof rej_data);
  CHECK_OK(tether_state_new_int(rt, 100, 0, &cel));
  t.celsius = par.celsius = ro_data.celsius = rej_data.celsius = cel;
  if (!CHECK_OK(tether_binding_new_custom(rt, fahrenheit_get, fahrenheit_set, &t, temp_destroy,
                                          &f)))
    return;
  CHECK_OK(tether_binding_get_int(f, &n));
  CHECK_INT_EQ(n, 212);
  /* The result is cached until a state that get read changes. */
  gets_before = counted(&t.gets);
  CHECK_OK(tether_binding_get_int(f, &n));
  CHECK_OK(tether_binding_get_json(f, 0, buf, sizeof buf, &len));
  CHECK_STR_EQ(buf, "212");
  CHECK_INT_EQ(counted(&t.gets), gets_before);
  /* A write goes through set, on this thread, before the write returns. */
  CHECK_OK(tether_binding_set_int(f, 32));
  CHECK_INT_EQ(counted(&t.sets), 1);
  CHECK_INT_EQ(counted(&t.set_saw_transaction), 0); /* no transaction open */
  CHECK_OK(tether_state_get_int(cel, &n));
  CHECK_INT_EQ(n, 0);
  CHECK_OK(tether_binding_get_int(f, &n)); /* recomputed: celsius changed */
  CHECK_INT_EQ(n, 32);
  /* set's error is the write's error. */
  CHECK_ERR(tether_binding_set_string(f, "warm", -1), TETHER_ETYPE);
  CHECK_OK(tether_state_get_int(cel, &n));
  CHECK_INT_EQ(n, 0);
  CHECK_OK(tether_binding_new_custom(rt, fahrenheit_get, refusing_set, &rej_data, temp_destroy,
                                     &rej));
  CHECK_INT_EQ(tether_binding_set_int(rej, 50), TETHER_EREJECTED);
  CHECK_OK(tether_state_get_int(cel, &n));
  CHECK_INT_EQ(n, 0);
  CHECK_OK(tether_binding_free(rej));
  CHECK_INT_EQ(counted(&rej_data.destroyed), 1);
  /* A projection of a custom binding reads part of its result ("" = all). */
  CHECK_OK(tether_binding_project(f, "", &proj));
  CHECK_OK(tether_binding_get_int(proj, &n));
  CHECK_INT_EQ(n, 32);

  /* Observers of a custom binding are woken when its result changes. */
  reg_init(&fobs, "custom binding observer");
  CHECK_OK(tether_binding_observe(f, NULL, 0, plain, &fobs, reg_destroy, &fobs.handle));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_state_set_int(cel, 100));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&fobs), 1);
  pthread_mutex_lock(&mu);
  CHECK_STR_EQ(fobs.old_json, "32");
  CHECK_STR_EQ(fobs.new_json, "212");
  CHECK_INT_EQ(fobs.binding_id, f.id);
  CHECK_INT_EQ(fobs.state_id, 0); /* a custom binding has no state */
  pthread_mutex_unlock(&mu);

  /* ... and only when the result changes: 1 -> 3 keeps the parity. A custom
   * binding without set refuses writes. */
  CHECK_OK(tether_state_set_int(cel, 1));
  CHECK_OK(tether_binding_new_custom(rt, parity_get, NULL, &par, temp_destroy, &bp));
  reg_init(&pobs, "parity observer");
  CHECK_OK(tether_binding_observe(bp, NULL, 0, plain, &pobs, reg_destroy, &pobs.handle));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_state_set_int(cel, 3));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&pobs), 0);
  CHECK_OK(tether_state_set_int(cel, 4));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&pobs), 1);
  CHECK_ERR(tether_binding_set_int(bp, 0), TETHER_EREADONLY);
  CHECK_ERR(tether_binding_set_json(bp, "1", -1), TETHER_EREADONLY);
  CHECK_OK(tether_binding_get_int(bp, &n));
  CHECK_INT_EQ(n, 0);
  CHECK_OK(tether_state_get_int(cel, &n));
  CHECK_INT_EQ(n, 4);

  /* get's error code is what the reader gets. */
  CHECK_OK(tether_state_new_json(rt, "{\"id\":1}", -1, 0, &rec));
  CHECK_OK(tether_binding_new_custom(rt, member_get, NULL, &rec, NULL, &mem));
  CHECK_ERR(tether_binding_get(mem, &v), TETHER_ENOTFOUND);
  CHECK_ERR(tether_binding_get_string(mem, buf, sizeof buf, &len), TETHER_ENOTFOUND);
  CHECK_OK(tether_state_set_path_json(rec, "/name", "\"Ada\"", -1));
  CHECK_OK(tether_binding_get_string(mem, buf, sizeof buf, &len)); /* recovered */
  CHECK_STR_EQ(buf, "Ada");
  CHECK_OK(tether_binding_new_custom(rt, always_erange, NULL, NULL, NULL, &err));
  CHECK_INT_EQ(tether_binding_get(err, &v), TETHER_ERANGE);
  CHECK_INT_EQ(tether_binding_get_int(err, &n), TETHER_ERANGE);

  /* Refused creations: destroy is not called, out is left alone. */
  CHECK_ERR(tether_binding_new_custom(rt, NULL, fahrenheit_set, &destroyed_bad, count_destroy,
                                      &out),
            TETHER_EINVAL);
  CHECK_ERR(tether_binding_new_custom(rt, fahrenheit_get, NULL, &destroyed_bad, count_destroy,
                                      NULL),
            TETHER_EINVAL);
  CHECK_INT_EQ(out.id, 4242);
  CHECK_INT_EQ(counted(&destroyed_bad), 0);

  /* destroy runs once, when the binding is freed; the handle is then stale,
   * and so are projections of it. */
  CHECK_OK(tether_binding_new_custom(rt, fahrenheit_get, NULL, &ro_data, temp_destroy, &ro));
  CHECK_INT_EQ(counted(&ro_data.destroyed), 0);
  CHECK_OK(tether_binding_free(ro));
  CHECK_INT_EQ(counted(&ro_data.destroyed), 1);
  CHECK_OK(tether_binding_free(f));
  CHECK_INT_EQ(counted(&t.destroyed), 1);
  EXPECT_DESTROYED_ONCE(&fobs);
  CHECK_ERR(tether_binding_get_int(f, &n), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get_int(proj, &n), TETHER_ESTALE);
  CHECK_ERR(tether_binding_free(f), TETHER_ESTALE);
  CHECK_INT_EQ(counted(&t.destroyed), 1);
  CHECK_OK(tether_binding_free(proj));
  CHECK_OK(tether_binding_free(bp));
  CHECK_INT_EQ(counted(&par.destroyed), 1);
  EXPECT_DESTROYED_ONCE(&pobs);
  CHECK_OK(tether_binding_free(mem));
  CHECK_OK(tether_binding_free(err));
  CHECK_OK(tether_state_free(cel));
  CHECK_OK(tether_state_free(rec));
}

/* ==== NULL out-parameters ================================================= */

static void test_null_out(tether_runtime_t rt) {
  tether_state_t s, t, sb, sd, ss;
  tether_binding_t b, bb, bd, bs, bt;
  tether_observer_t o = {31337};
  reg_t r;
  char buf[8];
  size_t len = 0;

  printf("bindings: NULL out-parameters\n");
  CHECK_OK(tether_state_new_json(rt, "{\"a\":[1]}", -1, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &t));
  CHECK_ERR(tether_state_binding(s, NULL), TETHER_EINVAL);
  if (!CHECK_OK(tether_state_binding(s, &b))) return;
  /* Typed getters are tried on a value of their own type, so the only thing
   * wrong is the NULL. */
  CHECK_OK(tether_state_new_bool(rt, true, 0, &sb));
  CHECK_OK(tether_state_new_double(rt, 1.5, 0, &sd));
  CHECK_OK(tether_state_new_string(rt, "text", -1, 0, &ss));
  CHECK_OK(tether_state_binding(sb, &bb));
  CHECK_OK(tether_state_binding(sd, &bd));
  CHECK_OK(tether_state_binding(ss, &bs));
  CHECK_OK(tether_state_binding(t, &bt));
  CHECK_ERR(tether_binding_project(b, "/a", NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_index(b, 0, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_new_constant(rt, NULL, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_new_custom(rt, always_erange, NULL, NULL, NULL, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_bind(t, NULL, s, "/b", 0, NULL, NULL, NULL, NULL, NULL),
            TETHER_EINVAL);
  CHECK_ERR(tether_binding_get(b, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_get_bool(bb, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_get_int(bt, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_get_double(bd, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_get_string(bs, NULL, sizeof buf, &len), TETHER_EINVAL);
  CHECK_ERR(tether_binding_get_json(b, 0, NULL, sizeof buf, &len), TETHER_EINVAL);
  CHECK_ERR(tether_binding_set(b, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_set_json(b, NULL, -1), TETHER_EINVAL);
  CHECK_ERR(tether_binding_get_json(b, 0x80, buf, sizeof buf, &len), TETHER_EINVAL); /* flag */
  /* Observing: fn and out are required, flags must be known, paths valid. */
  reg_init(&r, "never registered");
  CHECK_ERR(tether_binding_observe(b, NULL, 0, NULL, &r, reg_destroy, &o), TETHER_EINVAL);
  CHECK_ERR(tether_binding_observe(b, NULL, 0, plain, &r, reg_destroy, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_binding_observe(b, NULL, 0x100, plain, &r, reg_destroy, &o), TETHER_EINVAL);
  CHECK_ERR(tether_binding_observe(b, "a", 0, plain, &r, reg_destroy, &o), TETHER_EPATH);
  CHECK_INT_EQ(o.id, 31337);
  CHECK_INT_EQ(reg_get(&r.destroyed), 0); /* refused registrations keep user_data ours */
  /* The size query is not an error: buf may be NULL when size is 0. */
  CHECK_OK(tether_binding_get_json(b, 0, NULL, 0, &len));
  CHECK_INT_EQ(len, strlen("{\"a\":[1]}"));
  CHECK_OK(tether_binding_get_string(bs, NULL, 0, &len));
  CHECK_INT_EQ(len, 4);
  CHECK_OK(tether_binding_free(bb));
  CHECK_OK(tether_binding_free(bt));
  CHECK_OK(tether_binding_free(bd));
  CHECK_OK(tether_binding_free(bs));
  CHECK_OK(tether_state_free(sb));
  CHECK_OK(tether_state_free(sd));
  CHECK_OK(tether_state_free(ss));
  CHECK_OK(tether_binding_free(b));
  CHECK_OK(tether_state_free(s));
  CHECK_OK(tether_state_free(t));
}

/* ==== stale handles ======================================================= */

/* Every binding function on one bad handle: TETHER_ESTALE from each. */
static void expect_all_stale_(tether_binding_t b, const char *what, const char *file, int line) {
  tether_value_t *v = NULL;
  tether_binding_t out = {99};
  tether_observer_t o = {99};
  bool flag;
  int64_t i;
  double d;
  char buf[16];
  size_t len;
  int rcs[14], k, n = 0, bad = 0;

  rcs[n++] = tether_binding_get(b, &v);
  rcs[n++] = tether_binding_get_bool(b, &flag);
  rcs[n++] = tether_binding_get_int(b, &i);
  rcs[n++] = tether_binding_get_double(b, &d);
  rcs[n++] = tether_binding_get_string(b, buf, sizeof buf, &len);
  rcs[n++] = tether_binding_get_json(b, 0, buf, sizeof buf, &len);
  rcs[n++] = tether_binding_set_int(b, 1);
  rcs[n++] = tether_binding_set_bool(b, true);
  rcs[n++] = tether_binding_set_double(b, 1.0);
  rcs[n++] = tether_binding_set_string(b, "x", -1);
  rcs[n++] = tether_binding_set_json(b, "1", -1);
  rcs[n++] = tether_binding_project(b, "/a", &out);
  rcs[n++] = tether_binding_index(b, 0, &out);
  rcs[n++] = tether_binding_observe(b, NULL, 0, plain, NULL, NULL, &o);
  for (k = 0; k < n; k++) {
    if (rcs[k] != TETHER_ESTALE) {
      check_fail_(file, line, "%s: call %d of expect_all_stale: expected TETHER_ESTALE, got %s",
                  what, k, check_errname(rcs[k]));
      bad++;
    }
  }
  if (rcs[0] == TETHER_OK) tether_value_free(v);
  if (out.id != 99 || o.id != 99) {
    check_fail_(file, line, "%s: a stale handle produced a new handle", what);
    bad++;
  }
  if (!bad) check_pass_();
}
#define EXPECT_ALL_STALE(b, what) expect_all_stale_((b), (what), __FILE__, __LINE__)

static void test_stale(tether_runtime_t rt) {
  tether_state_t s, gone;
  tether_binding_t b, p, ofgone, pofgone, freed, zero = {0}, forged = {0x0123456789abcdefull};
  tether_binding_t out = {5};
  reg_t obs;
  int64_t i = 0;

  printf("bindings: stale handles\n");
  EXPECT_ALL_STALE(zero, "zero handle");
  CHECK_ERR(tether_binding_free(zero), TETHER_ESTALE);
  EXPECT_ALL_STALE(forged, "forged handle");
  CHECK_ERR(tether_binding_free(forged), TETHER_ESTALE);

  /* A state handle is not a binding, and a binding is not a state, even
   * though both are 64-bit ids. */
  CHECK_OK(tether_state_new_int(rt, 1, 0, &s));
  CHECK_OK(tether_state_binding(s, &b));
  EXPECT_ALL_STALE((tether_binding_t){s.id}, "state handle used as a binding");
  CHECK_ERR(tether_binding_free((tether_binding_t){s.id}), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_int((tether_state_t){b.id}, &i), TETHER_ESTALE);
  CHECK_ERR(tether_state_free((tether_state_t){b.id}), TETHER_ESTALE);
  CHECK_OK(tether_state_get_int(s, &i)); /* neither was harmed */
  CHECK_OK(tether_binding_get_int(b, &i));

  /* A freed binding: stale, and a second free says so too. */
  CHECK_OK(tether_state_binding(s, &freed));
  CHECK_OK(tether_binding_free(freed));
  EXPECT_ALL_STALE(freed, "freed binding");
  CHECK_ERR(tether_binding_free(freed), TETHER_ESTALE);
  CHECK_OK(tether_state_get_int(s, &i)); /* the state lives on */
  CHECK_INT_EQ(i, 1);

  /* A projection of a state binding names the state directly: it outlives
   * the binding it was made from. */
  CHECK_OK(tether_binding_project(b, "", &p));
  CHECK_OK(tether_binding_free(b));
  CHECK_OK(tether_binding_get_int(p, &i));
  CHECK_INT_EQ(i, 1);
  CHECK_OK(tether_binding_set_int(p, 2));
  CHECK_OK(tether_state_get_int(s, &i));
  CHECK_INT_EQ(i, 2);
  CHECK_OK(tether_binding_free(p));

  /* A binding whose state was freed: stale to use, but still ours to free.
   * Its observers end with the state. */
  CHECK_OK(tether_state_new_json(rt, "{\"a\":1}", -1, 0, &gone));
  CHECK_OK(tether_state_binding(gone, &ofgone));
  CHECK_OK(tether_binding_project(ofgone, "/a", &pofgone));
  reg_init(&obs, "observer of a binding whose state is freed");
  CHECK_OK(tether_binding_observe(pofgone, NULL, 0, plain, &obs, reg_destroy, &obs.handle));
  CHECK_OK(tether_state_free(gone));
  EXPECT_DESTROYED_ONCE(&obs);
  EXPECT_ALL_STALE(ofgone, "binding of a freed state");
  EXPECT_ALL_STALE(pofgone, "projection of a freed state");
  CHECK_ERR(tether_state_binding(gone, &out), TETHER_ESTALE);
  CHECK_INT_EQ(out.id, 5);
  CHECK_ERR(tether_observer_remove(obs.handle), TETHER_ESTALE);
  CHECK_OK(tether_binding_free(pofgone));
  CHECK_OK(tether_binding_free(ofgone));
  CHECK_ERR(tether_binding_free(ofgone), TETHER_ESTALE);
  EXPECT_DESTROYED_ONCE(&obs);

  CHECK_OK(tether_state_free(s));
}

/* ==== observers on bindings ============================================== */

static void test_observers(tether_runtime_t rt) {
  tether_state_t s;
  tether_binding_t b, pu, pname;
  reg_t name_sync, name_loop, rel, whole;
  char buf[128];
  uint64_t rev;

  printf("bindings: observers of projections\n");
  CHECK_OK(tether_state_new_json(
      rt, "{\"user\":{\"name\":\"Ada\",\"age\":36},\"other\":1}", -1, 0, &s));
  CHECK_OK(tether_state_binding(s, &b));
  CHECK_OK(tether_binding_project(b, "/user", &pu));
  CHECK_OK(tether_binding_project(pu, "/name", &pname));
  reg_init(&name_sync, "SYNC observer of /user/name");
  reg_init(&name_loop, "loop observer of /user/name");
  reg_init(&rel, "observer of /user + \"/name\"");
  reg_init(&whole, "observer of the whole state binding");
  CHECK_OK(tether_binding_observe(pname, NULL, TETHER_OBSERVE_SYNC, plain, &name_sync,
                                  reg_destroy, &name_sync.handle));
  CHECK_OK(tether_binding_observe(pname, "", 0, plain, &name_loop, reg_destroy,
                                  &name_loop.handle));
  /* The observer's pointer is relative to the binding. */
  CHECK_OK(tether_binding_observe(pu, "/name", TETHER_OBSERVE_SYNC, plain, &rel, reg_destroy,
                                  &rel.handle));
  CHECK_OK(tether_binding_observe(b, NULL, TETHER_OBSERVE_SYNC, plain, &whole, reg_destroy,
                                  &whole.handle));

  /* Siblings never wake a projection's observers. */
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "37", -1));
  CHECK_OK(tether_state_set_path_json(s, "/other", "2", -1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&name_sync), 0);
  CHECK_INT_EQ(CALLS(&name_loop), 0);
  CHECK_INT_EQ(CALLS(&rel), 0);
  CHECK_INT_EQ(CALLS(&whole), 2); /* an ancestor sees everything below it */

  /* The path itself. */
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Grace\"", -1));
  CHECK_INT_EQ(CALLS(&name_sync), 1); /* SYNC: before the write returned */
  CHECK_INT_EQ(CALLS(&rel), 1);
  pthread_mutex_lock(&mu);
  CHECK_STR_EQ(name_sync.old_json, "\"Ada\"");
  CHECK_STR_EQ(name_sync.new_json, "\"Grace\"");
  CHECK_STR_EQ(name_sync.path, "/user/name"); /* the full pointer inside the state */
  CHECK_STR_EQ(rel.path, "/user/name");
  CHECK_INT_EQ(name_sync.binding_id, pname.id);
  CHECK_INT_EQ(rel.binding_id, pu.id);
  CHECK_INT_EQ(name_sync.state_id, s.id);
  pthread_mutex_unlock(&mu);

  /* Ancestors: the parent member, and the whole value. */
  CHECK_OK(tether_state_set_path_json(s, "/user", "{\"name\":\"Hedy\",\"age\":37}", -1));
  CHECK_INT_EQ(CALLS(&name_sync), 2);
  CHECK_OK(tether_state_set_json(
      s, "{\"user\":{\"name\":\"Barbara\",\"age\":37},\"other\":2}", -1));
  CHECK_INT_EQ(CALLS(&name_sync), 3);
  CHECK_STR_EQ(LAST_NEW(&name_sync, buf), "\"Barbara\"");
  /* An ancestor write that leaves the observed part equal wakes nothing. */
  CHECK_OK(tether_state_set_path_json(s, "/user", "{\"name\":\"Barbara\",\"age\":99}", -1));
  CHECK_INT_EQ(CALLS(&name_sync), 3);

  /* A write through the projection wakes its own path and its ancestors,
   * with one revision. */
  CHECK_OK(tether_binding_set_string(pname, "Radia", -1));
  CHECK_INT_EQ(CALLS(&name_sync), 4);
  CHECK_INT_EQ(CALLS(&rel), 4);
  CHECK_STR_EQ(LAST_OLD(&name_sync, buf), "\"Barbara\"");
  CHECK_STR_EQ(LAST_NEW(&name_sync, buf), "\"Radia\"");
  CHECK_OK(tether_state_revision(s, &rev));
  CHECK_INT_EQ(rev, runtime_rev(rt));
  CHECK_OK(tether_runtime_flush(rt));
  /* The loop observer is coalesced: at least one call, ending at Radia. */
  CHECK(CALLS(&name_loop) >= 1 && CALLS(&name_loop) <= 4);
  CHECK_STR_EQ(LAST_NEW(&name_loop, buf), "\"Radia\"");
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(whole.binding_id, b.id);
  CHECK_STR_EQ(whole.path, "");
  pthread_mutex_unlock(&mu);
  CHECK_INT_EQ(CALLS(&whole), 7); /* every changing write above: 2 + 5 */

  /* Removing one observer leaves the others. */
  CHECK_OK(tether_observer_remove(rel.handle));
  EXPECT_DESTROYED_ONCE(&rel);
  CHECK_ERR(tether_observer_remove(rel.handle), TETHER_ESTALE);
  CHECK_OK(tether_binding_set_string(pname, "Frances", -1));
  CHECK_INT_EQ(CALLS(&rel), 4);
  CHECK_INT_EQ(CALLS(&name_sync), 5);
  CHECK_OK(tether_runtime_flush(rt)); /* no loop call of name_loop in flight */

  /* Freeing a binding ends the observers registered on it (and only those). */
  CHECK_OK(tether_binding_free(pname));
  EXPECT_DESTROYED_ONCE(&name_sync);
  EXPECT_DESTROYED_ONCE(&name_loop);
  CHECK_INT_EQ(reg_get(&whole.destroyed), 0);
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Mary\"", -1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&name_sync), 5);
  CHECK_INT_EQ(CALLS(&whole), 9);
  CHECK_OK(tether_binding_free(pu));
  CHECK_OK(tether_binding_free(b));
  EXPECT_DESTROYED_ONCE(&whole);
  CHECK_OK(tether_state_free(s));
}

/* ==== callbacks that write, remove and free =============================== */

static void callbacks_inside(tether_runtime_t rt, unsigned flags) {
  const char *kind = (flags & TETHER_OBSERVE_SYNC) ? "SYNC" : "loop";
  tether_state_t a, bstate, c, d, e;
  tether_binding_t ba, bb, bc, pcx, bd, be;
  reg_t writer, self, killer, victim, after, freer, sibling, sfreer, ssibling;
  int64_t i = 0;

  printf("bindings: %s binding observers that write, remove and free\n", kind);

  /* Writes: ba's observer writes 10 * new through bb. */
  reg_init(&writer, "writes through another binding");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &bstate));
  CHECK_OK(tether_state_binding(a, &ba));
  CHECK_OK(tether_state_binding(bstate, &bb));
  writer.target = bb;
  CHECK_OK(tether_binding_observe(ba, NULL, flags, write_through, &writer, reg_destroy,
                                  &writer.handle));
  CHECK_OK(tether_binding_set_int(ba, 4));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&writer), 1);
  CHECK_INT_EQ(RC(&writer), TETHER_OK);
  CHECK_OK(tether_state_get_int(bstate, &i));
  CHECK_INT_EQ(i, 40);

  /* Removals: one removes itself, one removes a later one (never called). */
  reg_init(&self, "removes itself");
  reg_init(&killer, "removes the victim");
  reg_init(&victim, "victim");
  reg_init(&after, "registered after the victim");
  CHECK_OK(tether_binding_observe(ba, NULL, flags, remove_self, &self, reg_destroy, &self.handle));
  CHECK_OK(tether_binding_observe(ba, NULL, flags, remove_victim, &killer, reg_destroy,
                                  &killer.handle));
  CHECK_OK(tether_binding_observe(ba, NULL, flags, plain, &victim, reg_destroy, &victim.handle));
  CHECK_OK(tether_binding_observe(ba, NULL, flags, plain, &after, reg_destroy, &after.handle));
  killer.victim = victim.handle; /* set before any write: no race */
  CHECK_OK(tether_binding_set_int(ba, 5));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_binding_set_int(ba, 6));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&self), 1);
  CHECK_INT_EQ(RC(&self), TETHER_OK);
  EXPECT_DESTROYED_ONCE(&self);
  CHECK_INT_EQ(CALLS(&killer), 2);
  CHECK_INT_EQ(RC(&killer), TETHER_OK); /* the first removal */
  CHECK_INT_EQ(CALLS(&victim), 0);
  EXPECT_DESTROYED_ONCE(&victim);
  CHECK_INT_EQ(CALLS(&after), 2);
  CHECK_INT_EQ(CALLS(&writer), 3);
  CHECK_OK(tether_state_get_int(bstate, &i));
  CHECK_INT_EQ(i, 60);

  /* Freeing the observed binding from its observer: the handle is stale at
   * once, the later observer on it is not called, both destroys run once,
   * after the call. The state, and a projection made from that binding,
   * live on. */
  reg_init(&freer, "frees its binding");
  reg_init(&sibling, "sibling on the freed binding");
  CHECK_OK(tether_state_new_json(rt, "{\"x\":1}", -1, 0, &c));
  CHECK_OK(tether_state_binding(c, &bc));
  CHECK_OK(tether_binding_project(bc, "/x", &pcx));
  CHECK_OK(tether_binding_observe(bc, NULL, flags, free_my_binding, &freer, reg_destroy,
                                  &freer.handle));
  CHECK_OK(tether_binding_observe(bc, NULL, flags, plain, &sibling, reg_destroy,
                                  &sibling.handle));
  CHECK_OK(tether_binding_set_int(pcx, 2));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&freer), 1);
  CHECK_INT_EQ(RC(&freer), TETHER_OK);
  CHECK_INT_EQ(RC2(&freer), TETHER_ESTALE);
  CHECK_INT_EQ(CALLS(&sibling), 0);
  EXPECT_DESTROYED_ONCE(&freer);
  EXPECT_DESTROYED_ONCE(&sibling);
  CHECK_ERR(tether_binding_free(bc), TETHER_ESTALE);
  CHECK_OK(tether_binding_get_int(pcx, &i));
  CHECK_INT_EQ(i, 2);
  CHECK_OK(tether_binding_set_int(pcx, 3));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&freer), 1);
  EXPECT_STATE(c, "{\"x\":3}");

  /* Freeing the state behind the binding from its observer. */
  reg_init(&sfreer, "frees the state");
  reg_init(&ssibling, "sibling on the freed state");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &d));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &e));
  CHECK_OK(tether_state_binding(d, &bd));
  CHECK_OK(tether_state_binding(e, &be));
  CHECK_OK(tether_binding_observe(bd, NULL, flags, free_my_state, &sfreer, reg_destroy,
                                  &sfreer.handle));
  CHECK_OK(tether_binding_observe(bd, NULL, flags, plain, &ssibling, reg_destroy,
                                  &ssibling.handle));
  CHECK_OK(tether_binding_set_int(bd, 1)); /* the write itself was applied */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&sfreer), 1);
  CHECK_INT_EQ(RC(&sfreer), TETHER_OK);
  CHECK_INT_EQ(RC2(&sfreer), TETHER_ESTALE);
  CHECK_INT_EQ(CALLS(&ssibling), 0);
  EXPECT_DESTROYED_ONCE(&sfreer);
  EXPECT_DESTROYED_ONCE(&ssibling);
  CHECK_ERR(tether_state_get_int(d, &i), TETHER_ESTALE);
  CHECK_ERR(tether_binding_set_int(bd, 2), TETHER_ESTALE);
  CHECK_OK(tether_binding_free(bd)); /* still ours to free */
  CHECK_OK(tether_binding_set_int(be, 1)); /* other states are untouched */
  CHECK_OK(tether_binding_free(be));

  /* Tear down; the remaining observers end with their bindings. */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_binding_free(ba));
  EXPECT_DESTROYED_ONCE(&writer);
  EXPECT_DESTROYED_ONCE(&killer);
  EXPECT_DESTROYED_ONCE(&after);
  CHECK_OK(tether_binding_free(bb));
  CHECK_OK(tether_binding_free(pcx));
  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(bstate));
  CHECK_OK(tether_state_free(c));
  CHECK_OK(tether_state_free(e));
}

/* ==== tether_binding_bind (GBinding) ====================================== */

typedef struct xform {
  int calls;
  int destroyed;
} xform_t;

static void xform_destroy(void *user_data) {
  xform_t *x = user_data;
  pthread_mutex_lock(&mu);
  x->destroyed++;
  pthread_mutex_unlock(&mu);
}

static void xform_count(void *user_data) {
  xform_t *x = user_data;
  if (x == NULL) return;
  pthread_mutex_lock(&mu);
  x->calls++;
  pthread_mutex_unlock(&mu);
}

static int c_to_f(const tether_value_t *from, tether_value_t *to, void *user_data) {
  int64_t c = 0;
  int rc = tether_value_get_int(from, &c);
  xform_count(user_data);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(to, c * 9 / 5 + 32);
}

static int f_to_c(const tether_value_t *from, tether_value_t *to, void *user_data) {
  int64_t f = 0;
  int rc = tether_value_get_int(from, &f);
  xform_count(user_data);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(to, (f - 32) * 5 / 9);
}

/* Copies non-negative ints; refuses negative ones with TETHER_ERANGE. */
static int refuse_negative(const tether_value_t *from, tether_value_t *to, void *user_data) {
  int64_t n = 0;
  xform_count(user_data);
  if (tether_value_get_int(from, &n) != TETHER_OK || n < 0) return TETHER_ERANGE;
  return tether_value_assign(to, from);
}

/* Declines every value (GBinding's FALSE). */
static int decline(const tether_value_t *from, tether_value_t *to, void *user_data) {
  (void)from;
  (void)to;
  xform_count(user_data);
  return 1;
}

static void test_bind(tether_runtime_t rt) {
  tether_runtime_t rt2;
  tether_state_t src, dst, doc, view, on, off, num, flag, same, other_rt_state, gone;
  tether_binding_t h, h2, h3, h4;
  tether_binding_t out = {616};
  xform_t x, xb, bad;
  int64_t n = 0;
  bool b = false;
  reg_t dst_obs;

  printf("bindings: tether_binding_bind\n");
  memset(&x, 0, sizeof x);
  memset(&xb, 0, sizeof xb);
  memset(&bad, 0, sizeof bad);

  /* One way, with a transform, synchronous. */
  CHECK_OK(tether_state_new_int(rt, 100, 0, &src));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &dst));
  reg_init(&dst_obs, "SYNC observer of the target");
  CHECK_OK(tether_observe(dst, NULL, TETHER_OBSERVE_SYNC, plain, &dst_obs, reg_destroy,
                          &dst_obs.handle));
  if (!CHECK_OK(tether_binding_bind(src, NULL, dst, NULL, TETHER_BIND_SYNC_CREATE, c_to_f, NULL,
                                    &x, xform_destroy, &h)))
    return;
  CHECK_OK(tether_state_get_int(dst, &n));
  CHECK_INT_EQ(n, 212); /* SYNC_CREATE: before bind returned */
  CHECK_INT_EQ(CALLS(&dst_obs), 1); /* through the ordinary write path */
  CHECK_OK(tether_state_set_int(src, 0));
  CHECK_OK(tether_state_get_int(dst, &n));
  CHECK_INT_EQ(n, 32); /* propagation is synchronous */
  CHECK_INT_EQ(CALLS(&dst_obs), 2);
  CHECK_OK(tether_binding_get_int(h, &n)); /* the handle is a binding of the target */
  CHECK_INT_EQ(n, 32);
  CHECK_OK(tether_state_set_int(dst, 50)); /* one way: nothing flows back */
  CHECK_OK(tether_state_get_int(src, &n));
  CHECK_INT_EQ(n, 0);
  CHECK_OK(tether_binding_free(h)); /* unbinds */
  CHECK_INT_EQ(counted(&x.destroyed), 1);
  CHECK_OK(tether_state_set_int(src, 10));
  CHECK_OK(tether_state_get_int(dst, &n));
  CHECK_INT_EQ(n, 50);
  CHECK_ERR(tether_binding_free(h), TETHER_ESTALE);
  CHECK_INT_EQ(counted(&x.destroyed), 1);

  /* Both ways, between parts of two states. */
  CHECK_OK(tether_state_new_json(rt, "{\"temp\":{\"c\":0}}", -1, 0, &doc));
  CHECK_OK(tether_state_new_json(rt, "{\"f\":0,\"unit\":\"F\"}", -1, 0, &view));
  CHECK_OK(tether_binding_bind(doc, "/temp/c", view, "/f",
                               TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE, c_to_f, f_to_c,
                               &xb, xform_destroy, &h2));
  EXPECT_STATE(view, "{\"f\":32,\"unit\":\"F\"}");
  CHECK_OK(tether_binding_set_int(h2, 212)); /* a set on the handle is a target change */
  EXPECT_STATE(doc, "{\"temp\":{\"c\":100}}");
  CHECK_OK(tether_state_set_path_json(doc, "/temp/c", "-40", -1));
  EXPECT_STATE(view, "{\"f\":-40,\"unit\":\"F\"}");
  CHECK_OK(tether_state_set_path_json(view, "/unit", "\"K\"", -1)); /* outside the bound part */
  EXPECT_STATE(doc, "{\"temp\":{\"c\":-40}}");
  CHECK_OK(tether_binding_free(h2));
  CHECK_INT_EQ(counted(&xb.destroyed), 1);

  /* Inverted booleans, both ways. */
  CHECK_OK(tether_state_new_bool(rt, true, 0, &on));
  CHECK_OK(tether_state_new_bool(rt, true, 0, &off));
  CHECK_OK(tether_binding_bind(on, NULL, off, NULL,
                               TETHER_BIND_INVERT_BOOLEAN | TETHER_BIND_SYNC_CREATE |
                                   TETHER_BIND_BIDIRECTIONAL,
                               NULL, NULL, NULL, NULL, &h3));
  CHECK_OK(tether_state_get_bool(off, &b));
  CHECK(!b);
  CHECK_OK(tether_state_set_bool(off, true));
  CHECK_OK(tether_state_get_bool(on, &b));
  CHECK(!b);
  CHECK_OK(tether_binding_free(h3));

  /* Two different parts of one state may be bound. */
  CHECK_OK(tether_state_new_json(rt, "{\"x\":1,\"y\":0}", -1, 0, &same));
  CHECK_OK(tether_binding_bind(same, "/x", same, "/y", TETHER_BIND_SYNC_CREATE, NULL, NULL, NULL,
                               NULL, &h4));
  EXPECT_STATE(same, "{\"x\":1,\"y\":1}");
  CHECK_OK(tether_binding_free(h4));

  /* ---- refusals: nothing bound, destroy not called, out untouched ---- */
  CHECK_OK(tether_state_new_int(rt, 7, 0, &num));
  CHECK_OK(tether_state_new_bool(rt, false, 0, &flag));

  /* The same part of the same state. */
  CHECK_ERR(tether_binding_bind(same, "/x", same, "/x", 0, NULL, NULL, &bad, xform_destroy, &out),
            TETHER_EINVAL);
  CHECK_ERR(tether_binding_bind(num, NULL, num, "", 0, NULL, NULL, &bad, xform_destroy, &out),
            TETHER_EINVAL);
  /* Transforms together with TETHER_BIND_INVERT_BOOLEAN. */
  CHECK_ERR(tether_binding_bind(flag, NULL, on, NULL, TETHER_BIND_INVERT_BOOLEAN, c_to_f, NULL,
                                &bad, xform_destroy, &out),
            TETHER_EINVAL);
  CHECK_ERR(tether_binding_bind(flag, NULL, on, NULL, TETHER_BIND_INVERT_BOOLEAN, NULL, f_to_c,
                                &bad, xform_destroy, &out),
            TETHER_EINVAL);
  /* Unknown flag, malformed pointer. */
  CHECK_ERR(tether_binding_bind(num, NULL, dst, NULL, 0x100, NULL, NULL, &bad, xform_destroy,
                                &out),
            TETHER_EINVAL);
  CHECK_ERR(tether_binding_bind(num, "x", dst, NULL, 0, NULL, NULL, &bad, xform_destroy, &out),
            TETHER_EPATH);
  CHECK_ERR(tether_binding_bind(num, NULL, dst, "/a~9", 0, NULL, NULL, &bad, xform_destroy, &out),
            TETHER_EPATH);
  /* States of two runtimes. */
  CHECK_OK(tether_runtime_new(NULL, &rt2));
  CHECK_OK(tether_state_new_int(rt2, 0, 0, &other_rt_state));
  CHECK_ERR(tether_binding_bind(num, NULL, other_rt_state, NULL, 0, NULL, NULL, &bad,
                                xform_destroy, &out),
            TETHER_EINVAL);
  CHECK_OK(tether_runtime_free(rt2));
  /* A freed state. */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &gone));
  CHECK_OK(tether_state_free(gone));
  CHECK_ERR(tether_binding_bind(gone, NULL, dst, NULL, 0, NULL, NULL, &bad, xform_destroy, &out),
            TETHER_ESTALE);
  CHECK_ERR(tether_binding_bind(num, NULL, gone, NULL, 0, NULL, NULL, &bad, xform_destroy, &out),
            TETHER_ESTALE);

  /* INVERT_BOOLEAN + SYNC_CREATE on a non-bool source: TETHER_ETYPE, and
   * nothing is bound (a later write is not carried). */
  CHECK_OK(tether_state_set_bool(flag, false));
  CHECK_ERR(tether_binding_bind(num, NULL, flag, NULL,
                                TETHER_BIND_INVERT_BOOLEAN | TETHER_BIND_SYNC_CREATE, NULL, NULL,
                                &bad, xform_destroy, &out),
            TETHER_ETYPE);
  CHECK_OK(tether_state_set_int(num, 8));
  EXPECT_STATE(flag, "false");
  EXPECT_STATE(num, "8");

  /* A transform's negative code with SYNC_CREATE is the bind's error. */
  CHECK_OK(tether_state_set_int(num, -5));
  CHECK_OK(tether_state_set_int(dst, 1));
  CHECK_ERR(tether_binding_bind(num, NULL, dst, NULL, TETHER_BIND_SYNC_CREATE, refuse_negative,
                                NULL, &bad, xform_destroy, &out),
            TETHER_ERANGE);
  CHECK_INT_EQ(counted(&bad.calls), 1); /* it did run, once */
  CHECK_OK(tether_state_set_int(num, 9)); /* not bound: dst stays */
  EXPECT_STATE(dst, "1");
  /* A transform that declines with SYNC_CREATE: TETHER_EREJECTED. */
  CHECK_ERR(tether_binding_bind(num, NULL, dst, NULL, TETHER_BIND_SYNC_CREATE, decline, NULL,
                                &bad, xform_destroy, &out),
            TETHER_EREJECTED);
  CHECK_OK(tether_state_set_int(num, 10));
  EXPECT_STATE(dst, "1");
  CHECK_INT_EQ(counted(&bad.calls), 2);

  CHECK_INT_EQ(out.id, 616);
  CHECK_INT_EQ(counted(&bad.destroyed), 0);

  /* Freeing either state ends a bind: destroy runs, the handle goes stale. */
  memset(&x, 0, sizeof x);
  CHECK_OK(tether_binding_bind(num, NULL, dst, NULL, TETHER_BIND_SYNC_CREATE, NULL, NULL, &x,
                               xform_destroy, &h));
  EXPECT_STATE(dst, "10");
  CHECK_OK(tether_observer_remove(dst_obs.handle));
  EXPECT_DESTROYED_ONCE(&dst_obs);
  CHECK_OK(tether_state_free(dst));
  CHECK_INT_EQ(counted(&x.destroyed), 1);
  CHECK_ERR(tether_binding_get_int(h, &n), TETHER_ESTALE);
  CHECK_ERR(tether_binding_free(h), TETHER_ESTALE);
  CHECK_OK(tether_state_set_int(num, 11)); /* nothing left to carry it */
  CHECK_INT_EQ(counted(&x.destroyed), 1);

  CHECK_OK(tether_state_free(src));
  CHECK_OK(tether_state_free(doc));
  CHECK_OK(tether_state_free(view));
  CHECK_OK(tether_state_free(on));
  CHECK_OK(tether_state_free(off));
  CHECK_OK(tether_state_free(same));
  CHECK_OK(tether_state_free(num));
  CHECK_OK(tether_state_free(flag));
}

/* ==== the runtime frees what is left ===================================== */

static void test_runtime_teardown(void) {
  tether_runtime_t rt;
  tether_state_t s, t;
  tether_binding_t custom, bound, sb;
  temp_t data;
  xform_t x;
  reg_t obs;

  printf("bindings: freeing a runtime with live bindings\n");
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  memset(&data, 0, sizeof data);
  memset(&x, 0, sizeof x);
  reg_init(&obs, "observer of a live binding");
  CHECK_OK(tether_state_new_int(rt, 1, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &t));
  data.celsius = s;
  CHECK_OK(tether_binding_new_custom(rt, fahrenheit_get, fahrenheit_set, &data, temp_destroy,
                                     &custom));
  CHECK_OK(tether_binding_bind(s, NULL, t, NULL, TETHER_BIND_SYNC_CREATE, NULL, NULL, &x,
                               xform_destroy, &bound));
  CHECK_OK(tether_state_binding(s, &sb));
  CHECK_OK(tether_binding_observe(sb, NULL, 0, plain, &obs, reg_destroy, &obs.handle));
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(counted(&data.destroyed), 1);
  CHECK_INT_EQ(counted(&x.destroyed), 1);
  EXPECT_DESTROYED_ONCE(&obs);
  EXPECT_ALL_STALE(custom, "custom binding of a freed runtime");
  EXPECT_ALL_STALE(sb, "state binding of a freed runtime");
  CHECK_ERR(tether_binding_free(bound), TETHER_ESTALE);
}

/* A custom binding whose set frees its own binding: the free succeeds, and
 * destroy waits until set has returned (user_data is still set's to use),
 * then runs exactly once. The same for a get that frees its binding. */
typedef struct self_freeing {
  tether_binding_t self;
  tether_state_t source;
  int destroyed;
  int destroyed_during_call; /* destroy seen while set/get was running */
  int in_call;
  int free_rc;
} self_freeing_t;

static int self_freeing_get(tether_value_t *result, void *user_data) {
  self_freeing_t *sf = user_data;
  int64_t v = 0;
  int rc = tether_state_get_int(sf->source, &v);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, v);
}

static int self_freeing_set(const tether_value_t *value, const tether_transaction_info_t *txn,
                            void *user_data) {
  self_freeing_t *sf = user_data;
  (void)txn;
  sf->in_call = 1;
  CHECK_OK(tether_state_set(sf->source, value));
  sf->free_rc = tether_binding_free(sf->self);
  /* Still ours: destroy has not run. */
  CHECK_INT_EQ(sf->destroyed, 0);
  sf->in_call = 0;
  return TETHER_OK;
}

static void self_freeing_destroy(void *user_data) {
  self_freeing_t *sf = user_data;
  if (sf->in_call) sf->destroyed_during_call++;
  sf->destroyed++;
}

static void test_custom_frees_itself(tether_runtime_t rt) {
  self_freeing_t sf;
  int64_t v = 0;
  memset(&sf, 0, sizeof sf);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &sf.source));
  CHECK_OK(tether_binding_new_custom(rt, self_freeing_get, self_freeing_set, &sf,
                                     self_freeing_destroy, &sf.self));
  CHECK_OK(tether_binding_get_int(sf.self, &v));
  CHECK_INT_EQ(v, 1);
  CHECK_OK(tether_binding_set_int(sf.self, 5));
  CHECK_INT_EQ(sf.free_rc, TETHER_OK);
  CHECK_INT_EQ(sf.destroyed, 1);
  CHECK_INT_EQ(sf.destroyed_during_call, 0);
  CHECK_OK(tether_state_get_int(sf.source, &v));
  CHECK_INT_EQ(v, 5); /* the write made before the free stands */
  CHECK_ERR(tether_binding_get_int(sf.self, &v), TETHER_ESTALE);
  CHECK_ERR(tether_binding_free(sf.self), TETHER_ESTALE);
  CHECK_INT_EQ(sf.destroyed, 1);
  CHECK_OK(tether_state_free(sf.source));
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(bindings_state_binding) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_state_binding(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_state_binding");
}

TEST_CASE(bindings_projection) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_projection(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_projection");
}

TEST_CASE(bindings_index) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_index(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_index");
}

TEST_CASE(bindings_constant) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_constant(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_constant");
}

TEST_CASE(bindings_custom) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_custom(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_custom");
}

TEST_CASE(bindings_custom_frees_itself) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_custom_frees_itself(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_custom_frees_itself");
}

TEST_CASE(bindings_null_out) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_null_out(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_null_out");
}

TEST_CASE(bindings_stale) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_stale(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_stale");
}

TEST_CASE(bindings_observers) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_observers(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_observers");
}

TEST_CASE(bindings_callbacks_inside_sync) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  callbacks_inside(rt, TETHER_OBSERVE_SYNC);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_callbacks_inside_sync");
}

TEST_CASE(bindings_callbacks_inside_loop) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  callbacks_inside(rt, 0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_callbacks_inside_loop");
}

TEST_CASE(bindings_bind) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_bind(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bindings_bind");
}

TEST_CASE(bindings_runtime_teardown) {
  test_runtime_teardown();
  return check_report("bindings_runtime_teardown");
}
