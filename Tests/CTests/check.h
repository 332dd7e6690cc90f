/*
 * check.h — the small test vocabulary shared by the examples.
 *
 * Every example in examples-c/ is both a lesson and a test: it calls the API
 * the way an application would, and checks each result with these macros.
 * A failed check prints where it failed (file:line), the expression, what was
 * expected and what came back (for tether calls also tether_strerror() and
 * tether_last_error()), and the run goes on so one run shows every failure.
 * main() ends with `return check_report("name");`, which is 0 only when no
 * check failed.
 *
 *   CHECK(cond)                     any condition
 *   CHECK_OK(call)                  call returned TETHER_OK
 *   CHECK_ERR(call, TETHER_EXXX)    call returned exactly that error, and
 *                                   tether_last_error() is not empty
 *   CHECK_MENTIONS("word")          tether_last_error() contains "word"
 *                                   (ignoring case)
 *   CHECK_INT_EQ(got, expected)     integers, both printed on failure
 *   CHECK_STR_EQ(got, expected)     C strings, both printed on failure
 *   CHECK_VALUE(value, "json")      value is structurally equal to the JSON
 *                                   text (NULL json: value must be NULL)
 *   check_destroyed_once_(name, destroyed, while_running, file, line)
 *                                   a destroy function ran exactly once and
 *                                   never during its callback (the programs
 *                                   wrap it in their own EXPECT_ macros)
 *
 * CHECK_OK / CHECK_ERR / CHECK_INT_EQ evaluate to 1 when the check passed, so
 * `if (!CHECK_OK(...)) return;` skips work that needs the result.
 *
 * Callbacks run on other threads, so the failure counter is guarded by a
 * mutex: checks may be used anywhere, including inside callbacks.
 */
#ifndef TETHER_EXAMPLES_CHECK_H
#define TETHER_EXAMPLES_CHECK_H

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether.h"

static pthread_mutex_t check_mutex_ = PTHREAD_MUTEX_INITIALIZER;
static long check_passed_ = 0;
static long check_failed_ = 0;

/* The enum name of a tether error code, for messages. */
static inline const char *check_errname(int code) {
  switch (code) {
    case TETHER_OK: return "TETHER_OK";
    case TETHER_EINVAL: return "TETHER_EINVAL";
    case TETHER_ESTALE: return "TETHER_ESTALE";
    case TETHER_ETYPE: return "TETHER_ETYPE";
    case TETHER_EPATH: return "TETHER_EPATH";
    case TETHER_ENOTFOUND: return "TETHER_ENOTFOUND";
    case TETHER_EJSON: return "TETHER_EJSON";
    case TETHER_ERANGE: return "TETHER_ERANGE";
    case TETHER_ENOMEM: return "TETHER_ENOMEM";
    case TETHER_ELOOP: return "TETHER_ELOOP";
    case TETHER_EBUSY: return "TETHER_EBUSY";
    case TETHER_ETHREAD: return "TETHER_ETHREAD";
    case TETHER_EUV: return "TETHER_EUV";
    case TETHER_EREADONLY: return "TETHER_EREADONLY";
    case TETHER_ECYCLE: return "TETHER_ECYCLE";
    case TETHER_EREJECTED: return "TETHER_EREJECTED";
    case TETHER_EUNTRUSTED: return "TETHER_EUNTRUSTED";
    case TETHER_ETIMEDOUT: return "TETHER_ETIMEDOUT";
    default: return "(not a tether error code)";
  }
}

static inline void check_pass_(void) {
  pthread_mutex_lock(&check_mutex_);
  check_passed_++;
  pthread_mutex_unlock(&check_mutex_);
}

static inline void check_fail_(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&check_mutex_);
  check_failed_++;
  fprintf(stderr, "%s:%d: CHECK FAILED: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  pthread_mutex_unlock(&check_mutex_);
}

/* Waits that poll (a spin on sched_yield) end: one that has not seen its
 * condition after CHECK_WAIT_SECONDS fails a check naming what it waited
 * for and stops waiting, so a regression fails the case instead of hanging
 * CI until the harness's timeout (issue 36).
 *
 *   double until = check_deadline();
 *   while (!ready && !CHECK_PAST(until, "the reader to start")) sched_yield();
 */
#define CHECK_WAIT_SECONDS 30

