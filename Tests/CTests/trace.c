/*
 * trace.c — tether_runtime_trace: why each recompute and effect run happened.
 *
 * What this program checks:
 *  - bad input: stale runtime, computed and effect handles, an unknown mode
 *    (its destroy not called);
 *  - TETHER_TRACE_ALL: a first run says so; a write at "/email" reports
 *    the computed's recompute with that state and pointer, the revisions
 *    before and after, then the effect's run with the computed as source;
 *    a write in a transaction carries its tag and origin; a write that
 *    changes nothing the reader read reports nothing;
 *  - TETHER_TRACE_MARKED: only the marked effect is reported;
 *  - destroy runs once when the trace is replaced, turned off, or the
 *    runtime freed; the trace callback may free the effect it reports
 *    (the run is cancelled); its writes fail (TETHER_EBUSY in a
 *    recompute's report, TETHER_ELOOP in an effect's) and change nothing;
 *  - the default (fn NULL): one line on stderr naming what changed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* What the trace callback saw, copied out of the borrowed event. */
typedef struct {
  int kind;
  uint64_t reader;
  int first_run;
  size_t sources;
  uint64_t source_handle;
  int source_is_computed;
  char source_name[32];
  char pointer[32];
  uint64_t revision_before, revision_after;
  char tag[32];
  uint64_t origin;
} seen_t;

static seen_t seen[64];
static int seen_count;

static void record(const tether_trace_event_t *e, void *user_data) {
  (void)user_data;
  if (seen_count >= 64) return;
  seen_t *s = &seen[seen_count++];
  memset(s, 0, sizeof *s);
  s->kind = e->kind;
  s->reader = e->reader;
  s->first_run = e->first_run;
  s->sources = e->source_count;
  if (e->source_count > 0) {
    s->source_handle = e->sources[0].handle;
    s->source_is_computed = e->sources[0].is_computed;
    if (e->sources[0].name) snprintf(s->source_name, sizeof s->source_name, "%s", e->sources[0].name);
    snprintf(s->pointer, sizeof s->pointer, "%s", e->sources[0].pointer);
    s->revision_before = e->sources[0].revision_before;
    s->revision_after = e->sources[0].revision_after;
  }
  if (e->tag) snprintf(s->tag, sizeof s->tag, "%s", e->tag);
  s->origin = e->origin;
}

static int destroyed;
static void count_destroy(void *user_data) {
  (void)user_data;
  destroyed++;
}

static tether_state_t form, agreed;
static tether_computed_t email_ok;
static int effect_runs;

static int compute_email_ok(tether_value_t *result, void *user_data) {
  (void)user_data;
  tether_value_t *v = NULL;
  int rc = tether_state_get_path(form, "/email", &v);
  if (rc != TETHER_OK) return rc;
  size_t len = 0;
  char buf[64];
  tether_value_get_string(v, buf, sizeof buf, &len);
  tether_value_free(v);
  return tether_value_set_bool(result, strchr(buf, '@') != NULL);
}

static void submit_button(tether_effect_t e, void *user_data) {
  (void)e;
  (void)user_data;
  bool ok = false, yes = false;
  tether_computed_get_bool(email_ok, &ok);
  tether_state_get_bool(agreed, &yes);
  effect_runs++;
}

static void make_form(tether_runtime_t rt) {
  CHECK_OK(tether_state_new_json(rt, "{\"name\": \"Ada\", \"email\": \"ada@example.org\"}", -1, 0, &form));
  CHECK_OK(tether_state_new_bool(rt, false, 0, &agreed));
  tether_state_descriptor_t d;
  tether_state_descriptor_init(&d);
  d.name = "form";
  CHECK_OK(tether_state_describe(form, &d));
  CHECK_OK(tether_computed_new(rt, compute_email_ok, NULL, NULL, &email_ok));
}

TEST_CASE(trace_bad_input) {
  tether_runtime_t zero = {0}, rt;
  CHECK_ERR(tether_runtime_trace(zero, TETHER_TRACE_ALL, record, NULL, NULL), TETHER_ESTALE);
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("trace_bad_input");
  destroyed = 0;
  CHECK_ERR(tether_runtime_trace(rt, 7, record, NULL, count_destroy), TETHER_EINVAL);
  CHECK_INT_EQ(destroyed, 0);
  tether_computed_t c0 = {0};
  tether_effect_t e0 = {0};
  CHECK_ERR(tether_computed_trace(c0, true), TETHER_ESTALE);
  CHECK_ERR(tether_effect_trace(e0, true), TETHER_ESTALE);
  make_form(rt);
  tether_effect_t as_effect = {email_ok.id}; /* a computed passed as an effect */
  CHECK_ERR(tether_effect_trace(as_effect, true), TETHER_ESTALE);
  CHECK_OK(tether_computed_trace(email_ok, true));
  CHECK_OK(tether_computed_free(email_ok));
  CHECK_ERR(tether_computed_trace(email_ok, false), TETHER_ESTALE);
  CHECK_OK(tether_runtime_free(rt));
  CHECK_ERR(tether_runtime_trace(rt, TETHER_TRACE_OFF, NULL, NULL, NULL), TETHER_ESTALE);
  return check_report("trace_bad_input");
}

