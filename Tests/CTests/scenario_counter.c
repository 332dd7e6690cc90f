/*
 * counter.c — the SwiftUI counter, in C.
 *
 *     struct Counter: View {
 *         @State private var count = 0
 *         var body: some View {
 *             Button("Clicked \(count) times") { count += 1 }
 *         }
 *     }
 *
 * What it shows:
 *  - a state: the runtime owns the storage, the handle only names it (@State);
 *  - a "button" function that reads and writes it;
 *  - an observer delivered on the runtime's own loop thread (the default),
 *    and tether_runtime_flush() to wait for it — never sleep;
 *  - coalescing: several writes in one loop turn reach an observer as ONE
 *    call carrying the first old value and the last new value, and a change
 *    undone within the turn reaches nobody;
 *  - an equal write wakes nobody and does not advance the revision;
 *  - TETHER_OBSERVE_SYNC (has run when the write returns),
 *    TETHER_OBSERVE_INITIAL (called once with the current value),
 *    TETHER_OBSERVE_EQUAL (called even for an equal write);
 *  - observers are called in registration order, across states;
 *  - the runtime revision advances by exactly one per changing write.
 *
 * Build: cc -std=c99 counter.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* ---- a recorder: an observer's user_data that remembers every call ------ */

#define MAX_CALLS 64

typedef struct call {
  int64_t old_value; /* -1 when the change had no old value */
  int64_t new_value;
  uint64_t revision;
  unsigned flags;
  uint64_t observer_id;
  uint64_t state_id;
  pthread_t thread;
} call_t;

typedef struct recorder {
  const char *name;
  pthread_mutex_t mu; /* the callback runs on the loop thread, main reads */
  call_t calls[MAX_CALLS];
  int ncalls;
  int destroyed; /* how many times the destroy function ran: must end at 1 */
} recorder_t;

static void recorder_init(recorder_t *r, const char *name) {
  memset(r, 0, sizeof *r);
  r->name = name;
  pthread_mutex_init(&r->mu, NULL);
}

/* The observer callback: record what we were told. */
static void record_change(const tether_change_t *change, void *user_data) {
  recorder_t *r = user_data;
  call_t c;
  c.old_value = value_int_or(change->old_value, -1);
  c.new_value = value_int_or(change->new_value, -1);
  c.revision = change->revision;
  c.flags = change->flags;
  c.observer_id = change->observer.id;
  c.state_id = change->state.id;
  c.thread = pthread_self();
  pthread_mutex_lock(&r->mu);
  if (r->ncalls < MAX_CALLS) r->calls[r->ncalls] = c;
  r->ncalls++;
  pthread_mutex_unlock(&r->mu);
}

/* The destroy function: the registration has ended. */
static void recorder_destroy(void *user_data) {
  recorder_t *r = user_data;
  pthread_mutex_lock(&r->mu);
  r->destroyed++;
  pthread_mutex_unlock(&r->mu);
}

static int recorder_count(recorder_t *r) {
  int n;
  pthread_mutex_lock(&r->mu);
  n = r->ncalls;
  pthread_mutex_unlock(&r->mu);
  return n;
}

/* Call number i (0-based); a zeroed call when there is none. */
static call_t recorder_call(recorder_t *r, int i) {
  call_t c;
  memset(&c, 0, sizeof c);
  pthread_mutex_lock(&r->mu);
  if (i >= 0 && i < r->ncalls && i < MAX_CALLS) c = r->calls[i];
  pthread_mutex_unlock(&r->mu);
  return c;
}

static int recorder_destroyed(recorder_t *r) {
  int n;
  pthread_mutex_lock(&r->mu);
  n = r->destroyed;
  pthread_mutex_unlock(&r->mu);
  return n;
}

/* ---- the button ---------------------------------------------------------- */

/* What the button's action closure does: count += 1. */
static void button_clicked(tether_state_t count) {
  int64_t n = 0;
  CHECK_OK(tether_state_get_int(count, &n));
  CHECK_OK(tether_state_set_int(count, n + 1));
}

static uint64_t revision_of(tether_runtime_t rt) {
  uint64_t r = 0;
  CHECK_OK(tether_runtime_revision(rt, &r));
  return r;
}

/* ---- a gate: keeps the loop thread busy, like a long frame -------------- */

/* While the loop thread is inside gate_observer, it cannot deliver anything
 * else, so every write the main thread makes meanwhile lands in the same
 * loop turn. That makes coalescing observable without any timing. */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int armed, entered, released;
} gate_t;

static gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static void gate_observer(const tether_change_t *change, void *user_data) {
  (void)change;
  (void)user_data;
  pthread_mutex_lock(&gate.mu);
  if (gate.armed) {
    gate.entered = 1;
    pthread_cond_broadcast(&gate.cv);
    while (!gate.released) pthread_cond_wait(&gate.cv, &gate.mu);
    gate.armed = 0;
  }
  pthread_mutex_unlock(&gate.mu);
}

