/*
 * seat_booking.c — a transaction that loses a compare-on-revision race,
 * and the retry that wins. (harness: tetherd — run beside a daemon.)
 *
 * Two clients (two runtimes here; two processes would do the same) book
 * seats in a state of the daemon's (lesson.seat_booking.PID). Each reads
 * the seat map, picks a free seat, and commits the booking only if the map is still the one it
 * read: tether_remote_expect(seats, revision read). Alice reads first, Bob
 * books first; Alice's commit changes nothing and returns TETHER_EREJECTED,
 * so she catches up (tether_remote_sync), sees seat 1 taken, and books 2.
 */
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "tether.h"

/* A name of this run's own (the parent's pid): run by hand beside a
 * daemon other programs use, or twice, it meets no state but its own, and
 * it removes that state at the end (tether_state_remove_path with "" on a
 * remote state deletes it in the daemon): nothing is left behind. */
static char seats_name[64];

typedef struct {
  tether_runtime_t rt;
  tether_remote_t daemon;
  tether_state_t seats;
} client_t;

static void open_client(client_t *c) {
  CHECK_OK(tether_runtime_new(NULL, &c->rt));
  CHECK_OK(tether_remote_connect(c->rt, NULL, &c->daemon));
  CHECK_OK(tether_remote_state(c->daemon, seats_name, &c->seats));
}

/* The first free seat ("" in the array) as read now, and the revision read. */
static int first_free(client_t *c, uint64_t *revision) {
  char path[16];
  CHECK_OK(tether_remote_revision(c->seats, revision));
  for (int i = 0; i < 4; i++) {
    tether_value_t *who = NULL;
    size_t len = 1;
    char name[32];
    snprintf(path, sizeof path, "/%d", i);
    if (tether_state_get_path(c->seats, path, &who) == TETHER_OK) {
      tether_value_get_string(who, name, sizeof name, &len);
      tether_value_free(who);
    }
    if (len == 0) return i;
  }
  return -1;
}

/* Books `seat` for `name` if the map is still the one read at `revision`. */
static int book(client_t *c, int seat, const char *name, uint64_t revision) {
  tether_transaction_t txn;
  char path[16];
  snprintf(path, sizeof path, "/%d", seat);
  CHECK_OK(tether_transaction_begin(c->rt, NULL, &txn));
  CHECK_OK(tether_remote_expect(c->seats, revision));
  char json[48];
  snprintf(json, sizeof json, "\"%s\"", name);
  CHECK_OK(tether_state_set_path_json(c->seats, path, json, -1));
  return tether_transaction_commit(txn, NULL);
}

int main(void) {
  client_t alice, bob;
  uint64_t alice_read, bob_read;
  char map[64];
  size_t len = 0;
  snprintf(seats_name, sizeof seats_name, "lesson.seat_booking.%ld", (long)getpid());
  open_client(&alice);
  open_client(&bob);
  CHECK_OK(tether_state_set_json(alice.seats, "[\"carol\",\"\",\"\",\"\"]", -1));
  CHECK_OK(tether_remote_sync(bob.daemon)); /* Bob sees the map too */

  int a = first_free(&alice, &alice_read); /* both want seat 1 */
  int b = first_free(&bob, &bob_read);
  CHECK_INT_EQ(a, 1);
  CHECK_INT_EQ(b, 1);
  CHECK_OK(book(&bob, b, "bob", bob_read));                        /* Bob is first */
  CHECK_ERR(book(&alice, a, "alice", alice_read), TETHER_EREJECTED); /* lost the race */
  printf("alice lost the race: %s\n", tether_last_error());

  /* Retry: catch up, read again, book again. */
  int tries = 1;
  int rc;
  do {
    CHECK_OK(tether_remote_sync(alice.daemon));
    a = first_free(&alice, &alice_read);
    rc = book(&alice, a, "alice", alice_read);
    tries++;
  } while (rc == TETHER_EREJECTED && tries < 10);
  CHECK_OK(rc);
  CHECK_INT_EQ(a, 2);
  CHECK_OK(tether_state_get_json(alice.seats, 0, map, sizeof map, &len));
  CHECK_STR_EQ(map, "[\"carol\",\"bob\",\"alice\",\"\"]");
  printf("alice booked seat %d after %d tries: %s\n", a, tries, map);

  CHECK_OK(tether_state_remove_path(alice.seats, "")); /* deleted in the daemon */
  CHECK_OK(tether_remote_free(alice.daemon));
  CHECK_OK(tether_remote_free(bob.daemon));
  CHECK_OK(tether_runtime_free(alice.rt));
  CHECK_OK(tether_runtime_free(bob.rt));
  return check_report("seat_booking");
}
