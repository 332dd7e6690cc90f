/*
 * effects.c — effects: a SwiftUI view's `body`, re-run when what it read
 * changes.
 *
 *     var body: some View { Text("\(model.count)") }   // re-evaluated
 *     .onDisappear { ... }                              // cleanup
 *
 * An effect is a C callback. The runtime records every state and computed it
 * reads and runs it again when any of them changes. What this program shows,
 * each with a check:
 *  - it runs once on creation: with TETHER_EFFECT_SYNC before
 *    tether_effect_new returns, on the calling thread; by default on the
 *    runtime's loop thread (tether_runtime_flush waits for it);
 *  - it re-runs when something it read changes, and only then; at most once
 *    per write, and once per batch, seeing the final values;
 *  - cleanup runs before each re-run and when the effect is freed; the order
 *    is always run 1, cleanup 1, run 2, cleanup 2, ..., destroy;
 *  - a batch that changes a value and changes it back (42 -> 0 -> 42) re-runs
 *    nothing;
 *  - freeing an effect from inside its own run, from its cleanup, and inside
 *    a batch that would re-run it: the pending run is cancelled, cleanup and
 *    destroy run exactly once, nothing runs afterwards;
 *  - an effect that keeps waking itself (x = x + 1) is cut after max_rounds
 *    rounds: its write fails with TETHER_ELOOP instead of hanging;
 *  - effects writing states other effects read (a chain), an effect over a
 *    computed whose dependencies switch, untracked reads in an effect, and
 *    runtime teardown with live effects.
 *
 * Build: cc -std=c99 effects.c $(pkg-config --cflags --libs tether) -lpthread
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* One lock for all the bookkeeping (loop effects run on the loop thread).
 * Never held while calling a tether_ function. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t main_thread;

/* ---- an effect's user_data ---------------------------------------------- */

#define SELF_WAKE_CAP 1000 /* a library that never says TETHER_ELOOP still ends */

typedef struct fx {
  const char *name;
  tether_runtime_t rt;
  /* what the body reads and writes */
  tether_state_t in[3];
  int nin;
  tether_state_t untracked_in; /* read inside tether_untracked_begin/end */
  int has_untracked;
  tether_computed_t comp; /* a computed it reads, when has_comp */
  int has_comp;
  tether_state_t out; /* writes in[0] * out_mul + out_add here, when has_out */
  int has_out;
  int64_t out_mul, out_add;
  int self_wake; /* writes in[0] + 1 into in[0]: a feedback loop */
  /* what it does to itself */
  int free_in_run;     /* tether_effect_free(itself) during run number N */
  int free_in_cleanup; /* tether_effect_free(itself) during cleanup number N */
  /* what happened */
  uint64_t handle_id; /* the handle the body was given */
  int runs, cleanups, destroyed;
  int running;
  int destroyed_while_running;
  int cleanups_while_running;
  int main_runs, loop_runs; /* runs on the main thread / elsewhere */
  pthread_t loop_thread;
  int loop_threads_differ; /* loop runs that were not on the first loop thread */
  int64_t seen[3], seen_untracked, seen_comp;
  int comp_rc;
  int write_rc;                 /* last write of `out` */
  int out_ok, out_eloop, out_other; /* all writes of `out` */
  int ok_writes, eloop_writes, other_writes; /* self_wake */
  int free_rc, free_again_rc;   /* the self-free, and a second one right after */
  pthread_t destroy_thread;
  char log[512]; /* "R1 C1 R2 C2 D": runs, cleanups, destroy in order */
} fx_t;

static void fx_init(fx_t *f, const char *name, tether_runtime_t rt) {
  memset(f, 0, sizeof *f);
  f->name = name;
  f->rt = rt;
  f->out_mul = 1;
  f->free_rc = f->free_again_rc = 1; /* "not called" */
  f->write_rc = 1;
  f->comp_rc = 1;
}

/* Appends an event ("R3", "C3", "D") to f->log; call with mu held. */
static void fx_event_locked(fx_t *f, char kind, int n) {
  size_t used = strlen(f->log);
  if (used + 16 >= sizeof f->log) return;
  if (n > 0)
    snprintf(f->log + used, sizeof f->log - used, "%s%c%d", used ? " " : "", kind, n);
  else
    snprintf(f->log + used, sizeof f->log - used, "%s%c", used ? " " : "", kind);
}

/* The body. */
static void fx_run(tether_effect_t e, void *user_data) {
  fx_t *f = user_data;
  int64_t v[3] = {0, 0, 0}, u = 0, cv = 0;
  int i, n, rc, crc = 1;
  int on_main = pthread_equal(pthread_self(), main_thread);

  pthread_mutex_lock(&mu);
  n = ++f->runs;
  f->running = 1;
  f->handle_id = e.id;
  fx_event_locked(f, 'R', n);
  if (on_main) {
    f->main_runs++;
  } else {
    if (f->loop_runs == 0) f->loop_thread = pthread_self();
    else if (!pthread_equal(f->loop_thread, pthread_self())) f->loop_threads_differ++;
    f->loop_runs++;
  }
  pthread_mutex_unlock(&mu);

  for (i = 0; i < f->nin; i++) (void)tether_state_get_int(f->in[i], &v[i]);
  if (f->has_untracked) {
    (void)tether_untracked_begin(f->rt);
    (void)tether_state_get_int(f->untracked_in, &u);
    (void)tether_untracked_end(f->rt);
  }
  if (f->has_comp) crc = tether_computed_get_int(f->comp, &cv);
  if (f->has_out && n <= SELF_WAKE_CAP) {
    rc = tether_state_set_int(f->out, v[0] * f->out_mul + f->out_add);
    pthread_mutex_lock(&mu);
    f->write_rc = rc;
    if (rc == TETHER_OK) f->out_ok++;
    else if (rc == TETHER_ELOOP) f->out_eloop++;
    else f->out_other++;
    pthread_mutex_unlock(&mu);
  }
  if (f->self_wake && n <= SELF_WAKE_CAP) {
    rc = tether_state_set_int(f->in[0], v[0] + 1); /* x = x + 1: wakes itself */
    pthread_mutex_lock(&mu);
    if (rc == TETHER_OK) f->ok_writes++;
    else if (rc == TETHER_ELOOP) f->eloop_writes++;
    else f->other_writes++;
    pthread_mutex_unlock(&mu);
  }
  if (f->free_in_run == n) {
    int r1 = tether_effect_free(e);
    int r2 = tether_effect_free(e); /* already freed: harmless */
    pthread_mutex_lock(&mu);
    f->free_rc = r1;
    f->free_again_rc = r2;
    pthread_mutex_unlock(&mu);
  }

  pthread_mutex_lock(&mu);
  for (i = 0; i < 3; i++) f->seen[i] = v[i];
  f->seen_untracked = u;
  f->seen_comp = cv;
  f->comp_rc = crc;
  f->running = 0;
  pthread_mutex_unlock(&mu);
}

