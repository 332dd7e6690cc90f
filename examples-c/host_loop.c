/*
 * host_loop.c — a runtime on the host's own libuv loop
 * (TETHER_LOOP_EXTERNAL): Tether adds one uv_async_t to your uv_loop_t, and
 * its observers run inside your uv_run(), on your thread. No thread of its
 * own. Its handle is unref'd: your uv_run(UV_RUN_DEFAULT) still returns
 * when your own handles are done. (TETHER_LOOP_HOST is the same for hosts
 * without libuv: poll tether_runtime_fd(), then call tether_runtime_run().)
 */
#include <stdio.h>
#include <uv.h>

#include "check.h"
#include "tether.h"

static uv_thread_t loop_thread;
static tether_state_t ticks;
static int calls;
static int64_t shown;

/* The application's own work: one write per loop iteration, three in all. */
static void tick(uv_idle_t *idle) {
  int64_t n = 0;
  tether_state_get_int(ticks, &n);
  if (n == 3) {
    uv_idle_stop(idle); /* nothing else keeps the loop alive: uv_run returns */
    return;
  }
  tether_state_set_int(ticks, n + 1);
}

static void on_tick(const tether_change_t *change, void *user_data) {
  uv_thread_t me = uv_thread_self();
  (void)user_data;
  CHECK(uv_thread_equal(&me, &loop_thread)); /* inside our uv_run, on our thread */
  tether_value_get_int(change->new_value, &shown);
  calls++;
}

int main(void) {
  uv_loop_t loop;
  uv_idle_t idle;
  tether_runtime_options_t opts;
  tether_runtime_t rt;
  tether_observer_t o;

  CHECK_INT_EQ(uv_loop_init(&loop), 0);
  loop_thread = uv_thread_self();
  tether_runtime_options_init(&opts);
  opts.mode = TETHER_LOOP_EXTERNAL;
  opts.loop = &loop;
  if (!CHECK_OK(tether_runtime_new(&opts, &rt))) return check_report("host_loop");
  CHECK_OK(tether_state_new_int(rt, 0, 0, &ticks));
  CHECK_OK(tether_observe(ticks, NULL, 0, on_tick, NULL, NULL, &o));

  uv_idle_init(&loop, &idle);
  uv_idle_start(&idle, tick);
  uv_run(&loop, UV_RUN_DEFAULT); /* the application's main loop */

  /* On the loop's thread, outside uv_run, flush delivers what is still owed. */
  CHECK_OK(tether_runtime_flush(rt));
  CHECK_INT_EQ(shown, 3);
  CHECK(calls >= 1 && calls <= 3); /* coalesced per loop turn */
  printf("host_loop: %d call(s) delivered on the host's thread, last value %lld\n", calls, (long long)shown);

  /* Freed on the loop thread; one more turn lets libuv finish closing. */
  CHECK_OK(tether_runtime_free(rt));
  uv_close((uv_handle_t *)&idle, NULL);
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_INT_EQ(uv_loop_close(&loop), 0);
  return check_report("host_loop");
}