static inline double check_now_(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline double check_deadline(void) { return check_now_() + CHECK_WAIT_SECONDS; }

static inline int check_past_(double until, const char *what, const char *file, int line) {
  if (check_now_() < until) return 0;
  check_fail_(file, line, "gave up after %d s waiting for %s", CHECK_WAIT_SECONDS, what);
  return 1;
}
#define CHECK_PAST(until, what) check_past_((until), (what), __FILE__, __LINE__)

/* A registration's destroy function must run exactly once, and never while
 * its callback runs. The caller counts both (under its own lock) and hands
 * the counts in. */
static inline void check_destroyed_once_(const char *name, int destroyed, int while_running,
                                         const char *file, int line) {
  if (destroyed == 1 && while_running == 0) {
    check_pass_();
  } else {
    check_fail_(file, line,
                "\"%s\": destroy must run exactly once, never during its callback\n"
                "    destroyed %d times, %d of them while its callback ran",
                name, destroyed, while_running);
  }
}

static inline int check_cond_(int ok, const char *expr, const char *file, int line) {
  if (ok) {
    check_pass_();
    return 1;
  }
  check_fail_(file, line, "%s", expr);
  return 0;
}

static inline int check_ok_(int rc, const char *expr, const char *file, int line) {
  if (rc == TETHER_OK) {
    check_pass_();
    return 1;
  }
  check_fail_(file, line, "%s\n    expected TETHER_OK, got %s (%d, \"%s\")\n    last error: \"%s\"",
              expr, check_errname(rc), rc, tether_strerror(rc), tether_last_error());
  return 0;
}

static inline int check_err_(int rc, int expected, const char *expr, const char *file, int line) {
  const char *msg = tether_last_error();
  if (rc != expected) {
    check_fail_(file, line, "%s\n    expected %s (%d), got %s (%d)\n    last error: \"%s\"", expr,
                check_errname(expected), expected, check_errname(rc), rc, msg ? msg : "(NULL)");
    return 0;
  }
  if (expected != TETHER_OK && (msg == NULL || msg[0] == '\0')) {
    check_fail_(file, line, "%s\n    returned %s as expected, but tether_last_error() is empty",
                expr, check_errname(rc));
    return 0;
  }
  check_pass_();
  return 1;
}

/* Case-insensitive strstr (strcasestr is a GNU extension, not C99/POSIX). */
static inline const char *check_strcasestr_(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  if (hay == NULL) return NULL;
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n) return hay;
  }
  return n == 0 ? hay : NULL;
}

static inline int check_mentions_(const char *needle, const char *file, int line) {
  const char *msg = tether_last_error();
  if (check_strcasestr_(msg, needle) != NULL) {
    check_pass_();
    return 1;
  }
  check_fail_(file, line, "tether_last_error() should mention \"%s\"\n    last error: \"%s\"",
              needle, msg ? msg : "(NULL)");
  return 0;
}

static inline int check_int_eq_(long long got, long long expected, const char *gexpr,
                                const char *eexpr, const char *file, int line) {
  if (got == expected) {
    check_pass_();
    return 1;
  }
  check_fail_(file, line, "%s == %s\n    expected %lld, got %lld", gexpr, eexpr, expected, got);
  return 0;
}

static inline int check_str_eq_(const char *got, const char *expected, const char *gexpr,
                                const char *eexpr, const char *file, int line) {
  if (got != NULL && expected != NULL && strcmp(got, expected) == 0) {
    check_pass_();
    return 1;
  }
  check_fail_(file, line, "%s == %s\n    expected \"%s\"\n    got      \"%s\"", gexpr, eexpr,
              expected ? expected : "(NULL)", got ? got : "(NULL)");
  return 0;
}

static inline int check_value_json_(const tether_value_t *got, const char *expected_json,
                                    const char *gexpr, const char *file, int line) {
  tether_value_t *want = NULL;
  char gbuf[512];
  int eq;
  if (expected_json == NULL) { /* expect "no value" (a NULL pointer) */
    if (got == NULL) {
      check_pass_();
      return 1;
    }
    if (tether_value_to_json(got, 0, gbuf, sizeof gbuf, NULL) != TETHER_OK)
      snprintf(gbuf, sizeof gbuf, "(no JSON form)");
    check_fail_(file, line, "%s should be NULL (no value)\n    got %s", gexpr, gbuf);
    return 0;
  }
  if (tether_value_from_json(expected_json, -1, &want) != TETHER_OK) {
    check_fail_(file, line, "bad expected JSON %s: %s", expected_json, tether_last_error());
    return 0;
  }
  eq = got != NULL && tether_value_equal(got, want) == 1;
  tether_value_free(want);
  if (eq) {
    check_pass_();
    return 1;
  }
  if (got == NULL) {
    snprintf(gbuf, sizeof gbuf, "NULL (no value)");
  } else if (tether_value_to_json(got, 0, gbuf, sizeof gbuf, NULL) != TETHER_OK) {
    snprintf(gbuf, sizeof gbuf, "(no JSON form: %s)", tether_last_error());
  }
  check_fail_(file, line, "%s equals %s\n    expected %s\n    got      %s", gexpr, expected_json,
              expected_json, gbuf);
  return 0;
}

