/*
 * settings_panel.c — a settings panel that saves several values at once, or
 * not at all: transactions, validators and descriptors.
 *
 * The panel edits four states:
 *     volume       an int, 0..100         (descriptor: TETHER_DESCRIBE_RANGE)
 *     theme        "light" or "dark"      (a validator, with a reason)
 *     username     any non-empty string   (a validator)
 *     server_port  shown, never edited    (TETHER_DESCRIBE_READ_ONLY)
 *
 * "Save" writes the edited values inside one transaction, like SwiftUI's
 * withTransaction and like a database transaction at once:
 *  - until the commit, the writes are staged: the saving thread reads its
 *    own staged values, every other thread still sees the committed ones;
 *  - the commit checks every staged state (each validator once, with the
 *    final value) and then applies all of them under ONE new revision: each
 *    observer is called exactly once, all with that revision and with the
 *    transaction's tag in change->transaction;
 *  - if any check fails, nothing is applied and no observer is called; the
 *    error names the state and the validator's reason ("unknown theme
 *    'pink'"), and the transaction is closed all the same;
 *  - tether_transaction_abort drops everything ("Cancel");
 *  - transactions nest like savepoints: an inner abort drops only the inner
 *    writes, an inner commit hands its writes to the outer one, and only the
 *    outermost commit applies anything, carrying the outermost info.
 * Outside transactions the same descriptors check every plain write:
 * TETHER_ERANGE, TETHER_EREADONLY, TETHER_EREJECTED — a refused write changes
 * nothing and wakes no one. A validator only judges: a write from inside it
 * fails with TETHER_EBUSY.
 *
 * Build: cc -std=c99 settings_panel.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* One lock for all the bookkeeping below; never held across a tether_ call. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct settings {
  tether_runtime_t rt;
  tether_state_t volume, theme, username, server_port;
  tether_state_t audit; /* a state a (misbehaving) validator tries to write */
} settings_t;

/* ---- validators ----------------------------------------------------------- */

typedef struct rules {
  settings_t *settings;
  int calls;
  int destroyed;
  uint64_t last_state_id;    /* the state argument of the last call */
  int saw_transaction;       /* the last call had a transaction */
  char tag[32];              /* ...and its tag */
  int64_t volume_seen;       /* username: the volume it read (committed) */
  int write_attempts;        /* username: writes it tried */
  int write_not_busy;        /* ...that did NOT fail with TETHER_EBUSY */
  int begin_not_busy;        /* transaction_begin that did not fail with EBUSY */
} rules_t;

static void rules_note(rules_t *r, tether_state_t state,
                       const tether_transaction_info_t *transaction) {
  pthread_mutex_lock(&mu);
  r->calls++;
  r->last_state_id = state.id;
  r->saw_transaction = transaction != NULL;
  snprintf(r->tag, sizeof r->tag, "%s",
           transaction && transaction->tag ? transaction->tag : "");
  pthread_mutex_unlock(&mu);
}

static void rules_destroy(void *user_data) {
  rules_t *r = user_data;
  pthread_mutex_lock(&mu);
  r->destroyed++;
  pthread_mutex_unlock(&mu);
}

static rules_t rules_snapshot(rules_t *r) {
  rules_t copy;
  pthread_mutex_lock(&mu);
  copy = *r;
  pthread_mutex_unlock(&mu);
  return copy;
}

/* theme: "light" or "dark". The reason goes into the failing call's message. */
static bool validate_theme(tether_state_t state, const tether_value_t *proposed,
                           const tether_transaction_info_t *transaction, char *reason,
                           size_t reason_size, void *user_data) {
  char theme[64];
  rules_note(user_data, state, transaction);
  if (tether_value_get_string(proposed, theme, sizeof theme, NULL) != TETHER_OK) {
    snprintf(reason, reason_size, "a theme is a string");
    return false;
  }
  if (strcmp(theme, "light") == 0 || strcmp(theme, "dark") == 0) return true;
  snprintf(reason, reason_size, "unknown theme '%s'", theme);
  return false;
}

/* username: not empty. It also shows what a validator may and may not do:
 * it may read states (and sees committed values only), but it must not
 * write or free a state (TETHER_EBUSY) nor open a transaction (TETHER_EBUSY). */
