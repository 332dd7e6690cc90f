/*
 * settings_service.c — one process owns the settings, another watches
 * them field by field (what dconf and GSettings do for a desktop).
 * (harness: tetherd — the C harness runs this lesson beside a daemon.)
 *
 * The app mirrors the daemon's settings state (lesson.settings_service.PID)
 * and observes two fields by JSON Pointer: a write to /font_size wakes only the font observer, and a
 * write of the value a field already has wakes nobody. Observers of a
 * remote state get old and new values and the writer's transaction tag,
 * exactly as for a local state.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tether.h"

/* A name of this run's own (the parent's pid): run by hand beside a
 * daemon other programs use, or twice, it meets no state but its own, and
 * it removes that state at the end (tether_state_remove_path with "" on a
 * remote state deletes it in the daemon): nothing is left behind. */
static char name[64];
static char theme_log[128];
static int font_calls;
static int64_t font_size;

static void on_theme(const tether_change_t *c, void *user_data) {
  char text[32] = "none";
  size_t len = 0;
  (void)user_data;
  if (c->new_value) tether_value_to_json(c->new_value, 0, text, sizeof text, &len);
  strncat(theme_log, text, sizeof theme_log - strlen(theme_log) - 2);
  strcat(theme_log, c->transaction && c->transaction->tag ? "@" : " ");
}

static void on_font(const tether_change_t *c, void *user_data) {
  (void)user_data;
  font_calls++;
  if (c->new_value) tether_value_get_int(c->new_value, &font_size);
}

/* The service: creates the settings, then changes one field at a time. */
static int service(int go) {
  tether_runtime_t rt;
  tether_remote_t daemon;
  tether_state_t settings;
  tether_transaction_t txn;
  tether_transaction_info_t info = {.tag = "preferences-dialog"};
  char byte;
  CHECK(read(go, &byte, 1) == 1); /* the app is watching */
  CHECK_OK(tether_runtime_new(NULL, &rt));
  CHECK_OK(tether_remote_connect(rt, NULL, &daemon));
  CHECK_OK(tether_remote_state(daemon, name, &settings));
  CHECK_OK(tether_state_set_json(settings, "{\"theme\":\"light\",\"font_size\":12}", -1));
  CHECK_OK(tether_transaction_begin(rt, &info, &txn));
  CHECK_OK(tether_state_set_path_json(settings, "/theme", "\"dark\"", -1));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_OK(tether_state_set_path_json(settings, "/font_size", "14", -1));
  CHECK_OK(tether_state_set_path_json(settings, "/theme", "\"dark\"", -1)); /* no change */
  CHECK_OK(tether_remote_free(daemon));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("service");
}

int main(void) {
  int go[2], status = 0;
  if (!CHECK(pipe(go) == 0)) return check_report("settings_service");
  snprintf(name, sizeof name, "lesson.settings_service.%ld", (long)getpid());
  pid_t child = fork(); /* before any runtime: threads do not survive a fork */
  if (child == 0) return service(go[0]);

  tether_runtime_t rt;
  tether_remote_t daemon;
  tether_state_t settings;
  tether_observer_t theme, font;
  CHECK_OK(tether_runtime_new(NULL, &rt));
  CHECK_OK(tether_remote_connect(rt, NULL, &daemon));
  CHECK_OK(tether_remote_state(daemon, name, &settings)); /* null until created */
  /* SYNC: called for every change the mirror applies, none coalesced. */
  CHECK_OK(tether_observe(settings, "/theme", TETHER_OBSERVE_SYNC, on_theme, NULL, NULL, &theme));
  CHECK_OK(tether_observe(settings, "/font_size", TETHER_OBSERVE_SYNC, on_font, NULL, NULL, &font));
  CHECK(write(go[1], "g", 1) == 1);

  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_OK(tether_remote_sync(daemon)); /* all the service wrote is here... */
  CHECK_OK(tether_runtime_flush(rt));   /* ...and every callback it caused ran */
  CHECK_STR_EQ(theme_log, "\"light\" \"dark\"@"); /* created, then the tagged change */
  CHECK_INT_EQ(font_calls, 2);                    /* created, then 12 -> 14 */
  CHECK_INT_EQ(font_size, 14);
  printf("theme changes: %s; font size %lld after %d calls\n", theme_log, (long long)font_size, font_calls);
  CHECK_OK(tether_observer_remove(theme));
  CHECK_OK(tether_observer_remove(font));
  CHECK_OK(tether_state_remove_path(settings, "")); /* deleted in the daemon */
  CHECK_OK(tether_remote_free(daemon));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("settings_service");
}
