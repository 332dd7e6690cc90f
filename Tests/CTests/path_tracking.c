/*
 * path_tracking.c — tracking by path: a computed or effect that reads a part
 * of a state depends on that part only, as a SwiftUI view that reads
 * `model.user.name` is not redrawn when `model.user.age` changes (Swift
 * Observation tracks per property).
 *
 *     tether_state_get_path(profile, "/user/name", &v);  // inside a compute
 *     tether_state_set_path_json(profile, "/user/age", "37", -1);  // no re-run
 *
 * Every reader below counts its calls in its callback; a check that a write
 * "does not wake" a reader reads it again (computeds) or flushes (effects)
 * and finds the count unchanged. What this program shows, each with a check:
 *  - a reader of /user/name is not re-run by a write to /user/age (a
 *    sibling) or to /other, and is re-run by a write to /user/name, to its
 *    ancestors (/user, the whole value) and to its descendants
 *    (/user/name/first); a whole-value reader is re-run by all of them;
 *  - the equality cutoff still applies after the re-run: a write to /user
 *    that leaves the name as it was re-runs the name's reader, but not the
 *    computed reading that one;
 *  - effects (SYNC and loop) and one-shot trackings follow the same rule;
 *  - a path that does not exist yet (the read fails with TETHER_ENOTFOUND,
 *    or steps into a scalar) is tracked all the same: creating it re-runs
 *    the reader, removing it again too;
 *  - arrays, on the side of caution: a write to an element, a removal and an
 *    append re-run the readers of every index of that array and of the paths
 *    below its elements; a write below an element (/list/1/v) re-runs only
 *    the readers of that element's part;
 *  - several paths of one state read by one computed are each tracked; a
 *    whole-value read next to them keeps waking on any write; escaped
 *    member names ("/a~1b" is the member "a/b") are paths like any other;
 *  - dynamic dependencies: after a computed switches from /a to /b, a write
 *    to /a no longer re-runs it;
 *  - transactions wake the readers of the paths they touch, and only those;
 *    a batch that puts a part back re-runs nothing;
 *  - projection and index bindings read in a compute callback are path
 *    reads, and writes through bindings follow the same rule;
 *  - freeing a state re-runs its path readers (they get TETHER_ESTALE), and
 *    runtime teardown with path readers frees everything (valgrind);
 *  - bad pointers inside a compute callback fail cleanly and track nothing.
 *
 * Build: cc -std=c99 path_tracking.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* One lock for the counters (loop effects run on the loop thread). Never
 * held while calling a tether_ function. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- a reader: a computed or an effect that reads paths of a state ------ */

#define MAX_PATHS 4

typedef struct reader {
  tether_state_t s;
  const char *paths[MAX_PATHS]; /* read in order; NULL ends the list */
  int whole;                    /* also reads the whole state (tether_state_get) */
  tether_binding_t b;           /* or reads this binding instead, when has_b */
  int has_b;
  int return_error;             /* return the first failed read's code */
  int calls;                    /* runs of the callback */
  int rc[MAX_PATHS];            /* what each path read returned, last run */
} reader_t;

static void reader_init(reader_t *r, tether_state_t s, const char *p0, const char *p1) {
  memset(r, 0, sizeof *r);
  r->s = s;
  r->paths[0] = p0;
  r->paths[1] = p1;
}

static int calls_of(reader_t *r) {
  int n;
  pthread_mutex_lock(&mu);
  n = r->calls;
  pthread_mutex_unlock(&mu);
  return n;
}
#define CALLS(r) calls_of(r)

/* The reads: every path in order (a failed read is noted, not fatal), then
 * the whole value or the binding. The result is the first path's value (or
 * null when it failed), so equal parts give equal results. */
static int do_reads(reader_t *r, tether_value_t *result) {
  int i, rc = TETHER_OK;
  tether_value_t *v = NULL;
  for (i = 0; i < MAX_PATHS && r->paths[i]; i++) {
    tether_value_t *part = NULL;
    int got = tether_state_get_path(r->s, r->paths[i], &part);
    r->rc[i] = got;
    if (got == TETHER_OK && i == 0 && result) rc = tether_value_assign(result, part);
    if (got != TETHER_OK && r->return_error && rc == TETHER_OK) rc = got;
    if (part) tether_value_free(part);
  }
  if (r->whole && tether_state_get(r->s, &v) == TETHER_OK) tether_value_free(v);
  if (r->has_b) {
    v = NULL;
    r->rc[0] = tether_binding_get(r->b, &v);
    if (r->rc[0] == TETHER_OK && result) rc = tether_value_assign(result, v);
    if (v) tether_value_free(v);
  }
  pthread_mutex_lock(&mu);
  r->calls++;
  pthread_mutex_unlock(&mu);
  return rc;
}

static int compute_reads(tether_value_t *result, void *user_data) {
  return do_reads(user_data, result);
}

static void effect_reads(tether_effect_t e, void *user_data) {
  (void)e;
  (void)do_reads(user_data, NULL);
}

/* Reads a computed (bringing it up to date); its value is dropped. */
static int touch(tether_computed_t c) {
  tether_value_t *v = NULL;
  int rc = tether_computed_get(c, &v);
  if (v) tether_value_free(v);
  return rc;
}

/* A computed that reads another computed: the cutoff's witness. */
typedef struct downstream {
  tether_computed_t source;
  int calls;
} downstream_t;

static int compute_copy(tether_value_t *result, void *user_data) {
  downstream_t *d = user_data;
  tether_value_t *v = NULL;
  int rc = tether_computed_get(d->source, &v);
  d->calls++;
  if (rc == TETHER_OK) rc = tether_value_assign(result, v);
  if (v) tether_value_free(v);
  return rc;
}

static tether_runtime_t host_runtime(void) {
  tether_runtime_options_t o;
  tether_runtime_t rt = {0};
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  CHECK_OK(tether_runtime_new(&o, &rt));
  return rt;
}

