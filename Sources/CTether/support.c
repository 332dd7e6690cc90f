/* The parts of the C face that are plain C: version strings, error strings
 * and the per-thread state they read. */
#define _GNU_SOURCE
#include "CTether.h"

#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char message[1024];
__thread tether_internal_counts_t tether_internal_counts __attribute__((tls_model("initial-exec")));
__thread tether_internal_tls_t tether_internal_context __attribute__((tls_model("initial-exec")));

__thread unsigned tether_internal_errors __attribute__((tls_model("initial-exec")));
__thread unsigned tether_internal_wrong_thread __attribute__((tls_model("initial-exec")));
uintptr_t tether_internal_slot_owners[TETHER_INTERNAL_MAX_RUNTIMES];
void *tether_internal_slot_objects[TETHER_INTERNAL_MAX_RUNTIMES];
tether_internal_lock_t *tether_internal_slot_locks[TETHER_INTERNAL_MAX_RUNTIMES];
void *tether_internal_slot_graphs[TETHER_INTERNAL_MAX_RUNTIMES];
void *tether_internal_slot_single_graphs[TETHER_INTERNAL_MAX_RUNTIMES];

void tether_internal_set_message(const char *msg, size_t len) {
  tether_internal_errors++;
  if (len >= sizeof message) len = sizeof message - 1;
  memcpy(message, msg, len);
  message[len] = '\0';
}

const char *tether_last_error(void) { return message; }

const char *tether_version(void) { return TETHER_VERSION_STRING; }

unsigned tether_version_hex(void) { return TETHER_VERSION_HEX; }

const char *tether_strerror(int code) {
  switch (code) {
  case TETHER_OK: return "success";
  case TETHER_EINVAL: return "invalid argument";
  case TETHER_ESTALE: return "stale handle";
  case TETHER_ETYPE: return "wrong value type";
  case TETHER_EPATH: return "malformed path";
  case TETHER_ENOTFOUND: return "path not found";
  case TETHER_EJSON: return "malformed JSON";
  case TETHER_ERANGE: return "out of range";
  case TETHER_ENOMEM: return "out of memory";
  case TETHER_ELOOP: return "callback feedback loop";
  case TETHER_EBUSY: return "would wait on itself";
  case TETHER_ETHREAD: return "wrong thread";
  case TETHER_EUV: return "libuv error";
  case TETHER_EREADONLY: return "read-only";
  case TETHER_ECYCLE: return "dependency cycle";
  case TETHER_EREJECTED: return "rejected by a validator";
  case TETHER_EUNTRUSTED: return "untrusted daemon socket";
  case TETHER_ETIMEDOUT: return "timed out waiting for the daemon";
  default: return "unknown error";
  }
}

__thread char *tether_internal_stack_low __attribute__((tls_model("initial-exec")));

/* Finds this thread's stack bounds once, then answers as the inline check does. */
int tether_internal_stack_probe(void) {
  pthread_attr_t attr;
  void *addr = NULL;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  tether_internal_stack_low = addr ? (char *)addr : (char *)1;
  return tether_internal_stack_is_low();
}

/* ---- locks (see CTether.h) ---------------------------------------------- */

static void futex_wait(uint32_t *addr, uint32_t expected) {
  syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(uint32_t *addr, int count) {
  syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* The lock was taken: spin briefly (holders keep it for a few hundred
 * instructions), then mark it contended (2) and sleep until it is free. */
void tether_internal_lock_wait(tether_internal_lock_t *l) {
  int spins;
  for (spins = 0; spins < 100; spins++) {
    uint32_t free_ = 0;
    if (__atomic_load_n(l, __ATOMIC_RELAXED) == 0 &&
        __atomic_compare_exchange_n(l, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return;
    cpu_relax();
  }
  /* Taking it as 2 is conservative: the unlock may wake nobody. */
  while (__atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE) != 0) futex_wait(l, 2);
}

void tether_internal_lock_wake(tether_internal_lock_t *l) { futex_wake(l, 1); }

int tether_internal_lock_wake_ok(tether_internal_lock_t *l) {
  tether_internal_lock_wake(l);
  return 0;
}

/* The guard makes the check and the mark one step: a releaser, which
 * holds the guard too, either ran before (the word is 0: taken at once) or
 * runs after the mark (it sees 2 and wakes a sleeper; a wake that comes
 * before the sleep makes futex_wait return at once, the word no longer 2). */
void tether_internal_guarded_lock(tether_internal_lock_t *l, tether_internal_lock_t *guard) {
  if (tether_internal_guarded_trylock(l)) return;
  do {
    __atomic_store_n(l, 2, __ATOMIC_RELAXED);
    tether_internal_unlock(guard);
    futex_wait(l, 2);
    tether_internal_lock(guard);
  } while (__atomic_load_n(l, __ATOMIC_RELAXED) != 0);
  /* Others may sleep on it too: taken as 2, so its release wakes one. */
  __atomic_store_n(l, 2, __ATOMIC_RELAXED);
}

void tether_internal_cond_wait(tether_internal_cond_t *c, tether_internal_lock_t *l) {
  uint32_t seen = __atomic_load_n(c, __ATOMIC_ACQUIRE);
  tether_internal_unlock(l);
  futex_wait(c, seen); /* returns at once if a broadcast came in between */
  /* Other waiters may be woken with us: take the lock as contended. */
  while (__atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE) != 0) futex_wait(l, 2);
}

void tether_internal_cond_timedwait(tether_internal_cond_t *c, tether_internal_lock_t *l, uint32_t ms) {
  uint32_t seen = __atomic_load_n(c, __ATOMIC_ACQUIRE);
  struct timespec relative = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  tether_internal_unlock(l);
  syscall(SYS_futex, c, FUTEX_WAIT_PRIVATE, seen, &relative, NULL, 0);
  while (__atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE) != 0) futex_wait(l, 2);
}

void tether_internal_cond_broadcast(tether_internal_cond_t *c) {
  __atomic_add_fetch(c, 1, __ATOMIC_RELEASE);
  futex_wake(c, INT_MAX);
}

/* ---- asymmetric fences (CTether.h) ---------------------------------------- */

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TETHER_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TETHER_UNDER_TSAN 1
#endif

static pthread_once_t fences_once = PTHREAD_ONCE_INIT;
static int fences_asymmetric;

static void fences_register(void) {
#ifdef TETHER_UNDER_TSAN
  fences_asymmetric = 0;
#else
  const char *force = getenv("TETHER_SYMMETRIC_FENCES");
  if (force != NULL && force[0] == '1') return;
  /* Registration is per process and needed before the first use; a kernel
   * without it (ENOSYS, EINVAL) or a sandbox that denies it (EPERM) leaves
   * the symmetric path. */
  long supported = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return;
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) return;
  fences_asymmetric = 1;
#endif
}

int tether_internal_asymmetric_fences(void) {
  pthread_once(&fences_once, fences_register);
  return fences_asymmetric;
}

void tether_internal_heavy_fence(void) {
  /* Registered, the call cannot fail (membarrier(2)); if it did, the other
   * side would have no fence at all: stop here rather than race. */
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) abort();
}
