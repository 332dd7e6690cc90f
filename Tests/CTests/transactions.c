/*
 * transactions.c — SwiftUI's withTransaction, and a database transaction.
 *
 *     withTransaction(Transaction(animation: .default)) { a = 1; b = 2 }
 *
 * A transaction groups the writes one thread makes: tether_transaction_begin
 * stages them, tether_transaction_commit applies them all at once (one
 * runtime revision, one observer call per observer), tether_transaction_abort
 * drops them. Its info (tag, origin, user_data) travels with the commit to
 * every callback it causes, and on to the writes those callbacks make.
 * What this program checks:
 *  - staged writes are visible to the writing thread only (and not to
 *    computeds) until the commit; the commit advances the revision exactly
 *    once and every written state's revision equals the commit's *revision;
 *  - SYNC observers are called once per commit, with the first old and the
 *    final new value, however many writes were staged; a value changed and
 *    changed back wakes nothing;
 *  - abort restores everything and calls nothing;
 *  - nested transactions are savepoints; committing or aborting one that is
 *    not innermost is TETHER_EINVAL, twice is TETHER_ESTALE, from another
 *    thread TETHER_ETHREAD;
 *  - tag, origin and user_data in change->transaction (SYNC and loop), in
 *    effects through tether_transaction_current, in writes made by the
 *    callbacks a transaction caused, and in a custom binding's set;
 *  - tether_transaction_current outside callbacks: the innermost open
 *    transaction of this thread, TETHER_ENOTFOUND when there is none;
 *  - a refused write dooms its transaction: the commit fails and applies
 *    nothing, not even the good writes;
 *  - a staged write at a path is replayed onto values another thread changed
 *    meanwhile;
 *  - four threads running transactions at once: exact totals, one revision
 *    per commit, one SYNC call per state per commit.
 *
 * TXN_COUNT=n in the environment changes the transactions per thread
 * (default 1000).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define NTHREADS 4

/* One lock for all bookkeeping; never held while calling tether_. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int marker; /* its address is the user_data passed through */

/* ---- running something on another thread --------------------------------- */

static void run_on_thread(void *(*fn)(void *), void *arg) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, arg) != 0) {
    CHECK(!"pthread_create failed");
    return;
  }
  pthread_join(t, NULL);
}

typedef struct peek {
  tether_state_t s;
  int64_t v;
  int rc;
} peek_t;

static void *peek_main(void *arg) {
  peek_t *p = arg;
  p->rc = tether_state_get_int(p->s, &p->v);
  return NULL;
}

/* The value another thread reads right now (committed values only). */
static int64_t other_thread_reads_(tether_state_t s, const char *file, int line) {
  peek_t p;
  p.s = s;
  p.v = -999;
  p.rc = 1;
  run_on_thread(peek_main, &p);
  if (p.rc != TETHER_OK)
    check_fail_(file, line, "another thread's tether_state_get_int: %s", check_errname(p.rc));
  return p.v;
}
#define OTHER_READS(s) other_thread_reads_((s), __FILE__, __LINE__)

static int64_t own_read_(tether_state_t s, const char *file, int line) {
  int64_t v = -999;
  int rc = tether_state_get_int(s, &v);
  if (rc != TETHER_OK)
    check_fail_(file, line, "tether_state_get_int: %s (%s)", check_errname(rc),
                tether_last_error());
  return v;
}
#define OWN_READS(s) own_read_((s), __FILE__, __LINE__)

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

static uint64_t runtime_rev(tether_runtime_t rt) {
  uint64_t r = 0;
  CHECK_OK(tether_runtime_revision(rt, &r));
  return r;
}

static uint64_t state_rev(tether_state_t s) {
  uint64_t r = 0;
  CHECK_OK(tether_state_revision(s, &r));
  return r;
}

/* ---- what an observer saw ----------------------------------------------- */

typedef struct seen {
  const char *name;
  int calls;
  int without_txn;     /* calls whose change->transaction was NULL */
  char tag[32];        /* the last call's tag; "(no transaction)", "(no tag)" */
  uint64_t origin;
  void *user_data;
  int64_t old_v, new_v;
  uint64_t revision;
  /* chain: write new * 2 into target from the callback */
  int chain;
  tether_state_t target;
  int rc;
  int destroyed;
} seen_t;

static void seen_init(seen_t *s, const char *name) {
  memset(s, 0, sizeof *s);
  s->name = name;
  s->rc = 1;
  snprintf(s->tag, sizeof s->tag, "(not called)");
}

static void copy_info(const tether_transaction_info_t *info, char *tag, size_t size,
                      uint64_t *origin, void **user_data) {
  if (info == NULL) {
    snprintf(tag, size, "(no transaction)");
    *origin = 0;
    *user_data = NULL;
    return;
  }
  snprintf(tag, size, "%s", info->tag ? info->tag : "(no tag)");
  *origin = info->origin;
  *user_data = info->user_data;
}

static void record(const tether_change_t *change, void *user_data) {
  seen_t *s = user_data;
  int chain;
  tether_state_t target;
  pthread_mutex_lock(&mu);
  s->calls++;
  if (change->transaction == NULL) s->without_txn++;
  copy_info(change->transaction, s->tag, sizeof s->tag, &s->origin, &s->user_data);
  s->old_v = value_int_or(change->old_value, -1);
  s->new_v = value_int_or(change->new_value, -1);
  s->revision = change->revision;
  chain = s->chain;
  target = s->target;
  pthread_mutex_unlock(&mu);
  if (chain) {
    /* A write made by a callback outside a transaction of its own: it
     * carries the transaction that caused this call. */
    int rc = tether_state_set_int(target, value_int_or(change->new_value, 0) * 2);
    pthread_mutex_lock(&mu);
    s->rc = rc;
    pthread_mutex_unlock(&mu);
  }
}

static void seen_destroy(void *user_data) {
  seen_t *s = user_data;
  pthread_mutex_lock(&mu);
  s->destroyed++;
  pthread_mutex_unlock(&mu);
}

static seen_t seen_get(seen_t *s) {
  seen_t copy;
  pthread_mutex_lock(&mu);
  copy = *s;
  pthread_mutex_unlock(&mu);
  return copy;
}

/* ==== begin, commit, abort ============================================== */

static int double_a(tether_value_t *result, void *user_data) {
  tether_state_t *a = user_data;
  int64_t v = 0;
  int rc = tether_state_get_int(*a, &v);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, v * 2);
}