#define PROFILE \
  "{\"user\":{\"name\":{\"first\":\"Ada\",\"last\":\"Lovelace\"},\"age\":36},\"other\":1}"

/* ---- siblings, ancestors, descendants ------------------------------------ */

TEST_CASE(path_tracking_siblings_and_ancestors) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  reader_t name, age, user, whole;
  tether_computed_t cn, ca, cu, cw;
  char buf[128];

  CHECK_OK(tether_state_new_json(rt, PROFILE, -1, 0, &s));
  reader_init(&name, s, "/user/name", NULL);
  reader_init(&age, s, "/user/age", NULL);
  reader_init(&user, s, "/user", NULL);
  reader_init(&whole, s, NULL, NULL);
  whole.whole = 1;
  CHECK_OK(tether_computed_new(rt, compute_reads, &name, NULL, &cn));
  CHECK_OK(tether_computed_new(rt, compute_reads, &age, NULL, &ca));
  CHECK_OK(tether_computed_new(rt, compute_reads, &user, NULL, &cu));
  CHECK_OK(tether_computed_new(rt, compute_reads, &whole, NULL, &cw));
#define TOUCH_ALL() (touch(cn), touch(ca), touch(cu), touch(cw))
#define EXPECT_CALLS(n, a, u, w)        \
  do {                                  \
    TOUCH_ALL();                        \
    CHECK_INT_EQ(CALLS(&name), (n));    \
    CHECK_INT_EQ(CALLS(&age), (a));     \
    CHECK_INT_EQ(CALLS(&user), (u));    \
    CHECK_INT_EQ(CALLS(&whole), (w));   \
  } while (0)

  EXPECT_CALLS(1, 1, 1, 1);
  /* A sibling: /user/age. Its reader, /user and the whole value re-run. */
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "37", -1));
  EXPECT_CALLS(1, 2, 2, 2);
  /* Elsewhere in the state: only the whole value. */
  CHECK_OK(tether_state_set_path_json(s, "/other", "2", -1));
  EXPECT_CALLS(1, 2, 2, 3);
  /* A new member beside them: the same. */
  CHECK_OK(tether_state_set_path_json(s, "/extra", "true", -1));
  EXPECT_CALLS(1, 2, 2, 4);
  CHECK_OK(tether_state_remove_path(s, "/extra"));
  EXPECT_CALLS(1, 2, 2, 5);
  /* A descendant of /user/name. */
  CHECK_OK(tether_state_set_path_json(s, "/user/name/first", "\"Augusta\"", -1));
  EXPECT_CALLS(2, 2, 3, 6);
  if (CHECK_OK(tether_computed_get_json(cn, 0, buf, sizeof buf, NULL)))
    CHECK_STR_EQ(buf, "{\"first\":\"Augusta\",\"last\":\"Lovelace\"}");
  /* The path itself. */
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "{\"first\":\"Augusta\",\"last\":\"King\"}", -1));
  EXPECT_CALLS(3, 2, 4, 7);
  /* An ancestor, /user, that changes the age only: both re-run (no part is
   * compared; the cutoff stops the name's readers, see the next case). */
  CHECK_OK(tether_state_set_path_json(
      s, "/user", "{\"name\":{\"first\":\"Augusta\",\"last\":\"King\"},\"age\":38}", -1));
  EXPECT_CALLS(4, 3, 5, 8);
  /* The whole value. */
  CHECK_OK(tether_state_set_json(s, "{\"user\":{\"name\":\"Grace\",\"age\":85},\"other\":1}", -1));
  EXPECT_CALLS(5, 4, 6, 9);
  if (CHECK_OK(tether_computed_get_json(cn, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "\"Grace\"");
  /* Equal writes change nothing and wake nobody. */
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Grace\"", -1));
  CHECK_OK(tether_state_set_json(s, "{\"user\":{\"name\":\"Grace\",\"age\":85},\"other\":1}", -1));
  EXPECT_CALLS(5, 4, 6, 9);
  /* Removing the member read: re-run, and the read now fails. */
  CHECK_OK(tether_state_remove_path(s, "/user/name"));
  EXPECT_CALLS(6, 4, 7, 10);
  CHECK_INT_EQ(name.rc[0], TETHER_ENOTFOUND);
#undef EXPECT_CALLS
#undef TOUCH_ALL
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_siblings_and_ancestors");
}

/* ---- the equality cutoff after a re-run ---------------------------------- */

TEST_CASE(path_tracking_cutoff) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  reader_t name;
  downstream_t d = {{0}, 0};
  tether_computed_t cn, cd;

  CHECK_OK(tether_state_new_json(rt, PROFILE, -1, 0, &s));
  reader_init(&name, s, "/user/name/first", NULL);
  CHECK_OK(tether_computed_new(rt, compute_reads, &name, NULL, &cn));
  d.source = cn;
  CHECK_OK(tether_computed_new(rt, compute_copy, &d, NULL, &cd));
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(CALLS(&name), 1);
  CHECK_INT_EQ(d.calls, 1);
  /* /user/name/last is a sibling: nothing runs. */
  CHECK_OK(tether_state_set_path_json(s, "/user/name/last", "\"King\"", -1));
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(CALLS(&name), 1);
  CHECK_INT_EQ(d.calls, 1);
  /* An ancestor write that leaves first as it was: the reader re-runs, finds
   * the same result, and the computed downstream does not run. */
  CHECK_OK(tether_state_set_path_json(s, "/user", "{\"name\":{\"first\":\"Ada\"},\"age\":1}", -1));
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(CALLS(&name), 2);
  CHECK_INT_EQ(d.calls, 1);
  CHECK_OK(tether_state_set_json(s, "{\"user\":{\"name\":{\"first\":\"Ada\"}}}", -1));
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(CALLS(&name), 3);
  CHECK_INT_EQ(d.calls, 1);
  /* A real change goes through. */
  CHECK_OK(tether_state_set_path_json(s, "/user/name/first", "\"Ida\"", -1));
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(CALLS(&name), 4);
  CHECK_INT_EQ(d.calls, 2);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_cutoff");
}

