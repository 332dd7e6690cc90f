/*
 * demo.c — a short narrated session with Tether (what `make demo` shows).
 *
 * The runtime runs its own libuv loop on a background thread. Observers
 * print from that loop thread ("[loop]"); the main thread ("[main]") and a
 * worker thread write. tether_runtime_flush() is how the main thread waits
 * for the loop to catch up before it goes on narrating, so the story prints
 * in order. It checks itself too: the exit status is 0 only if everything
 * happened as narrated.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tether.h"

static pthread_t main_thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int off_loop_calls = 0; /* loop observers called on the main thread: must stay 0 */
static int quiet = 0;          /* while the worker hammers the counter */
static int view_calls = 0;
static int64_t view_last = 0;
static int destroyed = 0;

static void note_thread(void) {
  pthread_mutex_lock(&mu);
  if (pthread_equal(pthread_self(), main_thread)) off_loop_calls++;
  pthread_mutex_unlock(&mu);
}

/* The counter's "view": re-renders when count changes. */
static void counter_view(const tether_change_t *change, void *user_data) {
  int64_t old_v = value_int_or(change->old_value, -1);
  int64_t new_v = value_int_or(change->new_value, -1);
  int q;
  (void)user_data;
  note_thread();
  pthread_mutex_lock(&mu);
  view_calls++;
  view_last = new_v;
  q = quiet;
  pthread_mutex_unlock(&mu);
  if (!q)
    printf("  [loop] view: \"Clicked %lld times\" (was %lld, revision %llu)\n", (long long)new_v,
           (long long)old_v, (unsigned long long)change->revision);
}

/* A SYNC observer: runs inside the write, on the writing thread. */
static void audit_log(const tether_change_t *change, void *user_data) {
  (void)user_data;
  printf("  [sync] audit: count is now %lld\n", (long long)value_int_or(change->new_value, -1));
}

/* A per-field observer of the profile; user_data is its label. */
static void field_view(const tether_change_t *change, void *user_data) {
  char before[96], after[96];
  note_thread();
  printf("  [loop] %s (%s): %s -> %s%s%s%s\n", (const char *)user_data, change->path,
         value_json(change->old_value, before, sizeof before),
         value_json(change->new_value, after, sizeof after),
         change->transaction ? "  (transaction \"" : "",
         change->transaction ? change->transaction->tag : "", change->transaction ? "\")" : "");
}

/* A transform for a two-way binding: Celsius -> Fahrenheit and back. */
static int c_to_f(const tether_value_t *from, tether_value_t *to, void *user_data) {
  double c = 0;
  (void)user_data;
  if (tether_value_get_double(from, &c) != TETHER_OK) return TETHER_ETYPE;
  return tether_value_set_double(to, c * 9.0 / 5.0 + 32.0);
}

static int f_to_c(const tether_value_t *from, tether_value_t *to, void *user_data) {
  double f = 0;
  (void)user_data;
  if (tether_value_get_double(from, &f) != TETHER_OK) return TETHER_ETYPE;
  return tether_value_set_double(to, (f - 32.0) * 5.0 / 9.0);
}

static void on_destroy(void *user_data) {
  (void)user_data;
  pthread_mutex_lock(&mu);
  destroyed++;
  pthread_mutex_unlock(&mu);
}

static void click(tether_state_t count) {
  int64_t n = 0;
  CHECK_OK(tether_state_get_int(count, &n));
  CHECK_OK(tether_state_set_int(count, n + 1));
}

static tether_state_t count;
static void *worker(void *arg) {
  int i;
  (void)arg;
  for (i = 0; i < 1000; i++) click(count); /* only this thread writes now */
  return NULL;
}

