/*
 * shared_counter.c — two processes, one counter, held by tetherd.
 * (harness: tetherd — the C harness runs this lesson beside a daemon.)
 *
 * tether_remote_state gives an ordinary state whose value lives in the
 * daemon: reads are local, writes go to the daemon and come back in its
 * order, to every process. Two processes adding 1 at once must not lose an
 * add, so each add is a compare-and-set: a transaction that commits only if
 * the counter was last changed at the revision this process read
 * (tether_remote_expect). When the other process got there first the commit
 * changes nothing and says TETHER_EREJECTED: catch up, read again, retry.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tether.h"

enum { ADDS = 50 };

/* A name of this run's own (the parent's pid): run by hand beside a
 * daemon other programs use, or twice, it meets no state but its own, and
 * it removes that state at the end (tether_state_remove_path with "" on a
 * remote state deletes it in the daemon): nothing is left behind. */
static char name[64];

/* counter += 1, however many processes are adding. Returns the retries. */
static int add_one(tether_runtime_t rt, tether_remote_t daemon, tether_state_t counter) {
  for (int retries = 0;; retries++) {
    tether_transaction_t txn;
    uint64_t seen = 0;
    int64_t n = 0;
    tether_remote_revision(counter, &seen); /* the revision this read is of */
    tether_state_get_int(counter, &n);
    tether_transaction_begin(rt, NULL, &txn);
    tether_remote_expect(counter, seen);
    tether_state_set_int(counter, n + 1);
    int rc = tether_transaction_commit(txn, NULL);
    if (rc != TETHER_EREJECTED) return CHECK_OK(rc) ? retries : -1;
    CHECK_OK(tether_remote_sync(daemon)); /* see the other's write first */
  }
}

int main(void) {
  tether_runtime_t rt;
  tether_remote_t daemon;
  tether_state_t counter;
  tether_transaction_t txn;
  int retries = 0, status = 0;
  int64_t total = 0;

  snprintf(name, sizeof name, "lesson.shared_counter.%ld", (long)getpid());
  /* Fork first: a runtime's threads do not survive a fork. */
  pid_t child = fork();
  const char *who = child == 0 ? "child" : "parent";
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report(who);
  /* NULL: $TETHER_ADDRESS, else the user's (or root's) default socket. */
  if (!CHECK_OK(tether_remote_connect(rt, NULL, &daemon))) return check_report(who);
  CHECK_OK(tether_remote_state(daemon, name, &counter));

  /* Create it at 0 unless the other process did (revision 0: must not exist). */
  CHECK_OK(tether_transaction_begin(rt, NULL, &txn));
  CHECK_OK(tether_remote_expect(counter, 0));
  CHECK_OK(tether_state_set_int(counter, 0));
  int rc = tether_transaction_commit(txn, NULL);
  CHECK(rc == TETHER_OK || rc == TETHER_EREJECTED);
  CHECK_OK(tether_remote_sync(daemon));

  for (int i = 0; i < ADDS; i++) {
    int r = add_one(rt, daemon, counter);
    CHECK(r >= 0);
    retries += r;
  }
  printf("%s: %d adds, %d retries after losing a race\n", who, ADDS, retries);

  if (child != 0) {
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_OK(tether_remote_sync(daemon)); /* everything the child wrote */
    CHECK_OK(tether_state_get_int(counter, &total));
    CHECK_INT_EQ(total, 2 * ADDS); /* no add lost */
    printf("counter = %lld\n", (long long)total);
    CHECK_OK(tether_state_remove_path(counter, "")); /* deleted in the daemon */
  }
  CHECK_OK(tether_remote_free(daemon)); /* closes it; frees the counter state */
  CHECK_OK(tether_runtime_free(rt));
  return check_report(who);
}