/* ---- effects and trackings ----------------------------------------------- */

typedef struct fired {
  int count;
} fired_t;

static fired_t tracking_fires;

static void track_apply(void *user_data) {
  reader_t *r = user_data;
  (void)do_reads(r, NULL);
}

static void track_fired_count(tether_tracking_t t, uint64_t revision, void *user_data) {
  (void)t;
  (void)revision;
  (void)user_data;
  pthread_mutex_lock(&mu);
  tracking_fires.count++;
  pthread_mutex_unlock(&mu);
}

static int fires(void) {
  int n;
  pthread_mutex_lock(&mu);
  n = tracking_fires.count;
  pthread_mutex_unlock(&mu);
  return n;
}

TEST_CASE(path_tracking_effects) {
  tether_runtime_t rt;
  tether_state_t s;
  reader_t sync_name, loop_name, track_name;
  tether_effect_t es, el;
  tether_tracking_t t;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("path_tracking_effects");
  CHECK_OK(tether_state_new_json(rt, PROFILE, -1, 0, &s));
  reader_init(&sync_name, s, "/user/name", NULL);
  reader_init(&loop_name, s, "/user/name", NULL);
  reader_init(&track_name, s, "/user/name/first", NULL);
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, effect_reads, NULL, &sync_name, NULL, &es));
  CHECK_OK(tether_effect_new(rt, 0, effect_reads, NULL, &loop_name, NULL, &el));
  CHECK_OK(tether_track(rt, TETHER_EFFECT_SYNC, track_apply, track_fired_count, &track_name, NULL, &t));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&sync_name), 1);
  CHECK_INT_EQ(CALLS(&loop_name), 1);
  CHECK_INT_EQ(CALLS(&track_name), 1);

  /* Siblings and elsewhere: no run, no fire. */
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "37", -1));
  CHECK_OK(tether_state_set_path_json(s, "/other", "2", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user/name/last", "\"King\"", -1)); /* below name, beside first */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&sync_name), 2); /* /user/name/last is below /user/name */
  CHECK_INT_EQ(CALLS(&loop_name), 2);
  CHECK_INT_EQ(fires(), 0);           /* ... but beside /user/name/first */

  /* The path read by all three. */
  CHECK_OK(tether_state_set_path_json(s, "/user/name/first", "\"Augusta\"", -1));
  CHECK_INT_EQ(CALLS(&sync_name), 3); /* before the setter returned */
  CHECK_INT_EQ(fires(), 1);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&loop_name), 3);

  /* An ancestor re-runs effects even when the part is unchanged (the effect
   * has no value to cut off on). */
  CHECK_OK(tether_state_set_path_json(
      s, "/user", "{\"name\":{\"first\":\"Augusta\",\"last\":\"King\"},\"age\":40}", -1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&sync_name), 4);
  CHECK_INT_EQ(CALLS(&loop_name), 4);
  CHECK_INT_EQ(fires(), 1); /* fired once, then disarmed */

  /* A batch that puts the part back runs nothing. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_path_json(s, "/user/name/first", "\"X\"", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user/name/first", "\"Augusta\"", -1));
  CHECK_OK(tether_batch_end(rt));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&sync_name), 4);
  CHECK_INT_EQ(CALLS(&loop_name), 4);
  /* ... even when a sibling changed in the same batch. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "41", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user/name/first", "\"X\"", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user/name/first", "\"Augusta\"", -1));
  CHECK_OK(tether_batch_end(rt));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(CALLS(&sync_name), 5); /* conservative: the state is not back, so its path gets a new version */
  CHECK_INT_EQ(CALLS(&loop_name), 5);

  CHECK_OK(tether_effect_free(es));
  CHECK_OK(tether_effect_free(el));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_effects");
}

/* ---- paths that do not exist yet ------------------------------------------ */

static int compute_email_or_none(tether_value_t *result, void *user_data) {
  reader_t *r = user_data;
  tether_value_t *v = NULL;
  int rc = tether_state_get_path(r->s, "/user/email", &v);
  pthread_mutex_lock(&mu);
  r->calls++;
  r->rc[0] = rc;
  pthread_mutex_unlock(&mu);
  if (rc == TETHER_OK) {
    rc = tether_value_assign(result, v);
    tether_value_free(v);
    return rc;
  }
  return tether_value_set_string(result, "(none)", -1); /* handles the error */
}