static void fx_cleanup(void *user_data) {
  fx_t *f = user_data;
  int n;
  tether_effect_t self;
  pthread_mutex_lock(&mu);
  n = ++f->cleanups;
  if (f->running) f->cleanups_while_running++;
  fx_event_locked(f, 'C', n);
  self.id = f->handle_id;
  pthread_mutex_unlock(&mu);
  if (f->free_in_cleanup == n) {
    int r1 = tether_effect_free(self);
    int r2 = tether_effect_free(self);
    pthread_mutex_lock(&mu);
    f->free_rc = r1;
    f->free_again_rc = r2;
    pthread_mutex_unlock(&mu);
  }
}

static void fx_destroy(void *user_data) {
  fx_t *f = user_data;
  pthread_mutex_lock(&mu);
  f->destroyed++;
  if (f->running) f->destroyed_while_running++;
  f->destroy_thread = pthread_self();
  fx_event_locked(f, 'D', 0);
  pthread_mutex_unlock(&mu);
}

/* Reads a field of f under the lock. */
static int fx_get(const int *field) {
  int v;
  pthread_mutex_lock(&mu);
  v = *field;
  pthread_mutex_unlock(&mu);
  return v;
}
#define RUNS(f) fx_get(&(f)->runs)
#define CLEANUPS(f) fx_get(&(f)->cleanups)
#define DESTROYED(f) fx_get(&(f)->destroyed)

static int64_t fx_seen(fx_t *f, int i) {
  int64_t v;
  pthread_mutex_lock(&mu);
  v = f->seen[i];
  pthread_mutex_unlock(&mu);
  return v;
}

static void check_log_(fx_t *f, const char *expected, const char *file, int line) {
  char copy[sizeof f->log];
  pthread_mutex_lock(&mu);
  memcpy(copy, f->log, sizeof copy);
  pthread_mutex_unlock(&mu);
  if (strcmp(copy, expected) == 0) {
    check_pass_();
  } else {
    check_fail_(file, line, "effect \"%s\": events\n    expected \"%s\"\n    got      \"%s\"",
                f->name, expected, copy);
  }
}
/* The effect's run/cleanup/destroy events so far, exactly. */
#define CHECK_LOG(f, expected) check_log_((f), (expected), __FILE__, __LINE__)

/* destroy ran exactly once, never while the body was running. */
static void check_ended_(fx_t *f, const char *file, int line) {
  int d, w;
  pthread_mutex_lock(&mu);
  d = f->destroyed;
  w = f->destroyed_while_running;
  pthread_mutex_unlock(&mu);
  check_destroyed_once_(f->name, d, w, file, line);
}
#define CHECK_ENDED(f) check_ended_((f), __FILE__, __LINE__)

static int64_t state_int(tether_state_t s) {
  int64_t v = -999;
  CHECK_OK(tether_state_get_int(s, &v));
  return v;
}

static uint64_t revision_of(tether_runtime_t rt) {
  uint64_t r = 0;
  CHECK_OK(tether_runtime_revision(rt, &r));
  return r;
}

/* ==== the scenarios ====================================================== */

/* The first run: when and where. */
static void first_run(tether_runtime_t rt) {
  tether_state_t x;
  tether_effect_t sync_e, loop_e;
  fx_t s, l;

  fx_init(&s, "SYNC effect", rt);
  fx_init(&l, "loop effect", rt);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &x));
  s.in[0] = l.in[0] = x;
  s.nin = l.nin = 1;

  /* SYNC: the first run has happened when tether_effect_new returns, on this
   * thread, and was given the very handle that comes back. */
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, fx_run, fx_cleanup, &s, fx_destroy, &sync_e));
  CHECK_INT_EQ(RUNS(&s), 1);
  CHECK_INT_EQ(fx_get(&s.main_runs), 1);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(s.handle_id, sync_e.id);
  pthread_mutex_unlock(&mu);
  CHECK_INT_EQ(fx_seen(&s, 0), 1);

  /* Default: the first run happens on the loop thread; flush waits for it. */
  CHECK_OK(tether_effect_new(rt, 0, fx_run, fx_cleanup, &l, fx_destroy, &loop_e));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&l), 1);
  CHECK_INT_EQ(fx_get(&l.main_runs), 0);
  CHECK_INT_EQ(fx_get(&l.loop_runs), 1);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(l.handle_id, loop_e.id);
  pthread_mutex_unlock(&mu);
  CHECK_INT_EQ(fx_seen(&l, 0), 1);

  /* Re-runs happen in the same places. */
  CHECK_OK(tether_state_set_int(x, 2));
  CHECK_INT_EQ(RUNS(&s), 2); /* SYNC: already */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&l), 2);
  /* (A SYNC re-run has run when the write returns, but if the loop thread is
   * delivering at that moment it may be the one that runs it.) */
  CHECK_INT_EQ(fx_get(&l.main_runs), 0);
  CHECK_INT_EQ(fx_get(&l.loop_runs), 2);
  CHECK_INT_EQ(fx_get(&l.loop_threads_differ), 0);
  CHECK_INT_EQ(fx_seen(&s, 0), 2);
  CHECK_INT_EQ(fx_seen(&l, 0), 2);

  CHECK_OK(tether_effect_free(sync_e));
  CHECK_OK(tether_effect_free(loop_e));
  CHECK_LOG(&s, "R1 C1 R2 C2 D");
  CHECK_LOG(&l, "R1 C1 R2 C2 D");
  CHECK_ENDED(&s);
  CHECK_ENDED(&l);
  CHECK_ERR(tether_effect_free(sync_e), TETHER_ESTALE); /* second free */
  CHECK_OK(tether_state_free(x));
}

/* Re-runs when, and only when, something it read changed. */
static void reruns(tether_runtime_t rt) {
  tether_state_t x, y;
  tether_effect_t e;
  fx_t f;

  fx_init(&f, "reads x", rt);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &y));
  f.in[0] = x;
  f.nin = 1;
  CHECK_OK(tether_effect_new(rt, 0, fx_run, fx_cleanup, &f, fx_destroy, &e));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 1);

  CHECK_OK(tether_state_set_int(x, 5)); /* read: re-run */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 2);
  CHECK_INT_EQ(fx_seen(&f, 0), 5);
  CHECK_OK(tether_state_set_int(y, 5)); /* never read: nothing */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 2);
  CHECK_OK(tether_state_set_int(x, 5)); /* equal: nothing */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 2);

  CHECK_OK(tether_effect_free(e));
  CHECK_LOG(&f, "R1 C1 R2 C2 D");
  CHECK_ENDED(&f);
  CHECK_OK(tether_state_free(x));
  CHECK_OK(tether_state_free(y));
}