#define CHECK(cond) check_cond_(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_OK(call) check_ok_((call), #call, __FILE__, __LINE__)
#define CHECK_ERR(call, code) check_err_((call), (code), #call, __FILE__, __LINE__)
#define CHECK_MENTIONS(word) check_mentions_((word), __FILE__, __LINE__)
#define CHECK_INT_EQ(got, expected) \
  check_int_eq_((long long)(got), (long long)(expected), #got, #expected, __FILE__, __LINE__)
#define CHECK_STR_EQ(got, expected) \
  check_str_eq_((got), (expected), #got, #expected, __FILE__, __LINE__)
/* The value equals the one the JSON text describes (structurally); a NULL
 * json means "expect a NULL pointer" (no value). */
#define CHECK_VALUE(got, json) check_value_json_((got), (json), #got, __FILE__, __LINE__)

/* Prints a one-line summary and returns the process exit status. A run in
 * which no check ran at all fails: it proves nothing (issue 36). */
static inline int check_report(const char *name) {
  long passed, failed;
  pthread_mutex_lock(&check_mutex_);
  passed = check_passed_;
  failed = check_failed_;
  pthread_mutex_unlock(&check_mutex_);
  printf("%s: %ld checks passed, %ld failed\n", name, passed, failed);
  if (passed + failed == 0) printf("%s: no check ran (a case that checks nothing cannot fail)\n", name);
  fflush(stdout);
  return failed == 0 && passed > 0 ? 0 : 1;
}

/* The exit status of a skipped case or program (automake's): run.sh prints
 * SKIP, counts it apart, and under CI=true fails it unless it is listed in
 * Tests/allowed-skips.txt. */
#define CHECK_SKIPPED 77

/* Says why `name` is skipped (one line, "NAME: skipped (REASON)", which
 * run.sh shows) and returns CHECK_SKIPPED. */
static inline int check_skip(const char *name, const char *reason) {
  printf("%s: skipped (%s)\n", name, reason);
  fflush(stdout);
  return CHECK_SKIPPED;
}

/* ---- small helpers used by several examples ----------------------------- */

/* Parses JSON into a new owned value; NULL (and a failed check) on error. */
static inline tether_value_t *check_json_(const char *json, const char *file, int line) {
  tether_value_t *v = NULL;
  int rc = tether_value_from_json(json, -1, &v);
  if (rc != TETHER_OK) {
    check_fail_(file, line, "tether_value_from_json(%s): %s: %s", json, check_errname(rc),
                tether_last_error());
    return NULL;
  }
  return v;
}
#define JSON(text) check_json_((text), __FILE__, __LINE__)

/* The int inside a value, or `fallback` when it is NULL or not an int. */
static inline int64_t value_int_or(const tether_value_t *v, int64_t fallback) {
  int64_t i;
  if (v != NULL && tether_value_get_int(v, &i) == TETHER_OK) return i;
  return fallback;
}

/* Copies a string value into buf ("" when NULL or not a string). */
static inline const char *value_str(const tether_value_t *v, char *buf, size_t size) {
  if (size > 0) buf[0] = '\0';
  if (v != NULL) (void)tether_value_get_string(v, buf, size, NULL);
  return buf;
}

/* Compact JSON of a value into buf ("(null pointer)" for NULL). */
static inline const char *value_json(const tether_value_t *v, char *buf, size_t size) {
  if (size > 0) buf[0] = '\0';
  if (v == NULL) {
    snprintf(buf, size, "(null pointer)");
  } else if (tether_value_to_json(v, 0, buf, size, NULL) != TETHER_OK) {
    snprintf(buf, size, "(no JSON: %s)", tether_last_error());
  }
  return buf;
}

#endif /* TETHER_EXAMPLES_CHECK_H */
