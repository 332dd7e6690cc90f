/* Exposes the public header to Swift (so the @_cdecl exports use the very
 * types C programs see) plus the library's private per-thread state. */
#ifndef CTETHER_H
#define CTETHER_H

#include "../../../include/tether.h"

#define TETHER_INTERNAL __attribute__((visibility("hidden")))

/* How many runtimes one thread can be delivering callbacks for at once
 * (a callback of runtime A writing runtime B with SYNC observers nests). */
#define TETHER_INTERNAL_MAX_NESTING 16

/* Per-thread state. Thread-local in C because Swift has no cheap native
 * thread-local storage and the error message must outlive the failing call.
 * The callback context is read on every write and every read inside a
 * callback, so it is initial-exec TLS (a %fs-relative load, no
 * __tls_get_addr call; profiled); it is small enough (456 bytes) for the
 * static TLS reserve even when libtether.so is loaded with dlopen. */
typedef struct tether_internal_tls {
  uint64_t runtime[TETHER_INTERNAL_MAX_NESTING]; /* runtime handle ids, innermost last */
  uint32_t round[TETHER_INTERNAL_MAX_NESTING];   /* round a write from that callback gets */
  /* What caused that callback: the transaction's metadata object (borrowed,
   * kept alive by the delivery that runs the callback) and the wave. */
  const void *meta[TETHER_INTERNAL_MAX_NESTING];
  uint64_t wave[TETHER_INTERNAL_MAX_NESTING];
} tether_internal_tls_t;

extern __thread tether_internal_tls_t tether_internal_context TETHER_INTERNAL __attribute__((tls_model("initial-exec")));

static inline tether_internal_tls_t *tether_internal_tls(void) { return &tether_internal_context; }
/* The calling thread's identity (Engine.currentThread): its context's address. */
static inline uintptr_t tether_internal_thread_id(void) { return (uintptr_t)&tether_internal_context; }

/* Entry accessors. Swift reaching into these fixed arrays through tuple
 * pointers copied the whole 128-byte array in and out per access (memcpy,
 * profiled); plain C indexing is one load or store. */
static inline uint32_t tether_internal_entry_round(unsigned i) { return tether_internal_context.round[i]; }
static inline const void *tether_internal_entry_meta(unsigned i) { return tether_internal_context.meta[i]; }
static inline uint64_t tether_internal_entry_wave(unsigned i) { return tether_internal_context.wave[i]; }
/* The innermost entry of `runtime`, or -1: scanned from the top. */
static inline int tether_internal_find_entry(uint64_t runtime, unsigned depth) {
  while (depth > 0) {
    depth--;
    if (tether_internal_context.runtime[depth] == runtime) return (int)depth;
  }
  return -1;
}

/* Entering and leaving a callback of a runtime, each in one inline call (the
 * TLS base is found once per call, where separate accessors found it for
 * every field; profiled at about 20 instructions per callback). A callback
 * nested in one of the same runtime reuses the innermost entry, saving its
 * round and cause for the leave; otherwise a new entry is pushed, unless
 * TETHER_INTERNAL_MAX_NESTING runtimes are already nested (refused). */
typedef struct tether_internal_entry_saved {
  uint32_t how;  /* TETHER_INTERNAL_PUSHED, _REPLACED or _REFUSED */
  uint32_t round;
  const void *meta;
  uint64_t wave;
} tether_internal_entry_saved_t;
#define TETHER_INTERNAL_PUSHED 0u
#define TETHER_INTERNAL_REPLACED 1u
#define TETHER_INTERNAL_REFUSED 2u

/* How many callbacks this thread is inside (the entries used in
 * tether_internal_context), and its open transactions plus entered scopes
 * in every runtime: one word, so the typed getters' and setters' "is this
 * thread plain?" is one load (tether_internal_thread_busy). */
typedef union tether_internal_counts {
  struct { uint32_t depth, contexts; } each;
  uint64_t both;
} tether_internal_counts_t;
extern __thread tether_internal_counts_t tether_internal_counts TETHER_INTERNAL __attribute__((tls_model("initial-exec")));

/* A new innermost entry (tether_internal_enter's own, when the innermost
 * is another runtime's), and for a caller that knows the innermost entry is not
 * `runtime`'s (the SYNC calls a write from outside that runtime's callbacks
 * owes): always a new entry, nothing to save. Zero when nesting is too
 * deep (nothing entered); tether_internal_pop undoes a nonzero one. */
static inline int tether_internal_push(uint64_t runtime, uint32_t round, const void *meta, uint64_t wave) {
  tether_internal_tls_t *t = &tether_internal_context;
  unsigned d = tether_internal_counts.each.depth;
  if (d >= TETHER_INTERNAL_MAX_NESTING) return 0;
  t->runtime[d] = runtime;
  t->round[d] = round;
  t->meta[d] = meta;
  t->wave[d] = wave;
  tether_internal_counts.each.depth = d + 1;
  return 1;
}

