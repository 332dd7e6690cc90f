/*
 * picker_hooks.c — a custom binding that runs the program's hooks in the
 * order the program chooses (SwiftUI's Binding(get:set:)).
 *
 * The problem: a picker edits a selection. When the user picks, the program
 * wants, in this order: the selection stored, an analytics hook, a network
 * request — and only then the views that observe the selection. Observers
 * alone cannot promise that order (they all run "after the write"), so the
 * picker is given a custom binding instead of $selection:
 *
 *     Picker("Drink", selection: Binding(
 *         get: { selection },
 *         set: { selection = $0; analytics.log($0); api.save($0) }))
 *
 * tether.h promises the rest: set runs on the writing thread before the
 * write returns; set's own writes apply at once (set can read them back);
 * their observers are called only after set returns — SYNC observers before
 * tether_binding_set returns, loop observers on the loop thread. So the log
 * reads exactly
 *
 *     write coffee, analytics coffee, network coffee, sync coffee, loop coffee
 *
 * What else it shows:
 *  - set receives the write's transaction (tag "picker", origin 7) and its
 *    write is staged with the transaction; observers see the same
 *    transaction in change->transaction when it commits;
 *  - a set that returns a negative code makes the write return it (the
 *    picker refuses drinks that are not on the menu);
 *  - get runs as a compute callback: cached, and re-run only when a state it
 *    read changed (a counter in get proves it); observers of the binding are
 *    woken when its result changes;
 *  - a custom binding without set refuses writes (TETHER_EREADONLY);
 *  - destroy runs exactly once, on tether_binding_free, and freeing the
 *    binding leaves the state behind it alone.
 *
 * Build: cc -std=c99 picker_hooks.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* ---- the event log: every hook and observer appends one entry ----------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char event_log[1024];

static void log_event(const char *what, const char *drink) {
  size_t used;
  pthread_mutex_lock(&log_mu);
  used = strlen(event_log);
  snprintf(event_log + used, sizeof event_log - used, "%s%s %s", used ? ", " : "", what, drink);
  pthread_mutex_unlock(&log_mu);
}

/* Copies the log out and empties it. */
static void log_take(char *out, size_t size) {
  pthread_mutex_lock(&log_mu);
  snprintf(out, size, "%s", event_log);
  event_log[0] = '\0';
  pthread_mutex_unlock(&log_mu);
}

/* Copies the log without emptying it. */
static void log_peek(char *out, size_t size) {
  pthread_mutex_lock(&log_mu);
  snprintf(out, size, "%s", event_log);
  pthread_mutex_unlock(&log_mu);
}

/* ---- the program's hooks --------------------------------------------------- */

static void analytics_hook(const char *drink) { log_event("analytics", drink); }
static void network_request(const char *drink) { log_event("network", drink); }

static int on_menu(const char *drink) {
  return strcmp(drink, "tea") == 0 || strcmp(drink, "coffee") == 0 ||
         strcmp(drink, "cocoa") == 0;
}

/* ---- the picker's custom binding ---------------------------------------------- */

typedef struct picker {
  tether_state_t selection; /* the owner's @State the binding reads and writes */
  /* What set saw, for the checks (guarded by log_mu: set runs on the writing
   * thread, main reads). */
  int set_calls;
  int get_calls;
  int readback_ok;          /* set read its own write back: how many times */
  int saw_transaction;      /* the last set got a non-NULL transaction */
  char tag[32];
  uint64_t origin;
  void *txn_user_data;
  pthread_t set_thread;
  int destroyed;
} picker_t;

/* get: the current selection. The state it reads becomes its dependency. */
static int picker_get(tether_value_t *result, void *user_data) {
  picker_t *p = user_data;
  tether_value_t *v = NULL;
  int rc = tether_state_get(p->selection, &v);
  pthread_mutex_lock(&log_mu);
  p->get_calls++;
  pthread_mutex_unlock(&log_mu);
  if (rc != TETHER_OK) return rc;
  rc = tether_value_assign(result, v);
  tether_value_free(v);
  return rc;
}

/* set: store the selection, then the hooks, in this order. A drink that is
 * not on the menu is refused before anything happens: the negative code is
 * what tether_binding_set returns. */