static void test_commit(tether_runtime_t rt) {
  tether_state_t a, b;
  tether_binding_t bb;
  tether_computed_t twice;
  tether_transaction_t txn;
  seen_t sa, la, sb;
  seen_t got;
  tether_observer_t o;
  uint64_t rev0, rev = 0, arev0;
  int64_t v = 0;

  printf("transactions: begin and commit\n");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &b));
  CHECK_OK(tether_state_binding(b, &bb));
  CHECK_OK(tether_computed_new(rt, double_a, &a, NULL, &twice));
  seen_init(&sa, "SYNC a");
  seen_init(&la, "loop a");
  seen_init(&sb, "SYNC b");
  CHECK_OK(tether_observe(a, NULL, TETHER_OBSERVE_SYNC, record, &sa, seen_destroy, &o));
  CHECK_OK(tether_observe(a, NULL, 0, record, &la, seen_destroy, &o));
  CHECK_OK(tether_observe(b, NULL, TETHER_OBSERVE_SYNC, record, &sb, seen_destroy, &o));
  CHECK_OK(tether_computed_get_int(twice, &v));
  CHECK_INT_EQ(v, 0);
  rev0 = runtime_rev(rt);
  arev0 = state_rev(a);

  if (!CHECK_OK(tether_transaction_begin(rt, NULL, &txn))) return;
  CHECK(txn.id != 0);
  CHECK_OK(tether_state_set_int(a, 1));
  CHECK_OK(tether_state_set_int(b, 2));
  CHECK_OK(tether_binding_set_int(bb, 3)); /* writes through bindings are staged too */

  /* This thread reads its own staged values ... */
  CHECK_INT_EQ(OWN_READS(a), 1);
  CHECK_INT_EQ(OWN_READS(b), 3);
  CHECK_OK(tether_binding_get_int(bb, &v));
  CHECK_INT_EQ(v, 3);
  /* ... every other thread, and every computed, the committed ones. */
  CHECK_INT_EQ(OTHER_READS(a), 0);
  CHECK_INT_EQ(OTHER_READS(b), 0);
  CHECK_OK(tether_computed_get_int(twice, &v));
  CHECK_INT_EQ(v, 0);
  /* Nothing is applied: no revision, no observer. */
  CHECK_INT_EQ(runtime_rev(rt), rev0);
  CHECK_INT_EQ(state_rev(a), arev0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(seen_get(&sa).calls, 0);
  CHECK_INT_EQ(seen_get(&la).calls, 0);
  CHECK_INT_EQ(seen_get(&sb).calls, 0);

  /* The commit applies everything under one new revision. */
  CHECK_OK(tether_transaction_commit(txn, &rev));
  CHECK_INT_EQ(rev, rev0 + 1);
  CHECK_INT_EQ(runtime_rev(rt), rev);
  CHECK_INT_EQ(state_rev(a), rev);
  CHECK_INT_EQ(state_rev(b), rev);
  CHECK_INT_EQ(OTHER_READS(a), 1);
  CHECK_INT_EQ(OTHER_READS(b), 3);
  CHECK_OK(tether_computed_get_int(twice, &v));
  CHECK_INT_EQ(v, 2);
  /* SYNC observers ran before the commit returned, once each. */
  got = seen_get(&sa);
  CHECK_INT_EQ(got.calls, 1);
  CHECK_INT_EQ(got.old_v, 0);
  CHECK_INT_EQ(got.new_v, 1);
  CHECK_INT_EQ(got.revision, rev);
  got = seen_get(&sb);
  CHECK_INT_EQ(got.calls, 1);
  CHECK_INT_EQ(got.old_v, 0);
  CHECK_INT_EQ(got.new_v, 3);
  CHECK_OK(tether_runtime_flush(rt));
  got = seen_get(&la);
  CHECK_INT_EQ(got.calls, 1);
  CHECK_INT_EQ(got.new_v, 1);
  /* A committed transaction is closed. */
  CHECK_ERR(tether_transaction_commit(txn, &rev), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_abort(txn), TETHER_ESTALE);

  /* Many writes to one state: one call, first old value, final new value. */
  rev0 = runtime_rev(rt);
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(a, 10));
  CHECK_OK(tether_state_set_int(a, 20));
  CHECK_OK(tether_state_set_int(a, 30));
  CHECK_OK(tether_state_set_int(b, 4));
  CHECK_OK(tether_state_set_int(b, 5));
  CHECK_OK(tether_transaction_commit(txn, &rev));
  CHECK_INT_EQ(rev, rev0 + 1);
  CHECK_INT_EQ(state_rev(a), rev);
  CHECK_INT_EQ(state_rev(b), rev);
  got = seen_get(&sa);
  CHECK_INT_EQ(got.calls, 2);
  CHECK_INT_EQ(got.old_v, 1);
  CHECK_INT_EQ(got.new_v, 30);
  got = seen_get(&sb);
  CHECK_INT_EQ(got.calls, 2);
  CHECK_INT_EQ(got.old_v, 3);
  CHECK_INT_EQ(got.new_v, 5);
  CHECK_OK(tether_runtime_flush(rt));
  got = seen_get(&la);
  CHECK_INT_EQ(got.calls, 2);
  CHECK_INT_EQ(got.old_v, 1);
  CHECK_INT_EQ(got.new_v, 30);

  /* Changed and changed back: nothing changed, nothing is called, and
   * *revision is the current revision. */
  rev0 = runtime_rev(rt);
  arev0 = state_rev(a);
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(a, 99));
  CHECK_OK(tether_state_set_int(a, 30));
  CHECK_OK(tether_transaction_commit(txn, &rev));
  CHECK_INT_EQ(rev, rev0);
  CHECK_INT_EQ(runtime_rev(rt), rev0);
  CHECK_INT_EQ(state_rev(a), arev0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(seen_get(&sa).calls, 2);
  CHECK_INT_EQ(seen_get(&la).calls, 2);

  /* An empty transaction commits fine; revision may be NULL. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_INT_EQ(runtime_rev(rt), rev0);

  CHECK_OK(tether_binding_free(bb));
  CHECK_OK(tether_computed_free(twice));
  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
  CHECK_INT_EQ(seen_get(&sa).destroyed, 1);
  CHECK_INT_EQ(seen_get(&la).destroyed, 1);
  CHECK_INT_EQ(seen_get(&sb).destroyed, 1);
}

static void test_abort(tether_runtime_t rt) {
  tether_state_t a, doc;
  tether_transaction_t txn;
  seen_t sa, la;
  tether_observer_t o;
  uint64_t rev0, arev0;

  printf("transactions: abort\n");
  CHECK_OK(tether_state_new_int(rt, 7, 0, &a));
  CHECK_OK(tether_state_new_json(rt, "{\"x\":[1,2]}", -1, 0, &doc));
  seen_init(&sa, "SYNC a");
  seen_init(&la, "loop a");
  CHECK_OK(tether_observe(a, NULL, TETHER_OBSERVE_SYNC, record, &sa, seen_destroy, &o));
  CHECK_OK(tether_observe(a, NULL, 0, record, &la, seen_destroy, &o));
  rev0 = runtime_rev(rt);
  arev0 = state_rev(a);

  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(a, 100));
  CHECK_OK(tether_state_set_path_json(doc, "/x/-", "3", -1));
  CHECK_OK(tether_state_remove_path(doc, "/x/0"));
  CHECK_INT_EQ(OWN_READS(a), 100);
  EXPECT_STATE(doc, "{\"x\":[2,3]}");
  CHECK_OK(tether_transaction_abort(txn));

  /* As before: values, revisions, and no observer call. */
  CHECK_INT_EQ(OWN_READS(a), 7);
  CHECK_INT_EQ(OTHER_READS(a), 7);
  EXPECT_STATE(doc, "{\"x\":[1,2]}");
  CHECK_INT_EQ(runtime_rev(rt), rev0);
  CHECK_INT_EQ(state_rev(a), arev0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(seen_get(&sa).calls, 0);
  CHECK_INT_EQ(seen_get(&la).calls, 0);
  CHECK_ERR(tether_transaction_abort(txn), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_commit(txn, NULL), TETHER_ESTALE);
  CHECK_INT_EQ(tether_transaction_current(rt, &(tether_transaction_info_t){0}),
               TETHER_ENOTFOUND);

  /* Writes after the abort are ordinary writes again. */
  CHECK_OK(tether_state_set_int(a, 8));
  CHECK_INT_EQ(OTHER_READS(a), 8);
  CHECK_INT_EQ(seen_get(&sa).calls, 1);
  CHECK_OK(tether_runtime_flush(rt));

  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(doc));
}