static inline tether_internal_entry_saved_t tether_internal_enter(uint64_t runtime, uint32_t round,
                                                                  const void *meta, uint64_t wave) {
  tether_internal_tls_t *t = &tether_internal_context;
  unsigned d = tether_internal_counts.each.depth;
  tether_internal_entry_saved_t saved = {TETHER_INTERNAL_PUSHED, 0, 0, 0};
  if (d > 0 && t->runtime[d - 1] == runtime) {
    saved.how = TETHER_INTERNAL_REPLACED;
    saved.round = t->round[d - 1];
    saved.meta = t->meta[d - 1];
    saved.wave = t->wave[d - 1];
    t->round[d - 1] = round;
    t->meta[d - 1] = meta;
    t->wave[d - 1] = wave;
    return saved;
  }
  if (!tether_internal_push(runtime, round, meta, wave)) saved.how = TETHER_INTERNAL_REFUSED;
  return saved;
}

static inline void tether_internal_leave(tether_internal_entry_saved_t saved) {
  if (saved.how == TETHER_INTERNAL_PUSHED) {
    tether_internal_counts.each.depth--;
  } else if (saved.how == TETHER_INTERNAL_REPLACED) {
    tether_internal_tls_t *t = &tether_internal_context;
    unsigned d = tether_internal_counts.each.depth - 1;
    t->round[d] = saved.round;
    t->meta[d] = saved.meta;
    t->wave[d] = saved.wave;
  }
}

static inline void tether_internal_pop(void) { tether_internal_counts.each.depth--; }

/* How many callbacks deep this thread is (in any runtime). Read on every
 * write, so it lives apart from the rest in initial-exec TLS: a plain
 * %fs-relative load instead of a __tls_get_addr call (profiled). */
static inline unsigned tether_internal_get_depth(void) { return tether_internal_counts.each.depth; }

/* Open transactions plus entered scopes of this thread, in every runtime:
 * while 0 (nearly always), reads and writes skip looking for them. */
static inline unsigned tether_internal_get_contexts(void) { return tether_internal_counts.each.contexts; }
static inline void tether_internal_set_contexts(unsigned n) { tether_internal_counts.each.contexts = n; }

/* The owner thread of the single-threaded runtime in each runtime slot, or
 * 0. Read on every handle lookup before any lock is taken (a single-threaded
 * runtime takes none), and written when such a runtime is made or freed, so
 * it is atomic: one plain load on x86. */
#define TETHER_INTERNAL_MAX_RUNTIMES 1024
extern uintptr_t tether_internal_slot_owners[TETHER_INTERNAL_MAX_RUNTIMES] TETHER_INTERNAL;
static inline uintptr_t tether_internal_slot_owner(int slot) {
  return __atomic_load_n(&tether_internal_slot_owners[slot], __ATOMIC_ACQUIRE);
}
static inline void tether_internal_set_slot_owner(int slot, uintptr_t owner) {
  __atomic_store_n(&tether_internal_slot_owners[slot], owner, __ATOMIC_RELEASE);
}

/* The runtime slots (RuntimeSlot objects, never freed), by index: filled
 * once, before the first runtime is made. Read on every handle lookup; a
 * Swift static would pay a swift_once check there (profiled). NULL: no
 * runtime was ever made, so no handle can be valid. */
extern void *tether_internal_slot_objects[TETHER_INTERNAL_MAX_RUNTIMES] TETHER_INTERNAL;
static inline void *tether_internal_slot_object(int slot) {
  return __atomic_load_n(&tether_internal_slot_objects[slot], __ATOMIC_ACQUIRE);
}
static inline void tether_internal_set_slot_object(int slot, void *object) {
  __atomic_store_n(&tether_internal_slot_objects[slot], object, __ATOMIC_RELEASE);
}

/* Set when a handle lookup was refused because the handle's runtime is
 * single-threaded and owned by another thread: the error reported is then
 * TETHER_ETHREAD, not TETHER_ESTALE. */
extern __thread unsigned tether_internal_wrong_thread TETHER_INTERNAL __attribute__((tls_model("initial-exec")));
static inline unsigned tether_internal_take_wrong_thread(void) {
  unsigned w = tether_internal_wrong_thread;
  tether_internal_wrong_thread = 0;
  return w;
}
static inline void tether_internal_set_wrong_thread(unsigned w) { tether_internal_wrong_thread = w; }

/* Counts failures on this thread, so a caller can tell whether the message
 * in tls.message was written during a given callback. */