/* At most once per write; once per batch, with the final values. */
static void once_per_write_or_batch(tether_runtime_t rt) {
  tether_state_t x, y, z;
  tether_effect_t se, le;
  fx_t s, l;

  fx_init(&s, "SYNC reads x y z", rt);
  fx_init(&l, "loop reads x y z", rt);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &y));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &z));
  s.in[0] = l.in[0] = x;
  s.in[1] = l.in[1] = y;
  s.in[2] = l.in[2] = z;
  s.nin = l.nin = 3;
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, fx_run, fx_cleanup, &s, fx_destroy, &se));
  CHECK_OK(tether_effect_new(rt, 0, fx_run, fx_cleanup, &l, fx_destroy, &le));
  CHECK_OK(tether_runtime_flush(rt));

  /* SYNC, no batch: one run per changing write. */
  CHECK_OK(tether_state_set_int(x, 1));
  CHECK_INT_EQ(RUNS(&s), 2);
  CHECK_OK(tether_state_set_int(y, 1));
  CHECK_INT_EQ(RUNS(&s), 3);
  CHECK_OK(tether_runtime_flush(rt));

  /* A batch of three writes: nothing until the end, then one run each, with
   * the final values. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(x, 10));
  CHECK_OK(tether_batch_begin(rt)); /* nested: only the outermost end delivers */
  CHECK_OK(tether_state_set_int(y, 20));
  CHECK_OK(tether_state_set_int(z, 30));
  CHECK_OK(tether_batch_end(rt));
  CHECK_OK(tether_state_set_int(x, 11));
  CHECK_INT_EQ(RUNS(&s), 3);
  CHECK_INT_EQ(state_int(x), 11); /* writes apply at once; only callbacks wait */
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(RUNS(&s), 4); /* SYNC: before batch_end returned */
  CHECK_INT_EQ(fx_seen(&s, 0), 11);
  CHECK_INT_EQ(fx_seen(&s, 1), 20);
  CHECK_INT_EQ(fx_seen(&s, 2), 30);
  /* The loop effect: a batch always reaches it as one run. */
  {
    int before;
    CHECK_OK(tether_runtime_flush(rt));
    before = RUNS(&l);
    CHECK_OK(tether_batch_begin(rt));
    CHECK_OK(tether_state_set_int(x, 100));
    CHECK_OK(tether_state_set_int(y, 200));
    CHECK_OK(tether_state_set_int(z, 300));
    /* Waiting inside the batch would wait for what the batch holds back:
     * TETHER_EBUSY (docs/runtime.md). */
    CHECK_ERR(tether_runtime_flush(rt), TETHER_EBUSY);
    CHECK_OK(tether_batch_end(rt));
    CHECK_OK(tether_runtime_flush(rt));
    CHECK_INT_EQ(RUNS(&l), before + 1);
    CHECK_INT_EQ(fx_seen(&l, 0), 100);
    CHECK_INT_EQ(fx_seen(&l, 1), 200);
    CHECK_INT_EQ(fx_seen(&l, 2), 300);
  }

  CHECK_OK(tether_effect_free(se));
  CHECK_OK(tether_effect_free(le));
  CHECK_LOG(&s, "R1 C1 R2 C2 R3 C3 R4 C4 R5 C5 D");
  CHECK_ENDED(&s);
  CHECK_ENDED(&l);
  CHECK_INT_EQ(CLEANUPS(&l), RUNS(&l));
  CHECK_OK(tether_state_free(x));
  CHECK_OK(tether_state_free(y));
  CHECK_OK(tether_state_free(z));
}

/* A value changed and changed back inside a batch wakes nothing. */
static void changed_back_in_batch(tether_runtime_t rt) {
  tether_state_t x;
  tether_effect_t se, le;
  fx_t s, l;
  uint64_t rev;

  fx_init(&s, "SYNC reads x", rt);
  fx_init(&l, "loop reads x", rt);
  CHECK_OK(tether_state_new_int(rt, 42, 0, &x));
  s.in[0] = l.in[0] = x;
  s.nin = l.nin = 1;
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, fx_run, fx_cleanup, &s, fx_destroy, &se));
  CHECK_OK(tether_effect_new(rt, 0, fx_run, fx_cleanup, &l, fx_destroy, &le));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&s), 1);
  CHECK_INT_EQ(RUNS(&l), 1);

  rev = revision_of(rt);
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(x, 0));
  CHECK_OK(tether_state_set_int(x, 42));
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(revision_of(rt), rev + 2); /* both writes committed ... */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&s), 1); /* ... but 42 -> 42 is no change */
  CHECK_INT_EQ(RUNS(&l), 1);
  CHECK_INT_EQ(CLEANUPS(&s), 0);
  CHECK_INT_EQ(CLEANUPS(&l), 0);

  CHECK_OK(tether_effect_free(se));
  CHECK_OK(tether_effect_free(le));
  CHECK_LOG(&s, "R1 C1 D");
  CHECK_LOG(&l, "R1 C1 D");
  CHECK_ENDED(&s);
  CHECK_ENDED(&l);
  CHECK_OK(tether_state_free(x));
}

/* Cleanup order: cleanup k runs before run k + 1 and once on free. */
static void cleanup_order(tether_runtime_t rt, unsigned flags) {
  tether_state_t x;
  tether_effect_t e;
  fx_t f;
  int i;

  fx_init(&f, flags ? "SYNC cleanup order" : "loop cleanup order", rt);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  f.in[0] = x;
  f.nin = 1;
  CHECK_OK(tether_effect_new(rt, flags, fx_run, fx_cleanup, &f, fx_destroy, &e));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_LOG(&f, "R1");
  for (i = 1; i <= 3; i++) {
    CHECK_OK(tether_state_set_int(x, i));
    CHECK_OK(tether_runtime_flush(rt));
  }
  CHECK_LOG(&f, "R1 C1 R2 C2 R3 C3 R4");
  CHECK_OK(tether_effect_free(e));
  CHECK_LOG(&f, "R1 C1 R2 C2 R3 C3 R4 C4 D");
  CHECK_ENDED(&f);
  CHECK_INT_EQ(fx_get(&f.cleanups_while_running), 0);
  CHECK_OK(tether_state_set_int(x, 99)); /* freed: nothing runs */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 4);
  CHECK_OK(tether_state_free(x));
}

/* An effect that frees itself during its second run. */
static void free_from_own_run(tether_runtime_t rt, unsigned flags) {
  tether_state_t x;
  tether_effect_t e;
  fx_t f;

  fx_init(&f, flags ? "SYNC frees itself in run 2" : "loop frees itself in run 2", rt);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  f.in[0] = x;
  f.nin = 1;
  f.free_in_run = 2;
  CHECK_OK(tether_effect_new(rt, flags, fx_run, fx_cleanup, &f, fx_destroy, &e));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_state_set_int(x, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(fx_get(&f.free_rc), TETHER_OK);
  CHECK_INT_EQ(fx_get(&f.free_again_rc), TETHER_ESTALE);
  CHECK_LOG(&f, "R1 C1 R2 C2 D");
  CHECK_ENDED(&f);
  printf("effects: %s: its cleanup ran %s its own run returned\n", f.name,
         fx_get(&f.cleanups_while_running) ? "before" : "after");
  CHECK_OK(tether_state_set_int(x, 2)); /* no later run */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 2);
  CHECK_ERR(tether_effect_free(e), TETHER_ESTALE);
  CHECK_OK(tether_state_free(x));
}

/* An effect whose first cleanup frees it: the re-run that cleanup preceded
 * is cancelled. */
