/*
 * remote.c — remote states (tetherd) through the C API. Every case here is
 * named remote_* and runs beside a daemon of its own (run.sh starts it with
 * support/with_tetherd.c and sets TETHER_ADDRESS).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <signal.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

typedef struct {
  tether_runtime_t rt;
  tether_remote_t daemon;
} client_t;

/* The state's value as compact JSON equals `json`. */
#define CHECK_STATE(s, json)                                          \
  do {                                                                \
    char text_[256] = "";                                             \
    size_t len_ = 0;                                                  \
    CHECK_OK(tether_state_get_json((s), 0, text_, sizeof text_, &len_)); \
    CHECK_STR_EQ(text_, (json));                                      \
  } while (0)

static int open_client(client_t *c) {
  if (!CHECK_OK(tether_runtime_new(NULL, &c->rt))) return 0;
  return CHECK_OK(tether_remote_connect(c->rt, NULL, &c->daemon));
}

static void close_client(client_t *c) {
  CHECK_OK(tether_remote_free(c->daemon));
  CHECK_OK(tether_runtime_free(c->rt));
}

TEST_CASE(remote_bad_input) {
  client_t c;
  tether_remote_t forged = {12345};
  tether_state_t s, local;
  tether_transaction_t txn;
  uint64_t rev;
  bool up;
  tether_runtime_t host;
  tether_runtime_options_t opts = {0};
  if (!open_client(&c)) return check_report("remote_bad_input");
  CHECK_ERR(tether_remote_connect(c.rt, NULL, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_remote_connect(c.rt, "tcp:localhost:1", &forged), TETHER_EINVAL);
  CHECK_ERR(tether_remote_connect(c.rt, "unix:/nonexistent/tetherd.sock", &forged), TETHER_EUV);
  CHECK_MENTIONS("is tetherd running");
  CHECK_ERR(tether_remote_connect((tether_runtime_t){0}, NULL, &forged), TETHER_ESTALE);
  opts.mode = TETHER_LOOP_HOST;
  CHECK_OK(tether_runtime_new(&opts, &host));
  CHECK_ERR(tether_remote_connect(host, NULL, &forged), TETHER_EINVAL); /* needs its own loop thread */
  CHECK_OK(tether_runtime_free(host));
  CHECK_ERR(tether_remote_state(c.daemon, NULL, &s), TETHER_EINVAL);
  CHECK_ERR(tether_remote_state(c.daemon, "x", NULL), TETHER_EINVAL);
  CHECK_ERR(tether_remote_state(c.daemon, "", &s), TETHER_EINVAL);
  CHECK_ERR(tether_remote_state(c.daemon, "bad\nname", &s), TETHER_EINVAL);
  CHECK_ERR(tether_remote_state((tether_remote_t){12345}, "x", &s), TETHER_ESTALE);
  CHECK_ERR(tether_remote_connected(c.daemon, NULL), TETHER_EINVAL);
  CHECK_OK(tether_remote_connected(c.daemon, &up));
  CHECK(up);
  CHECK_OK(tether_state_new_int(c.rt, 1, 0, &local));
  CHECK_ERR(tether_remote_revision(local, &rev), TETHER_EINVAL); /* not a remote state */
  CHECK_OK(tether_remote_state(c.daemon, "x", &s));
  CHECK_ERR(tether_remote_revision(s, NULL), TETHER_EINVAL);
  CHECK_ERR(tether_remote_expect(s, 0), TETHER_EINVAL); /* no open transaction */
  /* One transaction cannot write local and remote states. */
  CHECK_OK(tether_transaction_begin(c.rt, NULL, &txn));
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_OK(tether_state_set_int(local, 2));
  CHECK_ERR(tether_transaction_commit(txn, NULL), TETHER_EINVAL);
  CHECK_MENTIONS("both local and remote");
  CHECK_STATE(s, "null"); /* nothing applied */
  /* A remote state's descriptor is the daemon's. */
  CHECK_ERR(tether_state_describe(s, &(tether_state_descriptor_t){.flags = TETHER_DESCRIBE_READ_ONLY}), TETHER_EINVAL);
  /* Daemon refusals keep a local state's codes. */
  CHECK_OK(tether_state_set_json(s, "{\"a\":[1]}", -1));
  CHECK_ERR(tether_state_set_path_json(s, "/a/7", "1", -1), TETHER_ERANGE);
  CHECK_ERR(tether_state_set_path_json(s, "/a/x", "1", -1), TETHER_EPATH);
  CHECK_ERR(tether_state_remove_path(s, "/b"), TETHER_ENOTFOUND);
  CHECK_ERR(tether_state_set_path_json(s, "/a", "{", -1), TETHER_EJSON); /* refused here, never sent */
  CHECK_STATE(s, "{\"a\":[1]}");
  CHECK_OK(tether_state_free(s));
  CHECK_ERR(tether_remote_revision(s, &rev), TETHER_ESTALE);
  close_client(&c);
  CHECK_ERR(tether_remote_free(c.daemon), TETHER_ESTALE); /* twice */
  CHECK_ERR(tether_remote_sync(c.daemon), TETHER_ESTALE);
  return check_report("remote_bad_input");
}

/* The remote frees itself from inside an observer of one of its states. */
static tether_remote_t to_free;
static int freed_inside;
static void free_remote_inside(const tether_change_t *c, void *user_data) {
  (void)c;
  (void)user_data;
  if (!freed_inside++) CHECK_OK(tether_remote_free(to_free));
}

/* A write from inside a callback: sent at once, flush waits for it. */
static tether_state_t echo_target;
static void write_inside(const tether_change_t *c, void *user_data) {
  int64_t v = 0;
  (void)user_data;
  tether_value_get_int(c->new_value, &v);
  if (v < 3) CHECK_OK(tether_state_set_int(echo_target, v + 1));
}

TEST_CASE(remote_callbacks) {
  client_t c, d;
  tether_state_t n, m;
  tether_observer_t o1, o2;
  int64_t v = 0;
  if (!open_client(&c) || !open_client(&d)) return check_report("remote_callbacks");
  CHECK_OK(tether_remote_state(c.daemon, "n", &n));
  echo_target = n;
  CHECK_OK(tether_observe(n, NULL, TETHER_OBSERVE_SYNC, write_inside, NULL, NULL, &o1));
  CHECK_OK(tether_state_set_int(n, 0));
  CHECK_OK(tether_runtime_flush(c.rt)); /* the writes made in callbacks came back */
  CHECK_OK(tether_state_get_int(n, &v));
  CHECK_INT_EQ(v, 3);
  /* Another client frees its own remote from inside a callback. */
  CHECK_OK(tether_remote_state(d.daemon, "n", &m));
  to_free = d.daemon;
  CHECK_OK(tether_observe(m, NULL, TETHER_OBSERVE_SYNC, free_remote_inside, NULL, NULL, &o2));
  CHECK_OK(tether_state_set_int(n, 10));
  CHECK_OK(tether_remote_sync(c.daemon));
  CHECK_OK(tether_runtime_flush(d.rt));
  CHECK_INT_EQ(freed_inside, 1);
  CHECK_ERR(tether_state_get_int(m, &v), TETHER_ESTALE); /* freed with its remote */
  CHECK_ERR(tether_remote_free(d.daemon), TETHER_ESTALE);
  CHECK_OK(tether_runtime_free(d.rt));
  close_client(&c);
  return check_report("remote_callbacks");
}

/* Four threads add to one remote counter with compare-and-set. */
typedef struct {
  client_t *c;
  tether_state_t counter;
  int failures;
} adder_t;

static void *adder(void *arg) {
  adder_t *a = arg;
  for (int i = 0; i < 25; i++) {
    for (;;) {
      tether_transaction_t txn;
      uint64_t seen = 0;
      int64_t n = 0;
      tether_remote_revision(a->counter, &seen);
      tether_state_get_int(a->counter, &n);
      if (tether_transaction_begin(a->c->rt, NULL, &txn) != TETHER_OK) { a->failures++; break; }
      tether_remote_expect(a->counter, seen);
      tether_state_set_int(a->counter, n + 1);
      int rc = tether_transaction_commit(txn, NULL);
      if (rc == TETHER_OK) break;
      if (rc != TETHER_EREJECTED || tether_remote_sync(a->c->daemon) != TETHER_OK) { a->failures++; break; }
    }
  }
  return NULL;
}

TEST_CASE(remote_threads) {
  client_t c;
  pthread_t threads[4];
  adder_t adders[4];
  int64_t total = 0;
  tether_state_t counter;
  if (!open_client(&c)) return check_report("remote_threads");
  CHECK_OK(tether_remote_state(c.daemon, "counter", &counter));
  CHECK_OK(tether_state_set_int(counter, 0));
  for (int i = 0; i < 4; i++) {
    adders[i] = (adder_t){&c, counter, 0};
    CHECK(pthread_create(&threads[i], NULL, adder, &adders[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(threads[i], NULL);
    CHECK_INT_EQ(adders[i].failures, 0);
  }
  CHECK_OK(tether_state_get_int(counter, &total));
  CHECK_INT_EQ(total, 100);
  close_client(&c);
  return check_report("remote_threads");
}

/* Bindings and computeds over a remote state are the ordinary ones. */
static int64_t doubled_compute_calls;
static int compute_doubled(tether_value_t *result, void *user_data) {
  tether_state_t *s = user_data;
  int64_t v = 0;
  doubled_compute_calls++;
  int rc = tether_state_get_path_int(*s, "/v", &v);
  if (rc != TETHER_OK) return rc;
  return tether_value_set_int(result, v * 2);
}

TEST_CASE(remote_bindings_and_computeds) {
  client_t c;
  tether_state_t s;
  tether_binding_t field;
  tether_computed_t doubled;
  int64_t v = 0;
  if (!open_client(&c)) return check_report("remote_bindings_and_computeds");
  CHECK_OK(tether_remote_state(c.daemon, "form", &s));
  CHECK_OK(tether_state_set_json(s, "{\"v\":1,\"w\":0}", -1));
  CHECK_OK(tether_state_binding(s, &field));
  tether_binding_t v_field;
  CHECK_OK(tether_binding_project(field, "/v", &v_field));
  CHECK_OK(tether_computed_new(c.rt, compute_doubled, &s, NULL, &doubled));
  CHECK_OK(tether_computed_get_int(doubled, &v));
  CHECK_INT_EQ(v, 2);
  CHECK_OK(tether_binding_set_json(v_field, "5", -1)); /* through the daemon */
  CHECK_OK(tether_computed_get_int(doubled, &v));
  CHECK_INT_EQ(v, 10);
  CHECK_STATE(s, "{\"v\":5,\"w\":0}");
  /* Typed path reads of a remote state, as of a local one. */
  {
    tether_value_t *part = NULL;
    double d = 0;
    CHECK_OK(tether_state_get_path(s, "/w", &part));
    CHECK_VALUE(part, "0");
    tether_value_free(part);
    CHECK_OK(tether_state_get_path_double(s, "/v", &d));
    CHECK(d == 5.0);
    CHECK_ERR(tether_state_get_path_int(s, "/missing", &v), TETHER_ENOTFOUND);
  }
  close_client(&c);
  return check_report("remote_bindings_and_computeds");
}

/* The trust checks of tether_remote_connect (docs/security-local.md): a
 * private socket directory ($XDG_RUNTIME_DIR/tether) that lets group or
 * others in, or that is a symbolic link (to the real daemon's directory,
 * even), is refused with TETHER_EUNTRUSTED, and nothing is sent. */
TEST_CASE(remote_untrusted) {
  char base[] = "/tmp/remote-untrusted.XXXXXX";
  char dir[64], sock[96], address[128], target[160];
  const char *daemon = getenv("TETHER_ADDRESS");
  struct sockaddr_un sa;
  tether_runtime_t rt;
  tether_remote_t r;
  int listener, peer;
  char byte;
  char *slash;
  if (!CHECK(daemon != NULL && strncmp(daemon, "unix:", 5) == 0) || !CHECK(mkdtemp(base) != NULL))
    return check_report("remote_untrusted");
  setenv("XDG_RUNTIME_DIR", base, 1);
  snprintf(dir, sizeof dir, "%s/tether", base);
  snprintf(sock, sizeof sock, "%s/tetherd.sock", dir);
  snprintf(address, sizeof address, "unix:%s", sock);
  CHECK(mkdir(dir, 0700) == 0);
  CHECK(chmod(dir, 0755) == 0);
  /* A listener of our own uid (the peer check passes): only the
   * directory's mode is wrong. */
  listener = socket(AF_UNIX, SOCK_STREAM, 0);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
  CHECK(bind(listener, (struct sockaddr *)&sa, sizeof sa) == 0);
  CHECK(listen(listener, 8) == 0);
  CHECK_OK(tether_runtime_new(NULL, &rt));
  CHECK_ERR(tether_remote_connect(rt, address, &r), TETHER_EUNTRUSTED);
  CHECK_MENTIONS(dir);
  CHECK_MENTIONS("mode 0755");
  CHECK_STR_EQ(tether_strerror(TETHER_EUNTRUSTED), "untrusted daemon socket");
  /* Whatever connection was made closed without a byte. */
  fcntl(listener, F_SETFL, O_NONBLOCK);
  while ((peer = accept(listener, NULL, NULL)) >= 0) {
    CHECK(recv(peer, &byte, 1, 0) == 0);
    close(peer);
  }
  /* 0700: the same listener is trusted: connecting gets past the checks
   * and waits for an answer this listener (no tetherd) never sends. */
  CHECK(chmod(dir, 0700) == 0);
  CHECK_ERR(tether_remote_connect_timeout(rt, address, 200, &r), TETHER_ETIMEDOUT);
  CHECK_MENTIONS("did not answer within 200 ms");
  close(listener);
  unlink(sock);
  rmdir(dir);
  /* A symbolic link to the real daemon's directory. */
  snprintf(target, sizeof target, "%s", daemon + 5);
  slash = strrchr(target, '/');
  if (slash) *slash = '\0';
  CHECK(symlink(target, dir) == 0);
  CHECK_ERR(tether_remote_connect(rt, address, &r), TETHER_EUNTRUSTED);
  CHECK_MENTIONS("symbolic link");
  CHECK_OK(tether_runtime_free(rt));
  unlink(dir);
  rmdir(base);
  unsetenv("XDG_RUNTIME_DIR");
  return check_report("remote_untrusted");
}

/* Issue 30 §6: no call waits on the daemon for ever. A listener that never
 * accepts (a stopped daemon's backlog) makes connect fail with
 * TETHER_ETIMEDOUT; the harness's tetherd stopped with SIGSTOP makes a
 * write and sync fail with TETHER_ETIMEDOUT after the remote's timeout,
 * and after SIGCONT the same remote goes on. */
TEST_CASE(remote_timeout) {
  char base[] = "/tmp/remote-timeout.XXXXXX";
  char sock[96], address[128];
  const char *pid_text = getenv("TETHERD_PID");
  struct sockaddr_un sa;
  client_t c;
  tether_remote_t r;
  tether_state_t s;
  pid_t daemon;
  int listener;
  if (!CHECK(pid_text != NULL) || !CHECK(mkdtemp(base) != NULL) || !open_client(&c))
    return check_report("remote_timeout");
  daemon = (pid_t)atol(pid_text);

  /* Something listens and never answers. */
  snprintf(sock, sizeof sock, "%s/tetherd.sock", base);
  snprintf(address, sizeof address, "unix:%s", sock);
  listener = socket(AF_UNIX, SOCK_STREAM, 0);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
  CHECK(bind(listener, (struct sockaddr *)&sa, sizeof sa) == 0);
  CHECK(listen(listener, 8) == 0);
  CHECK_ERR(tether_remote_connect_timeout(c.rt, address, 300, &r), TETHER_ETIMEDOUT);
  CHECK_MENTIONS("did not answer within 300 ms");
  CHECK_STR_EQ(tether_strerror(TETHER_ETIMEDOUT), "timed out waiting for the daemon");
  close(listener);
  unlink(sock);
  rmdir(base);

  CHECK_ERR(tether_remote_set_timeout((tether_remote_t){12345}, 100), TETHER_ESTALE);
  CHECK_OK(tether_remote_state(c.daemon, "timeout.x", &s));
  CHECK_OK(tether_state_set_int(s, 1));
  CHECK_STATE(s, "1");

  /* The daemon stops answering. */
  CHECK_OK(tether_remote_set_timeout(c.daemon, 300));
  if (CHECK(kill(daemon, SIGSTOP) == 0)) {
    CHECK_ERR(tether_state_set_int(s, 2), TETHER_ETIMEDOUT);
    CHECK_MENTIONS("may or may not have been applied");
    CHECK_ERR(tether_remote_sync(c.daemon), TETHER_ETIMEDOUT);
    CHECK_MENTIONS("within 300 ms");
    CHECK(kill(daemon, SIGCONT) == 0);
  }
  /* It answers again: the same remote goes on. */
  CHECK_OK(tether_remote_set_timeout(c.daemon, 0)); /* without limit */
  CHECK_OK(tether_remote_wait(c.daemon, 30000));
  CHECK_OK(tether_state_set_int(s, 3));
  CHECK_STATE(s, "3");
  CHECK_OK(tether_remote_sync(c.daemon));
  CHECK_OK(tether_state_free(s));
  close_client(&c);
  return check_report("remote_timeout");
}
