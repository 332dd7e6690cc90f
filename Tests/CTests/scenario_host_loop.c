/*
 * host_loop.c — Tether inside an application that already has an event loop.
 *
 * Part 1, TETHER_LOOP_EXTERNAL: the application owns a libuv loop (a
 * uv_loop_t it initialises and runs with uv_run) and hands it to the
 * runtime, which adds one uv_async_t to it. Observers are then called on
 * the application's loop thread — here the main thread — whoever writes:
 *  - a uv_timer callback (on the loop thread) increments a "ticks" state,
 *  - a worker thread writes a "message" state and then waits with
 *    tether_runtime_flush() until the loop thread has delivered its writes.
 * Rules shown: tether_runtime_new and tether_runtime_free on the loop thread
 * while uv_run is not executing; after the free, one uv_run(UV_RUN_NOWAIT)
 * lets libuv finish closing the runtime's handle, and uv_loop_close() is 0.
 *
 * Part 2, TETHER_LOOP_HOST: the runtime owns its loop but has no thread; the
 * application polls tether_runtime_fd() (here with poll(2); in a real program
 * a GSource, a uv_poll_t, an LVGL timer...) and calls tether_runtime_run()
 * when it is readable. Nothing is delivered until the host runs it.
 *
 * Build: cc -std=c99 host_loop.c $(pkg-config --cflags --libs tether libuv)
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "cases.h"
#include "check.h"
#include "tether.h"

/* What the observers saw; written on the loop thread, read by main/worker. */
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t seen_ticks = 0;
static int tick_calls = 0;
static char seen_message[64] = "";
static int message_calls = 0;
static int wrong_thread_calls = 0; /* calls NOT on the loop thread: must stay 0 */

static uv_thread_t loop_thread; /* the thread that runs the loop (main) */

static int on_loop_thread(void) {
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &loop_thread);
}

/* ==== Part 1: TETHER_LOOP_EXTERNAL ======================================== */

static uv_loop_t loop;
static tether_runtime_t ext_rt;
static tether_state_t ticks, message;
static uv_timer_t timer;
static uv_async_t worker_done;
static int timer_finished = 0, worker_finished = 0; /* loop thread only */

#define TICKS 5
#define WORKER_WRITES 100

static void on_ticks(const tether_change_t *change, void *user_data) {
  (void)user_data;
  pthread_mutex_lock(&seen_mu);
  seen_ticks = value_int_or(change->new_value, -1);
  tick_calls++;
  if (!on_loop_thread()) wrong_thread_calls++;
  pthread_mutex_unlock(&seen_mu);
}

static void on_message(const tether_change_t *change, void *user_data) {
  (void)user_data;
  pthread_mutex_lock(&seen_mu);
  value_str(change->new_value, seen_message, sizeof seen_message);
  message_calls++;
  if (!on_loop_thread()) wrong_thread_calls++;
  pthread_mutex_unlock(&seen_mu);
}

/* Stops uv_run once the timer and the worker are both done. (The runtime's
 * own async handle may keep the loop alive, so we stop it explicitly.) */
static void maybe_stop(void) {
  if (timer_finished && worker_finished) uv_stop(&loop);
}

/* A uv timer callback: the host's code, on the loop thread. */
static void on_timer(uv_timer_t *t) {
  int64_t n = 0;
  CHECK_OK(tether_state_get_int(ticks, &n));
  CHECK_OK(tether_state_set_int(ticks, n + 1));
  if (n + 1 == TICKS) {
    /* Outside any tether callback, on the loop thread, flush delivers the
     * owed callbacks right here and returns. */
    CHECK_OK(tether_runtime_flush(ext_rt));
    pthread_mutex_lock(&seen_mu);
    CHECK_INT_EQ(seen_ticks, TICKS);
    pthread_mutex_unlock(&seen_mu);
    uv_timer_stop(t);
    uv_close((uv_handle_t *)t, NULL);
    timer_finished = 1;
    maybe_stop();
  }
}

static void on_worker_done(uv_async_t *a) {
  uv_close((uv_handle_t *)a, NULL);
  worker_finished = 1;
  maybe_stop();
}

/* Another thread writes while the loop runs. */
static void worker(void *arg) {
  char text[64];
  int i;
  (void)arg;
  for (i = 1; i <= WORKER_WRITES; i++) {
    snprintf(text, sizeof text, "from worker #%d", i);
    CHECK_OK(tether_state_set_string(message, text, -1));
  }
  /* Off the loop thread, flush blocks until the loop thread has delivered
   * everything written before it. */
  CHECK_OK(tether_runtime_flush(ext_rt));
  pthread_mutex_lock(&seen_mu);
  CHECK_STR_EQ(seen_message, "from worker #100");
  pthread_mutex_unlock(&seen_mu);
  /* An EXTERNAL runtime may only be freed on its loop thread. */
  CHECK_ERR(tether_runtime_free(ext_rt), TETHER_ETHREAD);
  uv_async_send(&worker_done);
}

