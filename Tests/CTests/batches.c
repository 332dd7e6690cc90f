/*
 * batches.c — tether_batch_begin and tether_batch_end, plain path and full.
 *
 * Both functions take a short path (TetherRuntime/PlainAccess.swift) when
 * the runtime's lock is free: one more open batch, or one fewer when
 * nothing is held back; the end of the outermost batch with work owed goes
 * on to the delivery on the lock already taken. These cases hold that path
 * to the full path's answers: handles that are stale or forged (another
 * generation of the live runtime in the same slot, another kind), a batch
 * left open by one handle that another must not close, a single-threaded
 * runtime used from another thread, loop work held back, and batches of
 * several threads interleaving.
 */
#include <pthread.h>
#include <stdint.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* A handle's low 26 bits are its generation; bits 50-53 its kind. */
#define GENERATION_BITS ((uint64_t)0x3FFFFFF)
#define KIND_SHIFT 50

static tether_runtime_t batch_runtime(unsigned flags) {
  tether_runtime_options_t o;
  tether_runtime_t rt = {0};
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  o.flags = flags;
  CHECK_OK(tether_runtime_new(&o, &rt));
  return rt;
}

typedef struct {
  long calls;
  int64_t last;
} seen_t;

static void record(const tether_change_t *c, void *user_data) {
  seen_t *seen = user_data;
  int64_t v = -1;
  if (c->new_value) tether_value_get_int(c->new_value, &v);
  seen->calls++;
  seen->last = v;
}

/* The same slot and index, the next generation: the live runtime's slot
 * answers for it, so only the owner check can tell it is not that runtime. */
static tether_runtime_t next_generation(tether_runtime_t rt) {
  tether_runtime_t forged;
  uint64_t generation = rt.id & GENERATION_BITS;
  forged.id = (rt.id & ~GENERATION_BITS) | ((generation + 1) & GENERATION_BITS);
  return forged;
}

TEST_CASE(batches_stale_and_forged_runtime_handles) {
  tether_runtime_t rt = batch_runtime(0), dead = batch_runtime(0);
  tether_runtime_t forged = next_generation(rt), other_kind, state_as_runtime;
  tether_state_t s;
  tether_observer_t sync_ob, loop_ob;
  seen_t sync_seen = {0, 0}, loop_seen = {0, 0};

  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  CHECK_OK(tether_observe(s, NULL, TETHER_OBSERVE_SYNC, record, &sync_seen, NULL, &sync_ob));
  CHECK_OK(tether_observe(s, NULL, 0, record, &loop_seen, NULL, &loop_ob));
  other_kind.id = (rt.id & ~((uint64_t)0xF << KIND_SHIFT)) | ((uint64_t)2 << KIND_SHIFT);
  state_as_runtime.id = s.id;
  CHECK_OK(tether_runtime_free(dead));

  CHECK_ERR(tether_batch_begin(forged), TETHER_ESTALE);
  CHECK_MENTIONS("stale");
  CHECK_ERR(tether_batch_begin(other_kind), TETHER_ESTALE);
  CHECK_ERR(tether_batch_begin(state_as_runtime), TETHER_ESTALE);
  CHECK_ERR(tether_batch_begin(dead), TETHER_ESTALE);
  CHECK_ERR(tether_batch_end(forged), TETHER_ESTALE);
  CHECK_ERR(tether_batch_end(other_kind), TETHER_ESTALE);
  CHECK_ERR(tether_batch_end(state_as_runtime), TETHER_ESTALE);
  CHECK_ERR(tether_batch_end(dead), TETHER_ESTALE);
  /* None of them opened a batch on rt. */
  CHECK_ERR(tether_batch_end(rt), TETHER_EINVAL);
  CHECK_MENTIONS("never begun");

  /* rt's open batch: a forged handle must neither close it nor deliver. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_ERR(tether_batch_end(forged), TETHER_ESTALE);
  CHECK_ERR(tether_batch_end(other_kind), TETHER_ESTALE);
  CHECK_INT_EQ(sync_seen.calls, 0);
  CHECK_ERR(tether_runtime_flush(rt), TETHER_EBUSY); /* the batch still holds it back */

  /* Nested: only the outermost end delivers, SYNC before it returns. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(s, 2));
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(sync_seen.calls, 0);
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(sync_seen.calls, 1);
  CHECK_INT_EQ(sync_seen.last, 2);
  /* The loop observer was woken by the end, and runs on the loop. */
  CHECK_INT_EQ(loop_seen.calls, 0);
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(loop_seen.calls, 1);
  CHECK_INT_EQ(loop_seen.last, 2);

  /* An outermost batch with nothing held back ends on the plain path. */
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(sync_seen.calls, 1);
  CHECK_ERR(tether_batch_end(rt), TETHER_EINVAL);

  CHECK_OK(tether_runtime_free(rt));
  CHECK_ERR(tether_batch_begin(rt), TETHER_ESTALE);
  CHECK_ERR(tether_batch_end(rt), TETHER_ESTALE);
  return check_report("batches_stale_and_forged_runtime_handles");
}