/* ==== nesting: savepoints ================================================= */

static void expect_current_(tether_runtime_t rt, const char *tag, uint64_t origin,
                            const char *file, int line) {
  tether_transaction_info_t info;
  int rc;
  memset(&info, 0, sizeof info);
  rc = tether_transaction_current(rt, &info);
  if (tag == NULL) {
    if (rc == TETHER_ENOTFOUND)
      check_pass_();
    else
      check_fail_(file, line, "tether_transaction_current: expected TETHER_ENOTFOUND, got %s",
                  check_errname(rc));
    return;
  }
  if (rc != TETHER_OK) {
    check_fail_(file, line, "tether_transaction_current: expected \"%s\", got %s", tag,
                check_errname(rc));
    return;
  }
  check_str_eq_(info.tag, tag, "current tag", tag, file, line);
  check_int_eq_((long long)info.origin, (long long)origin, "current origin", "origin", file,
                line);
}
#define EXPECT_CURRENT(rt, tag, origin) expect_current_((rt), (tag), (origin), __FILE__, __LINE__)

static void test_nested(tether_runtime_t rt) {
  tether_state_t a, b, c;
  tether_transaction_t outer, inner, inner2, mid, deep;
  tether_transaction_info_t oinfo = {"outer", 1, NULL}, iinfo = {"inner", 2, NULL},
                            i2info = {"inner2", 3, NULL};
  seen_t sa, sb, sc;
  seen_t got;
  tether_observer_t o;
  uint64_t rev0, rev = 0;

  printf("transactions: nested transactions are savepoints\n");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &b));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &c));
  seen_init(&sa, "SYNC a");
  seen_init(&sb, "SYNC b");
  seen_init(&sc, "SYNC c");
  CHECK_OK(tether_observe(a, NULL, TETHER_OBSERVE_SYNC, record, &sa, seen_destroy, &o));
  CHECK_OK(tether_observe(b, NULL, TETHER_OBSERVE_SYNC, record, &sb, seen_destroy, &o));
  CHECK_OK(tether_observe(c, NULL, TETHER_OBSERVE_SYNC, record, &sc, seen_destroy, &o));
  rev0 = runtime_rev(rt);

  EXPECT_CURRENT(rt, NULL, 0);
  CHECK_OK(tether_transaction_begin(rt, &oinfo, &outer));
  EXPECT_CURRENT(rt, "outer", 1);
  CHECK_OK(tether_state_set_int(a, 1));

  CHECK_OK(tether_transaction_begin(rt, &iinfo, &inner));
  EXPECT_CURRENT(rt, "inner", 2); /* the innermost one */
  CHECK_OK(tether_state_set_int(b, 2));
  CHECK_OK(tether_state_set_int(a, 10));
  CHECK_INT_EQ(OWN_READS(a), 10);
  CHECK_INT_EQ(OWN_READS(b), 2);

  /* Only the innermost may end; the refusal changes nothing. */
  CHECK_ERR(tether_transaction_commit(outer, &rev), TETHER_EINVAL);
  CHECK_ERR(tether_transaction_abort(outer), TETHER_EINVAL);
  CHECK_INT_EQ(OWN_READS(a), 10);
  EXPECT_CURRENT(rt, "inner", 2);

  /* Aborting the inner one drops its writes only. */
  CHECK_OK(tether_transaction_abort(inner));
  EXPECT_CURRENT(rt, "outer", 1);
  CHECK_INT_EQ(OWN_READS(a), 1);
  CHECK_INT_EQ(OWN_READS(b), 0);
  CHECK_ERR(tether_transaction_commit(inner, NULL), TETHER_ESTALE);

  /* Committing an inner one keeps its writes in the outer one, still
   * unapplied. */
  CHECK_OK(tether_transaction_begin(rt, &i2info, &inner2));
  CHECK_OK(tether_state_set_int(b, 3));
  CHECK_OK(tether_transaction_commit(inner2, NULL));
  CHECK_INT_EQ(OWN_READS(b), 3);
  CHECK_INT_EQ(OTHER_READS(b), 0);
  CHECK_INT_EQ(OTHER_READS(a), 0);
  CHECK_INT_EQ(runtime_rev(rt), rev0);
  CHECK_INT_EQ(seen_get(&sa).calls, 0);
  CHECK_INT_EQ(seen_get(&sb).calls, 0);
  CHECK_ERR(tether_transaction_commit(inner2, NULL), TETHER_ESTALE); /* twice */

  /* Three deep: a savepoint committed into one that is then aborted is
   * gone with it. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &mid));
  CHECK_OK(tether_state_set_int(a, 50));
  CHECK_OK(tether_transaction_begin(rt, NULL, &deep));
  CHECK_OK(tether_state_set_int(c, 5));
  CHECK_ERR(tether_transaction_commit(outer, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_transaction_commit(mid, NULL), TETHER_EINVAL);
  CHECK_OK(tether_transaction_commit(deep, NULL));
  CHECK_INT_EQ(OWN_READS(c), 5);
  CHECK_OK(tether_transaction_abort(mid));
  CHECK_INT_EQ(OWN_READS(c), 0);
  CHECK_INT_EQ(OWN_READS(a), 1);

  /* Only the outermost commit applies, with the outermost info. */
  CHECK_OK(tether_transaction_commit(outer, &rev));
  CHECK_INT_EQ(rev, rev0 + 1);
  CHECK_INT_EQ(OTHER_READS(a), 1);
  CHECK_INT_EQ(OTHER_READS(b), 3);
  CHECK_INT_EQ(OTHER_READS(c), 0);
  got = seen_get(&sa);
  CHECK_INT_EQ(got.calls, 1);
  CHECK_INT_EQ(got.old_v, 0);
  CHECK_INT_EQ(got.new_v, 1);
  CHECK_STR_EQ(got.tag, "outer");
  CHECK_INT_EQ(got.origin, 1);
  got = seen_get(&sb);
  CHECK_INT_EQ(got.calls, 1);
  CHECK_INT_EQ(got.new_v, 3);
  CHECK_STR_EQ(got.tag, "outer");
  CHECK_INT_EQ(seen_get(&sc).calls, 0);
  EXPECT_CURRENT(rt, NULL, 0);
  CHECK_ERR(tether_transaction_commit(outer, &rev), TETHER_ESTALE); /* twice */

  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
  CHECK_OK(tether_state_free(c));
}