int main(void) {
  tether_runtime_t rt;
  tether_state_t profile;
  tether_observer_t view, audit, o;
  pthread_t t;
  int64_t n = 0;
  int calls;
  char json[256];

  main_thread = pthread_self();
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("Tether %s: SwiftUI's state model, from C.\n\n", tether_version());

  printf("[main] tether_runtime_new(NULL): a runtime with its own loop thread.\n");
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("demo");

  printf("[main] @State var count = 0, and a view that observes it.\n");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &count));
  CHECK_OK(tether_observe(count, NULL, 0, counter_view, NULL, on_destroy, &view));

  printf("[main] click! (then tether_runtime_flush waits for the loop)\n");
  click(count);
  CHECK_OK(tether_runtime_flush(rt));

  printf("[main] writing the same value again wakes nobody:\n");
  CHECK_OK(tether_state_set_int(count, 1));
  CHECK_OK(tether_runtime_flush(rt));
  printf("       (silence)\n");

  printf("[main] a SYNC observer runs inside the write, before it returns:\n");
  CHECK_OK(tether_observe(count, NULL, TETHER_OBSERVE_SYNC, audit_log, NULL, on_destroy, &audit));
  click(count);
  printf("[main] ...the write has returned.\n");
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_observer_remove(audit));

  printf("[main] a worker thread clicks 1000 times; the view is coalesced per loop turn.\n");
  pthread_mutex_lock(&mu);
  quiet = 1;
  calls = view_calls;
  pthread_mutex_unlock(&mu);
  pthread_create(&t, NULL, worker, NULL);
  pthread_join(t, NULL);
  CHECK_OK(tether_runtime_flush(rt));
  pthread_mutex_lock(&mu);
  quiet = 0;
  printf("  [loop] view: called %d times for 1000 writes, last showing %lld\n",
         view_calls - calls, (long long)view_last);
  CHECK_INT_EQ(view_last, 1002);
  CHECK(view_calls - calls >= 1 && view_calls - calls <= 1000);
  pthread_mutex_unlock(&mu);
  CHECK_OK(tether_state_get_int(count, &n));
  CHECK_INT_EQ(n, 1002);

  printf("\n[main] a profile, observed field by field (@Observable style):\n");
  CHECK_OK(tether_state_new_json(
      rt, "{\"user\":{\"firstName\":\"Ada\",\"lastName\":\"Lovelace\"},\"tags\":[]}", -1, 0,
      &profile));
  CHECK_OK(tether_observe(profile, "/user/firstName", 0, field_view, "first name", on_destroy, &o));
  CHECK_OK(tether_observe(profile, "/user/lastName", 0, field_view, "last name ", on_destroy, &o));
  CHECK_OK(tether_observe(profile, "/user", 0, field_view, "user      ", on_destroy, &o));
  printf("[main] set /user/lastName = \"Byron\" (first name's observer stays asleep)\n");
  CHECK_OK(tether_state_set_path_json(profile, "/user/lastName", "\"Byron\"", -1));
  CHECK_OK(tether_runtime_flush(rt));
  printf("[main] append a tag (nobody watching /user wakes)\n");
  CHECK_OK(tether_state_set_path_json(profile, "/tags/-", "\"math\"", -1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_state_get_json(profile, 0, json, sizeof json, NULL));
  printf("[main] the profile is now %s\n", json);

  printf("\n[main] a child editor gets $profile.user.firstName, a binding it does not own:\n");
  {
    tether_binding_t whole, first, last;
    tether_transaction_t txn;
    tether_transaction_info_t info = {"rename", 1, NULL};
    tether_state_t celsius, fahrenheit;
    tether_binding_t temp;
    double f = 0, c = 0;
    uint64_t before = 0, after = 0;

    CHECK_OK(tether_state_binding(profile, &whole));
    CHECK_OK(tether_binding_project(whole, "/user/firstName", &first));
    CHECK_OK(tether_binding_project(whole, "/user/lastName", &last));
    printf("[main] the editor writes \"Augusta\" through its binding; the parent's views see it\n");
    CHECK_OK(tether_binding_set_string(first, "Augusta", -1));
    CHECK_OK(tether_runtime_flush(rt));

    printf("[main] a transaction tagged \"rename\" writes both names: applied at once, one\n"
           "       revision, each view called once, and the tag reaches every callback\n");
    CHECK_OK(tether_runtime_revision(rt, &before));
    CHECK_OK(tether_transaction_begin(rt, &info, &txn));
    CHECK_OK(tether_binding_set_string(first, "Ada", -1));
    CHECK_OK(tether_binding_set_string(last, "King", -1));
    CHECK_OK(tether_transaction_commit(txn, &after));
    CHECK_INT_EQ(after, before + 1);
    CHECK_OK(tether_runtime_flush(rt));
    CHECK_OK(tether_binding_free(first));
    CHECK_OK(tether_binding_free(last));
    CHECK_OK(tether_binding_free(whole));

    printf("\n[main] Celsius and Fahrenheit kept in sync by a two-way transform binding:\n");
    CHECK_OK(tether_state_new_double(rt, 100.0, TETHER_STATE_LOCK_TYPE, &celsius));
    CHECK_OK(tether_state_new_double(rt, 0.0, TETHER_STATE_LOCK_TYPE, &fahrenheit));
    CHECK_OK(tether_binding_bind(celsius, NULL, fahrenheit, NULL,
                                 TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE, c_to_f, f_to_c,
                                 NULL, NULL, &temp));
    CHECK_OK(tether_state_get_double(fahrenheit, &f));
    printf("[main] 100 C is %.1f F (synced when bound)\n", f);
    CHECK(f == 212.0);
    CHECK_OK(tether_state_set_double(fahrenheit, 32.0));
    CHECK_OK(tether_state_get_double(celsius, &c));
    printf("[main] set 32 F: celsius is already %.1f when the write returns\n", c);
    CHECK(c == 0.0);
    CHECK_OK(tether_binding_free(temp));
  }

  printf("\n[main] tether_runtime_free: every observer's destroy runs once.\n");
  CHECK_OK(tether_runtime_free(rt));
  pthread_mutex_lock(&mu);
  printf("[main] %d destroy calls in all: the view, the three field views, and the audit\n"
         "       observer's when it was removed earlier.\n",
         destroyed);
  CHECK_INT_EQ(destroyed, 5);
  CHECK_INT_EQ(off_loop_calls, 0);
  pthread_mutex_unlock(&mu);
  CHECK_ERR(tether_state_set_int(count, 0), TETHER_ESTALE);
  printf("[main] and a stale handle is an error, not a crash: %s\n\n", tether_last_error());
  return check_report("demo");
}