typedef struct {
  tether_runtime_t rt;
  int begin_rc, end_rc;
} foreign_t;

static void *batch_from_another_thread(void *arg) {
  foreign_t *f = arg;
  f->begin_rc = tether_batch_begin(f->rt);
  f->end_rc = tether_batch_end(f->rt);
  return NULL;
}

TEST_CASE(batches_single_threaded_runtime) {
  tether_runtime_t rt = batch_runtime(TETHER_RUNTIME_SINGLE_THREAD);
  tether_state_t s;
  tether_observer_t ob;
  seen_t seen = {0, 0};
  foreign_t f;
  pthread_t t;

  CHECK_OK(tether_state_new_int(rt, 0, 0, &s));
  CHECK_OK(tether_observe(s, NULL, TETHER_OBSERVE_SYNC, record, &seen, NULL, &ob));
  f.rt = rt;
  f.begin_rc = f.end_rc = 0;
  CHECK_INT_EQ(pthread_create(&t, NULL, batch_from_another_thread, &f), 0);
  pthread_join(t, NULL);
  CHECK_INT_EQ(f.begin_rc, TETHER_ETHREAD);
  CHECK_INT_EQ(f.end_rc, TETHER_ETHREAD);
  CHECK_ERR(tether_batch_end(rt), TETHER_EINVAL); /* the other thread opened none */
  CHECK_ERR(tether_batch_begin(next_generation(rt)), TETHER_ESTALE);

  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_batch_begin(rt));
  CHECK_OK(tether_state_set_int(s, 5));
  CHECK_ERR(tether_batch_end(next_generation(rt)), TETHER_ESTALE);
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(seen.calls, 0);
  CHECK_OK(tether_batch_end(rt));
  CHECK_INT_EQ(seen.calls, 1);
  CHECK_INT_EQ(seen.last, 5);
  CHECK_ERR(tether_batch_end(rt), TETHER_EINVAL);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("batches_single_threaded_runtime");
}

#define BATCH_THREADS 4
#define BATCH_ROUNDS 3000

typedef struct {
  tether_runtime_t rt;
  tether_state_t state;
  int failures;
} batch_writer_t;

static void *batched_writes(void *arg) {
  batch_writer_t *w = arg;
  int i;
  for (i = 1; i <= BATCH_ROUNDS; i++) {
    if (tether_batch_begin(w->rt) != TETHER_OK) w->failures++;
    if (tether_state_set_int(w->state, i) != TETHER_OK) w->failures++;
    if (tether_batch_end(w->rt) != TETHER_OK) w->failures++;
  }
  return NULL;
}

/* Batches are runtime-wide: one thread's end may deliver another's writes,
 * or leave them to the other's end. Whatever the interleaving, every
 * observer ends having seen its state's last value, and no batch is left
 * open. The lock is contended, so both paths run. */
TEST_CASE(batches_from_several_threads) {
  tether_runtime_t rt = batch_runtime(0);
  batch_writer_t writers[BATCH_THREADS];
  seen_t seen[BATCH_THREADS];
  tether_observer_t obs[BATCH_THREADS];
  pthread_t threads[BATCH_THREADS];
  int k;

  for (k = 0; k < BATCH_THREADS; k++) {
    writers[k].rt = rt;
    writers[k].failures = 0;
    seen[k].calls = 0;
    seen[k].last = 0;
    CHECK_OK(tether_state_new_int(rt, 0, 0, &writers[k].state));
    CHECK_OK(tether_observe(writers[k].state, NULL, TETHER_OBSERVE_SYNC, record, &seen[k], NULL, &obs[k]));
  }
  for (k = 0; k < BATCH_THREADS; k++)
    CHECK_INT_EQ(pthread_create(&threads[k], NULL, batched_writes, &writers[k]), 0);
  for (k = 0; k < BATCH_THREADS; k++) pthread_join(threads[k], NULL);

  CHECK_OK(tether_runtime_flush(rt));
  for (k = 0; k < BATCH_THREADS; k++) {
    CHECK_INT_EQ(writers[k].failures, 0);
    CHECK_INT_EQ(seen[k].last, BATCH_ROUNDS);
    CHECK(seen[k].calls >= 1 && seen[k].calls <= BATCH_ROUNDS);
  }
  CHECK_ERR(tether_batch_end(rt), TETHER_EINVAL);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("batches_from_several_threads");
}
