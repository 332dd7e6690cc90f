/*
 * values.c — building objects through the C face: tether_value_object_set.
 *
 * A member that exists is found by the key's bytes and replaced in place
 * (no name is made for it); a new one is validated and appended (one hash
 * of the bytes for the lookup and the insert: Sources/TetherCore/
 * MemberTable.swift, setValue(_:forUTF8:vet:)). These cases hold both
 * paths to what the header promises: insertion order kept, keys compared
 * byte for byte (embedded NULs, normalisation forms), small objects
 * (scanned) and large ones (indexed), copies that do not share changes, and
 * errors that leave the object as it was.
 */
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* The object's member names, in order, joined by ','. */
static void keys_of(const tether_value_t *obj, char *out, size_t size) {
  size_t n = 0, i, used = 0;
  char key[64];
  out[0] = '\0';
  CHECK_OK(tether_value_length(obj, &n));
  for (i = 0; i < n; i++) {
    size_t len = 0;
    if (!CHECK_OK(tether_value_object_key(obj, i, key, sizeof key, &len))) return;
    used += (size_t)snprintf(out + used, size - used, "%s%s", i ? "," : "", key);
    if (used >= size) return;
  }
}

static int64_t member_int(const tether_value_t *obj, const char *pointer) {
  tether_value_t *part = NULL;
  int64_t v = -1;
  if (CHECK_OK(tether_value_get_path(obj, pointer, &part))) CHECK_OK(tether_value_get_int(part, &v));
  tether_value_free(part);
  return v;
}

TEST_CASE(values_object_set_replaces_in_place) {
  tether_value_t *obj = NULL, *one = NULL, *two = NULL;
  char keys[256];
  size_t n = 0;
  CHECK_OK(tether_value_new_object(&obj));
  CHECK_OK(tether_value_new_int(1, &one));
  CHECK_OK(tether_value_new_int(2, &two));
  CHECK_OK(tether_value_object_set(obj, "a", -1, one));
  CHECK_OK(tether_value_object_set(obj, "b", -1, one));
  CHECK_OK(tether_value_object_set(obj, "c", -1, one));
  /* Replacing keeps the member where it was and the count as it was. */
  CHECK_OK(tether_value_object_set(obj, "b", -1, two));
  CHECK_OK(tether_value_object_set(obj, "a", 1, two)); /* by length */
  keys_of(obj, keys, sizeof keys);
  CHECK_STR_EQ(keys, "a,b,c");
  CHECK_OK(tether_value_length(obj, &n));
  CHECK_INT_EQ(n, 3);
  CHECK_VALUE(obj, "{\"a\":2,\"b\":2,\"c\":1}");
  /* A key given with a length is those bytes only: "ab" cut to "a". */
  CHECK_OK(tether_value_object_set(obj, "ab", 1, one));
  CHECK_VALUE(obj, "{\"a\":1,\"b\":2,\"c\":1}");
  /* Byte for byte: a NUL inside a key is part of it, and the two
   * normalisation forms of "é" are two members. */
  CHECK_OK(tether_value_object_set(obj, "a\0b", 3, two));
  CHECK_OK(tether_value_object_set(obj, "\xc3\xa9", -1, one));
  CHECK_OK(tether_value_object_set(obj, "e\xcc\x81", -1, two));
  CHECK_OK(tether_value_object_set(obj, "a\0b", 3, one));
  CHECK_OK(tether_value_length(obj, &n));
  CHECK_INT_EQ(n, 6);
  CHECK_INT_EQ(member_int(obj, "/\xc3\xa9"), 1);
  CHECK_INT_EQ(member_int(obj, "/e\xcc\x81"), 2);
  CHECK_INT_EQ(member_int(obj, "/a"), 1);
  tether_value_free(obj);
  tether_value_free(one);
  tether_value_free(two);
  return check_report("values_object_set_replaces_in_place");
}

/* Past eight members an object is found through an index: replacing and
 * appending must keep it right, in order, as it grows. */
TEST_CASE(values_object_set_large_objects) {
  tether_value_t *obj = NULL, *v = NULL;
  char key[16], want[32];
  int i, round;
  size_t n = 0;
  CHECK_OK(tether_value_new_object(&obj));
  CHECK_OK(tether_value_new_int(0, &v));
  for (round = 0; round < 3; round++) {
    for (i = 0; i < 300; i++) {
      snprintf(key, sizeof key, "k%d", i);
      CHECK_OK(tether_value_set_int(v, (int64_t)round * 1000 + i));
      if (!CHECK_OK(tether_value_object_set(obj, key, -1, v))) break;
    }
  }
  CHECK_OK(tether_value_length(obj, &n));
  CHECK_INT_EQ(n, 300);
  for (i = 0; i < 300; i += 37) {
    size_t len = 0;
    snprintf(want, sizeof want, "k%d", i);
    CHECK_OK(tether_value_object_key(obj, (size_t)i, key, sizeof key, &len));
    CHECK_STR_EQ(key, want);
    snprintf(want, sizeof want, "/k%d", i);
    CHECK_INT_EQ(member_int(obj, want), 2000 + i);
  }
  tether_value_free(obj);
  tether_value_free(v);
  return check_report("values_object_set_large_objects");
}