TEST_CASE(trace_why_it_ran) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("trace_why_it_ran");
  make_form(rt);
  seen_count = 0;
  destroyed = 0;
  CHECK_OK(tether_runtime_trace(rt, TETHER_TRACE_ALL, record, NULL, count_destroy));
  tether_effect_t button;
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, submit_button, NULL, NULL, NULL, &button));
  /* The first run, and the computed's first evaluation inside it. */
  CHECK_INT_EQ(seen_count, 2);
  CHECK_INT_EQ(seen[0].kind, TETHER_TRACE_EFFECT_RUN);
  CHECK_INT_EQ(seen[0].reader, button.id);
  CHECK(seen[0].first_run);
  CHECK_INT_EQ(seen[1].kind, TETHER_TRACE_RECOMPUTE);
  CHECK_INT_EQ(seen[1].reader, email_ok.id);
  CHECK(seen[1].first_run);

  uint64_t rev_before = 0, rev_after = 0;
  CHECK_OK(tether_runtime_revision(rt, &rev_before));
  seen_count = 0;
  CHECK_OK(tether_state_set_path_json(form, "/email", "\"nobody\"", -1));
  CHECK_OK(tether_runtime_revision(rt, &rev_after));
  CHECK_INT_EQ(effect_runs, 2);
  /* The effect is checked first: its computed source is recomputed (the
   * form changed at /email), then the effect runs (the computed changed). */
  CHECK_INT_EQ(seen_count, 2);
  CHECK_INT_EQ(seen[0].kind, TETHER_TRACE_RECOMPUTE);
  CHECK(!seen[0].first_run);
  CHECK_INT_EQ(seen[0].sources, 1);
  CHECK_INT_EQ(seen[0].source_handle, form.id);
  CHECK(!seen[0].source_is_computed);
  CHECK_STR_EQ(seen[0].source_name, "form");
  CHECK_STR_EQ(seen[0].pointer, "/email");
  CHECK_INT_EQ(seen[0].revision_before, rev_before);
  CHECK_INT_EQ(seen[0].revision_after, rev_after);
  CHECK_STR_EQ(seen[0].tag, "");
  CHECK_INT_EQ(seen[1].kind, TETHER_TRACE_EFFECT_RUN);
  CHECK_INT_EQ(seen[1].sources, 1);
  CHECK_INT_EQ(seen[1].source_handle, email_ok.id);
  CHECK(seen[1].source_is_computed);
  CHECK_STR_EQ(seen[1].pointer, "");

  /* A write nobody read (/name) runs nothing and reports nothing. */
  seen_count = 0;
  CHECK_OK(tether_state_set_path_json(form, "/name", "\"Grace\"", -1));
  CHECK_INT_EQ(seen_count, 0);
  CHECK_INT_EQ(effect_runs, 2);

  /* A transaction's tag and origin reach the effect's report. */
  tether_transaction_info_t info = {"undo", 7, NULL};
  tether_transaction_t txn;
  seen_count = 0;
  CHECK_OK(tether_transaction_begin(rt, &info, &txn));
  CHECK_OK(tether_state_set_bool(agreed, true));
  CHECK_OK(tether_transaction_commit(txn, NULL));
  CHECK_INT_EQ(seen_count, 1);
  CHECK_INT_EQ(seen[0].kind, TETHER_TRACE_EFFECT_RUN);
  CHECK_INT_EQ(seen[0].source_handle, agreed.id);
  CHECK_STR_EQ(seen[0].pointer, "");
  CHECK_STR_EQ(seen[0].tag, "undo");
  CHECK_INT_EQ(seen[0].origin, 7);

  /* Off: nothing more is reported, and destroy has run. */
  CHECK_OK(tether_runtime_trace(rt, TETHER_TRACE_OFF, NULL, NULL, NULL));
  CHECK_INT_EQ(destroyed, 1);
  seen_count = 0;
  CHECK_OK(tether_state_set_bool(agreed, false));
  CHECK_INT_EQ(effect_runs, 4);
  CHECK_INT_EQ(seen_count, 0);
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(destroyed, 1);
  return check_report("trace_why_it_ran");
}