static void free_from_cleanup(tether_runtime_t rt, unsigned flags) {
  tether_state_t x;
  tether_effect_t e;
  fx_t f;

  fx_init(&f, flags ? "SYNC frees itself in cleanup 1" : "loop frees itself in cleanup 1", rt);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  f.in[0] = x;
  f.nin = 1;
  f.free_in_cleanup = 1;
  CHECK_OK(tether_effect_new(rt, flags, fx_run, fx_cleanup, &f, fx_destroy, &e));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_state_set_int(x, 1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(fx_get(&f.free_rc), TETHER_OK);
  CHECK_INT_EQ(fx_get(&f.free_again_rc), TETHER_ESTALE);
  CHECK_LOG(&f, "R1 C1 D"); /* no run 2, no second cleanup */
  CHECK_ENDED(&f);
  CHECK_OK(tether_state_set_int(x, 2));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 1);
  CHECK_ERR(tether_effect_free(e), TETHER_ESTALE);
  CHECK_OK(tether_state_free(x));
}

/* Freed inside a batch that would re-run it: the run never happens. */
static void free_inside_batch(tether_runtime_t rt, unsigned flags) {
  tether_state_t x;
  tether_effect_t e;
  fx_t f;

  fx_init(&f, flags ? "SYNC freed in a batch" : "loop freed in a batch", rt);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  f.in[0] = x;
  f.nin = 1;
  CHECK_OK(tether_effect_new(rt, flags, fx_run, fx_cleanup, &f, fx_destroy, &e));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(x, 1)); /* a re-run is now owed */
  CHECK_OK(tether_effect_free(e));      /* ... and cancelled */
  /* Whether cleanup and destroy run inside the free or wait for the batch's
   * end is not specified; by the end they have run, once. */
  {
    char during[sizeof f.log];
    pthread_mutex_lock(&mu);
    memcpy(during, f.log, sizeof during);
    pthread_mutex_unlock(&mu);
    printf("effects: %s: events right after the free, inside the batch: \"%s\"\n", f.name,
           during);
  }
  CHECK_OK(tether_batch_end(rt));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_LOG(&f, "R1 C1 D");
  CHECK_ERR(tether_effect_free(e), TETHER_ESTALE);
  CHECK_INT_EQ(RUNS(&f), 1);
  CHECK_ENDED(&f);
  CHECK_OK(tether_state_free(x));
}

/* x = x + 1 inside the effect: a loop that max_rounds cuts. */
static void self_waking(unsigned flags) {
  tether_runtime_options_t opts;
  tether_runtime_t rt;
  tether_state_t x;
  tether_effect_t e;
  fx_t f;
  int rc, ok, eloop, other, runs;
  const unsigned rounds = 10;

  tether_runtime_options_init(&opts);
  opts.max_rounds = rounds;
  if (!CHECK_OK(tether_runtime_new(&opts, &rt))) return;
  fx_init(&f, flags ? "SYNC x = x + 1" : "loop x = x + 1", rt);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  f.in[0] = x;
  f.nin = 1;
  f.self_wake = 1;
  CHECK_OK(tether_effect_new(rt, flags, fx_run, fx_cleanup, &f, fx_destroy, &e));
  rc = tether_runtime_flush(rt);
  if (flags) {
    CHECK_INT_EQ(rc, TETHER_OK); /* it all happened inside tether_effect_new */
  } else {
    /* The loop may finish the whole chain before flush starts waiting, in
     * which case nothing owed is left for flush to report. */
    CHECK(rc == TETHER_OK || rc == TETHER_ELOOP);
  }
  pthread_mutex_lock(&mu);
  ok = f.ok_writes;
  eloop = f.eloop_writes;
  other = f.other_writes;
  runs = f.runs;
  pthread_mutex_unlock(&mu);
  printf("effects: %s with max_rounds %u: %d runs, %d writes ok, %d TETHER_ELOOP, flush %s\n",
         f.name, rounds, runs, ok, eloop, check_errname(rc));
  CHECK_INT_EQ(eloop, 1); /* exactly one write was refused: the chain ended */
  CHECK_INT_EQ(other, 0);
  CHECK_INT_EQ(runs, ok + eloop);
  CHECK((unsigned)ok + 2 >= rounds && (unsigned)ok <= rounds + 1); /* bounded */
  CHECK_INT_EQ(state_int(x), ok); /* every accepted write added one */

  /* A write from outside a callback is never refused; the effect then loops
   * again and is cut again. */
  CHECK_OK(tether_state_set_int(x, 0));
  rc = tether_runtime_flush(rt);
  CHECK(rc == TETHER_OK || rc == TETHER_ELOOP);
  CHECK_INT_EQ(fx_get(&f.eloop_writes), 2);
  CHECK_INT_EQ(fx_get(&f.other_writes), 0);

  CHECK_OK(tether_effect_free(e)); /* still a live effect */
  CHECK_ENDED(&f);
  CHECK_INT_EQ(CLEANUPS(&f), RUNS(&f));
  CHECK_OK(tether_runtime_free(rt));
}

/* Two effects that write each other's input (p -> q = p + 1 -> p = q + 1)
 * never settle either: the chain is cut after max_rounds rounds. */
static void ping_pong(unsigned flags) {
  tether_runtime_options_t opts;
  tether_runtime_t rt;
  tether_state_t p, q;
  tether_effect_t ep, eq;
  fx_t fp, fq;
  int rc, ok, eloop, other;
  const unsigned rounds = 10;

  tether_runtime_options_init(&opts);
  opts.max_rounds = rounds;
  if (!CHECK_OK(tether_runtime_new(&opts, &rt))) return;
  fx_init(&fp, flags ? "SYNC q = p + 1" : "loop q = p + 1", rt);
  fx_init(&fq, flags ? "SYNC p = q + 1" : "loop p = q + 1", rt);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &p));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &q));
  fp.in[0] = p;
  fp.nin = 1;
  fp.out = q;
  fp.has_out = 1;
  fp.out_add = 1;
  fq.in[0] = q;
  fq.nin = 1;
  fq.out = p;
  fq.has_out = 1;
  fq.out_add = 1;
  /* Each first run writes what the other read: the ping-pong starts. */
  CHECK_OK(tether_effect_new(rt, flags, fx_run, NULL, &fp, fx_destroy, &ep));
  CHECK_OK(tether_effect_new(rt, flags, fx_run, NULL, &fq, fx_destroy, &eq));
  rc = tether_runtime_flush(rt);
  CHECK(rc == TETHER_OK || rc == TETHER_ELOOP);
  pthread_mutex_lock(&mu);
  ok = fp.out_ok + fq.out_ok;
  eloop = fp.out_eloop + fq.out_eloop;
  other = fp.out_other + fq.out_other;
  pthread_mutex_unlock(&mu);
  printf("effects: %s / %s, max_rounds %u: %d writes ok, %d TETHER_ELOOP\n", fp.name, fq.name,
         rounds, ok, eloop);
  CHECK_INT_EQ(eloop, 1); /* one write refused: the chain ended */
  CHECK_INT_EQ(other, 0);
  CHECK(ok <= 2 * (int)rounds + 2); /* bounded */
  CHECK_OK(tether_effect_free(ep));
  CHECK_OK(tether_effect_free(eq));
  CHECK_ENDED(&fp);
  CHECK_ENDED(&fq);
  CHECK_OK(tether_runtime_free(rt));
}