/* ==== thread rules ======================================================== */

typedef struct foreign {
  tether_runtime_t rt;
  tether_transaction_t txn;
  tether_state_t s;
  int commit_rc, abort_rc, current_rc, write_rc;
} foreign_t;

static void *foreign_main(void *arg) {
  foreign_t *f = arg;
  tether_transaction_info_t info;
  f->commit_rc = tether_transaction_commit(f->txn, NULL);
  f->abort_rc = tether_transaction_abort(f->txn);
  f->current_rc = tether_transaction_current(f->rt, &info); /* none on this thread */
  f->write_rc = tether_state_set_int(f->s, 5);              /* not staged: applied */
  return NULL;
}

static void test_threads_and_errors(tether_runtime_t rt) {
  tether_runtime_t dead;
  tether_state_t a, s;
  tether_transaction_t txn, zero = {0}, forged = {0x00ff00ff00ff00ffull};
  tether_transaction_t out = {4040};
  tether_transaction_info_t info, bad_tag = {"\xc3\x28", 0, NULL};
  foreign_t f;
  uint64_t rev = 0;

  printf("transactions: threads and bad input\n");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));

  /* A transaction belongs to the thread that began it. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(a, 1));
  memset(&f, 0, sizeof f);
  f.rt = rt;
  f.txn = txn;
  f.s = s;
  run_on_thread(foreign_main, &f);
  CHECK_INT_EQ(f.commit_rc, TETHER_ETHREAD);
  CHECK_INT_EQ(f.abort_rc, TETHER_ETHREAD);
  CHECK_INT_EQ(f.current_rc, TETHER_ENOTFOUND);
  CHECK_INT_EQ(f.write_rc, TETHER_OK);
  CHECK_INT_EQ(OWN_READS(s), 5); /* the other thread's write is committed */
  CHECK_INT_EQ(OTHER_READS(a), 0);
  CHECK_OK(tether_transaction_commit(txn, &rev)); /* still open, still ours */
  CHECK_INT_EQ(OTHER_READS(a), 1);

  /* Bad input. */
  CHECK_ERR(tether_transaction_begin(rt, NULL, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_transaction_begin(rt, &bad_tag, &out), TETHER_EINVAL);
  CHECK_MENTIONS("UTF-8");
  CHECK_ERR(tether_transaction_current(rt, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_transaction_commit(zero, &rev), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_abort(zero), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_commit(forged, &rev), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_abort((tether_transaction_t){a.id}), TETHER_ESTALE);
  CHECK_OK(tether_runtime_new(NULL, &dead));
  CHECK_OK(tether_runtime_free(dead));
  CHECK_ERR(tether_transaction_begin(dead, NULL, &out), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_current(dead, &info), TETHER_ESTALE);
  CHECK_INT_EQ(out.id, 4040);

  /* A transaction without info: current says so with zeroes. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  memset(&info, 0xab, sizeof info);
  if (CHECK_OK(tether_transaction_current(rt, &info))) {
    CHECK(info.tag == NULL);
    CHECK_INT_EQ(info.origin, 0);
    CHECK(info.user_data == NULL);
  }
  CHECK_OK(tether_transaction_abort(txn));
  CHECK_ERR(tether_transaction_current(rt, &info), TETHER_ENOTFOUND);

  /* Transactions are per runtime: one open in rt is not current in another. */
  CHECK_OK(tether_runtime_new(NULL, &dead));
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_ERR(tether_transaction_current(dead, &info), TETHER_ENOTFOUND);
  CHECK_OK(tether_transaction_abort(txn));
  CHECK_OK(tether_runtime_free(dead));

  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(s));
}

/* ==== metadata: tag, origin, user_data ==================================== */

typedef struct fxrec {
  tether_runtime_t rt;
  tether_state_t in;
  int runs;
  int rc; /* tether_transaction_current in the last run */
  char tag[32];
  uint64_t origin;
  void *user_data;
  int destroyed;
} fxrec_t;

