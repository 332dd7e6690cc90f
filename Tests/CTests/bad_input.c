/*
 * bad_input.c — every kind of wrong call, and what Tether answers.
 *
 * The error model (tether.h, "Conventions"):
 *  - every function returns TETHER_OK (0) or a negative TETHER_E* code;
 *  - out-parameters are written only on success;
 *  - tether_last_error() (per thread) then says what was wrong;
 *  - nothing is half-applied: a failed write leaves the state, its revision
 *    and its observers exactly as they were;
 *  - handles are generational ids: zero, forged, freed and "wrong kind"
 *    handles get TETHER_ESTALE, never a crash.
 *
 * Each section below feeds one family of bad input and checks the exact
 * error code, that tether_last_error() is not empty (CHECK_ERR does that
 * every time) and, where it matters, that the message names the problem.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* A pointer no library would return: out-params must keep it on failure. */
static char sentinel_object;
#define SENTINEL ((tether_value_t *)(void *)&sentinel_object)

/* ---- destroy counters ------------------------------------------------------ */

static pthread_mutex_t destroy_mu = PTHREAD_MUTEX_INITIALIZER;

static void count_destroy(void *user_data) {
  pthread_mutex_lock(&destroy_mu);
  (*(int *)user_data)++;
  pthread_mutex_unlock(&destroy_mu);
}

static int destroyed(int *counter) {
  int n;
  pthread_mutex_lock(&destroy_mu);
  n = *counter;
  pthread_mutex_unlock(&destroy_mu);
  return n;
}

static void ignore_change(const tether_change_t *change, void *user_data) {
  (void)change;
  (void)user_data;
}

static pthread_mutex_t woken_mu = PTHREAD_MUTEX_INITIALIZER;
static int woken = 0;
static void count_change(const tether_change_t *change, void *user_data) {
  (void)change;
  (void)user_data;
  pthread_mutex_lock(&woken_mu);
  woken++;
  pthread_mutex_unlock(&woken_mu);
}

/* ---- "nothing was changed" ------------------------------------------------- */

typedef struct snapshot {
  tether_value_t *value;
  uint64_t state_revision;
  uint64_t runtime_revision;
} snapshot_t;

static snapshot_t snap(tether_runtime_t rt, tether_state_t s) {
  snapshot_t sn;
  memset(&sn, 0, sizeof sn);
  CHECK_OK(tether_state_get(s, &sn.value));
  CHECK_OK(tether_state_revision(s, &sn.state_revision));
  CHECK_OK(tether_runtime_revision(rt, &sn.runtime_revision));
  return sn;
}

static void expect_unchanged_(tether_runtime_t rt, tether_state_t s, const snapshot_t *sn,
                              const char *file, int line) {
  tether_value_t *now = NULL;
  uint64_t srev = 0, rrev = 0;
  char a[256], b[256];
  int same;
  tether_state_get(s, &now);
  tether_state_revision(s, &srev);
  tether_runtime_revision(rt, &rrev);
  same = now != NULL && tether_value_equal(now, sn->value) == 1 && srev == sn->state_revision &&
         rrev == sn->runtime_revision;
  if (same) {
    check_pass_();
  } else {
    check_fail_(file, line,
                "a failed call changed the state\n    before %s (rev %llu, runtime %llu)\n"
                "    after  %s (rev %llu, runtime %llu)",
                value_json(sn->value, a, sizeof a), (unsigned long long)sn->state_revision,
                (unsigned long long)sn->runtime_revision, value_json(now, b, sizeof b),
                (unsigned long long)srev, (unsigned long long)rrev);
  }
  tether_value_free(now);
}
#define EXPECT_UNCHANGED(rt, s, sn) expect_unchanged_((rt), (s), (sn), __FILE__, __LINE__)

/* ==== error strings and the per-thread message ============================ */

static void *fresh_thread(void *arg) {
  int64_t i = 0;
  char *saw = arg;
  /* A thread that never failed a call has an empty message. */
  snprintf(saw, 128, "%s", tether_last_error());
  CHECK_ERR(tether_value_get_int(NULL, &i), TETHER_EINVAL);
  return NULL;
}

static void test_error_strings(void) {
  int code;
  char saw[128] = "(not run)", before[256];
  pthread_t t;
  tether_value_t *v = NULL;

  for (code = TETHER_ETIMEDOUT; code <= TETHER_OK; code++) {
    const char *s = tether_strerror(code);
    CHECK(s != NULL && s[0] != '\0');
    if (code != TETHER_OK) CHECK(s != NULL && strcmp(s, "unknown error") != 0);
  }
  CHECK_STR_EQ(tether_strerror(12345), "unknown error");
  CHECK_STR_EQ(tether_strerror(-99), "unknown error");
  CHECK_STR_EQ(tether_version(), TETHER_VERSION_STRING);
  CHECK_INT_EQ(tether_version_hex(), TETHER_VERSION_HEX);

  /* The message is per thread ... */
  CHECK_ERR(tether_value_from_json("{", -1, &v), TETHER_EJSON);
  snprintf(before, sizeof before, "%s", tether_last_error());
  pthread_create(&t, NULL, fresh_thread, saw);
  pthread_join(t, NULL);
  CHECK_STR_EQ(saw, "");
  CHECK_STR_EQ(tether_last_error(), before); /* the other thread's failure is not ours */
  /* ... and successful calls leave it alone. */
  if (CHECK_OK(tether_value_new_int(1, &v))) tether_value_free(v);
  if (CHECK_OK(tether_value_from_json("[1]", -1, &v))) tether_value_free(v);
  CHECK_STR_EQ(tether_last_error(), before);
}

/* ==== values ============================================================== */

