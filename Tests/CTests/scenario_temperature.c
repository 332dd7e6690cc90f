/*
 * temperature.c — Celsius and Fahrenheit kept in sync by a two-way binding
 * with transforms (GLib's g_object_bind_property_full, for states).
 *
 *     tether_binding_bind(celsius, NULL, fahrenheit, NULL,
 *                         TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE,
 *                         c_to_f, f_to_c, &converter, converter_destroy, &b);
 *
 * Both fields of a converter window are states; the binding keeps
 * fahrenheit == c_to_f(celsius) and, being bidirectional,
 * celsius == f_to_c(fahrenheit). What it shows:
 *  - TETHER_BIND_SYNC_CREATE sets the target before bind returns
 *    (100 °C -> 212 °F);
 *  - propagation is synchronous: when a write to either side returns, the
 *    other side has been written (through the ordinary write path, so its
 *    SYNC observers have run too, and it carries the write's transaction);
 *  - a transform may decline (return 1): below absolute zero there is no
 *    conversion, and the other side keeps its value;
 *  - the transforms round to one decimal, which is lossy: 37.77 °C gives
 *    100.0 °F, and 100.0 °F would give 37.8 °C. The binding never carries its
 *    own write back, so celsius stays exactly 37.77 — no ping-pong;
 *  - a ring of three bidirectional bindings A<->B<->C<->A settles after one
 *    pass and never reports TETHER_ELOOP;
 *  - TETHER_BIND_INVERT_BOOLEAN keeps dark_mode == !light_mode;
 *  - tether_binding_free unbinds (destroy runs once); freeing either state
 *    ends the binding too (destroy runs once, the handle goes stale).
 *
 * Build: cc -std=c99 temperature.c $(pkg-config --cflags --libs tether) -lpthread -lm
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* Doubles compared exactly: every value here is computed the same way on
 * both sides of the comparison, or is a state's stored value read back. */
static int check_dbl_eq_(double got, double want, const char *gexpr, const char *wexpr,
                         const char *file, int line) {
  if (got == want) {
    check_pass_();
    return 1;
  }
  check_fail_(file, line, "%s == %s\n    expected %.17g, got %.17g", gexpr, wexpr, want, got);
  return 0;
}
#define CHECK_DBL_EQ(got, want) check_dbl_eq_((got), (want), #got, #want, __FILE__, __LINE__)

static double double_of(tether_state_t s) {
  double d = NAN;
  CHECK_OK(tether_state_get_double(s, &d));
  return d;
}

static int64_t int_of(tether_state_t s) {
  int64_t n = -1;
  CHECK_OK(tether_state_get_int(s, &n));
  return n;
}

static bool bool_of(tether_state_t s) {
  bool b = false;
  CHECK_OK(tether_state_get_bool(s, &b));
  return b;
}

/* ---- the converter: two transforms and their bookkeeping ------------------ */

typedef struct converter {
  int to_calls;   /* c_to_f calls */
  int from_calls; /* f_to_c calls */
  int declined;
  int destroyed;
} converter_t;

static converter_t converter_snapshot(converter_t *c) {
  converter_t copy;
  pthread_mutex_lock(&mu);
  copy = *c;
  pthread_mutex_unlock(&mu);
  return copy;
}

static void converter_destroy(void *user_data) {
  converter_t *c = user_data;
  pthread_mutex_lock(&mu);
  c->destroyed++;
  pthread_mutex_unlock(&mu);
}

/* What a thermometer shows: one decimal. */
static double round1(double x) { return round(x * 10.0) / 10.0; }

#define ABSOLUTE_ZERO_C (-273.15)
#define ABSOLUTE_ZERO_F (-459.67)

/* celsius -> fahrenheit. `to` is runtime-owned (null on entry): fill it.
 * Return 1 to decline: the other side stays as it is. */