/* Makes the loop thread enter gate_observer and stay there. */
static void gate_close(tether_state_t gate_state) {
  int64_t n = 0;
  pthread_mutex_lock(&gate.mu);
  gate.armed = 1;
  gate.entered = 0;
  gate.released = 0;
  pthread_mutex_unlock(&gate.mu);
  CHECK_OK(tether_state_get_int(gate_state, &n));
  CHECK_OK(tether_state_set_int(gate_state, n + 1));
  pthread_mutex_lock(&gate.mu);
  while (!gate.entered) pthread_cond_wait(&gate.cv, &gate.mu);
  pthread_mutex_unlock(&gate.mu);
}

/* Lets the loop thread go on. */
static void gate_open(void) {
  pthread_mutex_lock(&gate.mu);
  gate.released = 1;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
}

/* ---- observer order ------------------------------------------------------ */

static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static char order_log[64];

/* user_data is a one-letter name such as "A". */
static void log_order(const tether_change_t *change, void *user_data) {
  (void)change;
  pthread_mutex_lock(&order_mu);
  if (strlen(order_log) + 1 < sizeof order_log) strcat(order_log, (const char *)user_data);
  pthread_mutex_unlock(&order_mu);
}

static void order_log_take(char *out, size_t size) {
  pthread_mutex_lock(&order_mu);
  snprintf(out, size, "%s", order_log);
  order_log[0] = '\0';
  pthread_mutex_unlock(&order_mu);
}

