/*
 * sync_direct_races.c — removals racing the SYNC calls a write makes itself.
 *
 * The writer of a state with SYNC observers calls them without the
 * runtime's lock; a removal from another thread stops it with one word and
 * learns how far it got from another (TetherCore/GraphDirect.swift,
 * "Pinned calls"; the fences are membarrier(2) and a compiler barrier, or
 * sequentially consistent operations under TSan and with
 * TETHER_SYMMETRIC_FENCES=1, the second case). sync_direct.c checks each
 * outcome once, in a fixed order; these cases let the threads race, many
 * times over, and check what must hold whatever the interleaving: no
 * observer is called after its destroy ran, every destroy runs exactly
 * once, and the observers never removed see every write.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define RACE_OBSERVERS 48  /* removed while the writes go on */
#define RACE_KEPT 4        /* never removed */
#define RACE_WRITES 20000

typedef struct {
  atomic_int destroyed;       /* destroy calls */
  atomic_int late_calls;      /* calls that began after destroy */
  atomic_long calls;
  int64_t last;               /* kept observers: the last value seen */
  tether_observer_t handle;
} race_obs_t;

static race_obs_t removed_obs[RACE_OBSERVERS], kept_obs[RACE_KEPT];
static tether_state_t race_state;
static atomic_int removals_done;
static int remove_rc;

static void race_on_change(const tether_change_t *c, void *user_data) {
  race_obs_t *o = user_data;
  int64_t v = 0;
  if (atomic_load(&o->destroyed) != 0) atomic_fetch_add(&o->late_calls, 1);
  tether_value_get_int(c->new_value, &v);
  o->last = v;
  atomic_fetch_add(&o->calls, 1);
}

static void race_on_destroy(void *user_data) {
  atomic_fetch_add(&((race_obs_t *)user_data)->destroyed, 1);
}

/* Removes the observers from the middle outwards, each after the writer
 * has called it at least once, so that removals land before, during and
 * after their calls in the fan-outs under way. */
static void *race_remover(void *arg) {
  (void)arg;
  for (int k = 0; k < RACE_OBSERVERS; k++) {
    int i = (k % 2 == 0) ? RACE_OBSERVERS / 2 + k / 2 : RACE_OBSERVERS / 2 - 1 - k / 2;
    double until = check_deadline();
    while (atomic_load(&removed_obs[i].calls) == 0 && !CHECK_PAST(until, "the writer to call the observer"))
      sched_yield();
    remove_rc |= tether_observer_remove(removed_obs[i].handle);
    sched_yield();
  }
  atomic_store(&removals_done, 1);
  return NULL;
}

static int race_removals(const char *name) {
  tether_runtime_t rt;
  pthread_t remover;
  int64_t written = 0;
  CHECK_OK(tether_runtime_new(NULL, &rt));
  CHECK_OK(tether_state_new_int(rt, 0, 0, &race_state));
  /* Kept observers first and last, the removed ones between them. */
  for (int i = 0; i < RACE_KEPT / 2; i++)
    CHECK_OK(tether_observe(race_state, NULL, TETHER_OBSERVE_SYNC, race_on_change, &kept_obs[i],
                            race_on_destroy, &kept_obs[i].handle));
  for (int i = 0; i < RACE_OBSERVERS; i++)
    CHECK_OK(tether_observe(race_state, NULL, TETHER_OBSERVE_SYNC, race_on_change, &removed_obs[i],
                            race_on_destroy, &removed_obs[i].handle));
  for (int i = RACE_KEPT / 2; i < RACE_KEPT; i++)
    CHECK_OK(tether_observe(race_state, NULL, TETHER_OBSERVE_SYNC, race_on_change, &kept_obs[i],
                            race_on_destroy, &kept_obs[i].handle));
  CHECK_INT_EQ(pthread_create(&remover, NULL, race_remover, NULL), 0);
  /* Writes until every removal is done, and at least RACE_WRITES. */
  while (written < RACE_WRITES || atomic_load(&removals_done) == 0) {
    written++;
    if (tether_state_set_int(race_state, written) != TETHER_OK) break;
  }
  CHECK_INT_EQ(pthread_join(remover, NULL), 0);
  CHECK_OK(remove_rc);
  for (int i = 0; i < RACE_OBSERVERS; i++) {
    CHECK_INT_EQ(atomic_load(&removed_obs[i].destroyed), 1);
    CHECK_INT_EQ(atomic_load(&removed_obs[i].late_calls), 0);
  }
  for (int i = 0; i < RACE_KEPT; i++) {
    CHECK_INT_EQ(atomic_load(&kept_obs[i].calls), written);
    CHECK_INT_EQ(kept_obs[i].last, written);
    CHECK_INT_EQ(atomic_load(&kept_obs[i].destroyed), 0);
  }
  CHECK_OK(tether_runtime_free(rt));
  for (int i = 0; i < RACE_KEPT; i++) CHECK_INT_EQ(atomic_load(&kept_obs[i].destroyed), 1);
  return check_report(name);
}

TEST_CASE(sync_direct_races_removals_during_fan_outs) {
  return race_removals("sync_direct_races_removals_during_fan_outs");
}

/* The same with the fallback fences (sequentially consistent operations on
 * both sides, as under TSan or without membarrier): the variable is read
 * when the process makes its first runtime, and every case runs in a
 * process of its own. */
TEST_CASE(sync_direct_races_removals_symmetric_fences) {
  setenv("TETHER_SYMMETRIC_FENCES", "1", 1);
  return race_removals("sync_direct_races_removals_symmetric_fences");
}