extern __thread unsigned tether_internal_errors TETHER_INTERNAL __attribute__((tls_model("initial-exec")));
static inline unsigned tether_internal_error_count(void) { return tether_internal_errors; }

/* Stores the thread's last error message (len bytes, truncated to fit). */
TETHER_INTERNAL void tether_internal_set_message(const char *msg, size_t len);

/* Callbacks nest when a compute callback reads a computed that must be
 * computed first (a fresh chain is as deep as it is long). Below this much
 * free stack the runtime refuses to nest further (TETHER_ERANGE) instead of
 * overflowing. */
#define TETHER_INTERNAL_STACK_RESERVE (256u * 1024u)

/* The lowest usable address of this thread's stack, found on first use
 * (1: unknown). Asked before every compute callback, so inline with
 * initial-exec TLS (a __tls_get_addr call per recompute, profiled). */
extern __thread char *tether_internal_stack_low TETHER_INTERNAL __attribute__((tls_model("initial-exec")));
TETHER_INTERNAL int tether_internal_stack_probe(void);

/* 1 when this thread has less than TETHER_INTERNAL_STACK_RESERVE stack left. */
static inline int tether_internal_stack_is_low(void) {
  char *low = tether_internal_stack_low;
  char *here = (char *)__builtin_frame_address(0);
  if (!low) return tether_internal_stack_probe();
  if (low == (char *)1) return 0; /* unknown: do not refuse */
  return (size_t)(here - low) < TETHER_INTERNAL_STACK_RESERVE;
}

/* Asymmetric fences (TetherCore/GraphDirect.swift): a removal racing the
 * calls a writer makes without the lock pays for the store-load fence of
 * both sides with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), so the
 * writer's side is a compiler barrier. 1 when this process registered for
 * it (once, on first use) and the build is not under ThreadSanitizer,
 * which does not model membarrier; 0: both sides use sequentially
 * consistent operations. TETHER_SYMMETRIC_FENCES=1 in the environment
 * forces 0 (to test that path). */
TETHER_INTERNAL int tether_internal_asymmetric_fences(void);
/* Every running thread of this process executes a full memory fence
 * before this returns (membarrier). Only when
 * tether_internal_asymmetric_fences() is 1. */
TETHER_INTERNAL void tether_internal_heavy_fence(void);

/* Locks. The graph lock is taken once or twice per call on every hot path
 * (a read inside a compute callback, a write, each delivered call), and
 * pthread_mutex_lock/unlock cost 57 instructions a pair there (type
 * dispatch, owner and count bookkeeping; profiled at 12% of a recompute).
 * This is the classic three-state futex lock (0 free, 1 held, 2 held with
 * waiters): taking and releasing a free lock is one atomic instruction
 * each, inline; only contention goes to the kernel. */
typedef uint32_t tether_internal_lock_t;

TETHER_INTERNAL void tether_internal_lock_wait(tether_internal_lock_t *l);
TETHER_INTERNAL void tether_internal_lock_wake(tether_internal_lock_t *l);