TEST_CASE(path_tracking_missing_paths) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  reader_t email, failing, deep, through;
  tether_computed_t ce, cf, cd, ct;
  char buf[64];

  CHECK_OK(tether_state_new_json(rt, "{\"user\":{\"age\":36},\"n\":1}", -1, 0, &s));
  reader_init(&email, s, NULL, NULL);
  reader_init(&failing, s, "/user/phone", NULL);  /* returns the error */
  failing.return_error = 1;
  reader_init(&deep, s, "/account/plan/name", NULL);  /* nothing on the way exists */
  reader_init(&through, s, "/user/age/years", NULL);  /* steps into a scalar */
  CHECK_OK(tether_computed_new(rt, compute_email_or_none, &email, NULL, &ce));
  CHECK_OK(tether_computed_new(rt, compute_reads, &failing, NULL, &cf));
  CHECK_OK(tether_computed_new(rt, compute_reads, &deep, NULL, &cd));
  CHECK_OK(tether_computed_new(rt, compute_reads, &through, NULL, &ct));
  if (CHECK_OK(tether_computed_get_json(ce, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "\"(none)\"");
  CHECK_INT_EQ(email.rc[0], TETHER_ENOTFOUND);
  CHECK_ERR(touch(cf), TETHER_ENOTFOUND); /* the compute's error, cached */
  CHECK_INT_EQ(failing.rc[0], TETHER_ENOTFOUND);
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(deep.rc[0], TETHER_ENOTFOUND);
  CHECK_OK(touch(ct));
  CHECK_INT_EQ(through.rc[0], TETHER_ETYPE);

  /* Writes elsewhere wake none of them. */
  CHECK_OK(tether_state_set_path_json(s, "/n", "2", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Ada\"", -1));
  CHECK_OK(touch(ce));
  CHECK_ERR(touch(cf), TETHER_ENOTFOUND);
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(CALLS(&email), 1);
  CHECK_INT_EQ(CALLS(&failing), 1);
  CHECK_INT_EQ(CALLS(&deep), 1);

  /* Creating the path wakes its reader. */
  CHECK_OK(tether_state_set_path_json(s, "/user/email", "\"ada@example.org\"", -1));
  if (CHECK_OK(tether_computed_get_json(ce, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "\"ada@example.org\"");
  CHECK_INT_EQ(CALLS(&email), 2);
  CHECK_OK(tether_state_set_path_json(s, "/user/phone", "\"555\"", -1));
  CHECK_OK(touch(cf));
  CHECK_INT_EQ(CALLS(&failing), 2);
  CHECK_INT_EQ(failing.rc[0], TETHER_OK);
  CHECK_INT_EQ(CALLS(&email), 2);
  /* ... and so does removing it again. */
  CHECK_OK(tether_state_remove_path(s, "/user/email"));
  if (CHECK_OK(tether_computed_get_json(ce, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "\"(none)\"");
  CHECK_INT_EQ(CALLS(&email), 3);
  CHECK_OK(touch(cf));
  CHECK_INT_EQ(CALLS(&failing), 2);
  CHECK_OK(tether_state_remove_path(s, "/user/phone"));
  CHECK_ERR(touch(cf), TETHER_ENOTFOUND);
  CHECK_INT_EQ(CALLS(&failing), 3);

  /* A deep path is created by a write of an ancestor that did not exist. */
  CHECK_OK(tether_state_set_path_json(s, "/account", "{\"plan\":{\"name\":\"pro\"}}", -1));
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(CALLS(&deep), 2);
  CHECK_INT_EQ(deep.rc[0], TETHER_OK);
  CHECK_INT_EQ(CALLS(&failing), 3);

  /* Through a scalar: replacing the scalar by an object wakes the reader. */
  CHECK_OK(touch(ct));
  CHECK_INT_EQ(CALLS(&through), 1);
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "{\"years\":36}", -1));
  CHECK_OK(touch(ct));
  CHECK_INT_EQ(CALLS(&through), 2);
  CHECK_INT_EQ(through.rc[0], TETHER_OK);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_missing_paths");
}

/* ---- arrays --------------------------------------------------------------- */

TEST_CASE(path_tracking_arrays) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s, m;
  reader_t third_v, first, list, other, len_minus, inner;
  tether_computed_t c3, c0, cl, co, cm, ci;
  char buf[64];

  CHECK_OK(tether_state_new_json(rt, "{\"list\":[{\"v\":0},{\"v\":1},{\"v\":2},{\"v\":3}],\"other\":0}",
                                 -1, 0, &s));
  reader_init(&third_v, s, "/list/3/v", NULL); /* below an element */
  reader_init(&first, s, "/list/0", NULL);     /* an element */
  reader_init(&list, s, "/list", NULL);        /* the array */
  reader_init(&other, s, "/other", NULL);
  reader_init(&len_minus, s, "/list/-", NULL); /* "-" names no element: always fails */
  CHECK_OK(tether_computed_new(rt, compute_reads, &third_v, NULL, &c3));
  CHECK_OK(tether_computed_new(rt, compute_reads, &first, NULL, &c0));
  CHECK_OK(tether_computed_new(rt, compute_reads, &list, NULL, &cl));
  CHECK_OK(tether_computed_new(rt, compute_reads, &other, NULL, &co));
  CHECK_OK(tether_computed_new(rt, compute_reads, &len_minus, NULL, &cm));
#define TOUCH_ALL() (touch(c3), touch(c0), touch(cl), touch(co), touch(cm))
#define EXPECT_CALLS(t, f, l, o, mi)         \
  do {                                       \
    TOUCH_ALL();                             \
    CHECK_INT_EQ(CALLS(&third_v), (t));      \
    CHECK_INT_EQ(CALLS(&first), (f));        \
    CHECK_INT_EQ(CALLS(&list), (l));         \
    CHECK_INT_EQ(CALLS(&other), (o));        \
    CHECK_INT_EQ(CALLS(&len_minus), (mi));   \
  } while (0)
  EXPECT_CALLS(1, 1, 1, 1, 1);
  CHECK(len_minus.rc[0] != TETHER_OK);

  /* Below element 1 (/list/1/v): element 1 and its ancestors only. No index
   * moves, so /list/3/v and /list/0 stay asleep. */
  CHECK_OK(tether_state_set_path_json(s, "/list/1/v", "10", -1));
  EXPECT_CALLS(1, 1, 2, 1, 1);
  /* An element (/list/1): the whole array, every index and everything below. */
  CHECK_OK(tether_state_set_path_json(s, "/list/1", "{\"v\":11}", -1));
  EXPECT_CALLS(2, 2, 3, 1, 2);
  /* A removal shifts the elements after it: /list/3 is gone, /list/0 is the
   * old /list/1. */
  CHECK_OK(tether_state_remove_path(s, "/list/0"));
  EXPECT_CALLS(3, 3, 4, 1, 3);
  CHECK_INT_EQ(third_v.rc[0], TETHER_ERANGE);
  if (CHECK_OK(tether_computed_get_json(c0, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "{\"v\":11}");
  /* An append creates /list/3 again. */
  CHECK_OK(tether_state_set_path_json(s, "/list/-", "{\"v\":30}", -1));
  EXPECT_CALLS(4, 4, 5, 1, 4);
  CHECK_INT_EQ(third_v.rc[0], TETHER_OK);
  if (CHECK_OK(tether_computed_get_json(c3, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "30");
  /* An append at the index that names the end (JSON Patch's /list/4). */
  CHECK_OK(tether_state_set_path_json(s, "/list/4", "{\"v\":40}", -1));
  EXPECT_CALLS(5, 5, 6, 1, 5);
  /* Beside the array: only its reader. */
  CHECK_OK(tether_state_set_path_json(s, "/other", "1", -1));
  EXPECT_CALLS(5, 5, 6, 2, 5);
  /* The array replaced whole. */
  CHECK_OK(tether_state_set_path_json(s, "/list", "[]", -1));
  EXPECT_CALLS(6, 6, 7, 2, 6);
#undef EXPECT_CALLS
#undef TOUCH_ALL

  /* Arrays in arrays: an element of the inner array /m/0 wakes the readers
   * of /m/0's elements, not those of /m/1's. */
  CHECK_OK(tether_state_new_json(rt, "{\"m\":[[1,2],[3,4]]}", -1, 0, &m));
  reader_init(&inner, m, "/m/1/0", NULL);
  CHECK_OK(tether_computed_new(rt, compute_reads, &inner, NULL, &ci));
  CHECK_OK(touch(ci));
  CHECK_OK(tether_state_set_path_json(m, "/m/0/1", "20", -1));
  CHECK_OK(tether_state_remove_path(m, "/m/0/0"));
  CHECK_OK(tether_state_set_path_json(m, "/m/0/-", "5", -1));
  CHECK_OK(touch(ci));
  CHECK_INT_EQ(CALLS(&inner), 1);
  CHECK_OK(tether_state_set_path_json(m, "/m/1/1", "40", -1)); /* its own array */
  CHECK_OK(touch(ci));
  CHECK_INT_EQ(CALLS(&inner), 2);
  CHECK_OK(tether_state_remove_path(m, "/m/0")); /* /m/1 becomes /m/0 */
  CHECK_OK(touch(ci));
  CHECK_INT_EQ(CALLS(&inner), 3);
  CHECK_INT_EQ(inner.rc[0], TETHER_ERANGE);

  /* A state whose value is an array: its elements are the root's. */
  {
    tether_state_t a;
    reader_t second;
    tether_computed_t c2;
    CHECK_OK(tether_state_new_json(rt, "[1,2,3]", -1, 0, &a));
    reader_init(&second, a, "/1", NULL);
    CHECK_OK(tether_computed_new(rt, compute_reads, &second, NULL, &c2));
    CHECK_OK(touch(c2));
    CHECK_OK(tether_state_set_path_json(a, "/2", "30", -1));
    CHECK_OK(touch(c2));
    CHECK_INT_EQ(CALLS(&second), 2);
    CHECK_OK(tether_state_remove_path(a, "/0"));
    CHECK_OK(touch(c2));
    CHECK_INT_EQ(CALLS(&second), 3);
    if (CHECK_OK(tether_computed_get_json(c2, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "30");
  }
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_arrays");
}

/* ---- several paths, and the whole value beside paths ---------------------- */

TEST_CASE(path_tracking_several_paths) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s, t;
  reader_t ab, mixed, twice, two_states;
  tether_computed_t cab, cm, ct, c2;

  CHECK_OK(tether_state_new_json(rt, "{\"a\":1,\"b\":2,\"c\":3}", -1, 0, &s));
  CHECK_OK(tether_state_new_json(rt, "{\"a\":1,\"b\":2}", -1, 0, &t));
  reader_init(&ab, s, "/a", "/b");
  reader_init(&mixed, s, "/a", NULL);
  mixed.whole = 1;
  reader_init(&twice, s, "/a", "/a");
  twice.paths[2] = "/a";
  CHECK_OK(tether_computed_new(rt, compute_reads, &ab, NULL, &cab));
  CHECK_OK(tether_computed_new(rt, compute_reads, &mixed, NULL, &cm));
  CHECK_OK(tether_computed_new(rt, compute_reads, &twice, NULL, &ct));
#define TOUCH_ALL() (touch(cab), touch(cm), touch(ct))
  TOUCH_ALL();
  CHECK_OK(tether_state_set_path_json(s, "/c", "30", -1));
  TOUCH_ALL();
  CHECK_INT_EQ(CALLS(&ab), 1);
  CHECK_INT_EQ(CALLS(&mixed), 2); /* reads the whole value too */
  CHECK_INT_EQ(CALLS(&twice), 1);
  CHECK_OK(tether_state_set_path_json(s, "/a", "10", -1));
  TOUCH_ALL();
  CHECK_INT_EQ(CALLS(&ab), 2);
  CHECK_INT_EQ(CALLS(&mixed), 3);
  CHECK_INT_EQ(CALLS(&twice), 2);
  CHECK_OK(tether_state_set_path_json(s, "/b", "20", -1));
  TOUCH_ALL();
  CHECK_INT_EQ(CALLS(&ab), 3);
  CHECK_INT_EQ(CALLS(&mixed), 4);
  CHECK_INT_EQ(CALLS(&twice), 2);
  /* Repeated evaluations keep working (the links are reused). */
  CHECK_OK(tether_state_set_path_json(s, "/c", "31", -1));
  CHECK_OK(tether_state_set_path_json(s, "/b", "21", -1));
  TOUCH_ALL();
  CHECK_INT_EQ(CALLS(&ab), 4);
  CHECK_INT_EQ(CALLS(&twice), 2);
#undef TOUCH_ALL

  /* The same path of two states is two dependencies. */
  reader_init(&two_states, s, "/a", NULL);
  CHECK_OK(tether_state_binding(t, &two_states.b));
  {
    tether_binding_t whole_b = two_states.b;
    CHECK_OK(tether_binding_project(whole_b, "/a", &two_states.b));
    CHECK_OK(tether_binding_free(whole_b)); /* the projection outlives it */
  }
  two_states.has_b = 1;
  CHECK_OK(tether_computed_new(rt, compute_reads, &two_states, NULL, &c2));
  CHECK_OK(touch(c2));
  CHECK_OK(tether_state_set_path_json(t, "/b", "5", -1));
  CHECK_OK(tether_state_set_path_json(s, "/b", "5", -1));
  CHECK_OK(touch(c2));
  CHECK_INT_EQ(CALLS(&two_states), 1);
  CHECK_OK(tether_state_set_path_json(t, "/a", "5", -1));
  CHECK_OK(touch(c2));
  CHECK_INT_EQ(CALLS(&two_states), 2);
  CHECK_OK(tether_state_set_path_json(s, "/a", "5", -1));
  CHECK_OK(touch(c2));
  CHECK_INT_EQ(CALLS(&two_states), 3);

  /* Escaped names ("~1" is "/", "~0" is "~"): "a/b" and "a~b" are siblings. */
  {
    tether_state_t e;
    reader_t slash;
    tether_computed_t cs;
    char buf[32];
    CHECK_OK(tether_state_new_json(rt, "{\"a/b\":1,\"a~b\":2,\"a\":{\"b\":3}}", -1, 0, &e));
    reader_init(&slash, e, "/a~1b", NULL);
    CHECK_OK(tether_computed_new(rt, compute_reads, &slash, NULL, &cs));
    if (CHECK_OK(tether_computed_get_json(cs, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "1");
    CHECK_OK(tether_state_set_path_json(e, "/a~0b", "20", -1));
    CHECK_OK(tether_state_set_path_json(e, "/a/b", "30", -1));
    CHECK_OK(touch(cs));
    CHECK_INT_EQ(CALLS(&slash), 1);
    CHECK_OK(tether_state_set_path_json(e, "/a~1b", "10", -1));
    if (CHECK_OK(tether_computed_get_json(cs, 0, buf, sizeof buf, NULL))) CHECK_STR_EQ(buf, "10");
    CHECK_INT_EQ(CALLS(&slash), 2);
  }
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_several_paths");
}

/* ---- dynamic dependencies ------------------------------------------------- */

typedef struct branch {
  tether_state_t s;
  int calls;
} branch_t;

/* Reads /flag, then /a when it is true, /b when it is false. */
static int compute_branch(tether_value_t *result, void *user_data) {
  branch_t *b = user_data;
  tether_value_t *flag = NULL, *v = NULL;
  bool on = false;
  int rc = tether_state_get_path(b->s, "/flag", &flag);
  b->calls++;
  if (rc != TETHER_OK) return rc;
  tether_value_get_bool(flag, &on);
  tether_value_free(flag);
  rc = tether_state_get_path(b->s, on ? "/a" : "/b", &v);
  if (rc != TETHER_OK) return rc;
  rc = tether_value_assign(result, v);
  tether_value_free(v);
  return rc;
}

TEST_CASE(path_tracking_dynamic) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  branch_t b = {{0}, 0};
  tether_computed_t c;
  int64_t v = 0;

  CHECK_OK(tether_state_new_json(rt, "{\"flag\":true,\"a\":1,\"b\":2,\"z\":0}", -1, 0, &s));
  b.s = s;
  CHECK_OK(tether_computed_new(rt, compute_branch, &b, NULL, &c));
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(v, 1);
  CHECK_OK(tether_state_set_path_json(s, "/b", "20", -1)); /* not read yet */
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(b.calls, 1);
  CHECK_OK(tether_state_set_path_json(s, "/flag", "false", -1)); /* switch to /b */
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(v, 20);
  CHECK_INT_EQ(b.calls, 2);
  CHECK_OK(tether_state_set_path_json(s, "/a", "10", -1)); /* no longer read */
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(b.calls, 2);
  CHECK_OK(tether_state_set_path_json(s, "/b", "21", -1));
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(v, 21);
  CHECK_INT_EQ(b.calls, 3);
  /* Back and forth a few times: each switch drops the path left behind. */
  for (int i = 0; i < 3; i++) {
    CHECK_OK(tether_state_set_path_json(s, "/flag", "true", -1));
    CHECK_OK(tether_computed_get_int(c, &v));
    CHECK_OK(tether_state_set_path_json(s, "/flag", "false", -1));
    CHECK_OK(tether_computed_get_int(c, &v));
  }
  CHECK_INT_EQ(b.calls, 9);
  CHECK_OK(tether_state_set_path_json(s, "/a", "11", -1));
  CHECK_OK(tether_state_set_path_json(s, "/z", "1", -1));
  CHECK_OK(tether_computed_get_int(c, &v));
  CHECK_INT_EQ(b.calls, 9);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_dynamic");
}

/* ---- transactions --------------------------------------------------------- */

TEST_CASE(path_tracking_transactions) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s, other;
  reader_t name, list3;
  tether_computed_t cn, cl;
  tether_transaction_t txn;

  CHECK_OK(tether_state_new_json(rt, "{\"user\":{\"name\":\"Ada\",\"age\":36},\"list\":[0,1,2,3]}", -1, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &other));
  reader_init(&name, s, "/user/name", NULL);
  reader_init(&list3, s, "/list/3", NULL);
  CHECK_OK(tether_computed_new(rt, compute_reads, &name, NULL, &cn));
  CHECK_OK(tether_computed_new(rt, compute_reads, &list3, NULL, &cl));
  CHECK_OK(touch(cn));
  CHECK_OK(touch(cl));

  /* Two writes elsewhere (and another state), one commit: no re-run. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "37", -1));
  CHECK_OK(tether_state_set_int(other, 1));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_OK(touch(cn));
  CHECK_INT_EQ(CALLS(&name), 1);
  /* One path write in a transaction. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Grace\"", -1));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_OK(touch(cn));
  CHECK_INT_EQ(CALLS(&name), 2);
  /* Several writes, one of them to the path: one re-run. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "38", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Ida\"", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Ada\"", -1));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_OK(touch(cn));
  CHECK_INT_EQ(CALLS(&name), 3);
  /* An ancestor in a transaction. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "39", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user", "{\"name\":\"Ada\",\"age\":1}", -1));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_OK(touch(cn));
  CHECK_INT_EQ(CALLS(&name), 4);
  /* The whole value in a transaction. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_json(s, "{\"user\":{\"name\":\"Ada\",\"age\":2},\"list\":[0,1,2,3]}", -1));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_OK(touch(cn));
  CHECK_INT_EQ(CALLS(&name), 5);
  /* The whole-value write woke every path, /list/3 too. */
  CHECK_OK(touch(cl));
  CHECK_INT_EQ(CALLS(&list3), 2);
  /* A removal from the array in a transaction with another write. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "3", -1));
  CHECK_OK(tether_state_remove_path(s, "/list/0"));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_OK(touch(cl));
  CHECK_OK(touch(cn));
  CHECK_INT_EQ(CALLS(&list3), 3);
  CHECK_INT_EQ(list3.rc[0], TETHER_ERANGE);
  CHECK_INT_EQ(CALLS(&name), 5);
  /* An aborted transaction runs nothing. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Nobody\"", -1));
  CHECK_OK(tether_transaction_abort(txn));
  CHECK_OK(touch(cn));
  CHECK_INT_EQ(CALLS(&name), 5);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_transactions");
}

/* ---- bindings -------------------------------------------------------------- */

TEST_CASE(path_tracking_bindings) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  tether_binding_t whole, user, name, age, list, third;
  reader_t by_name, by_index, by_user_name;
  tether_computed_t cn, ci, cu;

  CHECK_OK(tether_state_new_json(rt, "{\"user\":{\"name\":\"Ada\",\"age\":36},\"list\":[0,1,2,3]}", -1, 0, &s));
  CHECK_OK(tether_state_binding(s, &whole));
  CHECK_OK(tether_binding_project(whole, "/user", &user));
  CHECK_OK(tether_binding_project(user, "/name", &name));  /* $profile.user.name */
  CHECK_OK(tether_binding_project(user, "/age", &age));
  CHECK_OK(tether_binding_project(whole, "/list", &list));
  CHECK_OK(tether_binding_index(list, 3, &third));         /* $profile.list[3] */
  reader_init(&by_name, s, NULL, NULL);
  by_name.b = name;
  by_name.has_b = 1;
  reader_init(&by_index, s, NULL, NULL);
  by_index.b = third;
  by_index.has_b = 1;
  reader_init(&by_user_name, s, "/user/name", NULL); /* the same part, read by path */
  CHECK_OK(tether_computed_new(rt, compute_reads, &by_name, NULL, &cn));
  CHECK_OK(tether_computed_new(rt, compute_reads, &by_index, NULL, &ci));
  CHECK_OK(tether_computed_new(rt, compute_reads, &by_user_name, NULL, &cu));
#define TOUCH_ALL() (touch(cn), touch(ci), touch(cu))
  TOUCH_ALL();
  /* Writes through a sibling's binding wake nothing here. */
  CHECK_OK(tether_binding_set_json(age, "37", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user/age", "38", -1));
  TOUCH_ALL();
  CHECK_INT_EQ(CALLS(&by_name), 1);
  CHECK_INT_EQ(CALLS(&by_index), 1);
  CHECK_INT_EQ(CALLS(&by_user_name), 1);
  /* Through the name's binding: both readers of the name. */
  CHECK_OK(tether_binding_set_json(name, "\"Grace\"", -1));
  TOUCH_ALL();
  CHECK_INT_EQ(CALLS(&by_name), 2);
  CHECK_INT_EQ(CALLS(&by_user_name), 2);
  CHECK_INT_EQ(CALLS(&by_index), 1);
  /* Through the ancestor's binding. */
  CHECK_OK(tether_binding_set_json(user, "{\"name\":\"Grace\",\"age\":1}", -1));
  TOUCH_ALL();
  CHECK_INT_EQ(CALLS(&by_name), 3);
  CHECK_INT_EQ(CALLS(&by_user_name), 3);
  CHECK_INT_EQ(CALLS(&by_index), 1);
  /* The index binding: an element write elsewhere in its array wakes it. */
  {
    tether_binding_t first;
    CHECK_OK(tether_binding_index(list, 0, &first));
    CHECK_OK(tether_binding_set_json(first, "10", -1));
    TOUCH_ALL();
    CHECK_INT_EQ(CALLS(&by_index), 2);
    CHECK_INT_EQ(CALLS(&by_name), 3);
    CHECK_OK(tether_binding_set_json(third, "30", -1));
    TOUCH_ALL();
    CHECK_INT_EQ(CALLS(&by_index), 3);
    CHECK_OK(tether_binding_free(first));
  }
  /* A binding of the whole state reads the whole value. */
  {
    reader_t by_whole;
    tether_computed_t cw;
    reader_init(&by_whole, s, NULL, NULL);
    by_whole.b = whole;
    by_whole.has_b = 1;
    CHECK_OK(tether_computed_new(rt, compute_reads, &by_whole, NULL, &cw));
    CHECK_OK(touch(cw));
    CHECK_OK(tether_binding_set_json(age, "2", -1));
    CHECK_OK(touch(cw));
    CHECK_INT_EQ(CALLS(&by_whole), 2);
  }
#undef TOUCH_ALL
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_bindings");
}

/* ---- freeing ----------------------------------------------------------------- */

TEST_CASE(path_tracking_freed_state) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s;
  reader_t name, deep;
  tether_computed_t cn, cd;
  tether_effect_t e;
  reader_t fx;

  CHECK_OK(tether_state_new_json(rt, PROFILE, -1, 0, &s));
  reader_init(&name, s, "/user/name", "/user/age");
  reader_init(&deep, s, "/user/name/first", NULL);
  reader_init(&fx, s, "/user", NULL);
  CHECK_OK(tether_computed_new(rt, compute_reads, &name, NULL, &cn));
  CHECK_OK(tether_computed_new(rt, compute_reads, &deep, NULL, &cd));
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, effect_reads, NULL, &fx, NULL, &e));
  CHECK_OK(touch(cn));
  CHECK_OK(touch(cd));
  CHECK_OK(tether_state_free(s));
  CHECK_OK(tether_runtime_flush(rt));
  /* Woken, re-run, and the read is stale now. */
  CHECK_OK(touch(cn));
  CHECK_INT_EQ(CALLS(&name), 2);
  CHECK_INT_EQ(name.rc[0], TETHER_ESTALE);
  CHECK_INT_EQ(name.rc[1], TETHER_ESTALE);
  CHECK_OK(touch(cd));
  CHECK_INT_EQ(CALLS(&deep), 2);
  CHECK_INT_EQ(deep.rc[0], TETHER_ESTALE);
  CHECK_INT_EQ(CALLS(&fx), 2);
  CHECK_INT_EQ(fx.rc[0], TETHER_ESTALE);
  /* A new state in the freed slot does not wake them. */
  {
    tether_state_t again;
    CHECK_OK(tether_state_new_json(rt, PROFILE, -1, 0, &again));
    CHECK_OK(tether_state_set_path_json(again, "/user/name/first", "\"X\"", -1));
    CHECK_OK(touch(cn));
    CHECK_OK(touch(cd));
    CHECK_INT_EQ(CALLS(&name), 2);
    CHECK_INT_EQ(CALLS(&deep), 2);
    CHECK_INT_EQ(CALLS(&fx), 2);
  }
  /* Teardown with live path readers (valgrind checks that nothing leaks). */
  {
    tether_state_t t;
    reader_t live;
    tether_computed_t cl;
    CHECK_OK(tether_state_new_json(rt, PROFILE, -1, 0, &t));
    reader_init(&live, t, "/user/name/first", "/other");
    CHECK_OK(tether_computed_new(rt, compute_reads, &live, NULL, &cl));
    CHECK_OK(touch(cl));
  }
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_freed_state");
}

/* ---- bad input inside a compute callback ------------------------------------ */

typedef struct bad {
  tether_state_t s;
  tether_state_t freed;
  int calls;
  int rc[6];
  int then_good; /* after the bad reads, read /good */
} bad_t;

static int compute_bad(tether_value_t *result, void *user_data) {
  bad_t *b = user_data;
  tether_value_t *v = NULL;
  b->calls++;
  b->rc[0] = tether_state_get_path(b->s, "user/name", &v);   /* no leading '/' */
  b->rc[1] = tether_state_get_path(b->s, "/user/~2", &v);    /* bad escape */
  b->rc[2] = tether_state_get_path(b->s, NULL, &v);
  b->rc[3] = tether_state_get_path(b->s, "/user/name", NULL);  /* no out */
  b->rc[4] = tether_state_get_path(b->freed, "/user/name", &v); /* stale state */
  b->rc[5] = tether_state_get_path((tether_state_t){0}, "/user/name", &v);
  if (v) tether_value_free(v); /* never set */
  if (b->then_good) {
    int rc = tether_state_get_path(b->s, "/good", &v);
    if (rc == TETHER_OK) {
      rc = tether_value_assign(result, v);
      tether_value_free(v);
    }
    return rc;
  }
  return tether_value_set_int(result, 1);
}

TEST_CASE(path_tracking_bad_input) {
  tether_runtime_t rt = host_runtime();
  tether_state_t s, gone;
  bad_t only = {{0}, {0}, 0, {0}, 0}, mixed = {{0}, {0}, 0, {0}, 1};
  tether_computed_t c1, c2;
  int64_t v = 0;

  CHECK_OK(tether_state_new_json(rt, "{\"user\":{\"name\":\"Ada\"},\"good\":5}", -1, 0, &s));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &gone));
  CHECK_OK(tether_state_free(gone));
  only.s = mixed.s = s;
  only.freed = mixed.freed = gone;
  CHECK_OK(tether_computed_new(rt, compute_bad, &only, NULL, &c1));
  CHECK_OK(tether_computed_new(rt, compute_bad, &mixed, NULL, &c2));
  CHECK_OK(tether_computed_get_int(c1, &v));
  CHECK_INT_EQ(only.rc[0], TETHER_EPATH);
  CHECK_INT_EQ(only.rc[1], TETHER_EPATH);
  CHECK_INT_EQ(only.rc[2], TETHER_EINVAL);
  CHECK_INT_EQ(only.rc[3], TETHER_EINVAL);
  CHECK_INT_EQ(only.rc[4], TETHER_ESTALE);
  CHECK_INT_EQ(only.rc[5], TETHER_ESTALE);
  CHECK_OK(tether_computed_get_int(c2, &v));
  CHECK_INT_EQ(v, 5);
  /* The failed reads recorded nothing: no write to the state wakes c1, and
   * only /good wakes c2. */
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Grace\"", -1));
  CHECK_OK(tether_state_set_path_json(s, "/user", "{}", -1));
  CHECK_OK(tether_state_set_json(s, "{\"user\":{\"name\":\"Ida\"},\"good\":5}", -1));
  CHECK_OK(tether_computed_get_int(c1, &v));
  CHECK_INT_EQ(only.calls, 1);
  CHECK_OK(tether_state_set_path_json(s, "/user/name", "\"Ada\"", -1));
  CHECK_OK(tether_computed_get_int(c2, &v));
  CHECK_INT_EQ(mixed.calls, 2); /* the whole-value write above */
  CHECK_OK(tether_state_set_path_json(s, "/good", "6", -1));
  CHECK_OK(tether_computed_get_int(c2, &v));
  CHECK_INT_EQ(v, 6);
  CHECK_INT_EQ(mixed.calls, 3);
  CHECK_INT_EQ(only.calls, 1);
  /* Outside callbacks the same calls fail the same way, and still work. */
  {
    tether_value_t *out = NULL;
    CHECK_ERR(tether_state_get_path(s, "user", &out), TETHER_EPATH);
    CHECK_ERR(tether_state_get_path(s, "/user/~", &out), TETHER_EPATH);
    CHECK_ERR(tether_state_get_path(s, NULL, &out), TETHER_EINVAL);
    CHECK_ERR(tether_state_get_path(gone, "/good", &out), TETHER_ESTALE);
    if (CHECK_OK(tether_state_get_path(s, "/good", &out))) tether_value_free(out);
  }
  CHECK_OK(tether_runtime_free(rt));
  return check_report("path_tracking_bad_input");
}