TEST_CASE(trace_marked_and_destroy) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("trace_marked_and_destroy");
  make_form(rt);
  tether_effect_t a, b;
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, submit_button, NULL, NULL, NULL, &a));
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, submit_button, NULL, NULL, NULL, &b));
  destroyed = 0;
  seen_count = 0;
  CHECK_OK(tether_runtime_trace(rt, TETHER_TRACE_MARKED, record, NULL, count_destroy));
  CHECK_OK(tether_state_set_bool(agreed, true));
  CHECK_INT_EQ(seen_count, 0); /* nothing marked */
  CHECK_OK(tether_effect_trace(b, true));
  CHECK_OK(tether_state_set_bool(agreed, false));
  CHECK_INT_EQ(seen_count, 1);
  CHECK_INT_EQ(seen[0].reader, b.id);
  CHECK_OK(tether_effect_trace(b, false));
  CHECK_OK(tether_state_set_bool(agreed, true));
  CHECK_INT_EQ(seen_count, 1);
  /* Replaced: the first destroy runs; the second when the runtime goes. */
  CHECK_OK(tether_runtime_trace(rt, TETHER_TRACE_ALL, record, NULL, count_destroy));
  CHECK_INT_EQ(destroyed, 1);
  CHECK_OK(tether_runtime_free(rt));
  CHECK_INT_EQ(destroyed, 2);
  return check_report("trace_marked_and_destroy");
}

/* A trace callback that frees the effect it reports: the run is cancelled. */
static tether_effect_t doomed;
static int doomed_runs;
static void doomed_body(tether_effect_t e, void *user_data) {
  (void)e;
  (void)user_data;
  bool yes = false;
  tether_state_get_bool(agreed, &yes);
  doomed_runs++;
}
static int write_rc[2];
static void free_reader(const tether_trace_event_t *e, void *user_data) {
  (void)user_data;
  /* A write from here is refused, whatever is being reported. */
  write_rc[e->kind == TETHER_TRACE_RECOMPUTE] = tether_state_set_bool(agreed, false);
  if (e->reader == doomed.id && !e->first_run) CHECK_OK(tether_effect_free(doomed));
}

static int compute_not_agreed(tether_value_t *result, void *user_data) {
  (void)user_data;
  bool yes = false;
  int rc = tether_state_get_bool(agreed, &yes);
  return rc != TETHER_OK ? rc : tether_value_set_bool(result, !yes);
}

TEST_CASE(trace_callback_frees_the_reader) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("trace_callback_frees_the_reader");
  CHECK_OK(tether_state_new_bool(rt, false, 0, &agreed));
  destroyed = 0;
  doomed_runs = 0;
  CHECK_OK(tether_runtime_trace(rt, TETHER_TRACE_ALL, free_reader, NULL, NULL));
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, doomed_body, NULL, NULL, count_destroy, &doomed));
  CHECK_INT_EQ(doomed_runs, 1);
  CHECK_INT_EQ(write_rc[0], TETHER_ELOOP); /* from the effect's first report */
  tether_computed_t not_agreed;
  bool b = false;
  CHECK_OK(tether_computed_new(rt, compute_not_agreed, NULL, NULL, &not_agreed));
  CHECK_OK(tether_computed_get_bool(not_agreed, &b));
  CHECK(b);
  CHECK_INT_EQ(write_rc[1], TETHER_EBUSY); /* from the recompute's report */
  CHECK_OK(tether_state_get_bool(agreed, &b));
  CHECK(!b); /* neither write changed it */
  CHECK_OK(tether_state_set_bool(agreed, true));
  CHECK_INT_EQ(doomed_runs, 1); /* cancelled */
  CHECK_INT_EQ(destroyed, 1);
  CHECK_ERR(tether_effect_free(doomed), TETHER_ESTALE);
  CHECK_OK(tether_state_set_bool(agreed, false));
  CHECK_OK(tether_runtime_free(rt));
  return check_report("trace_callback_frees_the_reader");
}

TEST_CASE(trace_default_line) {
  tether_runtime_t rt;
  if (!CHECK_OK(tether_runtime_new(NULL, &rt))) return check_report("trace_default_line");
  make_form(rt);
  tether_effect_t button;
  CHECK_OK(tether_effect_new(rt, TETHER_EFFECT_SYNC, submit_button, NULL, NULL, NULL, &button));
  char path[] = "/tmp/tether-trace-XXXXXX";
  int fd = mkstemp(path);
  if (!CHECK(fd >= 0)) return check_report("trace_default_line");
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  CHECK_OK(tether_runtime_trace(rt, TETHER_TRACE_ALL, NULL, NULL, NULL));
  CHECK_OK(tether_state_set_path_json(form, "/email", "\"nobody\"", -1)); /* email_ok turns false */
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char text[2048] = {0};
  lseek(fd, 0, SEEK_SET);
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  unlink(path);
  CHECK(n > 0);
  printf("%s", text);
  CHECK(strstr(text, "tether: trace: computed 0x") != NULL);
  CHECK(strstr(text, "recomputed at revision") != NULL);
  CHECK(strstr(text, "state 'form' 0x") != NULL);
  CHECK(strstr(text, " at /email changed (revision") != NULL);
  CHECK(strstr(text, "tether: trace: effect 0x") != NULL);
  CHECK_OK(tether_runtime_free(rt));
  return check_report("trace_default_line");
}