static void fx_body(tether_effect_t effect, void *user_data) {
  fxrec_t *f = user_data;
  tether_transaction_info_t info;
  int64_t v = 0;
  int rc;
  (void)effect;
  (void)tether_state_get_int(f->in, &v); /* the read that makes it re-run */
  memset(&info, 0, sizeof info);
  rc = tether_transaction_current(f->rt, &info);
  pthread_mutex_lock(&mu);
  f->runs++;
  f->rc = rc;
  if (rc == TETHER_OK) {
    copy_info(&info, f->tag, sizeof f->tag, &f->origin, &f->user_data);
  } else {
    snprintf(f->tag, sizeof f->tag, "(none)");
    f->origin = 0;
    f->user_data = NULL;
  }
  pthread_mutex_unlock(&mu);
}

static void fx_destroy(void *user_data) {
  fxrec_t *f = user_data;
  pthread_mutex_lock(&mu);
  f->destroyed++;
  pthread_mutex_unlock(&mu);
}

static fxrec_t fx_get(fxrec_t *f) {
  fxrec_t copy;
  pthread_mutex_lock(&mu);
  copy = *f;
  pthread_mutex_unlock(&mu);
  return copy;
}

/* A custom binding onto a state that remembers its set's transaction. */
typedef struct form {
  tether_state_t s;
  int sets;
  char tag[32];
  uint64_t origin;
  void *user_data;
} form_t;

static int form_get(tether_value_t *result, void *user_data) {
  form_t *f = user_data;
  int64_t v = 0;
  int rc = tether_state_get_int(f->s, &v);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, v);
}

static int form_set(const tether_value_t *value, const tether_transaction_info_t *transaction,
                    void *user_data) {
  form_t *f = user_data;
  pthread_mutex_lock(&mu);
  f->sets++;
  copy_info(transaction, f->tag, sizeof f->tag, &f->origin, &f->user_data);
  pthread_mutex_unlock(&mu);
  return tether_state_set(f->s, value);
}

static void expect_info_(seen_t got, const char *tag, uint64_t origin, void *user_data,
                         const char *file, int line) {
  check_str_eq_(got.tag, tag, got.name, tag, file, line);
  check_int_eq_((long long)got.origin, (long long)origin, got.name, "origin", file, line);
  if (got.user_data == user_data)
    check_pass_();
  else
    check_fail_(file, line, "%s: user_data %p, expected %p", got.name, got.user_data, user_data);
}
#define EXPECT_INFO(s, tag, origin, ud) expect_info_(seen_get(s), (tag), (origin), (ud), __FILE__, __LINE__)

static void test_metadata(tether_runtime_t rt) {
  tether_state_t a, b;
  tether_binding_t fb;
  tether_transaction_t txn;
  tether_transaction_info_t info, cur;
  char tagbuf[16];
  seen_t sa, chain, la, sb, lb;
  fxrec_t fx, fxs;
  form_t form;
  tether_effect_t e, es;
  tether_observer_t o;
  uint64_t rev = 0;

  printf("transactions: tag, origin and user_data reach every callback\n");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &b));
  seen_init(&sa, "SYNC observer of a");
  seen_init(&chain, "SYNC observer of a that writes b");
  seen_init(&la, "loop observer of a");
  seen_init(&sb, "SYNC observer of b");
  seen_init(&lb, "loop observer of b");
  chain.chain = 1;
  chain.target = b;
  CHECK_OK(tether_observe(a, NULL, TETHER_OBSERVE_SYNC, record, &sa, seen_destroy, &o));
  CHECK_OK(tether_observe(a, NULL, TETHER_OBSERVE_SYNC, record, &chain, seen_destroy, &o));
  CHECK_OK(tether_observe(a, NULL, 0, record, &la, seen_destroy, &o));
  CHECK_OK(tether_observe(b, NULL, TETHER_OBSERVE_SYNC, record, &sb, seen_destroy, &o));
  CHECK_OK(tether_observe(b, NULL, 0, record, &lb, seen_destroy, &o));
  memset(&fx, 0, sizeof fx);
  memset(&fxs, 0, sizeof fxs);
  fx.rt = fxs.rt = rt;
  fx.in = fxs.in = a;
  CHECK_OK(tether_effect_new(rt, 0, fx_body, NULL, &fx, fx_destroy, &e));
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, fx_body, NULL, &fxs, fx_destroy, &es));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(fx_get(&fx).runs, 1);
  CHECK_INT_EQ(fx_get(&fx).rc, TETHER_ENOTFOUND); /* created outside any transaction */
  CHECK_INT_EQ(fx_get(&fxs).runs, 1);
  CHECK_INT_EQ(fx_get(&fxs).rc, TETHER_ENOTFOUND);

  /* The tag is copied at begin: our buffer may change afterwards. */
  snprintf(tagbuf, sizeof tagbuf, "undo");
  info.tag = tagbuf;
  info.origin = 42;
  info.user_data = &marker;
  CHECK_OK(tether_transaction_begin(rt, &info, &txn));
  snprintf(tagbuf, sizeof tagbuf, "XXXX");
  memset(&cur, 0, sizeof cur);
  if (CHECK_OK(tether_transaction_current(rt, &cur))) {
    CHECK_STR_EQ(cur.tag, "undo");
    CHECK_INT_EQ(cur.origin, 42);
    CHECK(cur.user_data == &marker);
  }
  CHECK_OK(tether_state_set_int(a, 1));
  CHECK_OK(tether_transaction_commit(txn, &rev));

  /* SYNC observers of the commit. */
  EXPECT_INFO(&sa, "undo", 42, &marker);
  EXPECT_INFO(&chain, "undo", 42, &marker);
  CHECK_INT_EQ(seen_get(&chain).rc, TETHER_OK);
  CHECK_INT_EQ(OTHER_READS(b), 2);
  /* The write chain made from the callback carries the same transaction. */
  CHECK_INT_EQ(seen_get(&sb).calls, 1);
  EXPECT_INFO(&sb, "undo", 42, &marker);
  /* The SYNC effect re-ran at the end of the commit, inside its info. */
  CHECK_INT_EQ(fx_get(&fxs).runs, 2);
  CHECK_INT_EQ(fx_get(&fxs).rc, TETHER_OK);
  CHECK_STR_EQ(fx_get(&fxs).tag, "undo");
  CHECK_INT_EQ(fx_get(&fxs).origin, 42);
  /* Loop observers and the loop effect, after a flush. */
  CHECK_OK(tether_runtime_flush(rt));
  EXPECT_INFO(&la, "undo", 42, &marker);
  EXPECT_INFO(&lb, "undo", 42, &marker);
  CHECK_INT_EQ(fx_get(&fx).runs, 2);
  CHECK_INT_EQ(fx_get(&fx).rc, TETHER_OK);
  CHECK_STR_EQ(fx_get(&fx).tag, "undo");
  CHECK_INT_EQ(fx_get(&fx).origin, 42);
  CHECK(fx_get(&fx).user_data == &marker);
  /* Outside callbacks, after the commit, no transaction applies. */
  CHECK_ERR(tether_transaction_current(rt, &cur), TETHER_ENOTFOUND);

  /* A write outside transactions carries none, down the whole chain. */
  CHECK_OK(tether_state_set_int(a, 5));
  CHECK_INT_EQ(seen_get(&sa).without_txn, 1);
  CHECK_INT_EQ(seen_get(&sb).without_txn, 1);
  CHECK_INT_EQ(fx_get(&fxs).rc, TETHER_ENOTFOUND);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(seen_get(&la).without_txn, 1);
  CHECK_INT_EQ(seen_get(&lb).without_txn, 1);
  CHECK_STR_EQ(seen_get(&lb).tag, "(no transaction)");
  CHECK_INT_EQ(fx_get(&fx).rc, TETHER_ENOTFOUND);
  CHECK_INT_EQ(OTHER_READS(b), 10);

  /* A custom binding's set is called at once, with the transaction; its
   * writes are staged with it. */
  memset(&form, 0, sizeof form);
  form.s = a;
  CHECK_OK(tether_binding_new_custom(rt, form_get, form_set, &form, NULL, &fb));
  info.tag = "form";
  info.origin = 7;
  info.user_data = NULL;
  CHECK_OK(tether_transaction_begin(rt, &info, &txn));
  CHECK_OK(tether_binding_set_int(fb, 9));
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(form.sets, 1);
  CHECK_STR_EQ(form.tag, "form");
  CHECK_INT_EQ(form.origin, 7);
  pthread_mutex_unlock(&mu);
  CHECK_INT_EQ(OWN_READS(a), 9);
  CHECK_INT_EQ(OTHER_READS(a), 5);
  CHECK_OK(tether_transaction_commit(txn, &rev));
  CHECK_INT_EQ(OTHER_READS(a), 9);
  EXPECT_INFO(&sa, "form", 7, NULL);
  EXPECT_INFO(&sb, "form", 7, NULL);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_STR_EQ(fx_get(&fx).tag, "form");
  /* Outside a transaction, set is given NULL. */
  CHECK_OK(tether_binding_set_int(fb, 11));
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(form.sets, 2);
  CHECK_STR_EQ(form.tag, "(no transaction)");
  pthread_mutex_unlock(&mu);
  CHECK_OK(tether_runtime_flush(rt));

  CHECK_OK(tether_binding_free(fb));
  CHECK_OK(tether_effect_free(e));
  CHECK_OK(tether_effect_free(es));
  CHECK_INT_EQ(fx_get(&fx).destroyed, 1);
  CHECK_INT_EQ(fx_get(&fxs).destroyed, 1);
  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
  CHECK_INT_EQ(seen_get(&sa).destroyed, 1);
  CHECK_INT_EQ(seen_get(&chain).destroyed, 1);
  CHECK_INT_EQ(seen_get(&la).destroyed, 1);
  CHECK_INT_EQ(seen_get(&sb).destroyed, 1);
  CHECK_INT_EQ(seen_get(&lb).destroyed, 1);
}