/* Effects that write what other effects read: a -> b -> c. */
static void chain(tether_runtime_t rt, unsigned flags) {
  tether_state_t a, b, c;
  tether_effect_t e1, e2, e3;
  fx_t f1, f2, f3;

  fx_init(&f1, "b = 2a", rt);
  fx_init(&f2, "c = b + 1", rt);
  fx_init(&f3, "shows c", rt);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 2, 0, &b));
  CHECK_OK(tether_state_new_int(rt, 3, 0, &c));
  f1.in[0] = a;
  f1.nin = 1;
  f1.out = b;
  f1.has_out = 1;
  f1.out_mul = 2;
  f2.in[0] = b;
  f2.nin = 1;
  f2.out = c;
  f2.has_out = 1;
  f2.out_add = 1;
  f3.in[0] = c;
  f3.nin = 1;
  CHECK_OK(tether_effect_new(rt, flags, fx_run, NULL, &f3, fx_destroy, &e3));
  CHECK_OK(tether_effect_new(rt, flags, fx_run, NULL, &f2, fx_destroy, &e2));
  CHECK_OK(tether_effect_new(rt, flags, fx_run, NULL, &f1, fx_destroy, &e1));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f1), 1); /* their first writes were equal: no wake */
  CHECK_INT_EQ(RUNS(&f2), 1);
  CHECK_INT_EQ(RUNS(&f3), 1);

  CHECK_OK(tether_state_set_int(a, 5));
  if (flags) {
    /* SYNC: every round ran before the write returned. */
    CHECK_INT_EQ(state_int(c), 11);
  }
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(state_int(b), 10);
  CHECK_INT_EQ(state_int(c), 11);
  CHECK_INT_EQ(fx_seen(&f3, 0), 11);
  CHECK_INT_EQ(RUNS(&f1), 2);
  CHECK_INT_EQ(RUNS(&f2), 2);
  CHECK_INT_EQ(RUNS(&f3), 2);
  CHECK_INT_EQ(fx_get(&f1.write_rc), TETHER_OK);
  CHECK_INT_EQ(fx_get(&f2.write_rc), TETHER_OK);

  CHECK_OK(tether_effect_free(e1));
  CHECK_OK(tether_effect_free(e2));
  CHECK_OK(tether_effect_free(e3));
  CHECK_ENDED(&f1);
  CHECK_ENDED(&f2);
  CHECK_ENDED(&f3);
  CHECK_LOG(&f1, "R1 R2 D"); /* no cleanup function: just runs */
  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
  CHECK_OK(tether_state_free(c));
}

/* ---- an effect over a computed whose dependencies switch ----------------- */

typedef struct pick {
  tether_state_t flag, a, b;
  int calls;
} pick_t;

static int pick_compute(tether_value_t *result, void *user_data) {
  pick_t *p = user_data;
  bool flag;
  int64_t v;
  int rc;
  pthread_mutex_lock(&mu);
  p->calls++;
  pthread_mutex_unlock(&mu);
  if ((rc = tether_state_get_bool(p->flag, &flag)) != TETHER_OK) return rc;
  if ((rc = tether_state_get_int(flag ? p->a : p->b, &v)) != TETHER_OK) return rc;
  return tether_value_set_int(result, v);
}

static void computed_switch(tether_runtime_t rt) {
  tether_state_t flag, a, b;
  tether_computed_t k;
  tether_effect_t e;
  pick_t p;
  fx_t f;

  memset(&p, 0, sizeof p);
  fx_init(&f, "reads flag ? a : b", rt);
  CHECK_OK(tether_state_new_bool(rt, true, 0, &flag));
  CHECK_OK(tether_state_new_int(rt, 1, 0, &a));
  CHECK_OK(tether_state_new_int(rt, 2, 0, &b));
  p.flag = flag;
  p.a = a;
  p.b = b;
  CHECK_OK(tether_computed_new(rt, pick_compute, &p, NULL, &k));
  f.comp = k;
  f.has_comp = 1;
  CHECK_OK(tether_effect_new(rt, 0, fx_run, fx_cleanup, &f, fx_destroy, &e));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 1);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(f.seen_comp, 1);
  CHECK_INT_EQ(f.comp_rc, TETHER_OK);
  CHECK_INT_EQ(p.calls, 1);
  pthread_mutex_unlock(&mu);

  CHECK_OK(tether_state_set_int(b, 20)); /* not read yet */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 1);
  CHECK_INT_EQ(fx_get(&p.calls), 1);

  CHECK_OK(tether_state_set_bool(flag, false)); /* switch to b */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 2);
  CHECK_INT_EQ(fx_get(&p.calls), 2);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(f.seen_comp, 20);
  pthread_mutex_unlock(&mu);

  CHECK_OK(tether_state_set_int(a, 100)); /* no longer read: nothing */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 2);
  CHECK_INT_EQ(fx_get(&p.calls), 2);

  CHECK_OK(tether_state_set_int(b, 30));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 3);
  CHECK_INT_EQ(fx_get(&p.calls), 3);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(f.seen_comp, 30);
  pthread_mutex_unlock(&mu);

  CHECK_OK(tether_effect_free(e));
  CHECK_ENDED(&f);
  CHECK_OK(tether_computed_free(k));
  CHECK_OK(tether_state_free(flag));
  CHECK_OK(tether_state_free(a));
  CHECK_OK(tether_state_free(b));
}

/* An untracked read inside an effect does not make it re-run. */
static void untracked_in_effect(tether_runtime_t rt) {
  tether_state_t x, y;
  tether_effect_t e;
  fx_t f;

  fx_init(&f, "x tracked, y untracked", rt);
  CHECK_OK(tether_state_new_int(rt, 1, 0, &x));
  CHECK_OK(tether_state_new_int(rt, 10, 0, &y));
  f.in[0] = x;
  f.nin = 1;
  f.untracked_in = y;
  f.has_untracked = 1;
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, fx_run, fx_cleanup, &f, fx_destroy, &e));
  CHECK_INT_EQ(RUNS(&f), 1);
  CHECK_OK(tether_state_set_int(y, 20));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(RUNS(&f), 1);
  CHECK_OK(tether_state_set_int(x, 2));
  CHECK_INT_EQ(RUNS(&f), 2);
  pthread_mutex_lock(&mu);
  CHECK_INT_EQ(f.seen_untracked, 20); /* it still read the current y */
  pthread_mutex_unlock(&mu);
  CHECK_OK(tether_effect_free(e));
  CHECK_ENDED(&f);
  CHECK_OK(tether_state_free(x));
  CHECK_OK(tether_state_free(y));
}