static void part_external(void) {
  tether_runtime_options_t opts;
  tether_observer_t obs;
  uv_thread_t worker_thread;

  CHECK_INT_EQ(uv_loop_init(&loop), 0);
  loop_thread = uv_thread_self();

  tether_runtime_options_init(&opts);
  opts.mode = TETHER_LOOP_EXTERNAL;
  opts.loop = &loop;
  if (!CHECK_OK(tether_runtime_new(&opts, &ext_rt))) return;
  CHECK_OK(tether_state_new_int(ext_rt, 0, 0, &ticks));
  CHECK_OK(tether_state_new_string(ext_rt, "", -1, 0, &message));
  CHECK_OK(tether_observe(ticks, NULL, 0, on_ticks, NULL, NULL, &obs));
  CHECK_OK(tether_observe(message, NULL, 0, on_message, NULL, NULL, &obs));
  /* EXTERNAL has no fd and no run function: the host runs uv_run. */
  {
    int fd = -1;
    CHECK_ERR(tether_runtime_fd(ext_rt, &fd), TETHER_EINVAL);
    CHECK_ERR(tether_runtime_run(ext_rt), TETHER_EINVAL);
  }

  CHECK_INT_EQ(uv_timer_init(&loop, &timer), 0);
  CHECK_INT_EQ(uv_timer_start(&timer, on_timer, 1, 1), 0);
  CHECK_INT_EQ(uv_async_init(&loop, &worker_done, on_worker_done), 0);
  CHECK_INT_EQ(uv_thread_create(&worker_thread, worker, NULL), 0);

  uv_run(&loop, UV_RUN_DEFAULT); /* the application's main loop */

  uv_thread_join(&worker_thread);
  /* On the loop thread, outside callbacks and outside uv_run: flush
   * delivers whatever is still owed, here, and returns. */
  CHECK_OK(tether_runtime_flush(ext_rt));

  pthread_mutex_lock(&seen_mu);
  printf("host_loop: EXTERNAL: ticks seen %lld (%d calls), message \"%s\" (%d calls)\n",
         (long long)seen_ticks, tick_calls, seen_message, message_calls);
  CHECK_INT_EQ(seen_ticks, TICKS);
  CHECK(tick_calls >= 1 && tick_calls <= TICKS);
  CHECK_STR_EQ(seen_message, "from worker #100");
  CHECK(message_calls >= 1 && message_calls <= WORKER_WRITES);
  CHECK_INT_EQ(wrong_thread_calls, 0);
  pthread_mutex_unlock(&seen_mu);

  /* Free on the loop thread, let libuv close the runtime's handle, close. */
  CHECK_OK(tether_runtime_free(ext_rt));
  {
    int64_t n = 0;
    CHECK_ERR(tether_state_get_int(ticks, &n), TETHER_ESTALE); /* every handle is stale */
  }
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_INT_EQ(uv_loop_close(&loop), 0);
}

/* ==== Part 2: TETHER_LOOP_HOST ============================================ */

static tether_runtime_t host_rt;
static tether_state_t level;
static int64_t seen_level = -1, seen_level_old = -1;
static int level_calls = 0;
static int run_inside_rc = 1; /* what tether_runtime_run returned inside a callback */

#define LEVEL_WRITES 1000

static void on_level(const tether_change_t *change, void *user_data) {
  int rc;
  (void)user_data;
  /* Running the loop from inside one of its callbacks would recurse. */
  rc = tether_runtime_run(host_rt);
  pthread_mutex_lock(&seen_mu);
  seen_level_old = value_int_or(change->old_value, -1);
  seen_level = value_int_or(change->new_value, -1);
  level_calls++;
  if (!on_loop_thread()) wrong_thread_calls++;
  if (run_inside_rc == 1) run_inside_rc = rc;
  pthread_mutex_unlock(&seen_mu);
}

static int64_t level_seen(void) {
  int64_t v;
  pthread_mutex_lock(&seen_mu);
  v = seen_level;
  pthread_mutex_unlock(&seen_mu);
  return v;
}

/* The host's loop: wait for the fd, then let the runtime do its work, until
 * the observer has seen `want`. poll's timeout only guards against a hang:
 * if the fd never wakes, that is reported once and the rest of the test goes
 * on calling tether_runtime_run without polling. */