/* ==== a refused write dooms the transaction ============================= */

typedef struct freer {
  tether_state_t s;
  int rc;
} freer_t;

static void *free_on_thread(void *arg) {
  freer_t *f = arg;
  f->rc = tether_state_free(f->s);
  return NULL;
}

static void test_doomed(tether_runtime_t rt) {
  tether_state_t locked, good, doc, x, y;
  tether_transaction_t txn;
  seen_t sg, lg, sl;
  tether_observer_t o;
  uint64_t rev0, rev = 12345;
  freer_t fr;

  printf("transactions: a refused write dooms its transaction\n");
  CHECK_OK(tether_state_new_int(rt, 0, TETHER_STATE_LOCK_TYPE, &locked));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &good));
  CHECK_OK(tether_state_new_json(rt, "{\"n\":0}", -1, 0, &doc));
  seen_init(&sg, "SYNC good");
  seen_init(&lg, "loop good");
  seen_init(&sl, "SYNC locked");
  CHECK_OK(tether_observe(good, NULL, TETHER_OBSERVE_SYNC, record, &sg, seen_destroy, &o));
  CHECK_OK(tether_observe(good, NULL, 0, record, &lg, seen_destroy, &o));
  CHECK_OK(tether_observe(locked, NULL, TETHER_OBSERVE_SYNC, record, &sl, seen_destroy, &o));
  rev0 = runtime_rev(rt);

  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(good, 5));
  CHECK_OK(tether_state_set_path_json(doc, "/n", "1", -1));
  CHECK_ERR(tether_state_set_string(locked, "five", -1), TETHER_ETYPE); /* refused now */
  (void)tether_state_set_int(locked, 5); /* whatever this says, the txn is doomed */
  (void)tether_state_set_int(good, 6);
  CHECK_ERR(tether_transaction_commit(txn, &rev), TETHER_ETYPE);
  CHECK_INT_EQ(rev, 12345); /* out-params are written only on success */

  /* Nothing was applied, not even the good writes; nothing was called. */
  CHECK_INT_EQ(OWN_READS(good), 0);
  CHECK_INT_EQ(OTHER_READS(good), 0);
  CHECK_INT_EQ(OWN_READS(locked), 0);
  EXPECT_STATE(doc, "{\"n\":0}");
  CHECK_INT_EQ(runtime_rev(rt), rev0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(seen_get(&sg).calls, 0);
  CHECK_INT_EQ(seen_get(&lg).calls, 0);
  CHECK_INT_EQ(seen_get(&sl).calls, 0);
  /* The transaction is closed all the same. */
  CHECK_ERR(tether_transaction_commit(txn, &rev), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_abort(txn), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_current(rt, &(tether_transaction_info_t){0}), TETHER_ENOTFOUND);
  /* ... and the next one works. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(good, 7));
  CHECK_OK(tether_transaction_commit(txn, &rev));
  CHECK_INT_EQ(rev, rev0 + 1);
  CHECK_INT_EQ(seen_get(&sg).calls, 1);

  /* A staged state freed (here by another thread) before the commit:
   * TETHER_ESTALE. */
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &y));
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(x, 1));
  CHECK_OK(tether_state_set_int(y, 1));
  fr.s = x;
  fr.rc = 1;
  run_on_thread(free_on_thread, &fr);
  CHECK_INT_EQ(fr.rc, TETHER_OK);
  CHECK_ERR(tether_transaction_commit(txn, NULL), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_current(rt, &(tether_transaction_info_t){0}), TETHER_ENOTFOUND);
  CHECK_OK(tether_state_free(y));

  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_state_free(locked));
  CHECK_OK(tether_state_free(good));
  CHECK_OK(tether_state_free(doc));
}