/* tether_runtime_free with live effects: destroy once each, on this thread. */
static void runtime_free_with_effects(void) {
  tether_runtime_t rt;
  tether_state_t x;
  tether_effect_t e;
  fx_t f[3];
  int i;

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return;
  CHECK_OK(tether_state_new_int(rt, 0, 0, &x));
  fx_init(&f[0], "live SYNC effect", rt);
  fx_init(&f[1], "live loop effect", rt);
  fx_init(&f[2], "live loop effect with a run owed", rt);
  for (i = 0; i < 3; i++) {
    f[i].in[0] = x;
    f[i].nin = 1;
  }
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, fx_run, fx_cleanup, &f[0], fx_destroy, &e));
  CHECK_OK(tether_effect_new(rt, 0, fx_run, fx_cleanup, &f[1], fx_destroy, &e));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_OK(tether_effect_new(rt, 0, fx_run, fx_cleanup, &f[2], fx_destroy, &e));
  CHECK_OK(tether_state_set_int(x, 1));
  CHECK_OK(tether_runtime_free(rt));
  for (i = 0; i < 3; i++) {
    int runs = RUNS(&f[i]), cleanups = CLEANUPS(&f[i]);
    CHECK_ENDED(&f[i]);
    pthread_mutex_lock(&mu);
    CHECK(pthread_equal(f[i].destroy_thread, main_thread));
    pthread_mutex_unlock(&mu);
    /* Whether the last run's cleanup runs at teardown is not specified; if
     * it does it is once per run, before destroy. */
    printf("effects: %s at runtime free: %d runs, %d cleanups\n", f[i].name, runs, cleanups);
    CHECK(cleanups == runs || cleanups == runs - 1);
  }
  CHECK_ERR(tether_effect_free(e), TETHER_ESTALE);
}