static int picker_set(const tether_value_t *value, const tether_transaction_info_t *transaction,
                      void *user_data) {
  picker_t *p = user_data;
  char drink[32], back[32];
  int rc;

  pthread_mutex_lock(&log_mu);
  p->set_calls++;
  p->set_thread = pthread_self();
  p->saw_transaction = transaction != NULL;
  snprintf(p->tag, sizeof p->tag, "%s", transaction && transaction->tag ? transaction->tag : "");
  p->origin = transaction ? transaction->origin : 0;
  p->txn_user_data = transaction ? transaction->user_data : NULL;
  pthread_mutex_unlock(&log_mu);

  value_str(value, drink, sizeof drink);
  if (!on_menu(drink)) return TETHER_EREJECTED;

  /* 1. the source write. It applies at once (staged, inside a transaction);
   *    its observers wait until this function has returned. */
  rc = tether_state_set(p->selection, value);
  if (rc != TETHER_OK) return rc;
  log_event("write", drink);
  /* set can read its own write back (this thread also reads what its open
   * transaction staged). */
  if (tether_state_get_string(p->selection, back, sizeof back, NULL) == TETHER_OK &&
      strcmp(back, drink) == 0) {
    pthread_mutex_lock(&log_mu);
    p->readback_ok++;
    pthread_mutex_unlock(&log_mu);
  }
  /* 2. and 3.: the hooks, in the order this program wants. */
  analytics_hook(drink);
  network_request(drink);
  return TETHER_OK;
}

static void picker_destroy(void *user_data) {
  picker_t *p = user_data;
  pthread_mutex_lock(&log_mu);
  p->destroyed++;
  pthread_mutex_unlock(&log_mu);
}

/* A snapshot of the picker's bookkeeping. */
static picker_t picker_snapshot(picker_t *p) {
  picker_t copy;
  pthread_mutex_lock(&log_mu);
  copy = *p;
  pthread_mutex_unlock(&log_mu);
  return copy;
}

/* ---- the views: observers of the selection state --------------------------- */

typedef struct view {
  const char *name; /* "sync" or "loop": the log entry */
  int calls;
  int saw_transaction;
  char tag[32];
  uint64_t origin;
  uint64_t revision;
  uint64_t state_id, binding_id;
  pthread_t thread;
  int destroyed;
} view_t;

static void view_changed(const tether_change_t *change, void *user_data) {
  view_t *v = user_data;
  char drink[64];
  value_str(change->new_value, drink, sizeof drink);
  pthread_mutex_lock(&log_mu);
  v->calls++;
  /* change->transaction is borrowed: copy what we keep. */
  v->saw_transaction = change->transaction != NULL;
  snprintf(v->tag, sizeof v->tag, "%s",
           change->transaction && change->transaction->tag ? change->transaction->tag : "");
  v->origin = change->transaction ? change->transaction->origin : 0;
  v->revision = change->revision;
  v->state_id = change->state.id;
  v->binding_id = change->binding.id;
  v->thread = pthread_self();
  pthread_mutex_unlock(&log_mu);
  log_event(v->name, drink);
}

static void view_destroy(void *user_data) {
  view_t *v = user_data;
  pthread_mutex_lock(&log_mu);
  v->destroyed++;
  pthread_mutex_unlock(&log_mu);
}

static view_t view_snapshot(view_t *v) {
  view_t copy;
  pthread_mutex_lock(&log_mu);
  copy = *v;
  pthread_mutex_unlock(&log_mu);
  return copy;
}

/* ---- a read-only label: Binding(get:) without set ------------------------ */

typedef struct label {
  tether_state_t selection;
  int get_calls;
  int destroyed;
} label_t;

static int label_get(tether_value_t *result, void *user_data) {
  label_t *l = user_data;
  char drink[32], text[64];
  int rc = tether_state_get_string(l->selection, drink, sizeof drink, NULL);
  pthread_mutex_lock(&log_mu);
  l->get_calls++;
  pthread_mutex_unlock(&log_mu);
  if (rc != TETHER_OK) return rc;
  snprintf(text, sizeof text, "Selected: %s", drink);
  return tether_value_set_string(result, text, -1);
}

static void label_destroy(void *user_data) {
  label_t *l = user_data;
  pthread_mutex_lock(&log_mu);
  l->destroyed++;
  pthread_mutex_unlock(&log_mu);
}

static int label_calls(label_t *l) {
  int n;
  pthread_mutex_lock(&log_mu);
  n = l->get_calls;
  pthread_mutex_unlock(&log_mu);
  return n;
}