/* ==== replay onto values changed meanwhile ============================== */

typedef struct side {
  tether_state_t s;
  const char *pointer, *json;
  int rc;
  char saw[128];
} side_t;

static void *side_write(void *arg) {
  side_t *w = arg;
  tether_value_t *v = NULL;
  w->rc = tether_state_set_path_json(w->s, w->pointer, w->json, -1);
  if (tether_state_get(w->s, &v) == TETHER_OK) value_json(v, w->saw, sizeof w->saw);
  tether_value_free(v);
  return NULL;
}

static void test_replay(tether_runtime_t rt) {
  tether_state_t doc;
  tether_transaction_t txn;
  side_t w;
  uint64_t rev = 0;

  printf("transactions: staged writes replay onto other threads' writes\n");
  CHECK_OK(tether_state_new_json(rt, "{\"a\":0,\"b\":0}", -1, 0, &doc));

  /* This thread stages /a; another thread writes /b meanwhile (not blocked
   * by the open transaction, and not seeing /a). The commit keeps both. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(doc, "/a", "1", -1));
  w.s = doc;
  w.pointer = "/b";
  w.json = "2";
  w.rc = 1;
  w.saw[0] = '\0';
  run_on_thread(side_write, &w);
  CHECK_INT_EQ(w.rc, TETHER_OK);
  CHECK_STR_EQ(w.saw, "{\"a\":0,\"b\":2}");
  CHECK_OK(tether_transaction_commit(txn, &rev));
  EXPECT_STATE(doc, "{\"a\":1,\"b\":2}");
  CHECK_INT_EQ(state_rev(doc), rev);

  /* Several staged path writes, and a new member, replay in order. */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_path_json(doc, "/a", "10", -1));
  CHECK_OK(tether_state_set_path_json(doc, "/c", "{\"d\":1}", -1));
  CHECK_OK(tether_state_set_path_json(doc, "/c/d", "2", -1));
  w.pointer = "/b";
  w.json = "20";
  w.rc = 1;
  run_on_thread(side_write, &w);
  CHECK_INT_EQ(w.rc, TETHER_OK);
  CHECK_OK(tether_transaction_commit(txn, &rev));
  EXPECT_STATE(doc, "{\"a\":10,\"b\":20,\"c\":{\"d\":2}}");

  /* A staged write of the whole value replays as what it is: a replacement
   * (the other thread's write is overwritten). */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_state_set_json(doc, "{\"a\":5}", -1));
  w.pointer = "/b";
  w.json = "30";
  w.rc = 1;
  run_on_thread(side_write, &w);
  CHECK_INT_EQ(w.rc, TETHER_OK);
  CHECK_OK(tether_transaction_commit(txn, &rev));
  EXPECT_STATE(doc, "{\"a\":5}");

  CHECK_OK(tether_state_free(doc));
}

/* ==== four threads at once ============================================== */

static int txn_count = 1000;

static pthread_mutex_t inside_mu = PTHREAD_MUTEX_INITIALIZER;
static int inside = 0;
static long overlaps = 0;

typedef struct tally {
  pthread_mutex_t mu;
  long calls;
  long broken;     /* new != old + step */
  long wrong_tag;  /* the tag/origin is not the writer's */
  int64_t step;
  int expect_origin; /* 0: any writer, but tag must match origin */
  int64_t last_new;
} tally_t;

static void tally_init(tally_t *t, int64_t step, int expect_origin) {
  memset(t, 0, sizeof t[0]);
  pthread_mutex_init(&t->mu, NULL);
  t->step = step;
  t->expect_origin = expect_origin;
}

static void count_commit(const tether_change_t *change, void *user_data) {
  tally_t *t = user_data;
  int64_t o = value_int_or(change->old_value, -1), n = value_int_or(change->new_value, -1);
  const tether_transaction_info_t *info = change->transaction;
  char want[16];
  int tag_ok;

  pthread_mutex_lock(&inside_mu);
  if (inside) overlaps++;
  inside = 1;
  pthread_mutex_unlock(&inside_mu);

  tag_ok = info != NULL && info->tag != NULL && info->origin >= 1 && info->origin <= NTHREADS;
  if (tag_ok) {
    snprintf(want, sizeof want, "t%d", (int)info->origin - 1);
    tag_ok = strcmp(info->tag, want) == 0 &&
             (t->expect_origin == 0 || (int)info->origin == t->expect_origin);
  }
  pthread_mutex_lock(&t->mu);
  t->calls++;
  if (n != o + t->step) t->broken++;
  if (!tag_ok) t->wrong_tag++;
  t->last_new = n;
  pthread_mutex_unlock(&t->mu);

  pthread_mutex_lock(&inside_mu);
  inside = 0;
  pthread_mutex_unlock(&inside_mu);
}

static tether_state_t shared;
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER; /* the application's lock */