/* Bad input. */
static void bad_input(tether_runtime_t rt) {
  tether_runtime_t dead;
  tether_effect_t out, zero = {0}, forged;
  tether_state_t s;
  fx_t f;

  fx_init(&f, "never created", rt);
  out.id = 777;
  CHECK_ERR(tether_effect_new(rt, 0, NULL, fx_cleanup, &f, fx_destroy, &out), TETHER_EINVAL);
  CHECK_ERR(tether_effect_new(rt, 0, fx_run, fx_cleanup, &f, fx_destroy, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_effect_new(rt, 0x80u, fx_run, fx_cleanup, &f, fx_destroy, &out),
            TETHER_EINVAL);
  CHECK_OK(tether_runtime_new(NULL, &dead));
  CHECK_OK(tether_runtime_free(dead));
  CHECK_ERR(tether_effect_new(dead, 0, fx_run, fx_cleanup, &f, fx_destroy, &out), TETHER_ESTALE);
  CHECK_ERR(tether_effect_new(dead, TETHER_EFFECT_SYNC, fx_run, fx_cleanup, &f, fx_destroy, &out),
            TETHER_ESTALE);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(out.id, 777); /* untouched */
  CHECK_INT_EQ(RUNS(&f), 0); /* never ran ... */
  CHECK_INT_EQ(CLEANUPS(&f), 0);
  CHECK_INT_EQ(DESTROYED(&f), 0); /* ... and the caller still owns user_data */

  CHECK_ERR(tether_effect_free(zero), TETHER_ESTALE);
  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  forged.id = s.id; /* a state is not an effect */
  CHECK_ERR(tether_effect_free(forged), TETHER_ESTALE);
  CHECK_INT_EQ(state_int(s), 0);

  /* TETHER_OBSERVE_SYNC is accepted with the meaning of TETHER_EFFECT_SYNC. */
  f.in[0] = s;
  f.nin = 1;
  CHECK_OK(tether_effect_new(rt, TETHER_OBSERVE_SYNC, fx_run, NULL, &f, fx_destroy, &out));
  CHECK_INT_EQ(RUNS(&f), 1);
  CHECK_OK(tether_effect_free(out));
  CHECK_ENDED(&f);
  CHECK_OK(tether_state_free(s));
}

/* The cases of this suite, registered in cases.h: each runs one section
 * with its own runtime, so a case never depends on another having run
 * (Tests/CTests/runner.c runs one by name). */
TEST_CASE(effects_first_run) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  first_run(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_first_run");
}

TEST_CASE(effects_reruns) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  reruns(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_reruns");
}

TEST_CASE(effects_once_per_write_or_batch) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  once_per_write_or_batch(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_once_per_write_or_batch");
}

TEST_CASE(effects_changed_back_in_batch) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  changed_back_in_batch(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_changed_back_in_batch");
}

TEST_CASE(effects_cleanup_order_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  cleanup_order(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_cleanup_order_sync");
}

TEST_CASE(effects_cleanup_order_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  cleanup_order(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_cleanup_order_loop");
}

TEST_CASE(effects_free_from_own_run_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  free_from_own_run(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_free_from_own_run_sync");
}

TEST_CASE(effects_free_from_own_run_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  free_from_own_run(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_free_from_own_run_loop");
}

TEST_CASE(effects_free_from_cleanup_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  free_from_cleanup(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_free_from_cleanup_sync");
}

TEST_CASE(effects_free_from_cleanup_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  free_from_cleanup(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_free_from_cleanup_loop");
}

TEST_CASE(effects_free_inside_batch_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  free_inside_batch(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_free_inside_batch_sync");
}

TEST_CASE(effects_free_inside_batch_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  free_inside_batch(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_free_inside_batch_loop");
}

TEST_CASE(effects_self_waking_sync) {
  main_thread = pthread_self();
  self_waking(TETHER_EFFECT_SYNC);
  return check_report("effects_self_waking_sync");
}

TEST_CASE(effects_self_waking_loop) {
  main_thread = pthread_self();
  self_waking(0);
  return check_report("effects_self_waking_loop");
}

TEST_CASE(effects_ping_pong_sync) {
  main_thread = pthread_self();
  ping_pong(TETHER_EFFECT_SYNC);
  return check_report("effects_ping_pong_sync");
}

TEST_CASE(effects_ping_pong_loop) {
  main_thread = pthread_self();
  ping_pong(0);
  return check_report("effects_ping_pong_loop");
}

TEST_CASE(effects_chain_sync) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  chain(rt, TETHER_EFFECT_SYNC);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_chain_sync");
}

TEST_CASE(effects_chain_loop) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  chain(rt, 0);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_chain_loop");
}

TEST_CASE(effects_computed_switch) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  computed_switch(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_computed_switch");
}

TEST_CASE(effects_untracked_in_effect) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  untracked_in_effect(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_untracked_in_effect");
}

TEST_CASE(effects_runtime_free_with_effects) {
  main_thread = pthread_self();
  runtime_free_with_effects();
  return check_report("effects_runtime_free_with_effects");
}

TEST_CASE(effects_bad_input) {
  tether_runtime_t rt;
  main_thread = pthread_self();
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return 1;
  bad_input(rt);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_bad_input");
}

/* ---- several cleanups per run (tether_effect_on_cleanup) --------------- */

typedef struct {
  tether_state_t source;
  char log[256];
  int runs;
} cleanup_log_t;

static void log_word(cleanup_log_t *l, const char *word) {
  size_t used = strlen(l->log);
  snprintf(l->log + used, sizeof l->log - used, "%s ", word);
}

static void cleanup_a(void *user_data) { log_word(user_data, "a"); }
static void cleanup_b(void *user_data) { log_word(user_data, "b"); }
static void cleanup_own(void *user_data) { log_word(user_data, "own"); }

static void run_with_cleanups(tether_effect_t self, void *user_data) {
  cleanup_log_t *l = user_data;
  int64_t v = 0;
  tether_state_get_int(l->source, &v);
  l->runs++;
  log_word(l, "run");
  CHECK_OK(tether_effect_on_cleanup(self, cleanup_a, l));
  CHECK_OK(tether_effect_on_cleanup(self, cleanup_b, l));
  CHECK_ERR(tether_effect_on_cleanup(self, NULL, l), TETHER_EINVAL);
}

TEST_CASE(effects_on_cleanup) {
  tether_runtime_t rt;
  tether_effect_t e;
  cleanup_log_t l;
  memset(&l, 0, sizeof l);

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("effects_on_cleanup");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &l.source));
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, run_with_cleanups, cleanup_own, &l, NULL, &e));
  CHECK_STR_EQ(l.log, "run ");
  /* Outside its run a cleanup has no run to belong to. */
  CHECK_ERR(tether_effect_on_cleanup(e, cleanup_a, &l), TETHER_EBUSY);

  CHECK_OK(tether_state_set_int(l.source, 1)); /* newest first, then its own, then the re-run */
  CHECK_STR_EQ(l.log, "run b a own run ");
  CHECK_OK(tether_effect_free(e)); /* the last run's cleanups, once */
  CHECK_STR_EQ(l.log, "run b a own run b a own ");
  CHECK_ERR(tether_effect_on_cleanup(e, cleanup_a, &l), TETHER_ESTALE);

  /* Freeing the runtime runs an effect's owed cleanups too. */
  memset(l.log, 0, sizeof l.log);
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, run_with_cleanups, NULL, &l, NULL, &e));
  CHECK_OK(tether_runtime_free(rt));
  CHECK_STR_EQ(l.log, "run b a ");
  return check_report("effects_on_cleanup");
}

/* ---- effects that can fail (tether_effect_new_fallible) ----------------- */

typedef struct {
  tether_state_t source;
  int runs, destroyed;
  int reported, last_code, handler_destroyed;
  char last_message[128];
} fallible_t;

/* Fails while the source holds 2: a failing call inside gives the message. */
static int fails_on_two(tether_effect_t self, void *user_data) {
  fallible_t *f = user_data;
  int64_t v = 0;
  char too_small[2];
  (void)self;
  f->runs++;
  tether_state_get_int(f->source, &v);
  if (v == 2) return tether_value_get_string(NULL, too_small, sizeof too_small, NULL); /* TETHER_EINVAL */
  return TETHER_OK;
}

static void fallible_destroyed(void *user_data) { ((fallible_t *)user_data)->destroyed++; }

static void on_effect_error(tether_effect_t e, int code, const char *message, void *user_data) {
  fallible_t *f = user_data;
  (void)e;
  f->reported++;
  f->last_code = code;
  snprintf(f->last_message, sizeof f->last_message, "%s", message);
}

static void handler_destroyed(void *user_data) { ((fallible_t *)user_data)->handler_destroyed++; }

TEST_CASE(effects_fallible) {
  tether_runtime_t rt;
  tether_effect_t e, dead;
  fallible_t f;
  int code = 99;
  char msg[128];
  memset(&f, 0, sizeof f);

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("effects_fallible");
  CHECK_OK(tether_state_new_int(rt, 2, 0, &f.source));
  CHECK_OK(tether_runtime_on_effect_error(rt, on_effect_error, &f, handler_destroyed));

  /* A failing first SYNC run fails the creation; destroy is not called. */
  CHECK_ERR(tether_effect_new_fallible(rt, TETHER_EFFECT_SYNC, fails_on_two, NULL, &f, fallible_destroyed, &dead),
            TETHER_EINVAL);
  CHECK_MENTIONS("effect callback");
  CHECK_INT_EQ(f.runs, 1);
  CHECK_INT_EQ(f.destroyed, 0);
  CHECK_INT_EQ(f.reported, 0); /* the creator got it, not the handler */
  CHECK_OK(tether_state_set_int(f.source, 3));
  CHECK_INT_EQ(f.runs, 1); /* subscribed to nothing */

  /* A later failure reaches the handler; the effect stays subscribed and recovers. */
  CHECK_OK(tether_effect_new_fallible(rt, TETHER_EFFECT_SYNC, fails_on_two, NULL, &f, fallible_destroyed, &e));
  CHECK_OK(tether_effect_last_error(e, &code, msg, sizeof msg, NULL));
  CHECK_INT_EQ(code, TETHER_OK);
  CHECK_OK(tether_state_set_int(f.source, 2));
  CHECK_INT_EQ(f.reported, 1);
  CHECK_INT_EQ(f.last_code, TETHER_EINVAL);
  CHECK(strstr(f.last_message, "effect callback returned") != NULL);
  CHECK_OK(tether_effect_last_error(e, &code, msg, sizeof msg, NULL));
  CHECK_INT_EQ(code, TETHER_EINVAL);
  CHECK_STR_EQ(msg, f.last_message);
  CHECK_OK(tether_state_set_int(f.source, 4)); /* it read the source before failing: it runs again */
  CHECK_INT_EQ(f.runs, 4); /* refused creation, first run, failed run, this one */
  CHECK_OK(tether_effect_last_error(e, &code, NULL, 0, NULL));
  CHECK_INT_EQ(code, TETHER_OK);
  CHECK_ERR(tether_effect_last_error(e, NULL, NULL, 0, NULL), TETHER_EINVAL);

  /* Restoring the default handler releases the old one. */
  CHECK_OK(tether_runtime_on_effect_error(rt, NULL, NULL, NULL));
  CHECK_INT_EQ(f.handler_destroyed, 1);
  CHECK_OK(tether_runtime_on_effect_error(rt, on_effect_error, &f, handler_destroyed));

  /* A loop effect's failing first run goes to the handler; the effect lives. */
  CHECK_OK(tether_state_set_int(f.source, 2));
  CHECK_INT_EQ(f.reported, 2); /* e failed again, SYNC */
  CHECK_OK(tether_effect_new_fallible(rt, 0, fails_on_two, NULL, &f, fallible_destroyed, &dead));
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(f.reported, 3);
  CHECK_OK(tether_effect_last_error(dead, &code, NULL, 0, NULL));
  CHECK_INT_EQ(code, TETHER_EINVAL);

  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(f.destroyed, 2);        /* e and the loop effect, not the refused one */
  CHECK_INT_EQ(f.handler_destroyed, 2);
  return check_report("effects_fallible");
}

/* tether_effect_last_error from another thread while the effect runs:
 * a writer thread keeps making a SYNC fallible effect fail and succeed (it
 * runs on the writer's thread, without the graph lock), a reader thread
 * keeps asking for its last error. Every answer must be whole: TETHER_OK
 * with "", or TETHER_EINVAL with the run's message, never a mix, and never
 * a torn string (under ThreadSanitizer: never a race). */
typedef struct {
  tether_effect_t effect;
  tether_state_t source;
  atomic_int started, done;
  int torn, answers;
} last_error_race_t;

static void *last_error_reader(void *arg) {
  last_error_race_t *r = arg;
  char msg[256];
  int code;
  do {
    if (tether_effect_last_error(r->effect, &code, msg, sizeof msg, NULL) != TETHER_OK) {
      r->torn++;
    } else {
      r->answers++;
      if (code == TETHER_OK ? msg[0] != '\0'
                            : code != TETHER_EINVAL || strstr(msg, "effect callback returned") == NULL)
        r->torn++;
    }
    atomic_store(&r->started, 1);
  } while (!atomic_load(&r->done));
  return NULL;
}

static void *last_error_writer(void *arg) {
  last_error_race_t *r = arg;
  int i;
  double until = check_deadline();
  /* the reader is in its loop: they overlap */
  while (!atomic_load(&r->started) && !CHECK_PAST(until, "the reader to start")) sched_yield();
  /* Odd writes fail the run (2), even ones (3, 5, 7, ...) let it succeed. */
  for (i = 0; i < 3000; i++) tether_state_set_int(r->source, i % 2 ? 2 : i + 3);
  atomic_store(&r->done, 1);
  return NULL;
}

TEST_CASE(effects_fallible_last_error_across_threads) {
  tether_runtime_t rt;
  fallible_t f;
  last_error_race_t r;
  pthread_t reader, writer;
  int code = 99;
  memset(&f, 0, sizeof f);
  memset(&r, 0, sizeof r);
  atomic_init(&r.started, 0);
  atomic_init(&r.done, 0);

  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("effects_fallible_last_error_across_threads");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &f.source));
  CHECK_OK(tether_runtime_on_effect_error(rt, on_effect_error, &f, NULL));
  CHECK_OK(tether_effect_new_fallible(rt, TETHER_EFFECT_SYNC, fails_on_two, NULL, &f, NULL, &r.effect));
  r.source = f.source;
  CHECK(pthread_create(&reader, NULL, last_error_reader, &r) == 0);
  CHECK(pthread_create(&writer, NULL, last_error_writer, &r) == 0);
  pthread_join(writer, NULL);
  pthread_join(reader, NULL);
  CHECK_INT_EQ(r.torn, 0);
  CHECK(r.answers > 0);
  CHECK_INT_EQ(f.reported, 1500); /* every odd write failed the run */
  CHECK_OK(tether_effect_last_error(r.effect, &code, NULL, 0, NULL));
  CHECK_INT_EQ(code, TETHER_EINVAL);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("effects_fallible_last_error_across_threads");
}