/* Values are copies: an object appended to an array, or copied, does not
 * see the changes made to the original afterwards, whether they replace a
 * member or add one. */
TEST_CASE(values_object_set_copies_do_not_share) {
  tether_value_t *obj = NULL, *arr = NULL, *copy = NULL, *v = NULL;
  CHECK_OK(tether_value_new_object(&obj));
  CHECK_OK(tether_value_new_array(&arr));
  CHECK_OK(tether_value_new_int(1, &v));
  CHECK_OK(tether_value_object_set(obj, "x", -1, v));
  CHECK_OK(tether_value_array_append(arr, obj));
  CHECK_OK(tether_value_copy(obj, &copy));
  CHECK_OK(tether_value_set_int(v, 2));
  CHECK_OK(tether_value_object_set(obj, "x", -1, v)); /* replaces */
  CHECK_OK(tether_value_array_append(arr, obj));
  CHECK_OK(tether_value_object_set(obj, "y", -1, v)); /* adds */
  CHECK_VALUE(arr, "[{\"x\":1},{\"x\":2}]");
  CHECK_VALUE(copy, "{\"x\":1}");
  CHECK_VALUE(obj, "{\"x\":2,\"y\":2}");
  /* An object set as a member of itself is a copy of what it was. */
  CHECK_OK(tether_value_object_set(obj, "x", -1, obj));
  CHECK_VALUE(obj, "{\"x\":{\"x\":2,\"y\":2},\"y\":2}");
  tether_value_free(obj);
  tether_value_free(arr);
  tether_value_free(copy);
  tether_value_free(v);
  return check_report("values_object_set_copies_do_not_share");
}

/* Each error leaves the object as it was, whether the key exists or not. */
TEST_CASE(values_object_set_errors_leave_it_unchanged) {
  tether_value_t *obj = NULL, *one = NULL, *deep = NULL, *arr = NULL;
  int depth;
  CHECK_OK(tether_value_new_object(&obj));
  CHECK_OK(tether_value_new_int(1, &one));
  CHECK_OK(tether_value_object_set(obj, "k", -1, one));
  /* A value 512 levels deep cannot go one level further down. */
  CHECK_OK(tether_value_new_int(0, &deep));
  for (depth = 0; depth < 512; depth++) {
    CHECK_OK(tether_value_new_array(&arr));
    CHECK_OK(tether_value_array_append(arr, deep));
    tether_value_free(deep);
    deep = arr;
  }
  CHECK_ERR(tether_value_object_set(obj, "k", -1, deep), TETHER_ERANGE); /* existing key */
  CHECK_MENTIONS("512");
  CHECK_ERR(tether_value_object_set(obj, "new", -1, deep), TETHER_ERANGE); /* new key */
  /* Invalid UTF-8 is no member's name: refused, naming the byte. */
  CHECK_ERR(tether_value_object_set(obj, "k\xff", -1, one), TETHER_EINVAL);
  CHECK_MENTIONS("UTF-8");
  CHECK_ERR(tether_value_object_set(obj, "\xc3", 1, one), TETHER_EINVAL); /* cut sequence */
  /* A bad key is reported before a value too deep, as before. */
  CHECK_ERR(tether_value_object_set(obj, "\xff", -1, deep), TETHER_EINVAL);
  CHECK_ERR(tether_value_object_set(obj, "k", -2, one), TETHER_EINVAL);
  CHECK_ERR(tether_value_object_set(obj, NULL, -1, one), TETHER_EINVAL);
  CHECK_VALUE(obj, "{\"k\":1}");
  /* Not an object: a bad key is still reported first, then the type. */
  CHECK_ERR(tether_value_object_set(one, "\xff", -1, one), TETHER_EINVAL);
  CHECK_ERR(tether_value_object_set(one, "k", -1, one), TETHER_ETYPE);
  CHECK_VALUE(one, "1");
  tether_value_free(obj);
  tether_value_free(one);
  tether_value_free(deep);
  return check_report("values_object_set_errors_leave_it_unchanged");
}