static inline void tether_internal_lock(tether_internal_lock_t *l) {
  uint32_t free_ = 0;
  if (!__atomic_compare_exchange_n(l, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    tether_internal_lock_wait(l);
}

static inline int tether_internal_trylock(tether_internal_lock_t *l) {
  uint32_t free_ = 0;
  return __atomic_compare_exchange_n(l, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void tether_internal_unlock(tether_internal_lock_t *l) {
  if (__atomic_exchange_n(l, 0, __ATOMIC_RELEASE) == 2) tether_internal_lock_wake(l);
}

/* tether_internal_unlock in two halves, for a caller that must make the wake
 * its last act (a tail call, so that its common path keeps no stack frame:
 * PlainAccess.swift): releases, and returns nonzero when a waiter must be
 * woken with tether_internal_lock_wake or tether_internal_lock_wake_ok. */
static inline int tether_internal_release(tether_internal_lock_t *l) {
  return __atomic_exchange_n(l, 0, __ATOMIC_RELEASE) == 2;
}
/* tether_internal_lock_wake, then 0 (TETHER_OK) for the caller to return. */
TETHER_INTERNAL int tether_internal_lock_wake_ok(tether_internal_lock_t *l);

/* A guarded lock: a lock word that changes only while another lock, its
 * guard, is held. The delivery lock is one (Engine.deliveryLock, guarded by
 * the graph lock): every thread takes and lets go of it while holding the
 * graph lock anyway, so both are a plain load and store instead of an
 * atomic read-modify-write (two of a SYNC write's six; an uncontended
 * cmpxchg + xchg pair is ~4.7 ns on this machine, docs/performance.md). It
 * is held without its guard while callbacks run. 0 free, 1 held, 2 held
 * and maybe waited for. Every function here is called with the guard held. */
static inline int tether_internal_guarded_trylock(tether_internal_lock_t *l) {
  if (__atomic_load_n(l, __ATOMIC_RELAXED) != 0) return 0;
  __atomic_store_n(l, 1, __ATOMIC_RELAXED);
  return 1;
}

/* Takes l, sleeping (with the guard released) while another thread holds
 * it. Returns with the guard held again. */
TETHER_INTERNAL void tether_internal_guarded_lock(tether_internal_lock_t *l, tether_internal_lock_t *guard);

/* Lets go of l; nonzero when a waiter must be woken (tether_internal_lock_wake),
 * best once the guard is released too, so the waiter does not wake into it. */
static inline int tether_internal_guarded_release(tether_internal_lock_t *l) {
  uint32_t was = __atomic_load_n(l, __ATOMIC_RELAXED);
  __atomic_store_n(l, 0, __ATOMIC_RELAXED);
  return was == 2;
}

/* The graph lock of each runtime slot (its RuntimeSlot's Lock, never freed),
 * published beside the slot objects for the typed getters' and setters'
 * plain path (PlainAccess.swift): one load, where reaching it through the
 * slot object took two and a check that the lock is enabled (a slot's lock
 * always is). NULL until the slots are made, and while a single-threaded
 * runtime lives in the slot: then the plain path goes to its owner check
 * (tether_internal_slot_owner), and a thread-safe runtime's call, the
 * common one, pays no owner check (issue 16: four instructions a call).
 * Set and cleared under the slot's lock with that runtime. */
extern tether_internal_lock_t *tether_internal_slot_locks[TETHER_INTERNAL_MAX_RUNTIMES] TETHER_INTERNAL;
static inline tether_internal_lock_t *tether_internal_slot_lock(int slot) {
  return __atomic_load_n(&tether_internal_slot_locks[slot], __ATOMIC_ACQUIRE);
}
static inline void tether_internal_set_slot_lock(int slot, tether_internal_lock_t *lock) {
  __atomic_store_n(&tether_internal_slot_locks[slot], lock, __ATOMIC_RELEASE);
}

/* The graph (a TetherCore Graph object, unretained) of the live thread-safe
 * runtime in each slot, or NULL: set and cleared with the slot's runtime,
 * under the slot's lock, so a reader holding that lock finds it in one
 * load. A single-threaded runtime's graph is kept apart (below), so a
 * thread that took the slot's lock can never reach a graph it must not
 * touch without that runtime's owner thread. */
extern void *tether_internal_slot_graphs[TETHER_INTERNAL_MAX_RUNTIMES] TETHER_INTERNAL;
static inline void *tether_internal_slot_graph(int slot) { return tether_internal_slot_graphs[slot]; }
static inline void tether_internal_set_slot_graph(int slot, void *graph) { tether_internal_slot_graphs[slot] = graph; }

/* The graph of the live single-threaded runtime in each slot, or NULL: set
 * and cleared by its owner thread (which makes and frees it), read by that
 * thread only, after tether_internal_slot_owner said it is the owner. */
extern void *tether_internal_slot_single_graphs[TETHER_INTERNAL_MAX_RUNTIMES] TETHER_INTERNAL;
static inline void *tether_internal_slot_single_graph(int slot) { return tether_internal_slot_single_graphs[slot]; }
static inline void tether_internal_set_slot_single_graph(int slot, void *graph) {
  tether_internal_slot_single_graphs[slot] = graph;
}

/* The runtime handle id of the innermost callback this thread runs
 * (depth > 0): a read from a callback of that runtime may take the plain
 * path (tracked when it is a compute callback). */
static inline uint64_t tether_internal_innermost_runtime(unsigned depth) {
  return tether_internal_context.runtime[depth - 1];
}

/* Nonzero while this thread runs a callback or has a transaction or scope
 * open in any runtime: then reads may be tracked or see staged values, and
 * writes may be staged, so the plain path steps aside. */
static inline unsigned tether_internal_thread_busy(void) {
  return tether_internal_counts.both != 0;
}

/* A condition variable for these locks: waiters sleep on a sequence number
 * that every broadcast advances. Like pthread_cond_wait, a wait may return
 * without a broadcast; callers re-check their condition in a loop. */
typedef uint32_t tether_internal_cond_t;
TETHER_INTERNAL void tether_internal_cond_wait(tether_internal_cond_t *c, tether_internal_lock_t *l);
TETHER_INTERNAL void tether_internal_cond_broadcast(tether_internal_cond_t *c);
/* tether_internal_cond_wait that gives up after ms milliseconds. */
TETHER_INTERNAL void tether_internal_cond_timedwait(tether_internal_cond_t *c, tether_internal_lock_t *l, uint32_t ms);

#endif