/* ------------------------------------------------------------------------- */

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_counter) {
  tether_runtime_t rt;
  tether_state_t count, gate_state, other;
  tether_observer_t view, gate_obs, obs;
  recorder_t view_rec, sync_rec, initial_rec, sync_initial_rec, equal_rec;
  uint64_t rev0, rev, srev;
  int64_t n = -1;
  int calls;
  call_t c;
  char log[64];
  pthread_t main_thread = pthread_self();

  printf("counter: tether %s (compiled against %s)\n", tether_version(), TETHER_VERSION_STRING);
  CHECK_STR_EQ(tether_version(), TETHER_VERSION_STRING);
  CHECK_INT_EQ(tether_version_hex(), TETHER_VERSION_HEX);

  /* A runtime with the default options: its own loop on its own thread. */
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("counter");

  /* @State var count = 0 */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &count));
  rev0 = revision_of(rt);
  CHECK_OK(tether_state_revision(count, &srev));
  CHECK_INT_EQ(srev, rev0); /* never written: the revision at creation */

  /* The "view": an observer on the whole value (NULL path), delivered on the
   * loop thread. It keeps &view_rec until the observer ends, then
   * recorder_destroy(&view_rec) is called exactly once. */
  recorder_init(&view_rec, "view");
  CHECK_OK(tether_observe(count, NULL, 0, record_change, &view_rec, recorder_destroy, &view));

  /* --- 1. one click, then wait for the loop with flush --------------------- */
  button_clicked(count);
  CHECK_INT_EQ(revision_of(rt), rev0 + 1);
  CHECK_OK(tether_runtime_flush(rt)); /* the view has been told when this returns */
  CHECK_INT_EQ(recorder_count(&view_rec), 1);
  c = recorder_call(&view_rec, 0);
  CHECK_INT_EQ(c.old_value, 0);
  CHECK_INT_EQ(c.new_value, 1);
  CHECK_INT_EQ(c.revision, rev0 + 1);
  CHECK_INT_EQ(c.flags, 0);
  CHECK_INT_EQ(c.observer_id, view.id);
  CHECK_INT_EQ(c.state_id, count.id);
  CHECK(!pthread_equal(c.thread, main_thread)); /* the runtime's loop thread */
  CHECK_OK(tether_state_revision(count, &srev));
  CHECK_INT_EQ(srev, rev0 + 1);

  /* --- 2. an equal write changes nothing and wakes nobody ------------------ */
  rev = revision_of(rt);
  CHECK_OK(tether_state_set_int(count, 1));
  CHECK_INT_EQ(revision_of(rt), rev);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(recorder_count(&view_rec), 1);
  CHECK_OK(tether_state_revision(count, &srev));
  CHECK_INT_EQ(srev, rev0 + 1);

  /* --- 3. coalescing: three clicks in one loop turn -> one call ----------- */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &gate_state));
  CHECK_OK(tether_observe(gate_state, NULL, 0, gate_observer, NULL, NULL, &gate_obs));
  calls = recorder_count(&view_rec);
  gate_close(gate_state); /* the loop thread is now busy */
  rev = revision_of(rt);
  button_clicked(count); /* 1 -> 2 */
  button_clicked(count); /* 2 -> 3 */
  button_clicked(count); /* 3 -> 4 */
  CHECK_INT_EQ(revision_of(rt), rev + 3); /* one commit per changing write */
  gate_open();
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(recorder_count(&view_rec), calls + 1);
  c = recorder_call(&view_rec, calls);
  CHECK_INT_EQ(c.old_value, 1);     /* the first old value */
  CHECK_INT_EQ(c.new_value, 4);     /* the last new value */
  CHECK_INT_EQ(c.revision, rev + 3); /* the revision of the last write */

  /* --- 4. a change undone within the turn wakes nobody ------------------- */
  calls = recorder_count(&view_rec);
  gate_close(gate_state);
  rev = revision_of(rt);
  CHECK_OK(tether_state_set_int(count, 5));
  CHECK_OK(tether_state_set_int(count, 4));
  CHECK_INT_EQ(revision_of(rt), rev + 2); /* both writes did commit */
  gate_open();
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(recorder_count(&view_rec), calls); /* old 4 == new 4: no call */

  /* Every loop-delivered call ran on the same thread, not this one. */
  {
    int i, k = recorder_count(&view_rec);
    call_t first = recorder_call(&view_rec, 0);
    for (i = 1; i < k; i++) CHECK(pthread_equal(recorder_call(&view_rec, i).thread, first.thread));
  }

  /* --- 5. order: registration order, across states ----------------------- */
  /* X (on other) is registered first, then A and B (on count), then Y (on
   * other). Writing count and then other in one turn must call X A B Y. */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &other));
  CHECK_OK(tether_observe(other, NULL, 0, log_order, "X", NULL, &obs));
  CHECK_OK(tether_observe(count, NULL, 0, log_order, "A", NULL, &obs));
  CHECK_OK(tether_observe(count, NULL, 0, log_order, "B", NULL, &obs));
  CHECK_OK(tether_observe(other, NULL, 0, log_order, "Y", NULL, &obs));
  gate_close(gate_state);
  button_clicked(count);
  CHECK_OK(tether_state_set_int(other, 1));
  gate_open();
  CHECK_OK(tether_runtime_flush(rt));
  order_log_take(log, sizeof log);
  CHECK_STR_EQ(log, "XABY");
  /* The same for one state alone, without the gate. */
  button_clicked(count);
  CHECK_OK(tether_runtime_flush(rt));
  order_log_take(log, sizeof log);
  CHECK_STR_EQ(log, "AB");

  /* --- 6. TETHER_OBSERVE_SYNC: has run when the write returns ------------ */
  recorder_init(&sync_rec, "sync");
  CHECK_OK(tether_observe(count, NULL, TETHER_OBSERVE_SYNC, record_change, &sync_rec,
                          recorder_destroy, &obs));
  CHECK_OK(tether_state_get_int(count, &n));
  rev = revision_of(rt);
  button_clicked(count);
  /* No flush: the SYNC observer was called inside tether_state_set_int. */
  CHECK_INT_EQ(recorder_count(&sync_rec), 1);
  c = recorder_call(&sync_rec, 0);
  CHECK_INT_EQ(c.old_value, n);
  CHECK_INT_EQ(c.new_value, n + 1);
  CHECK_INT_EQ(c.revision, rev + 1);
  CHECK_OK(tether_state_set_int(count, n + 1)); /* equal: not called */
  CHECK_INT_EQ(recorder_count(&sync_rec), 1);
  CHECK_OK(tether_observer_remove(obs));
  CHECK_INT_EQ(recorder_destroyed(&sync_rec), 1);
  button_clicked(count); /* removed: not called again */
  CHECK_INT_EQ(recorder_count(&sync_rec), 1);
  CHECK_OK(tether_runtime_flush(rt));
  order_log_take(log, sizeof log); /* A and B saw these clicks too */

  /* --- 7. TETHER_OBSERVE_INITIAL: one call with the current value -------- */
  CHECK_OK(tether_state_get_int(count, &n));
  recorder_init(&initial_rec, "initial");
  CHECK_OK(tether_observe(count, NULL, TETHER_OBSERVE_INITIAL, record_change, &initial_rec,
                          recorder_destroy, &obs));
  CHECK_OK(tether_runtime_flush(rt)); /* loop observer: delivered on the loop */
  CHECK_INT_EQ(recorder_count(&initial_rec), 1);
  c = recorder_call(&initial_rec, 0);
  CHECK(c.flags & TETHER_CHANGE_INITIAL);
  CHECK_INT_EQ(c.old_value, n);
  CHECK_INT_EQ(c.new_value, n);
  CHECK_INT_EQ(c.observer_id, obs.id);
  CHECK(!pthread_equal(c.thread, main_thread));
  CHECK_OK(tether_observer_remove(obs));
  CHECK_INT_EQ(recorder_destroyed(&initial_rec), 1);

  recorder_init(&sync_initial_rec, "sync+initial");
  CHECK_OK(tether_observe(count, NULL, TETHER_OBSERVE_SYNC | TETHER_OBSERVE_INITIAL,
                          record_change, &sync_initial_rec, recorder_destroy, &obs));
  /* SYNC + INITIAL: already called when tether_observe returned. */
  CHECK_INT_EQ(recorder_count(&sync_initial_rec), 1);
  c = recorder_call(&sync_initial_rec, 0);
  CHECK(c.flags & TETHER_CHANGE_INITIAL);
  CHECK_INT_EQ(c.old_value, n);
  CHECK_INT_EQ(c.new_value, n);
  CHECK_INT_EQ(c.observer_id, obs.id);
  button_clicked(count); /* a normal change afterwards has no INITIAL flag */
  CHECK_INT_EQ(recorder_count(&sync_initial_rec), 2);
  c = recorder_call(&sync_initial_rec, 1);
  CHECK_INT_EQ(c.flags & TETHER_CHANGE_INITIAL, 0);
  CHECK_INT_EQ(c.old_value, n);
  CHECK_INT_EQ(c.new_value, n + 1);
  CHECK_OK(tether_observer_remove(obs));
  CHECK_INT_EQ(recorder_destroyed(&sync_initial_rec), 1);
  CHECK_OK(tether_runtime_flush(rt));
  order_log_take(log, sizeof log);

  /* --- 8. TETHER_OBSERVE_EQUAL: woken even when nothing changed ---------- */
  CHECK_OK(tether_state_get_int(count, &n));
  recorder_init(&equal_rec, "equal");
  CHECK_OK(tether_observe(count, NULL, TETHER_OBSERVE_EQUAL, record_change, &equal_rec,
                          recorder_destroy, &obs));
  calls = recorder_count(&view_rec);
  rev = revision_of(rt);
  CHECK_OK(tether_state_set_int(count, n)); /* equal write */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(revision_of(rt), rev);             /* nothing committed */
  CHECK_INT_EQ(recorder_count(&view_rec), calls); /* the plain observer slept */
  CHECK_INT_EQ(recorder_count(&equal_rec), 1);    /* the EQUAL observer did not */
  c = recorder_call(&equal_rec, 0);
  CHECK_INT_EQ(c.old_value, n);
  CHECK_INT_EQ(c.new_value, n);
  CHECK_INT_EQ(c.flags & TETHER_CHANGE_INITIAL, 0);
  order_log_take(log, sizeof log);
  CHECK_STR_EQ(log, ""); /* A and B are plain observers too */
  CHECK_OK(tether_observer_remove(obs));
  CHECK_INT_EQ(recorder_destroyed(&equal_rec), 1);

  /* --- 9. the revision: one step per changing write ----------------------- */
  rev = revision_of(rt);
  CHECK_OK(tether_state_get_int(count, &n));
  CHECK_OK(tether_state_set_int(count, n + 10));
  CHECK_OK(tether_state_set_int(count, n + 10)); /* equal: no step */
  CHECK_OK(tether_state_set_int(other, 42));
  CHECK_INT_EQ(revision_of(rt), rev + 2);
  CHECK_OK(tether_state_revision(count, &srev));
  CHECK_INT_EQ(srev, rev + 1);
  CHECK_OK(tether_state_revision(other, &srev));
  CHECK_INT_EQ(srev, rev + 2);
  CHECK_OK(tether_runtime_flush(rt));
  c = recorder_call(&view_rec, recorder_count(&view_rec) - 1);
  CHECK_INT_EQ(c.new_value, n + 10);
  CHECK_INT_EQ(c.revision, rev + 1);

  /* --- 10. the end --------------------------------------------------------- */
  CHECK_OK(tether_state_get_int(count, &n));
  printf("counter: clicked up to %lld, the view was told %d times\n", (long long)n,
         recorder_count(&view_rec));
  CHECK_OK(tether_observer_remove(view));
  CHECK_INT_EQ(recorder_destroyed(&view_rec), 1);
  CHECK_ERR(tether_observer_remove(view), TETHER_ESTALE); /* second removal: harmless */
  CHECK_INT_EQ(recorder_destroyed(&view_rec), 1);
  CHECK_OK(tether_state_free(count));
  CHECK_ERR(tether_state_get_int(count, &n), TETHER_ESTALE);
  CHECK_OK(tether_runtime_free(rt)); /* frees other, gate_state and their observers */
  return check_report("counter");
}
