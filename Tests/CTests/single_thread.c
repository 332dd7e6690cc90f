/*
 * single_thread.c — TETHER_RUNTIME_SINGLE_THREAD: a runtime without locks.
 *
 * A program that touches a runtime from one thread only (a UI thread that
 * also runs the loop, like an LVGL or GTK main loop) can ask for a runtime
 * that takes no locks at all. The price is a promise: every call with a
 * handle of that runtime comes from the thread that created it, which also
 * runs its loop (TETHER_LOOP_HOST or TETHER_LOOP_EXTERNAL). The runtime
 * checks the promise: a call from another thread fails with TETHER_ETHREAD
 * and touches nothing. Everything else behaves exactly as in a thread-safe
 * runtime: SYNC and loop delivery, computeds, effects, bindings,
 * transactions, validators, flush.
 */
#include <pthread.h>
#include <uv.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

typedef struct seen {
  int calls;
  int64_t last;
} seen_t;

static void record(const tether_change_t *change, void *user_data) {
  seen_t *s = user_data;
  s->calls++;
  s->last = value_int_or(change->new_value, -1);
}

static tether_state_t price, quantity;

static int total_compute(tether_value_t *result, void *user_data) {
  int64_t p = 0, q = 0;
  int rc;
  (void)user_data;
  if ((rc = tether_state_get_int(price, &p)) != TETHER_OK) return rc;
  if ((rc = tether_state_get_int(quantity, &q)) != TETHER_OK) return rc;
  return tether_value_set_int(result, p * q);
}

static bool positive(tether_state_t state, const tether_value_t *proposed,
                     const tether_transaction_info_t *transaction, char *reason, size_t reason_size,
                     void *user_data) {
  int64_t v = 0;
  (void)state;
  (void)transaction;
  (void)user_data;
  if (tether_value_get_int(proposed, &v) == TETHER_OK && v > 0) return true;
  snprintf(reason, reason_size, "must be positive");
  return false;
}

/* What another thread gets when it breaks the promise. */
typedef struct intruder {
  tether_runtime_t rt;
  tether_state_t s;
  int get_rc, set_rc, free_rc, flush_rc, new_rc;
  char message[256];
} intruder_t;

static void *intrude(void *arg) {
  intruder_t *in = arg;
  int64_t v = 0;
  tether_state_t made;
  in->get_rc = tether_state_get_int(in->s, &v);
  snprintf(in->message, sizeof in->message, "%s", tether_last_error());
  in->set_rc = tether_state_set_int(in->s, 99);
  in->new_rc = tether_state_new_int(in->rt, 1, 0, &made);
  in->flush_rc = tether_runtime_flush(in->rt);
  in->free_rc = tether_runtime_free(in->rt);
  return NULL;
}

static void bad_options(void) {
  tether_runtime_options_t o;
  tether_runtime_t rt;
  tether_runtime_options_init(&o);
  CHECK_INT_EQ(o.flags, 0);
  /* No loop thread of its own: its one thread must run the loop. */
  o.flags = TETHER_RUNTIME_SINGLE_THREAD;
  CHECK_ERR(tether_runtime_new(&o, &rt), TETHER_EINVAL);
  CHECK_MENTIONS("TETHER_LOOP_HOST");
  o.mode = TETHER_LOOP_HOST;
  o.flags = 0x80;
  CHECK_ERR(tether_runtime_new(&o, &rt), TETHER_EINVAL);
  CHECK_MENTIONS("flags");
}

static void host_mode(void) {
  tether_runtime_options_t o;
  tether_runtime_t rt;
  tether_observer_t sync_obs, loop_obs, total_obs;
  tether_computed_t total;
  tether_binding_t qty_binding;
  tether_transaction_t txn;
  tether_state_descriptor_t d;
  seen_t sync_seen = {0, 0}, loop_seen = {0, 0}, total_seen = {0, 0};
  intruder_t in;
  pthread_t t;
  int64_t v = 0;
  uint64_t before = 0, committed = 0;

  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  o.flags = TETHER_RUNTIME_SINGLE_THREAD;
  if (!CHECK_OK(tether_runtime_new(&o, &rt))) return;
  CHECK_OK(tether_state_new_int(rt, 10, 0, &price));
  CHECK_OK(tether_state_new_int(rt, 1, 0, &quantity));

  /* Observers: SYNC ones run inside the write, loop ones when this thread
   * runs the loop (tether_runtime_flush does it inline here). */
  CHECK_OK(tether_observe(price, NULL, TETHER_OBSERVE_SYNC, record, &sync_seen, NULL, &sync_obs));
  CHECK_OK(tether_observe(price, NULL, 0, record, &loop_seen, NULL, &loop_obs));
  CHECK_OK(tether_state_set_int(price, 12));
  CHECK_INT_EQ(sync_seen.calls, 1);
  CHECK_INT_EQ(loop_seen.calls, 0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(loop_seen.calls, 1);
  CHECK_INT_EQ(loop_seen.last, 12);

  /* Computeds and their observers. */
  CHECK_OK(tether_computed_new(rt, total_compute, NULL, NULL, &total));
  CHECK_OK(tether_computed_get_int(total, &v));
  CHECK_INT_EQ(v, 12);
  CHECK_OK(tether_computed_observe(total, NULL, TETHER_OBSERVE_SYNC, record, &total_seen, NULL,
                                   &total_obs));

  /* Bindings, a validator and a transaction: one revision, one call each. */
  tether_state_descriptor_init(&d);
  d.validate = positive;
  d.name = "quantity";
  CHECK_OK(tether_state_describe(quantity, &d));
  CHECK_OK(tether_state_binding(quantity, &qty_binding));
  CHECK_OK(tether_runtime_revision(rt, &before));
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_binding_set_int(qty_binding, 3));
  CHECK_OK(tether_state_set_int(price, 20));
  CHECK_OK(tether_transaction_commit(txn, &committed));
  CHECK_INT_EQ(committed, before + 1);
  CHECK_INT_EQ(total_seen.calls, 1);
  CHECK_INT_EQ(total_seen.last, 60);
  CHECK_ERR(tether_binding_set_int(qty_binding, 0), TETHER_EREJECTED);
  CHECK_MENTIONS("must be positive");

  /* Another thread breaks the promise: TETHER_ETHREAD, nothing touched. */
  memset(&in, 0, sizeof in);
  in.rt = rt;
  in.s = price;
  pthread_create(&t, NULL, intrude, &in);
  pthread_join(t, NULL);
  CHECK_INT_EQ(in.get_rc, TETHER_ETHREAD);
  CHECK(strstr(in.message, "SINGLE_THREAD") != NULL);
  CHECK_INT_EQ(in.set_rc, TETHER_ETHREAD);
  CHECK_INT_EQ(in.new_rc, TETHER_ETHREAD);
  CHECK_INT_EQ(in.flush_rc, TETHER_ETHREAD);
  CHECK_INT_EQ(in.free_rc, TETHER_ETHREAD);
  CHECK_OK(tether_state_get_int(price, &v));
  CHECK_INT_EQ(v, 20);

  CHECK_OK(tether_binding_free(qty_binding));
  CHECK_OK(tether_runtime_free(rt));
  /* Freed: the owner's handles are stale like any others. */
  CHECK_ERR(tether_state_get_int(price, &v), TETHER_ESTALE);
  CHECK_ERR(tether_runtime_flush(rt), TETHER_ESTALE);
}