/* ---- effects own what their runs create --------------------------------- */

typedef struct nest {
  tether_runtime_t rt;
  tether_state_t outer, inner;
  tether_effect_t parent, last_child;
  int child_runs, grandchild_runs, child_cleanups, grandchild_cleanups, parent_cleanups;
  int free_parent_from_child;
} nest_t;

static void grandchild_run(tether_effect_t self, void *user_data) {
  nest_t *n = user_data;
  int64_t v = 0;
  (void)self;
  tether_state_get_int(n->inner, &v);
  n->grandchild_runs++;
}

static void grandchild_cleanup(void *user_data) { ((nest_t *)user_data)->grandchild_cleanups++; }
static void child_cleanup(void *user_data) { ((nest_t *)user_data)->child_cleanups++; }
static void parent_cleanup(void *user_data) { ((nest_t *)user_data)->parent_cleanups++; }

static void child_run(tether_effect_t self, void *user_data) {
  nest_t *n = user_data;
  tether_effect_t grandchild;
  n->last_child = self;
  n->child_runs++;
  /* Three levels: the child owns a grandchild of its own. */
  CHECK_OK(tether_effect_new(n->rt, TETHER_EFFECT_SYNC, grandchild_run, grandchild_cleanup, n, NULL, &grandchild));
  if (n->free_parent_from_child) CHECK_OK(tether_effect_free(n->parent)); /* a child freeing its parent */
}

static void parent_run(tether_effect_t self, void *user_data) {
  nest_t *n = user_data;
  int64_t v = 0;
  tether_effect_t child;
  n->parent = self; /* known to the child before tether_effect_new returns */
  tether_state_get_int(n->outer, &v);
  CHECK_OK(tether_effect_new(n->rt, TETHER_EFFECT_SYNC, child_run, child_cleanup, n, NULL, &child));
}

TEST_CASE(effects_nested_ownership) {
  nest_t n;
  memset(&n, 0, sizeof n);
  if (!CHECK_OK(tether_runtime_new(NULL, &n.rt))) return check_report("effects_nested_ownership");
  CHECK_OK(tether_state_new_int(n.rt, 0, 0, &n.outer));
  CHECK_OK(tether_state_new_int(n.rt, 0, 0, &n.inner));
  CHECK_OK(tether_effect_new(n.rt, TETHER_EFFECT_SYNC, parent_run, parent_cleanup, &n, NULL, &n.parent));
  CHECK_INT_EQ(n.child_runs, 1);
  CHECK_INT_EQ(n.grandchild_runs, 1);

  /* A change only the grandchild reads re-runs only it. */
  CHECK_OK(tether_state_set_int(n.inner, 1));
  CHECK_INT_EQ(n.grandchild_runs, 2);
  CHECK_INT_EQ(n.child_runs, 1);

  /* The parent re-runs: its child and grandchild of the last run go first
   * (one generation, not an extra one per re-run). */
  for (int i = 1; i <= 5; i++) CHECK_OK(tether_state_set_int(n.outer, i));
  CHECK_INT_EQ(n.child_runs, 6);
  CHECK_INT_EQ(n.child_cleanups, 5);
  CHECK_INT_EQ(n.grandchild_cleanups, 6); /* also the one before its own re-run */
  CHECK_INT_EQ(n.parent_cleanups, 5);
  CHECK_OK(tether_state_set_int(n.inner, 2)); /* one live grandchild, not six */
  CHECK_INT_EQ(n.grandchild_runs, 6 + 1 + 1);

  /* Freeing the parent frees its children first. */
  CHECK_OK(tether_effect_free(n.parent));
  CHECK_INT_EQ(n.child_cleanups, 6);
  CHECK_INT_EQ(n.grandchild_cleanups, 8);
  CHECK_INT_EQ(n.parent_cleanups, 6);
  CHECK_ERR(tether_effect_free(n.last_child), TETHER_ESTALE);

  /* A child that frees its parent from its own first run. */
  n.free_parent_from_child = 1;
  CHECK_OK(tether_effect_new(n.rt, TETHER_EFFECT_SYNC, parent_run, parent_cleanup, &n, NULL, &n.parent));
  CHECK_OK(tether_runtime_flush(n.rt));
  CHECK_ERR(tether_effect_free(n.parent), TETHER_ESTALE);
  CHECK_OK(tether_state_set_int(n.outer, 9)); /* nothing left to run */
  CHECK_INT_EQ(n.parent_cleanups, 7);

  CHECK_OK(tether_runtime_free(n.rt));
  return check_report("effects_nested_ownership");
}