static int fd_wakes = 1;

static void host_run_until(int fd, int64_t want) {
  long spins = 0;
  while (level_seen() != want) {
    if (fd_wakes) {
      struct pollfd p;
      int n;
      p.fd = fd;
      p.events = POLLIN;
      p.revents = 0;
      n = poll(&p, 1, 10000);
      if (!CHECK(n > 0)) {
        printf("host_loop: HOST: tether_runtime_fd did not become readable although a "
               "delivery is owed (waiting for level %lld)\n",
               (long long)want);
        fd_wakes = 0;
      }
    } else if (++spins > 100000000L) {
      CHECK(!"tether_runtime_run never delivered the owed call");
      return;
    }
    {
      int rc = tether_runtime_run(host_rt);
      if (rc != TETHER_OK) {
        CHECK_ERR(rc, TETHER_OK); /* prints the error */
        return;
      }
    }
  }
}

static void *level_writer(void *arg) {
  int i;
  (void)arg;
  for (i = 1; i <= LEVEL_WRITES; i++) CHECK_OK(tether_state_set_int(level, 100 + i));
  return NULL;
}

static void *try_free_elsewhere(void *arg) {
  (void)arg;
  CHECK_ERR(tether_runtime_free(host_rt), TETHER_ETHREAD);
  return NULL;
}

static void part_host(void) {
  tether_runtime_options_t opts;
  tether_observer_t obs;
  pthread_t t;
  int fd = -1, calls;

  loop_thread = uv_thread_self(); /* we will call tether_runtime_run here */
  tether_runtime_options_init(&opts);
  opts.mode = TETHER_LOOP_HOST;
  if (!CHECK_OK(tether_runtime_new(&opts, &host_rt))) return;
  CHECK_OK(tether_runtime_fd(host_rt, &fd));
  CHECK(fd >= 0);
  CHECK_OK(tether_state_new_int(host_rt, 0, 0, &level));
  CHECK_OK(tether_observe(level, NULL, 0, on_level, NULL, NULL, &obs));

  /* A write; nothing is delivered until the host runs the loop. */
  CHECK_OK(tether_state_set_int(level, 1));
  pthread_mutex_lock(&seen_mu);
  CHECK_INT_EQ(level_calls, 0);
  pthread_mutex_unlock(&seen_mu);
  host_run_until(fd, 1);
  pthread_mutex_lock(&seen_mu);
  CHECK_INT_EQ(level_calls, 1);
  CHECK_INT_EQ(seen_level_old, 0);
  CHECK_INT_EQ(run_inside_rc, TETHER_EBUSY);
  pthread_mutex_unlock(&seen_mu);

  /* Three writes before the host runs: one call, 1 -> 4 (coalesced). */
  CHECK_OK(tether_state_set_int(level, 2));
  CHECK_OK(tether_state_set_int(level, 3));
  CHECK_OK(tether_state_set_int(level, 4));
  host_run_until(fd, 4);
  pthread_mutex_lock(&seen_mu);
  CHECK_INT_EQ(level_calls, 2);
  CHECK_INT_EQ(seen_level_old, 1);
  pthread_mutex_unlock(&seen_mu);

  /* Another thread writes; the host thread keeps polling and running. */
  pthread_create(&t, NULL, level_writer, NULL);
  host_run_until(fd, 100 + LEVEL_WRITES);
  pthread_join(t, NULL);
  /* Flush on the loop thread delivers anything still owed and returns. */
  CHECK_OK(tether_runtime_flush(host_rt));
  pthread_mutex_lock(&seen_mu);
  calls = level_calls;
  printf("host_loop: HOST: level seen %lld after %d calls\n", (long long)seen_level, calls);
  CHECK_INT_EQ(seen_level, 100 + LEVEL_WRITES);
  CHECK(calls >= 3 && calls <= 2 + LEVEL_WRITES);
  CHECK_INT_EQ(wrong_thread_calls, 0);
  pthread_mutex_unlock(&seen_mu);

  /* A HOST runtime is freed on the thread that runs it. */
  pthread_create(&t, NULL, try_free_elsewhere, NULL);
  pthread_join(t, NULL);
  CHECK_OK(tether_runtime_free(host_rt));
  CHECK_ERR(tether_runtime_run(host_rt), TETHER_ESTALE);
}

/* Registered in cases.h: the whole story of the lesson of the same name,
 * with every check it made when it was the lesson itself. */
TEST_CASE(scenario_host_loop) {
  part_external();
  part_host();
  return check_report("host_loop");
}