static void test_value_constructors(void) {
  tether_value_t *v = SENTINEL;
  char buf[8];
  size_t len = 0;
  static const char *bad_utf8[] = {
      "\xff",                 /* never valid */
      "ab\xc0\xaf",           /* overlong '/' */
      "\xed\xa0\x80",         /* a UTF-16 surrogate */
      "\xe2\x82",             /* truncated sequence */
      "\xf4\x90\x80\x80",     /* above U+10FFFF */
      "\x80 continuation",    /* stray continuation byte */
  };
  size_t i;

  /* NULL out-parameters. */
  CHECK_ERR(tether_value_new_null(NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_new_bool(true, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_new_int(1, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_new_double(1.0, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_new_string("x", -1, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_new_bytes("x", 1, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_new_array(NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_new_object(NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_from_json("1", -1, NULL), TETHER_EINVAL);

  /* NULL strings. */
  CHECK_ERR(tether_value_new_string(NULL, 3, &v), TETHER_EINVAL);
  CHECK(v == SENTINEL); /* out-params are written only on success */
  CHECK_ERR(tether_value_new_string(NULL, -1, &v), TETHER_EINVAL);
  CHECK(v == SENTINEL);
  CHECK_ERR(tether_value_new_bytes(NULL, 3, &v), TETHER_EINVAL);
  CHECK(v == SENTINEL);
  CHECK_ERR(tether_value_from_json(NULL, -1, &v), TETHER_EINVAL);
  CHECK(v == SENTINEL);
  /* NULL with length 0 is the empty string / empty bytes. */
  if (CHECK_OK(tether_value_new_string(NULL, 0, &v))) {
    CHECK_OK(tether_value_length(v, &len));
    CHECK_INT_EQ(len, 0);
    tether_value_free(v);
  }
  if (CHECK_OK(tether_value_new_bytes(NULL, 0, &v))) {
    CHECK_INT_EQ(tether_value_type(v), TETHER_TYPE_BYTES);
    tether_value_free(v);
  }

  /* Invalid UTF-8 is refused in strings, and the message says so. */
  for (i = 0; i < sizeof bad_utf8 / sizeof bad_utf8[0]; i++) {
    v = SENTINEL;
    if (!CHECK_ERR(tether_value_new_string(bad_utf8[i], -1, &v), TETHER_EINVAL))
      printf("  (bad UTF-8 case %u)\n", (unsigned)i);
    CHECK_MENTIONS("UTF-8");
    CHECK(v == SENTINEL);
  }
  /* ...but bytes are bytes. */
  if (CHECK_OK(tether_value_new_bytes("\xff\x00\xfe", 3, &v))) tether_value_free(v);
  /* A NUL inside a string is fine when the length is given. */
  if (CHECK_OK(tether_value_new_string("a\0b", 3, &v))) {
    memset(buf, 'x', sizeof buf);
    CHECK_OK(tether_value_get_string(v, buf, sizeof buf, &len));
    CHECK_INT_EQ(len, 3);
    CHECK(memcmp(buf, "a\0b\0", 4) == 0);
    tether_value_free(v);
  }
}

static void test_value_readers(void) {
  tether_value_t *str = NULL, *dbl = NULL, *i7 = NULL, *nul = NULL, *arr = NULL, *obj = NULL;
  tether_value_t *bytes = NULL, *v = SENTINEL;
  int64_t i = 12345;
  double d = 0;
  bool b = false;
  size_t n = 777;
  char key[8];

  CHECK_OK(tether_value_new_string("hello", -1, &str));
  CHECK_OK(tether_value_new_double(2.5, &dbl));
  CHECK_OK(tether_value_new_int(7, &i7));
  CHECK_OK(tether_value_new_null(&nul));
  CHECK_OK(tether_value_new_array(&arr));
  CHECK_OK(tether_value_new_object(&obj));
  CHECK_OK(tether_value_new_bytes("abc", 3, &bytes));

  /* Wrong type. */
  CHECK_ERR(tether_value_get_int(str, &i), TETHER_ETYPE);
  CHECK_MENTIONS("string");
  CHECK_INT_EQ(i, 12345); /* untouched */
  CHECK_ERR(tether_value_get_bool(str, &b), TETHER_ETYPE);
  CHECK_ERR(tether_value_get_double(str, &d), TETHER_ETYPE);
  CHECK_ERR(tether_value_get_int(dbl, &i), TETHER_ETYPE); /* no silent truncation */
  CHECK_ERR(tether_value_get_bool(i7, &b), TETHER_ETYPE);
  CHECK_OK(tether_value_get_double(i7, &d)); /* an int reads as a double */
  CHECK(d == 7.0);
  CHECK_ERR(tether_value_get_string(i7, key, sizeof key, NULL), TETHER_ETYPE);
  CHECK_ERR(tether_value_get_string(bytes, key, sizeof key, NULL), TETHER_ETYPE);
  CHECK_ERR(tether_value_get_bytes(str, key, sizeof key, NULL), TETHER_ETYPE);
  CHECK_ERR(tether_value_length(i7, &n), TETHER_ETYPE);
  CHECK_ERR(tether_value_length(nul, &n), TETHER_ETYPE);
  CHECK_INT_EQ(n, 777);
  CHECK_ERR(tether_value_object_key(arr, 0, key, sizeof key, NULL), TETHER_ETYPE);
  CHECK_ERR(tether_value_object_key(obj, 0, key, sizeof key, NULL), TETHER_ERANGE);
  CHECK_ERR(tether_value_array_append(obj, i7), TETHER_ETYPE);
  CHECK_ERR(tether_value_object_set(arr, "k", -1, i7), TETHER_ETYPE);

  /* NULL arguments. */
  CHECK_ERR(tether_value_get_int(NULL, &i), TETHER_EINVAL);
  CHECK_ERR(tether_value_get_int(i7, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_get_bool(NULL, &b), TETHER_EINVAL);
  CHECK_ERR(tether_value_get_double(i7, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_get_string(NULL, key, sizeof key, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_length(NULL, &n), TETHER_EINVAL);
  CHECK_ERR(tether_value_length(arr, NULL), TETHER_EINVAL);
  CHECK_INT_EQ(tether_value_type(NULL), TETHER_EINVAL);
  CHECK_INT_EQ(tether_value_equal(NULL, i7), TETHER_EINVAL);
  CHECK_INT_EQ(tether_value_equal(i7, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_copy(NULL, &v), TETHER_EINVAL);
  CHECK_ERR(tether_value_copy(i7, NULL), TETHER_EINVAL);
  CHECK(v == SENTINEL);
  CHECK_ERR(tether_value_array_append(NULL, i7), TETHER_EINVAL);
  CHECK_ERR(tether_value_array_append(arr, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_object_set(obj, NULL, -1, i7), TETHER_EINVAL);
  CHECK_ERR(tether_value_object_set(obj, "k", -1, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_object_set(obj, "\xff", -1, i7), TETHER_EINVAL); /* bad UTF-8 key */
  CHECK_OK(tether_value_length(obj, &n));
  CHECK_INT_EQ(n, 0); /* none of that added anything */
  tether_value_free(NULL); /* ignored */

  /* Equality rules: int != double, NaN == NaN. */
  {
    tether_value_t *one_i = NULL, *one_d = NULL, *nan1 = NULL, *nan2 = NULL;
    CHECK_OK(tether_value_new_int(1, &one_i));
    CHECK_OK(tether_value_new_double(1.0, &one_d));
    CHECK_OK(tether_value_new_double(NAN, &nan1));
    CHECK_OK(tether_value_new_double(-NAN, &nan2));
    CHECK_INT_EQ(tether_value_equal(one_i, one_d), 0);
    CHECK_INT_EQ(tether_value_equal(nan1, nan2), 1);
    tether_value_free(one_i);
    tether_value_free(one_d);
    tether_value_free(nan1);
    tether_value_free(nan2);
  }

  /* The in-place setters overwrite any type; a composite they replace is
   * released (the leak checks of make asan / make valgrind see it if not). */
  {
    tether_value_t *slot = NULL;
    CHECK_OK(tether_value_new_object(&slot));
    CHECK_OK(tether_value_object_set(slot, "k", -1, str));
    CHECK_OK(tether_value_set_int(slot, 5));
    CHECK_OK(tether_value_get_int(slot, &i));
    CHECK_INT_EQ(i, 5);
    CHECK_OK(tether_value_set_string(slot, "a string long enough to be allocated", -1));
    CHECK_OK(tether_value_set_double(slot, 0.5));
    CHECK_OK(tether_value_get_double(slot, &d));
    CHECK(d == 0.5);
    CHECK_OK(tether_value_assign(slot, bytes));
    CHECK_OK(tether_value_set_bool(slot, 1));
    CHECK_OK(tether_value_get_bool(slot, &b));
    CHECK(b);
    CHECK_OK(tether_value_assign(slot, arr));
    CHECK_OK(tether_value_set_null(slot));
    CHECK_INT_EQ(tether_value_type(slot), TETHER_TYPE_NULL);
    CHECK_ERR(tether_value_set_int(NULL, 1), TETHER_EINVAL);
    CHECK_ERR(tether_value_set_double(NULL, 1), TETHER_EINVAL);
    CHECK_ERR(tether_value_set_bool(NULL, 1), TETHER_EINVAL);
    CHECK_ERR(tether_value_set_null(NULL), TETHER_EINVAL);
    tether_value_free(slot);
  }

  tether_value_free(str);
  tether_value_free(dbl);
  tether_value_free(i7);
  tether_value_free(nul);
  tether_value_free(arr);
  tether_value_free(obj);
  tether_value_free(bytes);
}

/* ==== JSON text =========================================================== */

static void test_bad_json(void) {
  static const char *bad[] = {
      "",            "   ",          "{",           "{\"a\":}",     "[1,]",
      "{'a':1}",     "01",           "1 2",         "[1 2]",        "nul",
      "\"unterminated", "{\"a\" 1}", "\"\\x\"",     "NaN",          "-",
      "1.",          ".5",           "[\"\t\"]",    "{\"a\":1,}",   "[1]]",
      "\"\\ud800\\u\"", "+1",        "{1:2}",       "tru",          "[",
  };
  tether_value_t *v = SENTINEL;
  char *deep;
  size_t i, depth;
  int rc;

  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = SENTINEL;
    if (!CHECK_ERR(tether_value_from_json(bad[i], -1, &v), TETHER_EJSON))
      printf("  (bad JSON case %u: %s)\n", (unsigned)i, bad[i]);
    CHECK_MENTIONS("line");
    CHECK_MENTIONS("column");
    CHECK(v == SENTINEL);
  }
  /* The place is the real place: line 3 here. */
  CHECK_ERR(tether_value_from_json("{\n  \"a\": 1,\n  \"b\": ?\n}", -1, &v), TETHER_EJSON);
  CHECK_MENTIONS("line 3");
  /* The length is respected: only "[1,2]" is read here ... */
  if (CHECK_OK(tether_value_from_json("[1,2]garbage", 5, &v))) {
    CHECK_VALUE(v, "[1,2]");
    tether_value_free(v);
  }
  /* ... and a NUL inside the given length is not the end of the text. */
  CHECK_ERR(tether_value_from_json("[1]\0[2]", 7, &v), TETHER_EJSON);
  /* Invalid UTF-8 inside JSON text: malformed (EJSON) or bad argument
   * (EINVAL) — tether.h names both; either way refused with a message. */
  v = SENTINEL;
  rc = tether_value_from_json("[\"\xff\"]", -1, &v);
  CHECK(rc == TETHER_EJSON || rc == TETHER_EINVAL);
  CHECK(tether_last_error()[0] != '\0');
  CHECK(v == SENTINEL);

  /* Nesting: 512 levels are fine, 513 are refused, 100000 do not crash. */
  deep = malloc(2 * 100000 + 1);
  if (deep != NULL) {
    for (depth = 512; depth <= 513; depth++) {
      memset(deep, '[', depth);
      memset(deep + depth, ']', depth);
      deep[2 * depth] = '\0';
      v = SENTINEL;
      if (depth == 512) {
        if (CHECK_OK(tether_value_from_json(deep, -1, &v))) tether_value_free(v);
      } else {
        CHECK_ERR(tether_value_from_json(deep, -1, &v), TETHER_EJSON);
        CHECK_MENTIONS("512");
        CHECK(v == SENTINEL);
      }
    }
    memset(deep, '[', 100000);
    deep[100000] = '\0';
    CHECK_ERR(tether_value_from_json(deep, -1, &v), TETHER_EJSON);
    /* deep objects too */
    {
      size_t k, pos = 0;
      for (k = 0; k < 513; k++) pos += (size_t)sprintf(deep + pos, "{\"a\":");
      pos += (size_t)sprintf(deep + pos, "1");
      for (k = 0; k < 513; k++) deep[pos++] = '}';
      deep[pos] = '\0';
      CHECK_ERR(tether_value_from_json(deep, -1, &v), TETHER_EJSON);
    }
    free(deep);
  }

  /* Numbers at the int64 edges. */
  if (CHECK_OK(tether_value_from_json("9223372036854775807", -1, &v))) {
    CHECK_INT_EQ(tether_value_type(v), TETHER_TYPE_INT);
    tether_value_free(v);
  }
  if (CHECK_OK(tether_value_from_json("-9223372036854775808", -1, &v))) {
    CHECK_INT_EQ(tether_value_type(v), TETHER_TYPE_INT);
    tether_value_free(v);
  }
  if (CHECK_OK(tether_value_from_json("9223372036854775808", -1, &v))) {
    CHECK_INT_EQ(tether_value_type(v), TETHER_TYPE_DOUBLE); /* does not fit: a double */
    tether_value_free(v);
  }
}

static void test_to_json(void) {
  tether_value_t *nan = NULL, *inf = NULL, *arr = NULL, *v = NULL, *s = NULL, *bytes = NULL;
  char buf[64], small[5];
  size_t len = 0, full_len;
  const char *full = "[\"hello\",\"world\"]";

  CHECK_OK(tether_value_new_double(NAN, &nan));
  CHECK_OK(tether_value_new_double(-INFINITY, &inf));
  CHECK_ERR(tether_value_to_json(nan, 0, buf, sizeof buf, &len), TETHER_ERANGE);
  CHECK_MENTIONS("NaN");
  CHECK_ERR(tether_value_to_json(inf, 0, buf, sizeof buf, &len), TETHER_ERANGE);
  CHECK_ERR(tether_value_to_json(nan, TETHER_JSON_PRETTY, NULL, 0, &len), TETHER_ERANGE);
  arr = JSON("[1, {\"x\": [2]}]");
  CHECK_OK(tether_value_set_path(arr, "/1/x/-", nan)); /* hidden deep inside */
  CHECK_ERR(tether_value_to_json(arr, 0, buf, sizeof buf, &len), TETHER_ERANGE);

  /* Flags and NULL. */
  v = JSON(full);
  CHECK_ERR(tether_value_to_json(v, 0x80, buf, sizeof buf, &len), TETHER_EINVAL);
  CHECK_MENTIONS("flag");
  CHECK_ERR(tether_value_to_json(v, TETHER_JSON_PRETTY | 2u, buf, sizeof buf, &len),
            TETHER_EINVAL);
  CHECK_ERR(tether_value_to_json(NULL, 0, buf, sizeof buf, &len), TETHER_EINVAL);

  /* snprintf-style output: size 0 asks for the length ... */
  len = 0;
  CHECK_OK(tether_value_to_json(v, 0, NULL, 0, &len));
  full_len = strlen(full);
  CHECK_INT_EQ(len, full_len);
  /* ... a small buffer gets a NUL-terminated prefix and the full length ... */
  memset(small, 'x', sizeof small);
  len = 0;
  CHECK_OK(tether_value_to_json(v, 0, small, sizeof small, &len));
  CHECK_INT_EQ(len, full_len);
  CHECK(small[sizeof small - 1] == '\0');
  CHECK_STR_EQ(small, "[\"he");
  /* ... a buffer of exactly len bytes is one short (the NUL needs a byte) ... */
  {
    char exact[17];
    CHECK_INT_EQ(sizeof exact, full_len);
    CHECK_OK(tether_value_to_json(v, 0, exact, sizeof exact, &len));
    CHECK(exact[sizeof exact - 1] == '\0');
    CHECK(strncmp(exact, full, sizeof exact - 1) == 0);
  }
  /* ... and len may be NULL. */
  CHECK_OK(tether_value_to_json(v, 0, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, full);

  /* The same rules for strings and member names. */
  CHECK_OK(tether_value_new_string("hello world", -1, &s));
  CHECK_OK(tether_value_get_string(s, NULL, 0, &len));
  CHECK_INT_EQ(len, 11);
  memset(small, 'x', sizeof small);
  CHECK_OK(tether_value_get_string(s, small, sizeof small, &len));
  CHECK_STR_EQ(small, "hell");
  CHECK_INT_EQ(len, 11);
  /* Bytes: min(size, length) bytes, no terminator. */
  CHECK_OK(tether_value_new_bytes("abcdef", 6, &bytes));
  memset(small, 'x', sizeof small);
  CHECK_OK(tether_value_get_bytes(bytes, small, 3, &len));
  CHECK(memcmp(small, "abcxx", 5) == 0);
  CHECK_INT_EQ(len, 6);
  CHECK_OK(tether_value_to_json(bytes, 0, buf, sizeof buf, NULL)); /* base64 */
  CHECK_STR_EQ(buf, "\"YWJjZGVm\"");

  tether_value_free(nan);
  tether_value_free(inf);
  tether_value_free(arr);
  tether_value_free(v);
  tether_value_free(s);
  tether_value_free(bytes);
}

/* ==== JSON Pointers ======================================================= */

static void test_pointers(void) {
  tether_value_t *doc, *before, *item = NULL, *v = SENTINEL;

  doc = JSON("{\"a\":{\"b\":[10,20,30]},\"name\":\"x\",\"m~n\":1,\"s/t\":2,\"\":3}");
  item = JSON("99");
  if (doc == NULL || item == NULL) return;
  CHECK_OK(tether_value_copy(doc, &before));

  /* Malformed pointers. */
  CHECK_ERR(tether_value_get_path(doc, "a/b", &v), TETHER_EPATH);
  CHECK_MENTIONS("a/b");
  CHECK_ERR(tether_value_get_path(doc, "/~2", &v), TETHER_EPATH);
  CHECK_MENTIONS("~2");
  CHECK_ERR(tether_value_get_path(doc, "/m~", &v), TETHER_EPATH);
  /* Not an array index. */
  CHECK_ERR(tether_value_get_path(doc, "/a/b/x", &v), TETHER_EPATH);
  CHECK_ERR(tether_value_get_path(doc, "/a/b/01", &v), TETHER_EPATH);
  CHECK_ERR(tether_value_get_path(doc, "/a/b/-1", &v), TETHER_EPATH);
  CHECK_ERR(tether_value_get_path(doc, "/a/b/ 1", &v), TETHER_EPATH);
  /* No such member. */
  CHECK_ERR(tether_value_get_path(doc, "/missing", &v), TETHER_ENOTFOUND);
  CHECK_MENTIONS("missing");
  CHECK_ERR(tether_value_get_path(doc, "/a/c", &v), TETHER_ENOTFOUND);
  /* Index out of range. */
  CHECK_ERR(tether_value_get_path(doc, "/a/b/3", &v), TETHER_ERANGE);
  CHECK_ERR(tether_value_get_path(doc, "/a/b/99999999999999999999", &v), TETHER_ERANGE);
  /* A step into a scalar. */
  CHECK_ERR(tether_value_get_path(doc, "/name/x", &v), TETHER_ETYPE);
  CHECK_ERR(tether_value_get_path(doc, "/a/b/0/x", &v), TETHER_ETYPE);
  /* NULL. */
  CHECK_ERR(tether_value_get_path(doc, NULL, &v), TETHER_EINVAL);
  CHECK_ERR(tether_value_get_path(NULL, "", &v), TETHER_EINVAL);
  CHECK_ERR(tether_value_get_path(doc, "", NULL), TETHER_EINVAL);
  CHECK(v == SENTINEL);
  /* Escapes and the empty member name are not errors. */
  if (CHECK_OK(tether_value_get_path(doc, "/m~0n", &v))) {
    CHECK_VALUE(v, "1");
    tether_value_free(v);
  }
  if (CHECK_OK(tether_value_get_path(doc, "/s~1t", &v))) {
    CHECK_VALUE(v, "2");
    tether_value_free(v);
  }
  if (CHECK_OK(tether_value_get_path(doc, "/", &v))) { /* the member named "" */
    CHECK_VALUE(v, "3");
    tether_value_free(v);
  }

  /* Writes fail the same ways and change nothing. */
  CHECK_ERR(tether_value_set_path(doc, "a/b", item), TETHER_EPATH);
  CHECK_ERR(tether_value_set_path(doc, "/nope/x", item), TETHER_ENOTFOUND); /* parent missing */
  CHECK_ERR(tether_value_set_path(doc, "/a/b/4", item), TETHER_ERANGE); /* past the end + 1 */
  CHECK_ERR(tether_value_set_path(doc, "/a/b/x", item), TETHER_EPATH);
  CHECK_ERR(tether_value_set_path(doc, "/name/x", item), TETHER_ETYPE);
  CHECK_ERR(tether_value_set_path(doc, "/a", NULL), TETHER_EINVAL);
  CHECK_ERR(tether_value_set_path(NULL, "/a", item), TETHER_EINVAL);
  CHECK_ERR(tether_value_remove_path(doc, ""), TETHER_EINVAL);
  CHECK_ERR(tether_value_remove_path(doc, "/a/b/3"), TETHER_ERANGE);
  CHECK_ERR(tether_value_remove_path(doc, "/zzz"), TETHER_ENOTFOUND);
  CHECK_ERR(tether_value_remove_path(doc, "/name/x"), TETHER_ETYPE);
  CHECK_ERR(tether_value_remove_path(doc, "~"), TETHER_EPATH);
  CHECK_INT_EQ(tether_value_equal(doc, before), 1);

  /* The good edges: index == length appends, "-" appends. */
  CHECK_OK(tether_value_set_path(doc, "/a/b/3", item));
  CHECK_OK(tether_value_set_path(doc, "/a/b/-", item));
  if (CHECK_OK(tether_value_get_path(doc, "/a/b", &v))) {
    CHECK_VALUE(v, "[10,20,30,99,99]");
    tether_value_free(v);
  }
  tether_value_free(before);
  tether_value_free(doc);
  tether_value_free(item);
}

/* ==== runtimes ============================================================ */

static void test_runtime_options(void) {
  tether_runtime_options_t opts;
  tether_runtime_t rt = {0xdeadbeefULL};
  unsigned i;

  CHECK_ERR(tether_runtime_new(NULL, NULL), TETHER_EINVAL);
  tether_runtime_options_init(NULL); /* ignored */
  tether_runtime_options_init(&opts);
  CHECK_INT_EQ(opts.mode, TETHER_LOOP_THREAD);
  CHECK(opts.loop == NULL);
  CHECK_INT_EQ(opts.flags, 0);
  for (i = 0; i < sizeof opts.reserved / sizeof opts.reserved[0]; i++)
    CHECK_INT_EQ(opts.reserved[i], 0);

  opts.mode = (tether_loop_mode_t)7;
  CHECK_ERR(tether_runtime_new(&opts, &rt), TETHER_EINVAL);
  CHECK_MENTIONS("mode");
  tether_runtime_options_init(&opts);
  opts.mode = TETHER_LOOP_EXTERNAL; /* ... but no loop */
  CHECK_ERR(tether_runtime_new(&opts, &rt), TETHER_EINVAL);
  CHECK_MENTIONS("loop");
  tether_runtime_options_init(&opts);
  opts.reserved[0] = 1;
  CHECK_ERR(tether_runtime_new(&opts, &rt), TETHER_EINVAL);
  CHECK_MENTIONS("reserved");
  tether_runtime_options_init(&opts);
  opts.reserved[6] = 0xffffffffu;
  CHECK_ERR(tether_runtime_new(&opts, &rt), TETHER_EINVAL);
  CHECK_INT_EQ(rt.id, 0xdeadbeefULL); /* never written on failure */
  tether_runtime_options_init(&opts);
  opts.flags = 0x100; /* no such runtime flag */
  CHECK_ERR(tether_runtime_new(&opts, &rt), TETHER_EINVAL);
  CHECK_MENTIONS("flags");
  CHECK_INT_EQ(rt.id, 0xdeadbeefULL);
}

static void test_runtime_calls(tether_runtime_t rt) {
  int fd = -1;
  uint64_t r = 0;
  tether_runtime_t zero = {0};
  tether_state_t s;

  /* A TETHER_LOOP_THREAD runtime runs itself: no run, no fd. */
  CHECK_ERR(tether_runtime_run(rt), TETHER_EINVAL);
  CHECK_ERR(tether_runtime_fd(rt, &fd), TETHER_EINVAL);
  CHECK_INT_EQ(fd, -1);
  CHECK_ERR(tether_runtime_revision(rt, NULL), TETHER_EINVAL);

  /* The zero handle is never valid. */
  CHECK_ERR(tether_runtime_free(zero), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_flush(zero), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_revision(zero, &r), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_run(zero), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_fd(zero, &fd), TETHER_ESTALE);
  CHECK_ERR(tether_state_new_int(zero, 1, 0, &s), TETHER_ESTALE);
}

/* ==== states ============================================================== */

static void test_state_args(tether_runtime_t rt) {
  tether_state_t s, str, fresh = {0x1234};
  tether_value_t *v = SENTINEL;
  tether_type_t type = TETHER_TYPE_NULL;
  snapshot_t sn;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  char buf[8];
  size_t len = 0;

  /* Creation. */
  CHECK_ERR(tether_state_new(rt, NULL, 0, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_new(rt, NULL, 0x100, &fresh), TETHER_EINVAL);
  CHECK_MENTIONS("flag");
  CHECK_ERR(tether_state_new_string(rt, "\xc3\x28", -1, 0, &fresh), TETHER_EINVAL);
  CHECK_ERR(tether_state_new_string(rt, NULL, -1, 0, &fresh), TETHER_EINVAL);
  CHECK_ERR(tether_state_new_json(rt, "{\"a\":", -1, 0, &fresh), TETHER_EJSON);
  CHECK_MENTIONS("line");
  CHECK_ERR(tether_state_new_json(rt, NULL, -1, 0, &fresh), TETHER_EINVAL);
  CHECK_INT_EQ(fresh.id, 0x1234); /* never written on failure */
  if (CHECK_OK(tether_state_new(rt, NULL, 0, &s))) { /* NULL initial means null */
    CHECK_OK(tether_state_type(s, &type));
    CHECK_INT_EQ(type, TETHER_TYPE_NULL);
    CHECK_OK(tether_state_free(s));
  }

  /* A string state read as something else. */
  if (!CHECK_OK(tether_state_new_string(rt, "hello", -1, 0, &str))) return;
  sn = snap(rt, str);
  CHECK_ERR(tether_state_get_int(str, &i), TETHER_ETYPE);
  CHECK_MENTIONS("string");
  CHECK_ERR(tether_state_get_bool(str, &b), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_double(str, &d), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_bytes(str, buf, sizeof buf, &len), TETHER_ETYPE);

  /* NULL out-parameters. */
  CHECK_ERR(tether_state_get_int(str, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_get_bool(str, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_get_double(str, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_type(str, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_revision(str, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_get(str, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_get_path(str, "", NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_get_path(str, NULL, &v), TETHER_EINVAL);
  CHECK(v == SENTINEL);

  /* Bad strings in writes: refused, nothing changed. */
  CHECK_ERR(tether_state_set_string(str, NULL, -1), TETHER_EINVAL);
  CHECK_ERR(tether_state_set_string(str, NULL, 4), TETHER_EINVAL);
  CHECK_ERR(tether_state_set_string(str, "caf\xe9", -1), TETHER_EINVAL); /* Latin-1 */
  CHECK_MENTIONS("UTF-8");
  CHECK_ERR(tether_state_set_bytes(str, NULL, 4), TETHER_EINVAL);
  CHECK_ERR(tether_state_set_json(str, NULL, -1), TETHER_EINVAL);
  CHECK_ERR(tether_state_set_json(str, "[1,", -1), TETHER_EJSON);
  CHECK_MENTIONS("column");
  CHECK_ERR(tether_state_get_json(str, 0x40, buf, sizeof buf, &len), TETHER_EINVAL);
  EXPECT_UNCHANGED(rt, str, &sn);

  /* Truncated string output. */
  CHECK_OK(tether_state_get_string(str, NULL, 0, &len));
  CHECK_INT_EQ(len, 5);
  CHECK_OK(tether_state_get_string(str, buf, 3, &len));
  CHECK_STR_EQ(buf, "he");
  CHECK_INT_EQ(len, 5);
  CHECK_OK(tether_state_get_json(str, 0, NULL, 0, &len));
  CHECK_INT_EQ(len, 7); /* "hello" with its quotes */
  CHECK_OK(tether_state_get_json(str, 0, buf, 4, &len));
  CHECK_STR_EQ(buf, "\"he");
  CHECK_INT_EQ(len, 7);

  tether_value_free(sn.value);
  CHECK_OK(tether_state_free(str));
}

static void test_type_lock(tether_runtime_t rt) {
  tether_state_t n, d, obj;
  tether_value_t *nul = NULL;
  tether_type_t type = TETHER_TYPE_NULL;
  snapshot_t sn;
  double x = 0;
  int64_t i = 0;

  /* An int state, type-locked: only ints go in. */
  if (!CHECK_OK(tether_state_new_int(rt, 5, TETHER_STATE_LOCK_TYPE, &n))) return;
  sn = snap(rt, n);
  CHECK_ERR(tether_state_set_string(n, "five", -1), TETHER_ETYPE);
  CHECK_MENTIONS("string");
  CHECK_ERR(tether_state_set_double(n, 5.5), TETHER_ETYPE);
  CHECK_ERR(tether_state_set_bool(n, true), TETHER_ETYPE);
  CHECK_ERR(tether_state_set_json(n, "\"5\"", -1), TETHER_ETYPE);
  CHECK_ERR(tether_state_set_json(n, "5.0", -1), TETHER_ETYPE);
  CHECK_OK(tether_value_new_null(&nul));
  CHECK_ERR(tether_state_set(n, nul), TETHER_ETYPE);
  EXPECT_UNCHANGED(rt, n, &sn);
  CHECK_OK(tether_state_set_json(n, "6", -1)); /* an int: fine */
  CHECK_OK(tether_state_get_int(n, &i));
  CHECK_INT_EQ(i, 6);
  tether_value_free(sn.value);

  /* A double state, type-locked: an int written to it is stored as a double. */
  if (CHECK_OK(tether_state_new_double(rt, 0.5, TETHER_STATE_LOCK_TYPE, &d))) {
    CHECK_OK(tether_state_set_int(d, 5));
    CHECK_OK(tether_state_type(d, &type));
    CHECK_INT_EQ(type, TETHER_TYPE_DOUBLE);
    CHECK_OK(tether_state_get_double(d, &x));
    CHECK(x == 5.0);
    CHECK_ERR(tether_state_get_int(d, &i), TETHER_ETYPE); /* it is a double now */
    CHECK_OK(tether_state_set_json(d, "7", -1));
    CHECK_OK(tether_state_get_double(d, &x));
    CHECK(x == 7.0);
    sn = snap(rt, d);
    CHECK_ERR(tether_state_set_string(d, "7", -1), TETHER_ETYPE);
    EXPECT_UNCHANGED(rt, d, &sn);
    tether_value_free(sn.value);
  }

  /* Without the flag a state takes any type. */
  {
    tether_state_t u;
    if (CHECK_OK(tether_state_new_int(rt, 1, 0, &u))) {
      CHECK_OK(tether_state_set_string(u, "one", -1));
      CHECK_OK(tether_state_type(u, &type));
      CHECK_INT_EQ(type, TETHER_TYPE_STRING);
      CHECK_OK(tether_state_free(u));
    }
  }

  /* A locked object refuses to become an array, even through the "" path. */
  if (CHECK_OK(tether_state_new_json(rt, "{\"a\":1}", -1, TETHER_STATE_LOCK_TYPE, &obj))) {
    sn = snap(rt, obj);
    CHECK_ERR(tether_state_set_json(obj, "[1]", -1), TETHER_ETYPE);
    CHECK_ERR(tether_state_set_path_json(obj, "", "[1]", -1), TETHER_ETYPE);
    EXPECT_UNCHANGED(rt, obj, &sn);
    tether_value_free(sn.value);
    CHECK_OK(tether_state_free(obj));
  }
  tether_value_free(nul);
  CHECK_OK(tether_state_free(n));
  CHECK_OK(tether_state_free(d));
}

/* Path writes into a state that fail must change nothing and wake nobody. */
static void test_state_paths(tether_runtime_t rt) {
  tether_state_t s;
  tether_observer_t o;
  tether_value_t *v = SENTINEL, *item = NULL;
  snapshot_t sn;
  int destroys = 0, woke;

  if (!CHECK_OK(tether_state_new_json(rt, "{\"name\":\"x\",\"tags\":[\"a\",\"b\"]}", -1, 0, &s)))
    return;
  CHECK_OK(tether_observe(s, NULL, TETHER_OBSERVE_EQUAL, count_change, &destroys, count_destroy,
                          &o));
  CHECK_OK(tether_runtime_flush(rt));
  pthread_mutex_lock(&woken_mu);
  woken = 0;
  pthread_mutex_unlock(&woken_mu);
  sn = snap(rt, s);
  item = JSON("1");

  CHECK_ERR(tether_state_set_path_json(s, "a/b", "1", -1), TETHER_EPATH);
  CHECK_MENTIONS("a/b");
  CHECK_ERR(tether_state_set_path_json(s, "/~2", "1", -1), TETHER_EPATH);
  CHECK_ERR(tether_state_set_path_json(s, "/nope/x", "1", -1), TETHER_ENOTFOUND);
  CHECK_MENTIONS("nope");
  CHECK_ERR(tether_state_set_path_json(s, "/tags/5", "1", -1), TETHER_ERANGE);
  CHECK_ERR(tether_state_set_path_json(s, "/tags/x", "1", -1), TETHER_EPATH);
  CHECK_ERR(tether_state_set_path_json(s, "/name/x", "1", -1), TETHER_ETYPE);
  CHECK_ERR(tether_state_set_path_json(s, "/name", "{", -1), TETHER_EJSON);
  CHECK_ERR(tether_state_set_path_json(s, "/name", NULL, -1), TETHER_EINVAL);
  CHECK_ERR(tether_state_set_path_json(s, NULL, "1", -1), TETHER_EINVAL);
  CHECK_ERR(tether_state_set_path(s, "/name", NULL), TETHER_EINVAL);
  CHECK_ERR(tether_state_set_path(s, "/tags/9", item), TETHER_ERANGE);
  CHECK_ERR(tether_state_remove_path(s, ""), TETHER_EINVAL);
  CHECK_ERR(tether_state_remove_path(s, "/tags/2"), TETHER_ERANGE);
  CHECK_ERR(tether_state_remove_path(s, "/zzz"), TETHER_ENOTFOUND);
  CHECK_ERR(tether_state_remove_path(s, "/name/0"), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_path(s, "/tags/2", &v), TETHER_ERANGE);
  CHECK_ERR(tether_state_get_path(s, "/tags/two", &v), TETHER_EPATH);
  CHECK_ERR(tether_state_get_path(s, "/name/first", &v), TETHER_ETYPE);
  CHECK_ERR(tether_state_get_path(s, "/nobody", &v), TETHER_ENOTFOUND);
  CHECK(v == SENTINEL);
  EXPECT_UNCHANGED(rt, s, &sn);
  CHECK_OK(tether_runtime_flush(rt));
  pthread_mutex_lock(&woken_mu);
  woke = woken;
  pthread_mutex_unlock(&woken_mu);
  CHECK_INT_EQ(woke, 0); /* not even the EQUAL observer: nothing was written */

  tether_value_free(sn.value);
  tether_value_free(item);
  CHECK_OK(tether_state_free(s));
  CHECK_INT_EQ(destroyed(&destroys), 1);
}

/* NaN is a value like any other, but has no JSON form. */
static void test_nan_state(tether_runtime_t rt) {
  tether_state_t s;
  uint64_t r1 = 0, r2 = 0;
  double d = 0;
  char buf[16];
  size_t len = 0;
  if (!CHECK_OK(tether_state_new_double(rt, NAN, 0, &s))) return;
  CHECK_OK(tether_state_get_double(s, &d));
  CHECK(d != d);
  CHECK_ERR(tether_state_get_json(s, 0, buf, sizeof buf, &len), TETHER_ERANGE);
  CHECK_OK(tether_runtime_revision(rt, &r1));
  CHECK_OK(tether_state_set_double(s, NAN)); /* NaN == NaN: an equal write */
  CHECK_OK(tether_runtime_revision(rt, &r2));
  CHECK_INT_EQ(r2, r1);
  CHECK_OK(tether_state_free(s));
}

/* ==== handles ============================================================= */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t next_random(void) { /* xorshift64 */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void test_handles(tether_runtime_t rt) {
  tether_state_t zero_s = {0}, s, old;
  tether_observer_t zero_o = {0}, o, o2 = {0x77};
  tether_runtime_t forged_rt;
  int64_t i = 0;
  uint64_t r = 0;
  int k, not_stale = 0, destroys = 0;

  /* Zero handles. */
  CHECK_ERR(tether_state_get_int(zero_s, &i), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(zero_s, 1), TETHER_ESTALE);
  CHECK_ERR(tether_state_free(zero_s), TETHER_ESTALE);
  CHECK_ERR(tether_observe(zero_s, NULL, 0, ignore_change, &destroys, count_destroy, &o),
            TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(zero_o), TETHER_ESTALE);

  /* Forged handles: random ids, every one refused. */
  for (k = 0; k < 1000; k++) {
    tether_state_t fs;
    tether_observer_t fo;
    fs.id = next_random();
    fo.id = next_random();
    forged_rt.id = next_random();
    if (tether_state_get_int(fs, &i) != TETHER_ESTALE) not_stale++;
    if (tether_state_set_int(fs, 1) != TETHER_ESTALE) not_stale++;
    if (tether_observer_remove(fo) != TETHER_ESTALE) not_stale++;
    if (tether_runtime_revision(forged_rt, &r) != TETHER_ESTALE) not_stale++;
  }
  CHECK_INT_EQ(not_stale, 0);

  if (!CHECK_OK(tether_state_new_int(rt, 1, 0, &s))) return;
  CHECK_OK(tether_observe(s, NULL, 0, ignore_change, NULL, NULL, &o));
  /* A handle of one kind passed as another kind is a forged handle. */
  o2.id = s.id;
  CHECK_ERR(tether_observer_remove(o2), TETHER_ESTALE);
  {
    tether_state_t as_state;
    tether_runtime_t as_rt;
    as_state.id = o.id;
    CHECK_ERR(tether_state_set_int(as_state, 2), TETHER_ESTALE);
    as_state.id = rt.id;
    CHECK_ERR(tether_state_set_int(as_state, 2), TETHER_ESTALE);
    as_rt.id = s.id;
    CHECK_ERR(tether_runtime_revision(as_rt, &r), TETHER_ESTALE);
  }
  CHECK_OK(tether_state_get_int(s, &i)); /* and nothing happened to the real ones */
  CHECK_INT_EQ(i, 1);

  /* Freed state handle: stale everywhere, and stays stale when its slot is
   * reused by new states (generations). */
  CHECK_OK(tether_state_free(s));
  CHECK_ERR(tether_state_get_int(s, &i), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(s, 3), TETHER_ESTALE);
  CHECK_ERR(tether_state_free(s), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_path_json(s, "/a", "1", -1), TETHER_ESTALE);
  CHECK_ERR(tether_observe(s, NULL, 0, ignore_change, &destroys, count_destroy, &o2),
            TETHER_ESTALE);
  CHECK_INT_EQ(o2.id, s.id); /* not written */
  CHECK_ERR(tether_observer_remove(o), TETHER_ESTALE); /* went with its state */
  old = s;
  for (k = 0; k < 100; k++) {
    tether_state_t fresh;
    if (!CHECK_OK(tether_state_new_int(rt, k, 0, &fresh))) break;
    if (fresh.id == old.id) not_stale++;
    if (tether_state_get_int(old, &i) != TETHER_ESTALE) not_stale++;
    CHECK_OK(tether_state_free(fresh));
  }
  CHECK_INT_EQ(not_stale, 0);
  CHECK_INT_EQ(destroyed(&destroys), 0); /* failed registrations keep user_data */
}

static void test_observer_args(tether_runtime_t rt) {
  tether_state_t s;
  tether_observer_t o = {0x55}, o1;
  int destroys = 0, destroys1 = 0;

  if (!CHECK_OK(tether_state_new_int(rt, 0, 0, &s))) return;
  CHECK_ERR(tether_observe(s, NULL, 0, NULL, &destroys, count_destroy, &o), TETHER_EINVAL);
  CHECK_ERR(tether_observe(s, NULL, 0, ignore_change, &destroys, count_destroy, NULL),
            TETHER_EINVAL);
  CHECK_ERR(tether_observe(s, NULL, 0x80, ignore_change, &destroys, count_destroy, &o),
            TETHER_EINVAL);
  CHECK_MENTIONS("flag");
  CHECK_ERR(tether_observe(s, "x", 0, ignore_change, &destroys, count_destroy, &o), TETHER_EPATH);
  CHECK_ERR(tether_observe(s, "/~2", 0, ignore_change, &destroys, count_destroy, &o),
            TETHER_EPATH);
  CHECK_INT_EQ(o.id, 0x55);                /* not written */
  CHECK_INT_EQ(destroyed(&destroys), 0);   /* on error destroy is NOT called */

  /* Double removal: the second is TETHER_ESTALE; destroy ran once. */
  CHECK_OK(tether_observe(s, "/later", 0, ignore_change, &destroys1, count_destroy, &o1));
  CHECK_OK(tether_observer_remove(o1));
  CHECK_INT_EQ(destroyed(&destroys1), 1);
  CHECK_ERR(tether_observer_remove(o1), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(o1), TETHER_ESTALE);
  CHECK_INT_EQ(destroyed(&destroys1), 1);
  CHECK_OK(tether_state_free(s));
  CHECK_INT_EQ(destroyed(&destroys1), 1);
}

/* After tether_runtime_free every handle of that runtime is stale. */
static void test_after_runtime_free(tether_runtime_t other_rt) {
  tether_runtime_t rt;
  tether_state_t a, b, c;
  tether_observer_t o1, o2, o3;
  tether_type_t type;
  tether_value_t *v = SENTINEL;
  int d1 = 0, d2 = 0, d3 = 0, dx = 0;
  int64_t i = 0;
  uint64_t r = 0;
  char buf[16];
  size_t len;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  CHECK_OK(tether_state_new_json(rt, "{\"k\":[1]}", -1, 0, &b));
  CHECK_OK(tether_observe(a, NULL, 0, ignore_change, &d1, count_destroy, &o1));
  CHECK_OK(tether_observe(b, "/k", 0, ignore_change, &d2, count_destroy, &o2));
  CHECK_OK(tether_observe(b, NULL, TETHER_OBSERVE_SYNC, ignore_change, &d3, count_destroy, &o3));
  CHECK_OK(tether_state_set_int(a, 2)); /* something owed, dropped by the free */
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(destroyed(&d1), 1);
  CHECK_INT_EQ(destroyed(&d2), 1);
  CHECK_INT_EQ(destroyed(&d3), 1);

  CHECK_ERR(tether_runtime_free(rt), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_flush(rt), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_revision(rt, &r), TETHER_ESTALE);
  CHECK_ERR(tether_state_new_int(rt, 1, 0, &c), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_int(a, &i), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_int(a, 3), TETHER_ESTALE);
  CHECK_ERR(tether_state_type(b, &type), TETHER_ESTALE);
  CHECK_ERR(tether_state_get(b, &v), TETHER_ESTALE);
  CHECK_ERR(tether_state_get_json(b, 0, buf, sizeof buf, &len), TETHER_ESTALE);
  CHECK_ERR(tether_state_set_path_json(b, "/k/-", "2", -1), TETHER_ESTALE);
  CHECK_ERR(tether_state_remove_path(b, "/k"), TETHER_ESTALE);
  CHECK_ERR(tether_state_free(b), TETHER_ESTALE);
  CHECK_ERR(tether_observe(a, NULL, 0, ignore_change, &dx, count_destroy, &o1), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(o1), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(o2), TETHER_ESTALE);
  CHECK_ERR(tether_observer_remove(o3), TETHER_ESTALE);
  CHECK(v == SENTINEL);
  CHECK_INT_EQ(destroyed(&d1), 1); /* still exactly once */
  CHECK_INT_EQ(destroyed(&d2), 1);
  CHECK_INT_EQ(destroyed(&d3), 1);
  CHECK_INT_EQ(destroyed(&dx), 0);

  /* Other runtimes are not affected. */
  if (CHECK_OK(tether_state_new_int(other_rt, 9, 0, &c))) {
    CHECK_OK(tether_state_get_int(c, &i));
    CHECK_INT_EQ(i, 9);
    CHECK_OK(tether_state_free(c));
  }
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(bad_input_error_strings) {
  test_error_strings();
  return check_report("bad_input_error_strings");
}

TEST_CASE(bad_input_value_constructors) {
  test_value_constructors();
  return check_report("bad_input_value_constructors");
}

TEST_CASE(bad_input_value_readers) {
  test_value_readers();
  return check_report("bad_input_value_readers");
}

TEST_CASE(bad_input_bad_json) {
  test_bad_json();
  return check_report("bad_input_bad_json");
}

TEST_CASE(bad_input_to_json) {
  test_to_json();
  return check_report("bad_input_to_json");
}

TEST_CASE(bad_input_pointers) {
  test_pointers();
  return check_report("bad_input_pointers");
}

TEST_CASE(bad_input_runtime_options) {
  test_runtime_options();
  return check_report("bad_input_runtime_options");
}

TEST_CASE(bad_input_runtime_calls) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_runtime_calls(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bad_input_runtime_calls");
}

TEST_CASE(bad_input_state_args) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_state_args(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bad_input_state_args");
}

TEST_CASE(bad_input_type_lock) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_type_lock(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bad_input_type_lock");
}

TEST_CASE(bad_input_state_paths) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_state_paths(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bad_input_state_paths");
}

TEST_CASE(bad_input_nan_state) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_nan_state(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bad_input_nan_state");
}

TEST_CASE(bad_input_handles) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_handles(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bad_input_handles");
}

TEST_CASE(bad_input_observer_args) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_observer_args(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bad_input_observer_args");
}

TEST_CASE(bad_input_after_runtime_free) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_after_runtime_free(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("bad_input_after_runtime_free");
}