/* The host's own work on its loop; the runtime's wake-up handle does not
 * keep a loop alive by itself (it is unref'd), so the host's uv_run turns
 * come from handles like this one. */
static void host_work(uv_idle_t *idle) { uv_idle_stop(idle); }

/* With the host's own uv_loop_t: deliveries happen when it runs its loop. */
static void external_mode(void) {
  uv_loop_t loop;
  uv_idle_t idle;
  tether_runtime_options_t o;
  tether_runtime_t rt;
  tether_state_t s;
  tether_observer_t obs;
  seen_t seen = {0, 0};

  if (!CHECK_INT_EQ(uv_loop_init(&loop), 0)) return;
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_EXTERNAL;
  o.loop = &loop;
  o.flags = TETHER_RUNTIME_SINGLE_THREAD;
  if (CHECK_OK(tether_runtime_new(&o, &rt))) {
    CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
    CHECK_OK(tether_observe(s, NULL, 0, record, &seen, NULL, &obs));
    CHECK_OK(tether_state_set_int(s, 5));
    CHECK_OK(tether_state_set_int(s, 6));
    CHECK_INT_EQ(seen.calls, 0);
    uv_idle_init(&loop, &idle);
    uv_idle_start(&idle, host_work);
    uv_run(&loop, UV_RUN_DEFAULT); /* the host's loop turn delivers, coalesced */
    CHECK_INT_EQ(seen.calls, 1);
    CHECK_INT_EQ(seen.last, 6);
    CHECK_OK(tether_runtime_free(rt));
    uv_close((uv_handle_t *)&idle, NULL);
    uv_run(&loop, UV_RUN_NOWAIT); /* let libuv finish closing the handles */
  }
  CHECK_INT_EQ(uv_loop_close(&loop), 0);
}

/* A refusal for another thread's single-threaded runtime does not make a
 * later, genuinely stale handle report TETHER_ETHREAD. */
typedef struct probe {
  tether_state_t foreign;
  int rc;
} probe_t;

static void *probe_foreign(void *arg) {
  probe_t *p = arg;
  int64_t v;
  p->rc = tether_state_get_int(p->foreign, &v);
  return NULL;
}

static void errors_stay_precise(void) {
  tether_runtime_options_t o;
  tether_runtime_t single, shared;
  tether_state_t s, gone;
  probe_t p;
  pthread_t t;
  int64_t v;
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  o.flags = TETHER_RUNTIME_SINGLE_THREAD;
  if (!CHECK_OK(tether_runtime_new(&o, &single))) return;
  CHECK_OK(tether_runtime_new(NULL, &shared));
  CHECK_OK(tether_state_new_int(single, 1, 0, &s));
  CHECK_OK(tether_state_new_int(shared, 1, 0, &gone));
  CHECK_OK(tether_state_free(gone));
  p.foreign = s;
  pthread_create(&t, NULL, probe_foreign, &p);
  pthread_join(t, NULL);
  CHECK_INT_EQ(p.rc, TETHER_ETHREAD);
  CHECK_ERR(tether_state_get_int(gone, &v), TETHER_ESTALE);
  CHECK_OK(tether_runtime_free(shared));
  CHECK_OK(tether_runtime_free(single));
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(single_thread_bad_options) {
  bad_options();
  return check_report("single_thread_bad_options");
}

TEST_CASE(single_thread_host_mode) {
  host_mode();
  return check_report("single_thread_host_mode");
}

TEST_CASE(single_thread_external_mode) {
  external_mode();
  return check_report("single_thread_external_mode");
}

TEST_CASE(single_thread_errors_stay_precise) {
  errors_stay_precise();
  return check_report("single_thread_errors_stay_precise");
}