static int c_to_f(const tether_value_t *from, tether_value_t *to, void *user_data) {
  converter_t *c = user_data;
  double celsius = 0;
  int rc = tether_value_get_double(from, &celsius);
  pthread_mutex_lock(&mu);
  c->to_calls++;
  if (rc == TETHER_OK && celsius < ABSOLUTE_ZERO_C) c->declined++;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  if (celsius < ABSOLUTE_ZERO_C) return 1; /* no such temperature: decline */
  return tether_value_set_double(to, round1(celsius * 9.0 / 5.0 + 32.0));
}

/* fahrenheit -> celsius, the way back (BIDIRECTIONAL). */
static int f_to_c(const tether_value_t *from, tether_value_t *to, void *user_data) {
  converter_t *c = user_data;
  double fahrenheit = 0;
  int rc = tether_value_get_double(from, &fahrenheit);
  pthread_mutex_lock(&mu);
  c->from_calls++;
  if (rc == TETHER_OK && fahrenheit < ABSOLUTE_ZERO_F) c->declined++;
  pthread_mutex_unlock(&mu);
  if (rc != TETHER_OK) return rc;
  if (fahrenheit < ABSOLUTE_ZERO_F) return 1;
  return tether_value_set_double(to, round1((fahrenheit - 32.0) * 5.0 / 9.0));
}

/* celsius -> kelvin, one way. */
static int c_to_k(const tether_value_t *from, tether_value_t *to, void *user_data) {
  double celsius = 0;
  int rc = tether_value_get_double(from, &celsius);
  (void)user_data;
  if (rc != TETHER_OK) return rc;
  return tether_value_set_double(to, celsius + 273.15);
}

/* An int passed on unchanged, the long way round (for the ring). */
static int plus_zero(const tether_value_t *from, tether_value_t *to, void *user_data) {
  int64_t n = 0;
  int rc = tether_value_get_int(from, &n);
  (void)user_data;
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(to, n + 0);
}

/* ---- observers: what each field's view was told ---------------------------- */

typedef struct seen {
  int calls;
  double last_new;
  int saw_transaction;
  char tag[32];
  uint64_t origin;
} seen_t;

static void seen_record(const tether_change_t *change, void *user_data) {
  seen_t *s = user_data;
  double d = NAN; /* get_double also reads the ring's ints */
  if (change->new_value != NULL) (void)tether_value_get_double(change->new_value, &d);
  pthread_mutex_lock(&mu);
  s->calls++;
  s->last_new = d;
  s->saw_transaction = change->transaction != NULL;
  snprintf(s->tag, sizeof s->tag, "%s",
           change->transaction && change->transaction->tag ? change->transaction->tag : "");
  s->origin = change->transaction ? change->transaction->origin : 0;
  pthread_mutex_unlock(&mu);
}

static seen_t seen_snapshot(seen_t *s) {
  seen_t copy;
  pthread_mutex_lock(&mu);
  copy = *s;
  pthread_mutex_unlock(&mu);
  return copy;
}

static int seen_calls(seen_t *s) { return seen_snapshot(s).calls; }