static bool validate_username(tether_state_t state, const tether_value_t *proposed,
                              const tether_transaction_info_t *transaction, char *reason,
                              size_t reason_size, void *user_data) {
  rules_t *r = user_data;
  size_t len = 0;
  int64_t volume = -1;
  int write_rc, begin_rc;
  tether_transaction_t txn;

  rules_note(r, state, transaction);
  (void)tether_state_get_int(r->settings->volume, &volume);
  write_rc = tether_state_set_int(r->settings->audit, 1); /* not allowed */
  if (write_rc == TETHER_EBUSY && tether_state_free(r->settings->audit) != TETHER_EBUSY)
    write_rc = TETHER_OK; /* freeing a state is a write too: also refused */
  begin_rc = tether_transaction_begin(r->settings->rt, NULL, &txn);
  if (begin_rc == TETHER_OK) (void)tether_transaction_abort(txn); /* tidy up a bug */
  pthread_mutex_lock(&mu);
  r->volume_seen = volume;
  r->write_attempts++;
  if (write_rc != TETHER_EBUSY) r->write_not_busy++;
  if (begin_rc != TETHER_EBUSY) r->begin_not_busy++;
  pthread_mutex_unlock(&mu);

  if (tether_value_get_string(proposed, NULL, 0, &len) != TETHER_OK) {
    snprintf(reason, reason_size, "a username is a string");
    return false;
  }
  if (len == 0) {
    snprintf(reason, reason_size, "a username cannot be empty");
    return false;
  }
  return true;
}

/* ---- observers ------------------------------------------------------------ */

static char order_log[256]; /* one letter per SYNC call, in call order */

typedef struct seen {
  const char *letter;
  tether_runtime_t rt;
  int calls;
  uint64_t revision;
  int saw_transaction;
  char tag[32];
  char new_json[128];
  int current_rc;          /* tether_transaction_current inside the callback */
  char current_tag[32];
  int destroyed;
} seen_t;

static void seen_init(seen_t *s, const char *letter, tether_runtime_t rt) {
  memset(s, 0, sizeof *s);
  s->letter = letter;
  s->rt = rt;
}

static void seen_record(const tether_change_t *change, void *user_data) {
  seen_t *s = user_data;
  tether_transaction_info_t current;
  int rc = tether_transaction_current(s->rt, &current);
  pthread_mutex_lock(&mu);
  s->calls++;
  s->revision = change->revision;
  s->saw_transaction = change->transaction != NULL;
  snprintf(s->tag, sizeof s->tag, "%s",
           change->transaction && change->transaction->tag ? change->transaction->tag : "");
  value_json(change->new_value, s->new_json, sizeof s->new_json);
  s->current_rc = rc;
  snprintf(s->current_tag, sizeof s->current_tag, "%s",
           rc == TETHER_OK && current.tag ? current.tag : "");
  if (strlen(order_log) + 2 < sizeof order_log) strcat(order_log, s->letter);
  pthread_mutex_unlock(&mu);
}

