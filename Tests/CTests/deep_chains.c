/*
 * deep_chains.c — chains of computeds far deeper than a thread's stack
 * allows recursion.
 *
 * The pull that brings a stale chain up to date recurses a dozen levels,
 * then goes on without recursion (TetherCore/Propagation.swift,
 * `pullIteratively`), so a write to the head of a chain of 50,000
 * computeds, each read once from the start, is pulled through to the far
 * end by one read there, and each computed runs once. (The recursive pull
 * needed ~300 bytes of stack a level and failed such reads with
 * TETHER_ERANGE.) A chain never evaluated and read first from its far end
 * is another matter: each compute callback reads the next one down, which
 * must be computed inside it, so the callbacks themselves nest; the
 * runtime refuses to nest past its stack reserve (TETHER_ERANGE, "read it
 * from its start first"), and a read from the start, then one from the far
 * end, succeeds.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

#define DEEP 50000

typedef struct {
  tether_state_t head;   /* the source of link 0 */
  tether_computed_t *c;  /* c[k] reads c[k - 1], c[0] the head */
  long *calls;           /* compute calls per link */
  int64_t *index;        /* user_data: a pointer to its own index */
} chain_t;

static chain_t *chain_of_link;

/* c[k] = c[k - 1] + 1; c[0] = head + 1. */
static int link_compute(tether_value_t *result, void *user_data) {
  int64_t k = *(int64_t *)user_data, v = 0;
  int rc;
  chain_of_link->calls[k]++;
  rc = k == 0 ? tether_state_get_int(chain_of_link->head, &v)
              : tether_computed_get_int(chain_of_link->c[k - 1], &v);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, v + 1);
}

static int make_chain(tether_runtime_t rt, chain_t *ch, int evaluate_in_order) {
  int64_t k, v;
  ch->c = calloc(DEEP, sizeof *ch->c);
  ch->calls = calloc(DEEP, sizeof *ch->calls);
  ch->index = calloc(DEEP, sizeof *ch->index);
  if (!CHECK(ch->c && ch->calls && ch->index)) return 0;
  chain_of_link = ch;
  if (!CHECK_OK(tether_state_new_int(rt, 0, 0, &ch->head))) return 0;
  for (k = 0; k < DEEP; k++) {
    ch->index[k] = k;
    if (!CHECK_OK(tether_computed_new(rt, link_compute, &ch->index[k], NULL, &ch->c[k]))) return 0;
    /* Read as made: each evaluation reads a source already up to date. */
    if (evaluate_in_order && tether_computed_get_int(ch->c[k], &v) != TETHER_OK) {
      CHECK_OK(tether_computed_get_int(ch->c[k], &v));
      return 0;
    }
  }
  return 1;
}

static void free_chain(chain_t *ch) {
  free(ch->c);
  free(ch->calls);
  free(ch->index);
  chain_of_link = NULL;
}

static long calls_other_than(const chain_t *ch, long expected) {
  long k, off = 0;
  for (k = 0; k < DEEP; k++) off += ch->calls[k] != expected;
  return off;
}

typedef struct {
  long runs;
  int64_t last;
  tether_computed_t far_end;
} far_effect_t;

static void far_effect(tether_effect_t e, void *user_data) {
  far_effect_t *f = user_data;
  int64_t v = -1;
  (void)e;
  CHECK_OK(tether_computed_get_int(f->far_end, &v));
  f->runs++;
  f->last = v;
}

TEST_CASE(deep_chains_stale_chain_pulled_from_the_far_end) {
  tether_runtime_options_t o;
  tether_runtime_t rt;
  chain_t ch;
  far_effect_t f = {0, 0, {0}};
  tether_effect_t e;
  int64_t v = -1;
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  CHECK_OK(tether_runtime_new(&o, &rt));
  if (make_chain(rt, &ch, 1)) {
    CHECK_INT_EQ(calls_other_than(&ch, 1), 0);

    /* One write makes the whole chain stale; one read at the far end pulls it. */
    CHECK_OK(tether_state_set_int(ch.head, 10));
    CHECK_OK(tether_computed_get_int(ch.c[DEEP - 1], &v));
    CHECK_INT_EQ(v, 10 + DEEP);
    CHECK_INT_EQ(calls_other_than(&ch, 2), 0); /* each computed ran once more */
    CHECK_OK(tether_computed_get_int(ch.c[DEEP / 2], &v)); /* up to date: no call */
    CHECK_INT_EQ(v, 10 + DEEP / 2 + 1);
    CHECK_INT_EQ(calls_other_than(&ch, 2), 0);

    /* An effect at the far end: its pull is the same, from a delivery. */
    f.far_end = ch.c[DEEP - 1];
    CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, far_effect, NULL, &f, NULL, &e));
    CHECK_INT_EQ(f.runs, 1);
    CHECK_OK(tether_state_set_int(ch.head, 20));
    CHECK_INT_EQ(f.runs, 2);
    CHECK_INT_EQ(f.last, 20 + DEEP);
    CHECK_INT_EQ(calls_other_than(&ch, 3), 0);

    /* An equal result at the head stops the pull there (the cutoff). */
    CHECK_OK(tether_batch_begin(rt));
    CHECK_OK(tether_state_set_int(ch.head, 21));
    CHECK_OK(tether_state_set_int(ch.head, 20));
    CHECK_OK(tether_batch_end(rt));
    CHECK_INT_EQ(f.runs, 2);
    CHECK_INT_EQ(calls_other_than(&ch, 3), 0);
    CHECK_OK(tether_effect_free(e));
  }
  CHECK_OK(tether_runtime_free(rt));
  free_chain(&ch);
  return check_report("deep_chains_stale_chain_pulled_from_the_far_end");
}

TEST_CASE(deep_chains_fresh_chain_read_from_the_far_end) {
  tether_runtime_options_t o;
  tether_runtime_t rt;
  chain_t ch;
  int64_t v = -1, k;
  tether_runtime_options_init(&o);
  o.mode = TETHER_LOOP_HOST;
  CHECK_OK(tether_runtime_new(&o, &rt));
  if (make_chain(rt, &ch, 0)) {
    /* Each callback would compute the next one down inside it. */
    CHECK_ERR(tether_computed_get_int(ch.c[DEEP - 1], &v), TETHER_ERANGE);
    CHECK_MENTIONS("from its start");
    CHECK_INT_EQ(v, -1);

    /* From the start, then the far end: every link evaluates. */
    for (k = 0; k < DEEP; k++)
      if (!CHECK_OK(tether_computed_get_int(ch.c[k], &v))) break;
    CHECK_OK(tether_computed_get_int(ch.c[DEEP - 1], &v));
    CHECK_INT_EQ(v, DEEP);
    CHECK_OK(tether_state_set_int(ch.head, 1));
    CHECK_OK(tether_computed_get_int(ch.c[DEEP - 1], &v));
    CHECK_INT_EQ(v, 1 + DEEP);
  }
  CHECK_OK(tether_runtime_free(rt));
  free_chain(&ch);
  return check_report("deep_chains_fresh_chain_read_from_the_far_end");
}