/* ------------------------------------------------------------------------- */

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_temperature) {
  tether_runtime_t rt;
  tether_state_t celsius, fahrenheit, kelvin, a, b, c, dark_mode, light_mode;
  tether_binding_t conv_binding, ab, bc, ca, modes, kb, again;
  tether_observer_t obs;
  tether_transaction_t txn;
  tether_transaction_info_t info;
  converter_t conv, conv_refused, conv_kelvin, conv_last, cs;
  seen_t c_seen, f_seen, a_seen, b_seen, c3_seen;
  double d = 0;
  int cb, fb;
  char last_error[512];

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("temperature");

  /* Two type-locked double states: the converter window's fields. */
  CHECK_OK(tether_state_new_double(rt, 100.0, TETHER_STATE_LOCK_TYPE, &celsius));
  CHECK_OK(tether_state_new_double(rt, 0.0, TETHER_STATE_LOCK_TYPE, &fahrenheit));
  memset(&c_seen, 0, sizeof c_seen);
  memset(&f_seen, 0, sizeof f_seen);
  CHECK_OK(tether_observe(celsius, NULL, TETHER_OBSERVE_SYNC, seen_record, &c_seen, NULL, &obs));
  CHECK_OK(tether_observe(fahrenheit, NULL, TETHER_OBSERVE_SYNC, seen_record, &f_seen, NULL,
                          &obs));

  /* --- 1. bind, with SYNC_CREATE ----------------------------------------------- */
  memset(&conv, 0, sizeof conv);
  CHECK_ERR(tether_binding_bind(celsius, NULL, celsius, NULL, TETHER_BIND_BIDIRECTIONAL, c_to_f,
                                f_to_c, &conv, converter_destroy, &conv_binding),
            TETHER_EINVAL); /* a state bound to itself */
  CHECK_OK(tether_binding_bind(celsius, NULL, fahrenheit, NULL,
                               TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE, c_to_f, f_to_c,
                               &conv, converter_destroy, &conv_binding));
  CHECK_DBL_EQ(double_of(fahrenheit), 212.0); /* set before bind returned */
  CHECK_DBL_EQ(double_of(celsius), 100.0);
  cs = converter_snapshot(&conv);
  CHECK_INT_EQ(cs.to_calls, 1);
  CHECK_INT_EQ(cs.from_calls, 0); /* the binding's own write is not carried back */
  CHECK_INT_EQ(cs.destroyed, 0);
  CHECK_INT_EQ(seen_calls(&f_seen), 1); /* an ordinary write: observers apply */
  CHECK_INT_EQ(seen_calls(&c_seen), 0);
  /* The handle is a binding of the target. */
  CHECK_OK(tether_binding_get_double(conv_binding, &d));
  CHECK_DBL_EQ(d, 212.0);

  /* --- 2. either side, synchronously ---------------------------------------------- */
  CHECK_OK(tether_state_set_double(celsius, 37.0));
  CHECK_DBL_EQ(double_of(fahrenheit), 98.6); /* no flush: written before set returned */
  {
    seen_t fs = seen_snapshot(&f_seen);
    CHECK_INT_EQ(fs.calls, 2); /* fahrenheit's SYNC view ran, too */
    CHECK_DBL_EQ(fs.last_new, 98.6);
    CHECK_INT_EQ(fs.saw_transaction, 0);
  }
  CHECK_OK(tether_state_set_double(fahrenheit, 212.0));
  CHECK_DBL_EQ(double_of(celsius), 100.0);
  /* A write through the handle is a write to the target, carried back too. */
  CHECK_OK(tether_binding_set_double(conv_binding, -40.0));
  CHECK_DBL_EQ(double_of(fahrenheit), -40.0);
  CHECK_DBL_EQ(double_of(celsius), -40.0);
  /* An int written to a type-locked double state is stored as a double. */
  CHECK_OK(tether_state_set_int(celsius, 20));
  CHECK_DBL_EQ(double_of(fahrenheit), 68.0);

  /* --- 3. lossy transforms do not ping-pong ------------------------------------- */
  cs = converter_snapshot(&conv);
  cb = seen_calls(&c_seen);
  fb = seen_calls(&f_seen);
  CHECK_OK(tether_state_set_double(celsius, 37.77));
  CHECK_DBL_EQ(double_of(fahrenheit), 100.0); /* 99.986, shown as 100.0 */
  CHECK_DBL_EQ(double_of(celsius), 37.77);    /* NOT 37.8: never carried back */
  CHECK_INT_EQ(converter_snapshot(&conv).to_calls, cs.to_calls + 1);
  CHECK_INT_EQ(converter_snapshot(&conv).from_calls, cs.from_calls);
  CHECK_INT_EQ(seen_calls(&c_seen), cb + 1); /* celsius changed once: our write */
  CHECK_INT_EQ(seen_calls(&f_seen), fb + 1);
  CHECK_OK(tether_runtime_flush(rt)); /* nothing left to settle, no TETHER_ELOOP */
  CHECK_DBL_EQ(double_of(celsius), 37.77);
  /* The other way: 100.4 °F -> 38.0 °C, and fahrenheit keeps its 100.4. */
  CHECK_OK(tether_state_set_double(fahrenheit, 100.4));
  CHECK_DBL_EQ(double_of(celsius), 38.0);
  CHECK_DBL_EQ(double_of(fahrenheit), 100.4);

  /* --- 4. a transform declines ------------------------------------------------------ */
  cb = seen_calls(&c_seen);
  fb = seen_calls(&f_seen);
  CHECK_OK(tether_state_set_double(celsius, -300.0)); /* the write itself is fine */
  CHECK_DBL_EQ(double_of(celsius), -300.0);
  CHECK_DBL_EQ(double_of(fahrenheit), 100.4); /* the converter declined */
  CHECK_INT_EQ(seen_calls(&f_seen), fb);
  CHECK_OK(tether_state_set_double(fahrenheit, -500.0));
  CHECK_DBL_EQ(double_of(celsius), -300.0); /* declined the other way too */
  CHECK_INT_EQ(seen_calls(&c_seen), cb + 1);
  CHECK_INT_EQ(converter_snapshot(&conv).declined, 2);
  /* Back to a real temperature: the binding is still there. */
  CHECK_OK(tether_state_set_double(celsius, 20.0));
  CHECK_DBL_EQ(double_of(fahrenheit), 68.0);

  /* --- 5. the carried write carries the transaction ---------------------------- */
  memset(&info, 0, sizeof info);
  info.tag = "thermostat";
  info.origin = 42;
  CHECK_OK(tether_transaction_begin(rt, &info, &txn));
  CHECK_OK(tether_state_set_double(celsius, 25.0));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_DBL_EQ(double_of(fahrenheit), 77.0);
  {
    seen_t fs = seen_snapshot(&f_seen), cs2 = seen_snapshot(&c_seen);
    CHECK_DBL_EQ(fs.last_new, 77.0);
    CHECK_INT_EQ(fs.saw_transaction, 1);
    CHECK_STR_EQ(fs.tag, "thermostat");
    CHECK_INT_EQ(fs.origin, 42);
    CHECK_STR_EQ(cs2.tag, "thermostat");
  }

  /* --- 6. a ring settles ------------------------------------------------------------- */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &b));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &c));
  memset(&a_seen, 0, sizeof a_seen);
  memset(&b_seen, 0, sizeof b_seen);
  memset(&c3_seen, 0, sizeof c3_seen);
  CHECK_OK(tether_observe(a, NULL, TETHER_OBSERVE_SYNC, seen_record, &a_seen, NULL, &obs));
  CHECK_OK(tether_observe(b, NULL, TETHER_OBSERVE_SYNC, seen_record, &b_seen, NULL, &obs));
  CHECK_OK(tether_observe(c, NULL, TETHER_OBSERVE_SYNC, seen_record, &c3_seen, NULL, &obs));
  CHECK_OK(tether_binding_bind(a, NULL, b, NULL, TETHER_BIND_BIDIRECTIONAL, plus_zero, plus_zero,
                               NULL, NULL, &ab));
  CHECK_OK(tether_binding_bind(b, NULL, c, NULL, TETHER_BIND_BIDIRECTIONAL, NULL, NULL, NULL, NULL,
                               &bc)); /* NULL transforms copy */
  CHECK_OK(tether_binding_bind(c, NULL, a, NULL, TETHER_BIND_BIDIRECTIONAL, plus_zero, NULL, NULL,
                               NULL, &ca));
  CHECK_OK(tether_state_set_int(a, 5)); /* not TETHER_ELOOP */
  CHECK_INT_EQ(int_of(b), 5);
  CHECK_INT_EQ(int_of(c), 5);
  CHECK_INT_EQ(seen_calls(&a_seen), 1); /* each changed exactly once */
  CHECK_INT_EQ(seen_calls(&b_seen), 1);
  CHECK_INT_EQ(seen_calls(&c3_seen), 1);
  CHECK_OK(tether_state_set_int(b, 7));
  CHECK_INT_EQ(int_of(a), 7);
  CHECK_INT_EQ(int_of(c), 7);
  CHECK_OK(tether_binding_set_int(bc, 9)); /* bc's handle reaches its target, c */
  CHECK_INT_EQ(int_of(a), 9);
  CHECK_INT_EQ(int_of(b), 9);
  CHECK_INT_EQ(int_of(c), 9);
  CHECK_INT_EQ(seen_calls(&a_seen), 3);
  CHECK_INT_EQ(seen_calls(&b_seen), 3);
  CHECK_INT_EQ(seen_calls(&c3_seen), 3);
  CHECK_OK(tether_runtime_flush(rt)); /* no TETHER_ELOOP here either */

  /* --- 7. TETHER_BIND_INVERT_BOOLEAN ------------------------------------------------ */
  CHECK_OK(tether_state_new_bool(rt, true, 0, &dark_mode));
  CHECK_OK(tether_state_new_bool(rt, true, 0, &light_mode)); /* inconsistent, for now */
  CHECK_ERR(tether_binding_bind(dark_mode, NULL, light_mode, NULL, TETHER_BIND_INVERT_BOOLEAN,
                                plus_zero, NULL, NULL, NULL, &modes),
            TETHER_EINVAL); /* the negation replaces the transforms */
  CHECK_ERR(tether_binding_bind(a, NULL, light_mode, NULL,
                                TETHER_BIND_INVERT_BOOLEAN | TETHER_BIND_SYNC_CREATE, NULL, NULL,
                                NULL, NULL, &modes),
            TETHER_ETYPE); /* a is an int */
  CHECK(bool_of(light_mode)); /* nothing was bound or written */
  CHECK_OK(tether_binding_bind(dark_mode, NULL, light_mode, NULL,
                               TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE |
                                   TETHER_BIND_INVERT_BOOLEAN,
                               NULL, NULL, NULL, NULL, &modes));
  CHECK(!bool_of(light_mode)); /* SYNC_CREATE: light = !dark */
  CHECK_OK(tether_state_set_bool(light_mode, true));
  CHECK(!bool_of(dark_mode));
  CHECK_OK(tether_state_set_bool(dark_mode, true));
  CHECK(!bool_of(light_mode));
  CHECK_OK(tether_binding_set_bool(modes, true)); /* the handle is light_mode */
  CHECK(bool_of(light_mode));
  CHECK(!bool_of(dark_mode));

  /* --- 8. tether_binding_free unbinds ------------------------------------------------- */
  CHECK_OK(tether_state_set_double(celsius, 30.0));
  CHECK_DBL_EQ(double_of(fahrenheit), 86.0);
  CHECK_OK(tether_binding_free(conv_binding));
  CHECK_INT_EQ(converter_snapshot(&conv).destroyed, 1);
  cs = converter_snapshot(&conv);
  CHECK_OK(tether_state_set_double(celsius, 0.0));
  CHECK_DBL_EQ(double_of(fahrenheit), 86.0); /* no longer carried */
  CHECK_OK(tether_state_set_double(fahrenheit, 50.0));
  CHECK_DBL_EQ(double_of(celsius), 0.0);
  CHECK_INT_EQ(converter_snapshot(&conv).to_calls, cs.to_calls);
  CHECK_INT_EQ(converter_snapshot(&conv).from_calls, cs.from_calls);
  CHECK_ERR(tether_binding_free(conv_binding), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get_double(conv_binding, &d), TETHER_ESTALE);
  CHECK_INT_EQ(converter_snapshot(&conv).destroyed, 1);

  /* SYNC_CREATE with a source the transform declines: an error, nothing bound,
   * destroy not called (the caller still owns its user data). */
  CHECK_OK(tether_state_set_double(celsius, -300.0));
  memset(&conv_refused, 0, sizeof conv_refused);
  CHECK_ERR(tether_binding_bind(celsius, NULL, fahrenheit, NULL,
                                TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE, c_to_f,
                                f_to_c, &conv_refused, converter_destroy, &again),
            TETHER_EREJECTED);
  CHECK_INT_EQ(converter_snapshot(&conv_refused).destroyed, 0);
  CHECK_DBL_EQ(double_of(fahrenheit), 50.0);
  CHECK_OK(tether_state_set_double(celsius, 10.0));
  CHECK_DBL_EQ(double_of(fahrenheit), 50.0); /* not bound */

  /* --- 9. freeing a state ends the binding ------------------------------------------- */
  /* The target: a one-way kelvin display. */
  CHECK_OK(tether_state_new_double(rt, 0.0, TETHER_STATE_LOCK_TYPE, &kelvin));
  memset(&conv_kelvin, 0, sizeof conv_kelvin);
  CHECK_OK(tether_binding_bind(celsius, NULL, kelvin, NULL, TETHER_BIND_SYNC_CREATE, c_to_k, NULL,
                               &conv_kelvin, converter_destroy, &kb));
  CHECK_DBL_EQ(double_of(kelvin), 10.0 + 273.15);
  CHECK_OK(tether_state_set_double(kelvin, 0.0)); /* one-way: not carried back */
  CHECK_DBL_EQ(double_of(celsius), 10.0);
  CHECK_OK(tether_state_set_double(celsius, 11.0));
  CHECK_DBL_EQ(double_of(kelvin), 11.0 + 273.15);
  /* Ending the binding is part of a successful free: tether_last_error()
   * keeps the message of the last call that failed. */
  snprintf(last_error, sizeof last_error, "%s", tether_last_error());
  CHECK_OK(tether_state_free(kelvin));
  CHECK_STR_EQ(tether_last_error(), last_error);
  CHECK_INT_EQ(converter_snapshot(&conv_kelvin).destroyed, 1);
  CHECK_ERR(tether_binding_get_double(kb, &d), TETHER_ESTALE);
  CHECK_OK(tether_state_set_double(celsius, 12.0)); /* nothing left to carry to */
  CHECK_ERR(tether_binding_free(kb), TETHER_ESTALE);
  CHECK_INT_EQ(converter_snapshot(&conv_kelvin).destroyed, 1);

  /* The source: bind celsius -> fahrenheit again, then free celsius. This
   * time SYNC_CREATE starts from a lossy value: its write of 100.0 °F is the
   * binding's own, so it is not carried back (which would make 37.8 °C). */
  CHECK_OK(tether_state_set_double(celsius, 37.77));
  memset(&conv_last, 0, sizeof conv_last);
  CHECK_OK(tether_binding_bind(celsius, NULL, fahrenheit, NULL,
                               TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE, c_to_f, f_to_c,
                               &conv_last, converter_destroy, &again));
  CHECK_DBL_EQ(double_of(fahrenheit), 100.0);
  CHECK_DBL_EQ(double_of(celsius), 37.77);
  cs = converter_snapshot(&conv_last);
  CHECK_INT_EQ(cs.to_calls, 1);
  CHECK_INT_EQ(cs.from_calls, 0);
  CHECK_OK(tether_state_free(celsius));
  CHECK_INT_EQ(converter_snapshot(&conv_last).destroyed, 1);
  CHECK_ERR(tether_binding_set_double(again, 451.0), TETHER_ESTALE);
  CHECK_OK(tether_state_set_double(fahrenheit, 451.0)); /* fahrenheit lives on */
  CHECK_INT_EQ(converter_snapshot(&conv_last).from_calls, cs.from_calls); /* unbound */
  CHECK_ERR(tether_binding_free(again), TETHER_ESTALE);
  CHECK_INT_EQ(converter_snapshot(&conv_last).destroyed, 1);

  printf("temperature: %d conversions to fahrenheit, %d to celsius, %d declined\n",
         converter_snapshot(&conv).to_calls, converter_snapshot(&conv).from_calls,
         converter_snapshot(&conv).declined);

  /* The ring and the modes: unbound by their owner. */
  CHECK_OK(tether_binding_free(ab));
  CHECK_OK(tether_binding_free(bc));
  CHECK_OK(tether_binding_free(ca));
  CHECK_OK(tether_binding_free(modes));
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(converter_snapshot(&conv).destroyed, 1);
  CHECK_INT_EQ(converter_snapshot(&conv_refused).destroyed, 0);
  return check_report("temperature");
}