static void seen_destroy(void *user_data) {
  seen_t *s = user_data;
  pthread_mutex_lock(&mu);
  s->destroyed++;
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

static void order_take(char *out, size_t size) {
  pthread_mutex_lock(&mu);
  snprintf(out, size, "%s", order_log);
  order_log[0] = '\0';
  pthread_mutex_unlock(&mu);
}

/* ---- small readers -------------------------------------------------------- */

static uint64_t revision_of(tether_runtime_t rt) {
  uint64_t r = 0;
  CHECK_OK(tether_runtime_revision(rt, &r));
  return r;
}

static int64_t int_of(tether_state_t s) {
  int64_t n = -1;
  CHECK_OK(tether_state_get_int(s, &n));
  return n;
}

/* The string a state holds (this thread's view), in a static buffer per slot. */
static const char *str_of(tether_state_t s, int slot) {
  static char bufs[4][64];
  bufs[slot][0] = '\0';
  CHECK_OK(tether_state_get_string(s, bufs[slot], sizeof bufs[slot], NULL));
  return bufs[slot];
}

/* ---- another thread, looking while a save is in progress ------------------ */

typedef struct onlooker {
  settings_t *settings;
  tether_transaction_t txn; /* the main thread's open transaction */
  int64_t volume;
  char theme[32], username[32];
} onlooker_t;

static void *onlooker_main(void *arg) {
  onlooker_t *o = arg;
  tether_transaction_info_t info;
  o->volume = -1;
  CHECK_OK(tether_state_get_int(o->settings->volume, &o->volume));
  CHECK_OK(tether_state_get_string(o->settings->theme, o->theme, sizeof o->theme, NULL));
  CHECK_OK(tether_state_get_string(o->settings->username, o->username, sizeof o->username, NULL));
  /* The transaction belongs to the thread that began it. */
  CHECK_ERR(tether_transaction_current(o->settings->rt, &info), TETHER_ENOTFOUND);
  CHECK_ERR(tether_transaction_commit(o->txn, NULL), TETHER_ETHREAD);
  CHECK_ERR(tether_transaction_abort(o->txn), TETHER_ETHREAD);
  return NULL;
}

/* ------------------------------------------------------------------------- */

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_settings_panel) {
  settings_t s;
  tether_state_descriptor_t d;
  rules_t theme_rules, user_rules;
  seen_t vol_seen, theme_seen, user_seen, port_seen, vol_loop;
  seen_t snap;
  tether_observer_t obs;
  tether_binding_t volume_binding;
  tether_transaction_t txn, outer, inner;
  tether_transaction_info_t info, current;
  onlooker_t onlooker;
  pthread_t thread;
  uint64_t rev, commit_rev;
  int rc, loop_base;
  char order[64];

  if (!CHECK_OK(tether_runtime_new(NULL, &s.rt))) return check_report("settings_panel");

  /* --- the states and what each accepts -------------------------------------- */
  CHECK_OK(tether_state_new_int(s.rt, 50, 0, &s.volume));
  CHECK_OK(tether_state_new_string(s.rt, "light", -1, 0, &s.theme));
  CHECK_OK(tether_state_new_string(s.rt, "ada", -1, 0, &s.username));
  CHECK_OK(tether_state_new_int(s.rt, 8080, 0, &s.server_port));
  CHECK_OK(tether_state_new_int(s.rt, 0, 0, &s.audit));

  /* Always start from tether_state_descriptor_init ("accept everything"). */
  tether_state_descriptor_init(&d);
  d.flags = TETHER_DESCRIBE_RANGE;
  d.min = 100; /* a range upside down is a programming error */
  d.max = 0;
  CHECK_ERR(tether_state_describe(s.volume, &d), TETHER_EINVAL);
  d.min = 0;
  d.max = 100;
  CHECK_OK(tether_state_describe(s.volume, &d));

  memset(&theme_rules, 0, sizeof theme_rules);
  theme_rules.settings = &s;
  tether_state_descriptor_init(&d);
  d.validate = validate_theme;
  d.user_data = &theme_rules;
  d.destroy = rules_destroy;
  CHECK_OK(tether_state_describe(s.theme, &d));

  memset(&user_rules, 0, sizeof user_rules);
  user_rules.settings = &s;
  tether_state_descriptor_init(&d);
  d.validate = validate_username;
  d.user_data = &user_rules;
  d.destroy = rules_destroy;
  CHECK_OK(tether_state_describe(s.username, &d));

  tether_state_descriptor_init(&d);
  d.flags = TETHER_DESCRIBE_READ_ONLY;
  CHECK_OK(tether_state_describe(s.server_port, &d));

  /* The panel's views: one SYNC observer per state (registered in this order:
   * V T U P), and one loop observer of the volume. */
  seen_init(&vol_seen, "V", s.rt);
  seen_init(&theme_seen, "T", s.rt);
  seen_init(&user_seen, "U", s.rt);
  seen_init(&port_seen, "P", s.rt);
  seen_init(&vol_loop, "", s.rt);
  CHECK_OK(tether_observe(s.volume, NULL, TETHER_OBSERVE_SYNC, seen_record, &vol_seen,
                          seen_destroy, &obs));
  CHECK_OK(tether_observe(s.theme, NULL, TETHER_OBSERVE_SYNC, seen_record, &theme_seen,
                          seen_destroy, &obs));
  CHECK_OK(tether_observe(s.username, NULL, TETHER_OBSERVE_SYNC, seen_record, &user_seen,
                          seen_destroy, &obs));
  CHECK_OK(tether_observe(s.server_port, NULL, TETHER_OBSERVE_SYNC, seen_record, &port_seen,
                          seen_destroy, &obs));
  CHECK_OK(tether_observe(s.volume, NULL, 0, seen_record, &vol_loop, seen_destroy, &obs));

  /* --- 1. plain writes, checked one by one ------------------------------------ */
  rev = revision_of(s.rt);
  /* The range is inclusive and checked on every write path. */
  CHECK_ERR(tether_state_set_int(s.volume, 150), TETHER_ERANGE);
  CHECK_ERR(tether_state_set_int(s.volume, -1), TETHER_ERANGE);
  CHECK_ERR(tether_state_set_double(s.volume, 100.5), TETHER_ERANGE);
  CHECK_ERR(tether_state_set_string(s.volume, "loud", -1), TETHER_ETYPE); /* not a number */
  CHECK_OK(tether_state_binding(s.volume, &volume_binding));
  CHECK_ERR(tether_binding_set_int(volume_binding, 101), TETHER_ERANGE); /* through a binding */
  CHECK_OK(tether_binding_free(volume_binding));
  /* Read-only. */
  CHECK_ERR(tether_state_set_int(s.server_port, 9090), TETHER_EREADONLY);
  /* Validators: the message carries the reason. */
  CHECK_ERR(tether_state_set_string(s.theme, "pink", -1), TETHER_EREJECTED);
  CHECK_MENTIONS("unknown theme 'pink'");
  CHECK_ERR(tether_state_set_string(s.username, "", -1), TETHER_EREJECTED);
  CHECK_MENTIONS("cannot be empty");
  /* Nothing changed, nothing committed, nobody called. */
  CHECK_INT_EQ(revision_of(s.rt), rev);
  CHECK_INT_EQ(int_of(s.volume), 50);
  CHECK_INT_EQ(int_of(s.server_port), 8080);
  CHECK_STR_EQ(str_of(s.theme, 0), "light");
  CHECK_STR_EQ(str_of(s.username, 0), "ada");
  CHECK_INT_EQ(seen_calls(&vol_seen) + seen_calls(&theme_seen) + seen_calls(&user_seen) +
                   seen_calls(&port_seen),
               0);
  /* What the validators were given: their state, and no transaction. */
  {
    rules_t r = rules_snapshot(&theme_rules);
    CHECK_INT_EQ(r.last_state_id, s.theme.id);
    CHECK_INT_EQ(r.saw_transaction, 0);
    r = rules_snapshot(&user_rules);
    CHECK_INT_EQ(r.last_state_id, s.username.id);
    CHECK(r.write_attempts >= 1);
    CHECK_INT_EQ(r.write_not_busy, 0); /* its write failed with TETHER_EBUSY */
    CHECK_INT_EQ(r.begin_not_busy, 0); /* so did its transaction_begin */
  }
  CHECK_INT_EQ(int_of(s.audit), 0);
  /* An accepted plain write: the edge of the range. */
  CHECK_OK(tether_state_set_int(s.volume, 100));
  CHECK_OK(tether_state_set_int(s.volume, 50));
  CHECK_INT_EQ(seen_calls(&vol_seen), 2);
  CHECK_OK(tether_runtime_flush(s.rt));
  order_take(order, sizeof order);
  CHECK_STR_EQ(order, "VV");
  snap = seen_snapshot(&vol_seen);
  CHECK_INT_EQ(snap.saw_transaction, 0);
  CHECK_INT_EQ(snap.current_rc, TETHER_ENOTFOUND); /* no transaction caused it */
  /* (The loop observer saw 100 then 50, or nothing if both writes fell in one
   * loop turn: coalesced, 50 -> 50 is no change. Count from here.) */
  loop_base = seen_calls(&vol_loop);

  /* --- 2. Save: three values in one transaction -------------------------------- */
  rev = revision_of(s.rt);
  memset(&info, 0, sizeof info);
  info.tag = "settings-save";
  CHECK_OK(tether_transaction_begin(s.rt, &info, &txn));
  CHECK_OK(tether_state_set_int(s.volume, 70));
  CHECK_OK(tether_state_set_string(s.theme, "dark", -1));
  CHECK_OK(tether_state_set_string(s.username, "grace", -1));
  /* This thread reads what it staged... */
  CHECK_INT_EQ(int_of(s.volume), 70);
  CHECK_STR_EQ(str_of(s.theme, 0), "dark");
  CHECK_STR_EQ(str_of(s.username, 1), "grace");
  if (CHECK_OK(tether_transaction_current(s.rt, &current)))
    CHECK_STR_EQ(current.tag, "settings-save");
  /* ...but nothing is applied: no revision, no observer. */
  CHECK_INT_EQ(revision_of(s.rt), rev);
  CHECK_INT_EQ(seen_calls(&vol_seen), 2);
  CHECK_INT_EQ(seen_calls(&theme_seen), 0);
  /* Another thread sees the committed values, and cannot touch the
   * transaction. */
  memset(&onlooker, 0, sizeof onlooker);
  onlooker.settings = &s;
  onlooker.txn = txn;
  if (CHECK_INT_EQ(pthread_create(&thread, NULL, onlooker_main, &onlooker), 0)) {
    pthread_join(thread, NULL);
    CHECK_INT_EQ(onlooker.volume, 50);
    CHECK_STR_EQ(onlooker.theme, "light");
    CHECK_STR_EQ(onlooker.username, "ada");
  }
  /* Commit: checked, then applied at once under one new revision. */
  commit_rev = 0;
  CHECK_OK(tether_transaction_commit(txn, &commit_rev));
  CHECK_INT_EQ(commit_rev, rev + 1);
  CHECK_INT_EQ(revision_of(s.rt), rev + 1); /* exactly one step for three states */
  CHECK_INT_EQ(seen_calls(&vol_seen), 3);   /* each SYNC observer exactly once */
  CHECK_INT_EQ(seen_calls(&theme_seen), 1);
  CHECK_INT_EQ(seen_calls(&user_seen), 1);
  CHECK_INT_EQ(seen_calls(&port_seen), 0);
  order_take(order, sizeof order);
  CHECK_STR_EQ(order, "VTU"); /* one round, registration order */
  {
    seen_t *all[3];
    int i;
    all[0] = &vol_seen;
    all[1] = &theme_seen;
    all[2] = &user_seen;
    for (i = 0; i < 3; i++) {
      snap = seen_snapshot(all[i]);
      CHECK_INT_EQ(snap.revision, commit_rev); /* all the same revision */
      CHECK_INT_EQ(snap.saw_transaction, 1);
      CHECK_STR_EQ(snap.tag, "settings-save");
      CHECK_INT_EQ(snap.current_rc, TETHER_OK); /* inside the callback: the cause */
      CHECK_STR_EQ(snap.current_tag, "settings-save");
    }
  }
  CHECK_STR_EQ(seen_snapshot(&vol_seen).new_json, "70");
  CHECK_STR_EQ(seen_snapshot(&theme_seen).new_json, "\"dark\"");
  CHECK_STR_EQ(seen_snapshot(&user_seen).new_json, "\"grace\"");
  {
    uint64_t sr = 0;
    CHECK_OK(tether_state_revision(s.theme, &sr));
    CHECK_INT_EQ(sr, commit_rev);
  }
  /* The validators ran at the commit with the transaction's info; a validator
   * reads committed values, so the username check saw the old volume. */
  {
    rules_t r = rules_snapshot(&user_rules);
    CHECK_INT_EQ(r.saw_transaction, 1);
    CHECK_STR_EQ(r.tag, "settings-save");
    CHECK_INT_EQ(r.volume_seen, 50);
    CHECK_INT_EQ(r.write_not_busy, 0);
    CHECK_INT_EQ(r.begin_not_busy, 0);
    r = rules_snapshot(&theme_rules);
    CHECK_STR_EQ(r.tag, "settings-save");
  }
  /* The loop observer: one call, same revision, same tag. */
  CHECK_OK(tether_runtime_flush(s.rt));
  snap = seen_snapshot(&vol_loop);
  CHECK_INT_EQ(snap.calls, loop_base + 1);
  CHECK_INT_EQ(snap.revision, commit_rev);
  CHECK_STR_EQ(snap.tag, "settings-save");
  CHECK_STR_EQ(snap.new_json, "70");
  /* The transaction is closed. */
  CHECK_ERR(tether_transaction_commit(txn, NULL), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_current(s.rt, &current), TETHER_ENOTFOUND);

  /* --- 3. a save that a validator refuses: nothing at all happens ------------- */
  rev = revision_of(s.rt);
  CHECK_OK(tether_transaction_begin(s.rt, &info, &txn));
  CHECK_OK(tether_state_set_int(s.volume, 80));
  /* The refusal may come at once (a refused write dooms its transaction) or
   * at the commit; either way the commit reports it. */
  rc = tether_state_set_string(s.theme, "pink", -1);
  CHECK(rc == TETHER_OK || rc == TETHER_EREJECTED);
  CHECK_OK(tether_state_set_string(s.username, "hopper", -1));
  commit_rev = 12345; /* out-parameters are written only on success */
  CHECK_ERR(tether_transaction_commit(txn, &commit_rev), TETHER_EREJECTED);
  CHECK_MENTIONS("pink");             /* the validator's reason... */
  CHECK_MENTIONS("unknown theme");
  CHECK_INT_EQ(commit_rev, 12345);
  CHECK_INT_EQ(revision_of(s.rt), rev); /* ...and nothing applied */
  CHECK_INT_EQ(int_of(s.volume), 70);
  CHECK_STR_EQ(str_of(s.theme, 0), "dark");
  CHECK_STR_EQ(str_of(s.username, 1), "grace");
  CHECK_OK(tether_runtime_flush(s.rt));
  order_take(order, sizeof order);
  CHECK_STR_EQ(order, ""); /* no SYNC observer */
  CHECK_INT_EQ(seen_calls(&vol_loop), loop_base + 1); /* no loop observer */
  /* Closed all the same. */
  CHECK_ERR(tether_transaction_commit(txn, NULL), TETHER_ESTALE);
  CHECK_ERR(tether_transaction_current(s.rt, &current), TETHER_ENOTFOUND);

  /* The same with the range: 150 dooms the save of a valid username. */
  CHECK_OK(tether_transaction_begin(s.rt, &info, &txn));
  CHECK_OK(tether_state_set_string(s.username, "linus", -1));
  rc = tether_state_set_int(s.volume, 150);
  CHECK(rc == TETHER_OK || rc == TETHER_ERANGE);
  CHECK_ERR(tether_transaction_commit(txn, NULL), TETHER_ERANGE);
  CHECK_STR_EQ(str_of(s.username, 0), "grace");
  CHECK_INT_EQ(int_of(s.volume), 70);
  CHECK_INT_EQ(revision_of(s.rt), rev);

  /* --- 4. Cancel: abort drops everything ---------------------------------------- */
  CHECK_OK(tether_transaction_begin(s.rt, NULL, &txn)); /* info may be NULL */
  CHECK_OK(tether_state_set_int(s.volume, 10));
  CHECK_OK(tether_state_set_string(s.theme, "light", -1));
  CHECK_INT_EQ(int_of(s.volume), 10);
  CHECK_OK(tether_transaction_abort(txn));
  CHECK_INT_EQ(int_of(s.volume), 70);
  CHECK_STR_EQ(str_of(s.theme, 0), "dark");
  CHECK_INT_EQ(revision_of(s.rt), rev);
  CHECK_ERR(tether_transaction_abort(txn), TETHER_ESTALE);
  CHECK_OK(tether_runtime_flush(s.rt));
  order_take(order, sizeof order);
  CHECK_STR_EQ(order, "");
  CHECK_INT_EQ(seen_calls(&vol_loop), loop_base + 1);

  /* --- 5. nested transactions: savepoints ---------------------------------------- */
  {
    tether_transaction_info_t outer_info, inner_info;
    memset(&outer_info, 0, sizeof outer_info);
    memset(&inner_info, 0, sizeof inner_info);
    outer_info.tag = "outer";
    outer_info.origin = 1;
    inner_info.tag = "inner";
    inner_info.origin = 2;

    CHECK_OK(tether_transaction_begin(s.rt, &outer_info, &outer));
    CHECK_OK(tether_state_set_int(s.volume, 20));

    /* An inner transaction that is aborted: only its own writes go. */
    CHECK_OK(tether_transaction_begin(s.rt, &inner_info, &inner));
    if (CHECK_OK(tether_transaction_current(s.rt, &current))) CHECK_STR_EQ(current.tag, "inner");
    CHECK_OK(tether_state_set_string(s.theme, "light", -1));
    CHECK_OK(tether_state_set_string(s.username, "linus", -1));
    CHECK_STR_EQ(str_of(s.theme, 0), "light");
    CHECK_OK(tether_transaction_abort(inner));
    CHECK_STR_EQ(str_of(s.theme, 0), "dark");
    CHECK_STR_EQ(str_of(s.username, 1), "grace");
    CHECK_INT_EQ(int_of(s.volume), 20); /* the outer write is still staged */
    if (CHECK_OK(tether_transaction_current(s.rt, &current))) CHECK_STR_EQ(current.tag, "outer");

    /* An inner transaction that is committed: its writes join the outer. */
    CHECK_OK(tether_transaction_begin(s.rt, &inner_info, &inner));
    CHECK_OK(tether_state_set_string(s.username, "linus", -1));
    /* Only the innermost transaction can end. */
    CHECK_ERR(tether_transaction_commit(outer, NULL), TETHER_EINVAL);
    CHECK_OK(tether_transaction_commit(inner, NULL));
    CHECK_INT_EQ(revision_of(s.rt), rev); /* an inner commit applies nothing */
    CHECK_INT_EQ(seen_calls(&user_seen), 1);
    CHECK_STR_EQ(str_of(s.username, 1), "linus");

    /* The outermost commit applies it all, with the outer info. */
    commit_rev = 0;
    CHECK_OK(tether_transaction_commit(outer, &commit_rev));
    CHECK_INT_EQ(commit_rev, rev + 1);
    CHECK_INT_EQ(revision_of(s.rt), rev + 1);
    CHECK_INT_EQ(int_of(s.volume), 20);
    CHECK_STR_EQ(str_of(s.theme, 0), "dark");
    CHECK_STR_EQ(str_of(s.username, 1), "linus");
    order_take(order, sizeof order);
    CHECK_STR_EQ(order, "VU"); /* the theme never changed */
    snap = seen_snapshot(&vol_seen);
    CHECK_INT_EQ(snap.calls, 4);
    CHECK_STR_EQ(snap.tag, "outer");
    CHECK_INT_EQ(snap.revision, commit_rev);
    snap = seen_snapshot(&user_seen);
    CHECK_INT_EQ(snap.calls, 2);
    CHECK_STR_EQ(snap.tag, "outer");
    CHECK_STR_EQ(snap.new_json, "\"linus\"");
    CHECK_INT_EQ(seen_calls(&theme_seen), 1);
  }

  /* --- 6. descriptors come and go ---------------------------------------------- */
  /* Removing the theme's descriptor runs its destroy (once, before the call
   * returns); from then on any theme is accepted. */
  CHECK_INT_EQ(rules_snapshot(&theme_rules).destroyed, 0);
  CHECK_OK(tether_state_describe(s.theme, NULL));
  CHECK_INT_EQ(rules_snapshot(&theme_rules).destroyed, 1);
  CHECK_OK(tether_state_set_string(s.theme, "pink", -1));
  CHECK_STR_EQ(str_of(s.theme, 0), "pink");
  CHECK_INT_EQ(int_of(s.audit), 0); /* no validator ever managed to write */
  CHECK_INT_EQ(rules_snapshot(&user_rules).write_not_busy, 0);
  CHECK_OK(tether_runtime_flush(s.rt));

  printf("settings_panel: volume %lld, theme %s, username %s, port %lld\n",
         (long long)int_of(s.volume), str_of(s.theme, 0), str_of(s.username, 1),
         (long long)int_of(s.server_port));

  /* Freeing the runtime frees the states; the username descriptor's destroy
   * and every observer's destroy run exactly once. */
  CHECK_OK(tether_runtime_free(s.rt));
  CHECK_INT_EQ(rules_snapshot(&user_rules).destroyed, 1);
  CHECK_INT_EQ(rules_snapshot(&theme_rules).destroyed, 1);
  CHECK_INT_EQ(seen_snapshot(&vol_seen).destroyed, 1);
  CHECK_INT_EQ(seen_snapshot(&theme_seen).destroyed, 1);
  CHECK_INT_EQ(seen_snapshot(&user_seen).destroyed, 1);
  CHECK_INT_EQ(seen_snapshot(&port_seen).destroyed, 1);
  CHECK_INT_EQ(seen_snapshot(&vol_loop).destroyed, 1);
  return check_report("settings_panel");
}
