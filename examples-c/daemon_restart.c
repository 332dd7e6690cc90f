/*
 * daemon_restart.c — a client that survives a daemon crash and resumes its
 * watch without losing an event. (harness: tetherd — run beside a daemon
 * that the harness restarts when it dies, as systemd's Restart= would.)
 *
 * tetherd stores every commit on disk before acknowledging it, and a
 * restarted daemon continues its revisions. A remote state reconnects by
 * itself and asks for every change after the last revision it applied, so
 * what another process wrote while this one was cut off arrives in order,
 * once. While the daemon is down, a write fails at once (TETHER_EUV).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tether.h"

/* A name of this run's own (the parent's pid): run by hand beside a
 * daemon other programs use, or twice, it meets no state but its own, and
 * it removes that state at the end (tether_state_remove_path with "" on a
 * remote state deletes it in the daemon): nothing is left behind. */
static char name[64];
static int lengths[16], calls; /* the job list's length at each change */

static void on_jobs(const tether_change_t *c, void *user_data) {
  size_t n = 0;
  (void)user_data;
  if (c->new_value && tether_value_length(c->new_value, &n) == TETHER_OK && calls < 16) lengths[calls++] = (int)n;
}

static void connect_jobs(tether_runtime_t *rt, tether_remote_t *daemon, tether_state_t *jobs) {
  CHECK_OK(tether_runtime_new(NULL, rt));
  CHECK_OK(tether_remote_connect(*rt, NULL, daemon));
  CHECK_OK(tether_remote_state(*daemon, name, jobs));
}

/* Another process: connected before the crash, it writes once the daemon is back. */
static int producer(int ready, int go) {
  tether_runtime_t rt;
  tether_remote_t daemon;
  tether_state_t jobs;
  char byte;
  connect_jobs(&rt, &daemon, &jobs);
  CHECK(write(ready, "r", 1) == 1);              /* connected: the crash may come */
  CHECK(read(go, &byte, 1) == 1);                /* the daemon was killed */
  CHECK_OK(tether_remote_wait(daemon, 30000));    /* ...and is back */
  for (int i = 0; i < 3; i++) CHECK_OK(tether_state_set_path_json(jobs, "/-", "\"b\"", -1));
  CHECK_OK(tether_remote_free(daemon));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("producer");
}

int main(void) {
  int ready[2], go[2], status = 0;
  char byte;
  /* The daemon this lesson kills, and that comes back: the harness's,
   * which sets TETHERD_PID and restarts it as systemd's Restart= would. */
  const char *daemon_pid = getenv("TETHERD_PID");
  if (!daemon_pid) {
    fprintf(stderr, "daemon_restart: this lesson kills tetherd (SIGKILL) and needs one that is started again;\n"
                    "run it with `make lesson NAME=daemon_restart`, beside a daemon of its own that the harness\n"
                    "restarts (it sets TETHERD_PID), not against `make run`'s, which would stay dead\n");
    return 2;
  }
  if (!CHECK(pipe(ready) == 0 && pipe(go) == 0)) return check_report("daemon_restart");
  snprintf(name, sizeof name, "lesson.daemon_restart.%ld", (long)getpid());
  pid_t child = fork(); /* before any runtime */
  if (child == 0) return producer(ready[1], go[0]);

  tether_runtime_t rt;
  tether_remote_t daemon;
  tether_state_t jobs;
  tether_observer_t obs;
  connect_jobs(&rt, &daemon, &jobs);
  CHECK_OK(tether_observe(jobs, NULL, TETHER_OBSERVE_SYNC, on_jobs, NULL, NULL, &obs));
  CHECK_OK(tether_state_set_json(jobs, "[\"a\"]", -1)); /* acknowledged: on disk */
  CHECK_OK(tether_state_set_path_json(jobs, "/-", "\"a\"", -1));

  CHECK(read(ready[0], &byte, 1) == 1); /* the other process is connected too */
  kill((pid_t)atoi(daemon_pid), SIGKILL); /* the daemon crashes */
  CHECK(write(go[1], "g", 1) == 1);
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);

  CHECK_OK(tether_remote_wait(daemon, 30000)); /* reconnected... */
  CHECK_OK(tether_remote_sync(daemon));        /* ...and caught up */
  CHECK_OK(tether_runtime_flush(rt));
  char text[64];
  size_t len = 0;
  CHECK_OK(tether_state_get_json(jobs, 0, text, sizeof text, &len));
  CHECK_STR_EQ(text, "[\"a\",\"a\",\"b\",\"b\",\"b\"]");
  CHECK_INT_EQ(calls, 5); /* one call per commit: none lost, none twice */
  for (int i = 0; i < calls; i++) CHECK_INT_EQ(lengths[i], i + 1);
  printf("after the crash: %s, seen in %d changes\n", text, calls);
  CHECK_OK(tether_observer_remove(obs));
  CHECK_OK(tether_state_remove_path(jobs, "")); /* deleted in the daemon */
  CHECK_OK(tether_remote_free(daemon));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("daemon_restart");
}