typedef struct worker {
  int index;
  tether_runtime_t rt;
  tether_state_t c1, c2;
  char tag[16];
  pthread_t thread;
  long failures;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  tether_transaction_info_t info;
  tether_transaction_t txn;
  int64_t v = 0, v2 = 0, s = 0;
  uint64_t rev = 0, srev = 0;
  int i;

  info.tag = w->tag;
  info.origin = (uint64_t)w->index + 1;
  info.user_data = w;
  for (i = 0; i < txn_count; i++) {
    /* Its own counters: nobody else writes them. Three writes, one commit. */
    if (!CHECK_OK(tether_transaction_begin(w->rt, &info, &txn))) {
      w->failures++;
      break;
    }
    if (!CHECK_OK(tether_state_get_int(w->c1, &v)) || !CHECK_INT_EQ(v, i) ||
        !CHECK_OK(tether_state_set_int(w->c1, v + 100)) ||
        !CHECK_OK(tether_state_set_int(w->c1, v + 1)) ||
        !CHECK_OK(tether_state_get_int(w->c2, &v2)) ||
        !CHECK_OK(tether_state_set_int(w->c2, v2 + 2)) ||
        !CHECK_OK(tether_transaction_commit(txn, &rev))) {
      w->failures++;
      (void)tether_transaction_abort(txn);
      break;
    }
    /* Only this thread writes c1, so its revision is this commit's. */
    if (!CHECK_OK(tether_state_revision(w->c1, &srev)) || !CHECK_INT_EQ(srev, rev)) {
      w->failures++;
      break;
    }

    /* The shared counter: a transaction is not a lock (a staged write is
     * replayed over what others committed meanwhile), so read-modify-write
     * still needs the application's lock around the whole transaction. */
    pthread_mutex_lock(&shared_mu);
    if (!CHECK_OK(tether_transaction_begin(w->rt, &info, &txn)) ||
        !CHECK_OK(tether_state_get_int(shared, &s)) ||
        !CHECK_OK(tether_state_set_int(shared, s + 1)) ||
        !CHECK_OK(tether_transaction_commit(txn, NULL))) {
      w->failures++;
      pthread_mutex_unlock(&shared_mu);
      break;
    }
    pthread_mutex_unlock(&shared_mu);
  }
  return NULL;
}

static void test_concurrent(void) {
  tether_runtime_t rt;
  worker_t w[NTHREADS];
  tally_t t1[NTHREADS], t2[NTHREADS], ts;
  tether_observer_t o;
  uint64_t rev0, rev1;
  int64_t v = 0;
  int i;
  const char *env = getenv("TXN_COUNT");

  if (env != NULL && atoi(env) > 0) txn_count = atoi(env);
  printf("transactions: %d threads x %d transactions\n", NTHREADS, txn_count);
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  CHECK_OK(tether_state_new_int(rt, 0, TETHER_STATE_LOCK_TYPE, &shared));
  tally_init(&ts, 1, 0);
  CHECK_OK(tether_observe(shared, NULL, TETHER_OBSERVE_SYNC, count_commit, &ts, NULL, &o));
  for (i = 0; i < NTHREADS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].index = i;
    w[i].rt = rt;
    snprintf(w[i].tag, sizeof w[i].tag, "t%d", i);
    CHECK_OK(tether_state_new_int(rt, 0, 0, &w[i].c1));
    CHECK_OK(tether_state_new_int(rt, 0, 0, &w[i].c2));
    tally_init(&t1[i], 1, i + 1);
    tally_init(&t2[i], 2, i + 1);
    CHECK_OK(tether_observe(w[i].c1, NULL, TETHER_OBSERVE_SYNC, count_commit, &t1[i], NULL, &o));
    CHECK_OK(tether_observe(w[i].c2, NULL, TETHER_OBSERVE_SYNC, count_commit, &t2[i], NULL, &o));
  }
  rev0 = runtime_rev(rt);

  for (i = 0; i < NTHREADS; i++) pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
  for (i = 0; i < NTHREADS; i++) pthread_join(w[i].thread, NULL);
  CHECK_OK(tether_runtime_flush(rt));

  for (i = 0; i < NTHREADS; i++) {
    CHECK_INT_EQ(w[i].failures, 0);
    CHECK_OK(tether_state_get_int(w[i].c1, &v));
    CHECK_INT_EQ(v, txn_count);
    CHECK_OK(tether_state_get_int(w[i].c2, &v));
    CHECK_INT_EQ(v, 2 * (int64_t)txn_count);
    /* One SYNC call per commit, one step each (the +100 never showed). */
    pthread_mutex_lock(&t1[i].mu);
    CHECK_INT_EQ(t1[i].calls, txn_count);
    CHECK_INT_EQ(t1[i].broken, 0);
    CHECK_INT_EQ(t1[i].wrong_tag, 0);
    CHECK_INT_EQ(t1[i].last_new, txn_count);
    pthread_mutex_unlock(&t1[i].mu);
    pthread_mutex_lock(&t2[i].mu);
    CHECK_INT_EQ(t2[i].calls, txn_count);
    CHECK_INT_EQ(t2[i].broken, 0);
    CHECK_INT_EQ(t2[i].wrong_tag, 0);
    pthread_mutex_unlock(&t2[i].mu);
  }
  CHECK_OK(tether_state_get_int(shared, &v));
  CHECK_INT_EQ(v, (int64_t)NTHREADS * txn_count);
  pthread_mutex_lock(&ts.mu);
  CHECK_INT_EQ(ts.calls, (long)NTHREADS * txn_count);
  CHECK_INT_EQ(ts.broken, 0);
  CHECK_INT_EQ(ts.wrong_tag, 0);
  pthread_mutex_unlock(&ts.mu);
  /* Exactly one revision per commit: two commits per iteration. */
  rev1 = runtime_rev(rt);
  CHECK_INT_EQ(rev1 - rev0, 2 * (uint64_t)NTHREADS * (uint64_t)txn_count);
  pthread_mutex_lock(&inside_mu);
  CHECK_INT_EQ(overlaps, 0);
  pthread_mutex_unlock(&inside_mu);

  CHECK_OK(tether_runtime_free(rt));
  for (i = 0; i < NTHREADS; i++) {
    pthread_mutex_destroy(&t1[i].mu);
    pthread_mutex_destroy(&t2[i].mu);
  }
  pthread_mutex_destroy(&ts.mu);
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(transactions_commit) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_commit(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("transactions_commit");
}

TEST_CASE(transactions_abort) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_abort(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("transactions_abort");
}

TEST_CASE(transactions_nested) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_nested(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("transactions_nested");
}

TEST_CASE(transactions_threads_and_errors) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_threads_and_errors(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("transactions_threads_and_errors");
}

TEST_CASE(transactions_metadata) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_metadata(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("transactions_metadata");
}

TEST_CASE(transactions_doomed) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_doomed(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("transactions_doomed");
}

TEST_CASE(transactions_replay) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  test_replay(rt);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("transactions_replay");
}

TEST_CASE(transactions_concurrent) {
  test_concurrent();
  return check_report("transactions_concurrent");
}