/* ------------------------------------------------------------------------- */

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_picker_hooks) {
  tether_runtime_t rt;
  tether_state_t selection, cup_size;
  tether_binding_t picker_binding, label_binding;
  tether_observer_t obs;
  tether_transaction_t txn;
  tether_transaction_info_t info;
  picker_t picker;
  label_t label;
  view_t sync_view, loop_view, label_view;
  picker_t ps;
  view_t vs;
  uint64_t rev, commit_rev = 0;
  char log[1024], buf[64];
  int marker = 0; /* the transaction's user_data: passed through untouched */
  pthread_t main_thread = pthread_self();

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("picker_hooks");

  /* The owner's state: @State var selection = "tea" (strings only). */
  CHECK_OK(tether_state_new_string(rt, "tea", -1, TETHER_STATE_LOCK_TYPE, &selection));
  CHECK_OK(tether_state_new_string(rt, "large", -1, 0, &cup_size));

  /* The views. The SYNC one is registered first: within one delivery round
   * observers are called in registration order, so it runs before the loop
   * one. */
  memset(&sync_view, 0, sizeof sync_view);
  memset(&loop_view, 0, sizeof loop_view);
  sync_view.name = "sync";
  loop_view.name = "loop";
  CHECK_OK(tether_observe(selection, NULL, TETHER_OBSERVE_SYNC, view_changed, &sync_view,
                          view_destroy, &obs));
  CHECK_OK(tether_observe(selection, NULL, 0, view_changed, &loop_view, view_destroy, &obs));

  /* The picker's binding: Binding(get:set:). */
  memset(&picker, 0, sizeof picker);
  picker.selection = selection;
  CHECK_OK(tether_binding_new_custom(rt, picker_get, picker_set, &picker, picker_destroy,
                                     &picker_binding));
  CHECK_OK(tether_binding_get_string(picker_binding, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "tea");

  /* --- 1. the user picks coffee -------------------------------------------- */
  rev = 0;
  CHECK_OK(tether_runtime_revision(rt, &rev));
  CHECK_OK(tether_binding_set_string(picker_binding, "coffee", -1));
  /* When the write returns: set ran (write, analytics, network), then the
   * SYNC view. The loop view runs after set returned, on the loop thread: it
   * may or may not have run yet, but never before these four. */
  log_peek(log, sizeof log);
  CHECK(strncmp(log, "write coffee, analytics coffee, network coffee, sync coffee",
                strlen("write coffee, analytics coffee, network coffee, sync coffee")) == 0);
  if (strcmp(log, "write coffee, analytics coffee, network coffee, sync coffee") != 0)
    CHECK_STR_EQ(log, "write coffee, analytics coffee, network coffee, sync coffee, loop coffee");
  CHECK_OK(tether_runtime_flush(rt));
  log_take(log, sizeof log);
  CHECK_STR_EQ(log, "write coffee, analytics coffee, network coffee, sync coffee, loop coffee");
  printf("picker_hooks: %s\n", log);

  ps = picker_snapshot(&picker);
  CHECK_INT_EQ(ps.set_calls, 1);
  CHECK_INT_EQ(ps.readback_ok, 1);
  CHECK_INT_EQ(ps.saw_transaction, 0); /* no transaction: NULL */
  CHECK(pthread_equal(ps.set_thread, main_thread)); /* on the writing thread */
  vs = view_snapshot(&sync_view);
  CHECK_INT_EQ(vs.calls, 1);
  CHECK_INT_EQ(vs.saw_transaction, 0);
  CHECK_INT_EQ(vs.state_id, selection.id); /* a state observer: the state... */
  CHECK_INT_EQ(vs.binding_id, 0);          /* ...and no binding */
  CHECK_INT_EQ(vs.revision, rev + 1);      /* set's one write: one commit */
  vs = view_snapshot(&loop_view);
  CHECK_INT_EQ(vs.calls, 1);
  CHECK(!pthread_equal(vs.thread, main_thread));
  CHECK_OK(tether_state_get_string(selection, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "coffee");

  /* --- 2. the same, inside a transaction ----------------------------------- */
  /* withTransaction(tag: "picker") { selection = "cocoa" }: set receives the
   * transaction info, runs at once (so do the hooks), and its write is staged
   * with the transaction; the views hear of it only at the commit. */
  memset(&info, 0, sizeof info);
  info.tag = "picker";
  info.origin = 7;
  info.user_data = &marker;
  CHECK_OK(tether_transaction_begin(rt, &info, &txn));
  CHECK_OK(tether_binding_set_string(picker_binding, "cocoa", -1));
  log_peek(log, sizeof log);
  CHECK_STR_EQ(log, "write cocoa, analytics cocoa, network cocoa"); /* no view yet */
  ps = picker_snapshot(&picker);
  CHECK_INT_EQ(ps.set_calls, 2);
  CHECK_INT_EQ(ps.saw_transaction, 1);
  CHECK_STR_EQ(ps.tag, "picker");
  CHECK_INT_EQ(ps.origin, 7);
  CHECK(ps.txn_user_data == &marker);
  CHECK_INT_EQ(ps.readback_ok, 2); /* set read its staged write back */
  /* This thread reads its staged value; nothing is committed yet. */
  CHECK_OK(tether_state_get_string(selection, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "cocoa");
  CHECK_OK(tether_runtime_revision(rt, &rev));
  CHECK_INT_EQ(view_snapshot(&sync_view).calls, 1);

  CHECK_OK(tether_transaction_commit(txn, &commit_rev));
  CHECK_INT_EQ(commit_rev, rev + 1);
  log_peek(log, sizeof log);
  CHECK(strncmp(log, "write cocoa, analytics cocoa, network cocoa, sync cocoa",
                strlen("write cocoa, analytics cocoa, network cocoa, sync cocoa")) == 0);
  vs = view_snapshot(&sync_view);
  CHECK_INT_EQ(vs.calls, 2);
  CHECK_INT_EQ(vs.saw_transaction, 1);
  CHECK_STR_EQ(vs.tag, "picker");
  CHECK_INT_EQ(vs.origin, 7);
  CHECK_INT_EQ(vs.revision, commit_rev);
  CHECK_OK(tether_runtime_flush(rt));
  log_take(log, sizeof log);
  CHECK_STR_EQ(log, "write cocoa, analytics cocoa, network cocoa, sync cocoa, loop cocoa");
  vs = view_snapshot(&loop_view);
  CHECK_INT_EQ(vs.calls, 2);
  CHECK_INT_EQ(vs.saw_transaction, 1);
  CHECK_STR_EQ(vs.tag, "picker");
  CHECK_INT_EQ(vs.origin, 7);
  CHECK_INT_EQ(vs.revision, commit_rev);
  /* The transaction is over: no info applies on this thread any more. */
  CHECK_ERR(tether_transaction_current(rt, &info), TETHER_ENOTFOUND);

  /* --- 3. set refuses: its code is what the write returns ------------------- */
  CHECK_OK(tether_runtime_revision(rt, &rev));
  CHECK_ERR(tether_binding_set_string(picker_binding, "soup", -1), TETHER_EREJECTED);
  CHECK_OK(tether_runtime_flush(rt));
  log_take(log, sizeof log);
  CHECK_STR_EQ(log, ""); /* no write, no hook, no view */
  CHECK_OK(tether_state_get_string(selection, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "cocoa");
  { /* still nothing committed */
    uint64_t now = 0;
    CHECK_OK(tether_runtime_revision(rt, &now));
    CHECK_INT_EQ(now, rev);
  }
  CHECK_INT_EQ(picker_snapshot(&picker).set_calls, 3); /* set was asked, and said no */

  /* --- 4. get is a compute callback: cached and tracked --------------------- */
  /* A label showing the selection: Binding(get:) with no set. */
  memset(&label, 0, sizeof label);
  label.selection = selection;
  CHECK_OK(tether_binding_new_custom(rt, label_get, NULL, &label, label_destroy, &label_binding));
  CHECK(label_calls(&label) <= 1); /* lazy: get runs when someone reads */
  CHECK_OK(tether_binding_get_string(label_binding, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "Selected: cocoa");
  CHECK_OK(tether_binding_get_string(label_binding, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "Selected: cocoa");
  CHECK_INT_EQ(label_calls(&label), 1); /* two reads, one get: cached */
  /* The selection changes: the next read runs get once more, then caches. */
  CHECK_OK(tether_state_set_string(selection, "tea", -1));
  CHECK_OK(tether_binding_get_string(label_binding, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "Selected: tea");
  CHECK_OK(tether_binding_get_string(label_binding, buf, sizeof buf, NULL));
  CHECK_INT_EQ(label_calls(&label), 2);
  /* A state get never read is no dependency; an equal write is no change. */
  CHECK_OK(tether_state_set_string(cup_size, "small", -1));
  CHECK_OK(tether_state_set_string(selection, "tea", -1));
  CHECK_OK(tether_binding_get_string(label_binding, buf, sizeof buf, NULL));
  CHECK_INT_EQ(label_calls(&label), 2);
  /* No set: the label refuses writes, and nothing changes. */
  CHECK_ERR(tether_binding_set_string(label_binding, "Selected: gin", -1), TETHER_EREADONLY);
  CHECK_OK(tether_binding_get_string(label_binding, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "Selected: tea");
  /* The picker's own get is cached the same way. */
  {
    int before = picker_snapshot(&picker).get_calls;
    CHECK_OK(tether_binding_get_string(picker_binding, buf, sizeof buf, NULL));
    CHECK_STR_EQ(buf, "tea");
    CHECK_OK(tether_binding_get_string(picker_binding, buf, sizeof buf, NULL));
    CHECK(picker_snapshot(&picker).get_calls - before <= 1);
  }

  /* Observing the label: woken when get's result changes. For a custom
   * binding change->state is {0} and change->binding is the binding. */
  CHECK_OK(tether_runtime_flush(rt));
  log_take(log, sizeof log); /* the views saw "tea" */
  memset(&label_view, 0, sizeof label_view);
  label_view.name = "label";
  CHECK_OK(tether_binding_observe(label_binding, NULL, TETHER_OBSERVE_SYNC, view_changed,
                                  &label_view, view_destroy, &obs));
  CHECK_OK(tether_state_set_string(selection, "coffee", -1));
  vs = view_snapshot(&label_view);
  CHECK_INT_EQ(vs.calls, 1);
  CHECK_INT_EQ(vs.binding_id, label_binding.id);
  CHECK_INT_EQ(vs.state_id, 0);
  CHECK_OK(tether_state_set_string(cup_size, "medium", -1)); /* not a dependency */
  CHECK_INT_EQ(view_snapshot(&label_view).calls, 1);
  CHECK_OK(tether_runtime_flush(rt));
  log_take(log, sizeof log);
  /* (The label's SYNC call and the loop view run on different threads: only
   * the two SYNC ones have a promised order, the picker's view first.) */
  CHECK(strstr(log, "sync coffee, label Selected: coffee") != NULL ||
        strstr(log, "sync coffee, loop coffee, label Selected: coffee") != NULL);
  CHECK(strstr(log, "loop coffee") != NULL);

  /* --- 5. destroy runs exactly once, on free ---------------------------------- */
  CHECK_INT_EQ(picker_snapshot(&picker).destroyed, 0);
  CHECK_OK(tether_binding_free(label_binding));
  pthread_mutex_lock(&log_mu);
  CHECK_INT_EQ(label.destroyed, 1);
  pthread_mutex_unlock(&log_mu);
  CHECK_INT_EQ(view_snapshot(&label_view).destroyed, 1); /* its observer ended too */
  CHECK_ERR(tether_binding_free(label_binding), TETHER_ESTALE);
  CHECK_ERR(tether_binding_get_string(label_binding, buf, sizeof buf, NULL), TETHER_ESTALE);

  CHECK_OK(tether_binding_free(picker_binding));
  CHECK_INT_EQ(picker_snapshot(&picker).destroyed, 1);
  CHECK_ERR(tether_binding_free(picker_binding), TETHER_ESTALE);
  CHECK_INT_EQ(picker_snapshot(&picker).destroyed, 1);
  CHECK_ERR(tether_binding_set_string(picker_binding, "tea", -1), TETHER_ESTALE);
  /* The binding never owned the state: it is still there, observed as before. */
  CHECK_OK(tether_state_get_string(selection, buf, sizeof buf, NULL));
  CHECK_STR_EQ(buf, "coffee");
  CHECK_OK(tether_state_set_string(selection, "tea", -1));
  CHECK_INT_EQ(view_snapshot(&sync_view).calls, 5); /* coffee, cocoa, tea, coffee, tea */
  CHECK_OK(tether_runtime_flush(rt));
  log_take(log, sizeof log);
  CHECK_STR_EQ(log, "sync tea, loop tea"); /* no hooks: they live in set only */

  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(view_snapshot(&sync_view).destroyed, 1);
  CHECK_INT_EQ(view_snapshot(&loop_view).destroyed, 1);
  CHECK_INT_EQ(picker_snapshot(&picker).destroyed, 1);
  return check_report("picker_hooks");
}
