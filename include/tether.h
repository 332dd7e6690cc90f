/*
 * tether.h — SwiftUI's state model (@State, @Binding, @Observable,
 * withObservationTracking, transactions) as a runtime for C programs.
 *
 * Conventions (read once, they hold for every function below):
 *
 *  - Functions return int: TETHER_OK (0) or a negative TETHER_E* code.
 *    Results come back through out-parameters, which are written only on
 *    success. On failure, tether_last_error() on the same thread says what was
 *    wrong; nothing was changed ("nothing half-applied").
 *  - Handles (tether_runtime_t, tether_state_t, tether_observer_t) are small
 *    structs passed by value. They are generational ids, not pointers: using a
 *    freed or forged handle returns TETHER_ESTALE, never crashes. A
 *    zero-initialised handle ({0}) is never valid.
 *  - Values (tether_value_t) are opaque. A `tether_value_t *` returned through
 *    an out-parameter is owned by the caller and freed with tether_value_free().
 *    A `const tether_value_t *` handed to a callback is borrowed: valid only
 *    until the callback returns (copy it with tether_value_copy() to keep it).
 *  - Strings go in as pointer + length in bytes; a length of -1 means
 *    "NUL-terminated". Strings are UTF-8 and may contain NUL when a length is
 *    given. Strings come out into caller buffers, snprintf-style: at most
 *    `size` bytes are written including a terminating NUL, and `*len` (if not
 *    NULL) receives the full length, so a call with size 0 asks for the size.
 *    A truncated result is still TETHER_OK; compare *len with size.
 *  - Every callback takes `void *user_data` last. Every registration that
 *    keeps user_data also takes a tether_destroy_fn, called exactly once when
 *    the registration ends (removed, its state freed, or the runtime freed),
 *    never while a call of that registration's callback is still running.
 *  - Every function may be called from any thread, including from inside any
 *    callback. Callbacks never run concurrently with each other.
 */
#ifndef TETHER_H
#define TETHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

#define TETHER_VERSION_MAJOR 0
#define TETHER_VERSION_MINOR 1
#define TETHER_VERSION_PATCH 0
#define TETHER_VERSION_STRING "0.1.0"
/* One number that compares: 0xMMmmpp. */
#define TETHER_VERSION_HEX \
  ((TETHER_VERSION_MAJOR << 16) | (TETHER_VERSION_MINOR << 8) | TETHER_VERSION_PATCH)

/* The version of the library actually loaded, as "MAJOR.MINOR.PATCH"
 * (compare with TETHER_VERSION_STRING, the one compiled against). The string
 * is static; never free it. Never fails. */
const char *tether_version(void);

/* The loaded library's version as TETHER_VERSION_HEX would spell it. */
unsigned tether_version_hex(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum tether_error {
  TETHER_OK = 0,
  TETHER_EINVAL = -1,     /* bad argument: NULL, bad flags, invalid UTF-8  */
  TETHER_ESTALE = -2,     /* handle freed, forged, or its runtime freed    */
  TETHER_ETYPE = -3,      /* wrong value type, or a type-locked state      */
  TETHER_EPATH = -4,      /* malformed JSON Pointer, or not an array index */
  TETHER_ENOTFOUND = -5,  /* the path names no member                      */
  TETHER_EJSON = -6,      /* malformed JSON text (message has the place)   */
  TETHER_ERANGE = -7,     /* index/number out of range, insert nests > 512 */
  TETHER_ENOMEM = -8,     /* out of memory or out of handle space          */
  TETHER_ELOOP = -9,      /* callbacks kept writing: feedback loop cut     */
  TETHER_EBUSY = -10,     /* the call would wait on itself (see flush)     */
  TETHER_ETHREAD = -11,   /* called on the wrong thread (see run modes)    */
  TETHER_EUV = -12,       /* libuv reported an error (message has it)      */
  TETHER_EREADONLY = -13, /* the target refuses writes                     */
  TETHER_ECYCLE = -14,    /* a computed depends on itself                  */
  TETHER_EREJECTED = -15, /* a validator (or transform) rejected the value */
  TETHER_EUNTRUSTED = -16, /* the daemon's socket failed the trust checks  */
  TETHER_ETIMEDOUT = -17  /* the daemon did not answer in time            */
} tether_error_t;

/* A short static description of an error code ("stale handle"), or
 * "unknown error" for a code that is not a TETHER_E* value. Never NULL. */
const char *tether_strerror(int code);

/* The message of the last failing tether_ call on this thread, saying what
 * was wrong ("state 0x…: holds an int, not a string"). "" when no call has
 * failed yet on this thread. Valid until the next failing tether_ call on
 * this thread; owned by the library. Successful calls leave it unchanged. */
const char *tether_last_error(void);

/* ------------------------------------------------------------------------ */
/* Handles and callbacks                                                     */
/* ------------------------------------------------------------------------ */

typedef struct tether_runtime { uint64_t id; } tether_runtime_t;
typedef struct tether_state { uint64_t id; } tether_state_t;
typedef struct tether_observer { uint64_t id; } tether_observer_t;
typedef struct tether_computed { uint64_t id; } tether_computed_t;
typedef struct tether_effect { uint64_t id; } tether_effect_t;
typedef struct tether_tracking { uint64_t id; } tether_tracking_t;
typedef struct tether_binding { uint64_t id; } tether_binding_t;
typedef struct tether_transaction { uint64_t id; } tether_transaction_t;
typedef struct tether_scope { uint64_t id; } tether_scope_t;
typedef struct tether_remote { uint64_t id; } tether_remote_t;

/* SwiftUI's Transaction: what travels with a write to every callback the
 * write causes (observers, effects, trackings, custom binding setters,
 * validators). Handed to callbacks as a borrowed `const` pointer, valid only
 * during the callback; NULL when the write was made outside any
 * transaction. */
typedef struct tether_transaction_info {
  const char *tag;  /* a label such as "undo" or "sync"; NULL for none */
  uint64_t origin;  /* who wrote: any number the program picks (0 = unset),
                       e.g. to skip echoes of its own writes */
  void *user_data;  /* passed through untouched, never freed by tether */
} tether_transaction_info_t;

/* Releases user data when a registration ends; see the conventions above. */
typedef void (*tether_destroy_fn)(void *user_data);

/* ------------------------------------------------------------------------ */
/* Values                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum tether_type {
  TETHER_TYPE_NULL = 0,
  TETHER_TYPE_BOOL = 1,
  TETHER_TYPE_INT = 2,     /* int64_t */
  TETHER_TYPE_DOUBLE = 3,
  TETHER_TYPE_STRING = 4,  /* UTF-8, may contain NUL */
  TETHER_TYPE_BYTES = 5,   /* arbitrary bytes; JSON shows them as base64 */
  TETHER_TYPE_ARRAY = 6,
  TETHER_TYPE_OBJECT = 7   /* members keep insertion order; == ignores it */
} tether_type_t;

/* An immutable-once-shared tree of values. Equality is structural: an int
 * never equals a double, every NaN equals every NaN, objects compare as
 * unordered maps. Copies are cheap (composites are shared copy-on-write). */
typedef struct tether_value tether_value_t;

/* Flags for tether_value_to_json and friends. */
#define TETHER_JSON_PRETTY 1u /* two-space indentation */

/* Constructors. Each stores a new owned value in *out (free it with
 * tether_value_free). Errors: TETHER_EINVAL when out is NULL, or (strings)
 * when str is NULL with a non-zero length or is not valid UTF-8. */
int tether_value_new_null(tether_value_t **out);
/* A bool value; see the constructor notes above. */
int tether_value_new_bool(bool b, tether_value_t **out);
/* An int64 value; see the constructor notes above. */
int tether_value_new_int(int64_t i, tether_value_t **out);
/* A double value (NaN and infinities are allowed but have no JSON form). */
int tether_value_new_double(double d, tether_value_t **out);
/* A string value copied from str (len bytes, or NUL-terminated when -1). */
int tether_value_new_string(const char *str, ptrdiff_t len, tether_value_t **out);
/* A bytes value copied from data (len bytes; data may be NULL when len is 0). */
int tether_value_new_bytes(const void *data, size_t len, tether_value_t **out);
/* An empty array. */
int tether_value_new_array(tether_value_t **out);
/* An empty object. */
int tether_value_new_object(tether_value_t **out);

/* Parses RFC 8259 JSON (len bytes, or NUL-terminated when -1) into a new
 * owned value. Integers that fit int64 become TETHER_TYPE_INT, other numbers
 * TETHER_TYPE_DOUBLE. A member name given twice in one object keeps its first
 * position and its last value. Errors: TETHER_EINVAL (NULL), TETHER_EJSON (malformed;
 * the message gives line, column and byte offset), also TETHER_EJSON when
 * arrays/objects nest deeper than 512. */
int tether_value_from_json(const char *json, ptrdiff_t len, tether_value_t **out);

/* A deep-equal copy of v, owned by the caller. Errors: TETHER_EINVAL. */
int tether_value_copy(const tether_value_t *v, tether_value_t **out);

/* Frees an owned value. NULL is ignored. Never pass a borrowed value (the
 * `const` pointers handed to callbacks). */
void tether_value_free(tether_value_t *v);

/* The type of v as a tether_type_t (>= 0), or TETHER_EINVAL when v is NULL. */
int tether_value_type(const tether_value_t *v);

/* 1 when a and b are structurally equal, 0 when not, TETHER_EINVAL when
 * either is NULL. */
int tether_value_equal(const tether_value_t *a, const tether_value_t *b);

/* Scalar readers. Errors: TETHER_EINVAL (NULL), TETHER_ETYPE when v holds
 * another type. get_double also accepts an int (converted); get_int does not
 * accept a double. */
int tether_value_get_bool(const tether_value_t *v, bool *out);
/* Reads an int; see the scalar reader notes above. */
int tether_value_get_int(const tether_value_t *v, int64_t *out);
/* Reads a double (or an int, converted); see the scalar reader notes above. */
int tether_value_get_double(const tether_value_t *v, double *out);

/* Copies a string value into buf, snprintf-style (see conventions); *len gets
 * the string's length in bytes. buf may be NULL when size is 0.
 * Errors: TETHER_EINVAL, TETHER_ETYPE (not a string). */
int tether_value_get_string(const tether_value_t *v, char *buf, size_t size, size_t *len);

/* Copies a bytes value into buf: min(size, length) bytes, no terminator;
 * *len gets the full length. Errors: TETHER_EINVAL, TETHER_ETYPE. */
int tether_value_get_bytes(const tether_value_t *v, void *buf, size_t size, size_t *len);

/* Number of elements (array), members (object), or bytes (string, bytes).
 * Errors: TETHER_EINVAL, TETHER_ETYPE (null, bool, int, double). */
int tether_value_length(const tether_value_t *v, size_t *out);

/* The member name at position index of an object (insertion order), copied
 * snprintf-style. Errors: TETHER_EINVAL, TETHER_ETYPE (not an object),
 * TETHER_ERANGE (index >= length). */
int tether_value_object_key(const tether_value_t *v, size_t index, char *buf, size_t size,
                            size_t *len);

/* Reads the part of v named by a JSON Pointer (RFC 6901, "" is v itself,
 * "/a/0" is element 0 of member "a") as a new owned value.
 * Errors: TETHER_EINVAL (NULL), TETHER_EPATH (malformed pointer, or a
 * non-index token on an array), TETHER_ENOTFOUND (no such member),
 * TETHER_ERANGE (index past the end), TETHER_ETYPE (a step into a scalar). */
int tether_value_get_path(const tether_value_t *v, const char *pointer, tether_value_t **out);

/* Stores a copy of item at pointer inside v (JSON Patch "add": replaces a
 * member or element, adds a new member, appends when the last token is "-" or
 * equals the array length; "" replaces v entirely). The parent must exist.
 * Errors: as tether_value_get_path, and TETHER_ERANGE when the result would
 * nest arrays/objects deeper than 512 levels; v is unchanged on error. */
int tether_value_set_path(tether_value_t *v, const char *pointer, const tether_value_t *item);

/* Removes the member or element at pointer ("" is refused: TETHER_EINVAL).
 * Errors: as tether_value_get_path; v is unchanged on error. */
int tether_value_remove_path(tether_value_t *v, const char *pointer);

/* Appends a copy of item to the array v. Errors: TETHER_EINVAL, TETHER_ETYPE,
 * TETHER_ERANGE (the result would nest deeper than 512 levels). */
int tether_value_array_append(tether_value_t *v, const tether_value_t *item);

/* Sets member key (len bytes, or NUL-terminated when -1) of the object v to a
 * copy of item, replacing an existing member in place or appending a new one.
 * Keys are compared byte for byte (no Unicode normalisation), as JSON does.
 * Errors: TETHER_EINVAL (NULL, invalid UTF-8 key), TETHER_ETYPE,
 * TETHER_ERANGE (the result would nest deeper than 512 levels). */
int tether_value_object_set(tether_value_t *v, const char *key, ptrdiff_t len,
                            const tether_value_t *item);

/* In-place setters: replace whatever v holds with a scalar. They exist so a
 * compute callback can fill its result slot without allocating. Errors:
 * TETHER_EINVAL (v NULL; set_string: str NULL with a non-zero length, or
 * invalid UTF-8). */
int tether_value_set_null(tether_value_t *v);
/* Replaces v's content with a bool; see the in-place setter notes above. */
int tether_value_set_bool(tether_value_t *v, bool b);
/* Replaces v's content with an int; see the in-place setter notes above. */
int tether_value_set_int(tether_value_t *v, int64_t i);
/* Replaces v's content with a double; see the in-place setter notes above. */
int tether_value_set_double(tether_value_t *v, double d);
/* Replaces v's content with a string (len or -1); see the notes above. */
int tether_value_set_string(tether_value_t *v, const char *str, ptrdiff_t len);
/* Replaces v's content with a copy of src (cheap: composites are shared
 * copy-on-write). Errors: TETHER_EINVAL (either NULL). */
int tether_value_assign(tether_value_t *v, const tether_value_t *src);

/* Writes v as JSON into buf, snprintf-style (see conventions). flags: 0 or
 * TETHER_JSON_PRETTY. Bytes are written as base64 strings.
 * Errors: TETHER_EINVAL (NULL, unknown flag), TETHER_ERANGE (v holds a NaN or
 * infinity, which JSON cannot represent). */
int tether_value_to_json(const tether_value_t *v, unsigned flags, char *buf, size_t size,
                         size_t *len);

/* ------------------------------------------------------------------------ */
/* Runtime                                                                   */
/* ------------------------------------------------------------------------ */

/* How the runtime's libuv loop is run. Whichever thread runs the loop is
 * "the loop thread": loop-delivered observers are called there. */
typedef enum tether_loop_mode {
  /* Default: the runtime owns a loop and runs it on its own background
   * thread ("daemon" mode). Nothing for the host to do. */
  TETHER_LOOP_THREAD = 0,
  /* The runtime owns a loop; the host drives it by calling
   * tether_runtime_run() from one thread, for example when
   * tether_runtime_fd() polls readable. Until the first run call, the
   * thread that created the runtime counts as its loop thread. */
  TETHER_LOOP_HOST = 1,
  /* The host hands in its own uv_loop_t (options.loop) and runs it with
   * uv_run() as usual; the runtime adds one uv_async_t handle to it.
   * tether_runtime_new and tether_runtime_free must then be called on the
   * thread that runs that loop, while uv_run is not executing elsewhere.
   * After tether_runtime_free, run the loop once more (uv_run with
   * UV_RUN_NOWAIT) so libuv can finish closing the handle before
   * uv_loop_close(). */
  TETHER_LOOP_EXTERNAL = 2
} tether_loop_mode_t;

struct uv_loop_s; /* from <uv.h>; only a pointer is stored */

typedef struct tether_runtime_options {
  tether_loop_mode_t mode;   /* default TETHER_LOOP_THREAD */
  struct uv_loop_s *loop;    /* TETHER_LOOP_EXTERNAL only: the host's loop */
  /* How many rounds of callback-caused writes one delivery may chain before a
   * write from a callback fails with TETHER_ELOOP (0 means the default, 100).
   * Ends observer ping-pong with an error instead of a hang. */
  unsigned max_rounds;
  unsigned flags;            /* TETHER_RUNTIME_*; default 0 */
  unsigned reserved[7];      /* zero; room for later options */
} tether_runtime_options_t;

/* Runtime flags (tether_runtime_options_t.flags). */
/* An opt-in single-threaded runtime, for hot paths in programs that touch a
 * runtime from one thread only (Qt's bindable properties make the same
 * trade): no locks are taken at all. Every call with a handle of this
 * runtime must come from the thread that created it, which is also its loop
 * thread, so the mode must be TETHER_LOOP_HOST or TETHER_LOOP_EXTERNAL
 * (TETHER_EINVAL with TETHER_LOOP_THREAD). A call from any other thread
 * fails with TETHER_ETHREAD and touches nothing. Everything else (SYNC and
 * loop delivery, rounds, transactions, flush) behaves as in a thread-safe
 * runtime. */
#define TETHER_RUNTIME_SINGLE_THREAD 1u

/* Fills *opts with the defaults. Call it before setting fields, so fields
 * added in later versions get their defaults too. NULL is ignored. */
void tether_runtime_options_init(tether_runtime_options_t *opts);

/* Creates a runtime. opts may be NULL for the defaults (own background loop
 * thread). Errors: TETHER_EINVAL (out NULL, bad mode, EXTERNAL without a
 * loop, unknown flag, TETHER_RUNTIME_SINGLE_THREAD with TETHER_LOOP_THREAD,
 * non-zero reserved field), TETHER_ENOMEM (more than 1023 runtimes
 * alive at once), TETHER_EUV (libuv could not start the loop or thread). */
int tether_runtime_new(const tether_runtime_options_t *opts, tether_runtime_t *out);

/* Frees a runtime: stops and joins its loop thread (TETHER_LOOP_THREAD),
 * frees every state, observer, computed, effect and tracking in it, runs the
 * owed cleanup of every effect that ran, and calls each destroy function
 * exactly once (on the calling thread). Callbacks not yet delivered are
 * dropped: call tether_runtime_flush() first to deliver them. Every handle
 * of the runtime becomes stale at once.
 * May be called from inside a callback of this runtime: the handles go stale
 * at once and the teardown completes right after the outermost running
 * callback returns (on that thread).
 * TETHER_LOOP_HOST and TETHER_LOOP_EXTERNAL runtimes must be freed on the
 * loop thread (TETHER_ETHREAD otherwise).
 * Errors: TETHER_ESTALE (already freed or forged), TETHER_ETHREAD. */
int tether_runtime_free(tether_runtime_t rt);

/* Blocks until every callback owed for writes made before this call has run,
 * including the rounds those callbacks cause. This is how tests wait: never
 * sleep. Called on the loop thread outside a callback (TETHER_LOOP_HOST or
 * TETHER_LOOP_EXTERNAL hosts), it delivers the owed callbacks itself and
 * returns. Errors: TETHER_ESTALE; TETHER_EBUSY when called from inside a
 * callback while loop deliveries are owed (it would wait on itself);
 * TETHER_ELOOP when the owed callbacks hit max_rounds; TETHER_EBUSY when a
 * batch is open and deliveries are owed (they wait for tether_batch_end);
 * TETHER_ETIMEDOUT when writes to remote states made inside callbacks were
 * not acknowledged and applied within their remote's timeout (see "Remote
 * states"). */
int tether_runtime_flush(tether_runtime_t rt);

/* TETHER_LOOP_HOST: runs the runtime's loop once without blocking
 * (UV_RUN_NOWAIT), delivering owed loop callbacks on the calling thread, which
 * becomes the loop thread. The host must call it from one thread only.
 * Errors: TETHER_ESTALE, TETHER_EINVAL (not a TETHER_LOOP_HOST runtime),
 * TETHER_EBUSY (called from inside one of its callbacks). */
int tether_runtime_run(tether_runtime_t rt);

/* TETHER_LOOP_HOST: a file descriptor that polls readable (poll/epoll/
 * select, or a uv_poll_t / GSource / LVGL timer in the host) when
 * tether_runtime_run() has work to do. Owned by the runtime: do not close it.
 * Errors: TETHER_ESTALE, TETHER_EINVAL (NULL, or not a TETHER_LOOP_HOST). */
int tether_runtime_fd(tether_runtime_t rt, int *out);

/* The runtime's revision: advanced by one by every write that changed a
 * value (a "commit"). Errors: TETHER_ESTALE, TETHER_EINVAL. */
int tether_runtime_revision(tether_runtime_t rt, uint64_t *out);

/* The runtime's graph now, as Graphviz DOT text (`dot -Tpng` draws it),
 * written into buf snprintf-style (see conventions): the caller owns the
 * buffer, so there is no free function to pair with it. The graph may grow
 * between a sizing call (size 0) and the next, so loop until *len < size:
 *
 *     size_t len = 0, size = 0; char *buf = NULL;
 *     tether_runtime_graph_dot(rt, NULL, 0, &len);
 *     do { size = len + 1; buf = realloc(buf, size);
 *          tether_runtime_graph_dot(rt, buf, size, &len); } while (len >= size);
 *
 * Nodes: states, computeds, effects, trackings, observers, bindings and
 * scopes, each with its handle ("0x...") as DOT id; labelled with the
 * state's descriptor name when one is set, else kind and handle. Edges go
 * from what is read to its reader, labelled with the JSON Pointer read (no
 * label: the whole value); a scope's (or an effect run's) "owns" edges are
 * dotted. A computed, effect or tracking that is stale, never evaluated,
 * queued or failed is drawn dashed and red, with the word in its label.
 * The same facts are in attributes for programs (dot -Tjson keeps them):
 * tether_kind, tether_handle, tether_name, tether_marks on nodes;
 * tether_edge ("reads", "observes", "binds", "owns") and tether_pointer on
 * edges. Names are escaped (quotes, backslashes, newlines, control
 * characters), so any name gives valid DOT.
 * Any thread, and from inside any callback (the shape is copied under the
 * runtime's lock, then written without it).
 * Errors: TETHER_ESTALE, TETHER_EINVAL (buf NULL with size > 0). */
int tether_runtime_graph_dot(tether_runtime_t rt, char *buf, size_t size, size_t *len);

/* ------------------------------------------------------------------------ */
/* States                                                                    */
/* ------------------------------------------------------------------------ */

/* State flags for tether_state_new. */
/* Refuse writes of another type (TETHER_ETYPE). An int written to a
 * type-locked double state is stored as a double. The lock is on the type of
 * the whole value: writes below the root (tether_state_set_path) are not
 * type-checked, but cannot change the root's type either. */
#define TETHER_STATE_LOCK_TYPE 1u

/* Creates a state in rt holding a copy of initial (NULL means null), the
 * SwiftUI @State: the runtime owns the storage, the handle only names it.
 * Errors: TETHER_ESTALE (rt), TETHER_EINVAL (out NULL, unknown flag),
 * TETHER_ENOMEM (more than 16 million live states and observers). */
int tether_state_new(tether_runtime_t rt, const tether_value_t *initial, unsigned flags,
                     tether_state_t *out);

/* Convenience: tether_state_new with an int initial value. */
int tether_state_new_int(tether_runtime_t rt, int64_t initial, unsigned flags,
                         tether_state_t *out);
/* Convenience: tether_state_new with a double initial value. */
int tether_state_new_double(tether_runtime_t rt, double initial, unsigned flags,
                            tether_state_t *out);
/* Convenience: tether_state_new with a bool initial value. */
int tether_state_new_bool(tether_runtime_t rt, bool initial, unsigned flags,
                          tether_state_t *out);
/* Convenience: tether_state_new with a string initial value (len or -1);
 * also TETHER_EINVAL for invalid UTF-8. */
int tether_state_new_string(tether_runtime_t rt, const char *str, ptrdiff_t len, unsigned flags,
                            tether_state_t *out);
/* Convenience: tether_state_new with a value parsed from JSON (len or -1);
 * also TETHER_EJSON. */
int tether_state_new_json(tether_runtime_t rt, const char *json, ptrdiff_t len, unsigned flags,
                          tether_state_t *out);

/* Frees a state and every observer on it (each destroy function is called
 * once, on this thread, or when that observer's running callback returns),
 * and its descriptor (whose destroy runs too). From a validator:
 * TETHER_EBUSY.
 * Its observers' undelivered calls are dropped. Computeds, effects and
 * trackings that read it are woken and re-evaluated, and then get
 * TETHER_ESTALE when they read it. Errors: TETHER_ESTALE. */
int tether_state_free(tether_state_t s);

/* The type of the value s holds now, into *out. Errors: TETHER_ESTALE,
 * TETHER_EINVAL. */
int tether_state_type(tether_state_t s, tether_type_t *out);

/* The runtime revision of the last write that changed s (the revision at
 * creation when it never changed). Errors: TETHER_ESTALE, TETHER_EINVAL. */
int tether_state_revision(tether_state_t s, uint64_t *out);

/* Reads the whole value as a new owned value. Errors: TETHER_ESTALE,
 * TETHER_EINVAL. */
int tether_state_get(tether_state_t s, tether_value_t **out);

/* Writing. Every setter replaces the value (or the part at a path) and, when
 * the result differs from what was there, advances the runtime revision once
 * and schedules the affected observers. Writing an equal value changes
 * nothing and wakes only observers registered with TETHER_OBSERVE_EQUAL.
 * Observers registered with TETHER_OBSERVE_SYNC have run when the setter
 * returns. Once the write is applied the setter returns TETHER_OK, whatever
 * those observers then do (a write of theirs that is refused fails in the
 * observer, not here). Errors common to all setters: TETHER_ESTALE;
 * TETHER_EINVAL (v NULL); TETHER_ETYPE when the state is type-locked and the
 * new value has another type; TETHER_ELOOP when called from a callback
 * max_rounds deep; TETHER_EREADONLY, TETHER_ERANGE, TETHER_EREJECTED when
 * the state's descriptor refuses the value (tether_state_describe);
 * TETHER_EBUSY from a compute callback or validator. Nothing is changed on
 * error. Inside an open transaction (tether_transaction_begin) the write is
 * staged instead and applied by the outermost commit; a refused write then
 * also dooms the transaction. */
int tether_state_set(tether_state_t s, const tether_value_t *v);

/* Typed readers: TETHER_ETYPE when the state holds another type
 * (get_double also reads an int). Errors: TETHER_ESTALE, TETHER_EINVAL. */
int tether_state_get_bool(tether_state_t s, bool *out);
/* Reads an int state; see the typed reader notes above. */
int tether_state_get_int(tether_state_t s, int64_t *out);
/* Reads a double (or int) state; see the typed reader notes above. */
int tether_state_get_double(tether_state_t s, double *out);
/* Copies a string state into buf, snprintf-style. Errors as above. */
int tether_state_get_string(tether_state_t s, char *buf, size_t size, size_t *len);
/* Copies a bytes state into buf (no terminator); *len gets the full length. */
int tether_state_get_bytes(tether_state_t s, void *buf, size_t size, size_t *len);
/* Writes the state's value as JSON into buf, snprintf-style; flags 0 or
 * TETHER_JSON_PRETTY. Also TETHER_ERANGE for a NaN or infinity. */
int tether_state_get_json(tether_state_t s, unsigned flags, char *buf, size_t size, size_t *len);

/* Typed setters; see the notes on tether_state_set. */
int tether_state_set_bool(tether_state_t s, bool v);
/* Sets an int; see the notes on tether_state_set. */
int tether_state_set_int(tether_state_t s, int64_t v);
/* Sets a double; see the notes on tether_state_set. */
int tether_state_set_double(tether_state_t s, double v);
/* Sets a string (len bytes or -1); also TETHER_EINVAL for invalid UTF-8. */
int tether_state_set_string(tether_state_t s, const char *str, ptrdiff_t len);
/* Sets a bytes value (data may be NULL when len is 0). */
int tether_state_set_bytes(tether_state_t s, const void *data, size_t len);
/* Sets the value parsed from JSON (len or -1); also TETHER_EJSON. */
int tether_state_set_json(tether_state_t s, const char *json, ptrdiff_t len);

/* Reads the part of the state at a JSON Pointer as a new owned value.
 * From inside a compute callback or effect the read is a dependency on that
 * part only (see tether_compute_fn): writes to other parts of the state do
 * not re-run the reader. "" reads the whole value.
 * Errors: TETHER_ESTALE and those of tether_value_get_path. */
int tether_state_get_path(tether_state_t s, const char *pointer, tether_value_t **out);

/* Typed readers of the part of a state at a JSON Pointer: as
 * tether_state_get_path followed by tether_value_get_bool / _int / _double,
 * without making, copying or freeing a value (a compute reading "/user/age"
 * wants an int, not a value to free). The read depends on that part only,
 * as tether_state_get_path's. Errors: those of tether_state_get_path, then
 * TETHER_ETYPE when the part has another type (get_path_double also reads
 * an int); *out is written only on success. */
int tether_state_get_path_bool(tether_state_t s, const char *pointer, bool *out);
/* Reads the int at a JSON Pointer inside a state; see above. */
int tether_state_get_path_int(tether_state_t s, const char *pointer, int64_t *out);
/* Reads the double (or int) at a JSON Pointer inside a state; see above. */
int tether_state_get_path_double(tether_state_t s, const char *pointer, double *out);

/* Writes a copy of v at a JSON Pointer inside the state (JSON Patch "add",
 * as tether_value_set_path). Wakes observers of that path, of its ancestors
 * and of its descendants whose part changed, never of its siblings.
 * Errors: those of tether_state_set and of tether_value_set_path. */
int tether_state_set_path(tether_state_t s, const char *pointer, const tether_value_t *v);

/* tether_state_set_path with the value given as JSON text (len or -1). */
int tether_state_set_path_json(tether_state_t s, const char *pointer, const char *json,
                               ptrdiff_t len);

/* Removes the member or element at a JSON Pointer inside the state. Removing
 * an array element shifts the later ones, so observers of those indexes are
 * woken when their part changed (or disappeared: new_value NULL).
 * The pointer "" (the whole value) is refused (TETHER_EINVAL: write null
 * instead), except on a remote state: there it deletes the daemon's state
 * (io.tether.Remove of the whole state), which then reads as null, as a
 * state the daemon does not have (how a program leaves nothing behind).
 * Errors: those of tether_state_set and of tether_value_remove_path. */
int tether_state_remove_path(tether_state_t s, const char *pointer);

/* ------------------------------------------------------------------------ */
/* Observers                                                                 */
/* ------------------------------------------------------------------------ */

/* What an observer is told. Every pointer is borrowed: valid only during the
 * callback, the change itself too (successive callbacks of one write may be
 * handed the same tether_change_t, its fields set for each). */
typedef struct tether_change {
  tether_observer_t observer;       /* the observer being called */
  tether_state_t state;             /* the state it observes ({0} for a computed) */
  const char *path;                 /* the observed JSON Pointer ("" = all) */
  /* The observed part before the first and after the last write since the
   * previous call (coalesced). NULL when the path named nothing then. */
  const tether_value_t *old_value;
  const tether_value_t *new_value;
  uint64_t revision;                /* runtime revision of the last write */
  unsigned flags;                   /* TETHER_CHANGE_* */
  tether_computed_t computed;       /* the computed observed ({0} for a state) */
  /* The transaction of the (last) write this call reports, or NULL for a
   * write made outside transactions. A write made by a callback outside a
   * transaction of its own carries the transaction that caused that
   * callback, so a chain of reactions keeps its tag and origin. */
  const tether_transaction_info_t *transaction;
  tether_binding_t binding;         /* the binding observed ({0} otherwise) */
} tether_change_t;

/* tether_change_t.flags: the call was requested by TETHER_OBSERVE_INITIAL;
 * old_value and new_value are both the current value. */
#define TETHER_CHANGE_INITIAL 1u

/* An observer callback. Runs on the loop thread (default) or, with
 * TETHER_OBSERVE_SYNC, on the writing thread before the write returns.
 * It may call any tether_ function, including writes (delivered after it
 * returns, as a new round), tether_observer_remove (also of itself),
 * tether_state_free and tether_runtime_free. */
typedef void (*tether_observer_fn)(const tether_change_t *change, void *user_data);

/* Observer flags. */
/* Deliver synchronously at the end of the writer's write, on the writing
 * thread (if another thread is delivering at that moment, that thread runs
 * it; either way it has run when the write returns). One call per changing
 * write from one thread; under concurrent writers, writes that land while
 * the observer's previous change is still pending (another thread has not
 * delivered it yet) are coalesced into one call: the calls still chain
 * (each call's old value is the previous call's new value), none reports
 * old == new, nothing is delivered twice, and the last call reports the
 * final value. Without this flag,
 * delivery is on the loop thread, coalesced per loop turn: one call per
 * observer per turn, with the first old value and the last new value, and no
 * call when they are equal. */
#define TETHER_OBSERVE_SYNC 1u
/* Call once now with the current value (flags has TETHER_CHANGE_INITIAL):
 * before tether_observe returns for SYNC observers, else on the loop. */
#define TETHER_OBSERVE_INITIAL 2u
/* Call even when a write leaves the observed part equal. */
#define TETHER_OBSERVE_EQUAL 4u

/* Registers fn to be called when the part of s at `pointer` changes
 * (NULL or "" observes the whole value; "/user/name" is not woken by a write
 * to "/user/age"; a path that does not exist yet is allowed and is woken when
 * it appears). Order: within one delivery round, observers are called in
 * the order they were registered (across all states of the runtime).
 * user_data is passed to fn; destroy (may be NULL) is called with it exactly
 * once when the observer ends. On error destroy is NOT called: the caller
 * still owns user_data.
 * Errors: TETHER_ESTALE (s), TETHER_EINVAL (fn or out NULL, unknown flag),
 * TETHER_EPATH (malformed pointer), TETHER_ENOMEM. */
int tether_observe(tether_state_t s, const char *pointer, unsigned flags, tether_observer_fn fn,
                   void *user_data, tether_destroy_fn destroy, tether_observer_t *out);

/* Removes an observer: after this returns, fn is not called again (unless it
 * is running at this moment on another thread, in which case destroy runs
 * when that call returns). Safe from inside any callback, including the
 * observer's own. Returns TETHER_OK when it removed the observer and
 * TETHER_ESTALE when the handle is no longer (or never was) an observer;
 * a second removal is harmless. */
int tether_observer_remove(tether_observer_t o);

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */
/* ------------------------------------------------------------------------ */

/* Opens a batch (GLib's g_object_freeze_notify, for the whole runtime):
 * writes still apply at once and are visible to reads, but no observer,
 * effect or tracking callback of rt runs until the outermost batch ends;
 * then each runs at most once, seeing the final values. A value changed and
 * changed back inside a batch (42 -> 0 -> 42) wakes nothing. Batches nest
 * and are runtime-wide: while any thread has one open, rt delivers nothing.
 * Errors: TETHER_ESTALE. */
int tether_batch_begin(tether_runtime_t rt);

/* Closes the innermost batch. Ending the outermost one delivers what it held
 * back: SYNC callbacks before this returns, loop callbacks on the loop.
 * Errors: TETHER_ESTALE; TETHER_EINVAL when no batch is open. */
int tether_batch_end(tether_runtime_t rt);

/* ------------------------------------------------------------------------ */
/* Computed values                                                           */
/* ------------------------------------------------------------------------ */

/* A compute callback: reads states and computeds through the ordinary get
 * functions (those reads are recorded as its dependencies), stores its
 * result in `result` (a runtime-owned value, null on entry; fill it with
 * tether_value_set_* or tether_value_assign, never free it) and returns
 * TETHER_OK — or a negative error code, which is cached and returned to
 * every reader (with the message of tether_last_error() at that moment)
 * until a dependency changes. Runs on whichever thread reads the computed
 * (or delivers an effect that needs it), never concurrently with any other
 * callback of the runtime. It must not write states: a write from it fails
 * with TETHER_EBUSY (derived values have no side effects; effects do).
 *
 * Reading part of a state (tether_state_get_path, or tether_binding_get* of
 * a projection or index binding) depends on that part only, in compute
 * callbacks, effects and tracking applies alike. A reader of "/user/name" is
 * re-run by a changing write to "/user/name", to an ancestor ("/user", or
 * the whole value with tether_state_set*), to a descendant
 * ("/user/name/first"), or by a transaction or batch that makes one; never
 * by a write to a sibling ("/user/age") or elsewhere in the state. No part
 * is compared: after a write to an ancestor the reader re-runs even if its
 * part is equal, and the equality cutoff then stops it there. A path that
 * does not exist yet (the read fails with TETHER_ENOTFOUND, TETHER_ERANGE
 * or TETHER_ETYPE) is a dependency all the same, so creating it re-runs the
 * reader; a read that fails before reaching the state (TETHER_EPATH,
 * TETHER_EINVAL, TETHER_ESTALE) records nothing. Arrays are taken whole: a
 * write to an element of an array (including an append) and a removal of
 * one (which shifts the rest) re-run the readers of every index of that
 * array and of every path below its elements; a write below an element
 * ("/list/3/name") does not. Reading the whole value (tether_state_get*)
 * depends on the whole value: every changing write re-runs the reader.
 *
 * Chains of any length: bringing a computed up to date after writes does
 * not nest callbacks per level. Its first evaluation does: a compute that
 * reads a computed never evaluated evaluates it inside its own callback, so
 * a long chain read first from its far end nests one callback per level,
 * and past the thread's stack reserve that read fails with TETHER_ERANGE
 * ("read it from its start first"); read in order from the start, every
 * level evaluates, and the far end then reads fine. */
typedef int (*tether_compute_fn)(tether_value_t *result, void *user_data);

/* Creates a computed (a derived value, SwiftUI's computed property read in
 * a body): lazy (fn first runs when the value is read or an effect or
 * observer needs it), cached, glitch-free (in a diamond it runs once per
 * change and never sees half-updated inputs), cut off by equality (an
 * unchanged result wakes nothing downstream) and dynamic (a dependency no
 * longer read no longer wakes it). user_data goes to fn; destroy (may be
 * NULL) runs once when the computed is freed. On error destroy is not called.
 * Errors: TETHER_ESTALE (rt), TETHER_EINVAL (fn or out NULL), TETHER_ENOMEM. */
int tether_computed_new(tether_runtime_t rt, tether_compute_fn fn, void *user_data,
                        tether_destroy_fn destroy, tether_computed_t *out);

/* A computed's own equality (the TC39 Signals proposal's `equals`): returns
 * true when `new_value` counts as unchanged from `old_value`, so the
 * computed keeps its old value and wakes nothing downstream. Called after
 * each evaluation that succeeded when an earlier one had (never for the
 * first result, nor after an error), as a callback: on the thread that
 * evaluates, never concurrently with other callbacks, and it must not
 * write states (a write fails with TETHER_ELOOP). Both values are borrowed
 * for the call. */
typedef bool (*tether_equal_fn)(const tether_value_t *old_value, const tether_value_t *new_value,
                                void *user_data);

/* tether_computed_new with a custom equality for the cutoff (NULL: the
 * structural equality of tether_value_equal). user_data goes to fn and to
 * equal. Errors as tether_computed_new. */
int tether_computed_new_with_equal(tether_runtime_t rt, tether_compute_fn fn, tether_equal_fn equal,
                                   void *user_data, tether_destroy_fn destroy, tether_computed_t *out);

/* Frees a computed; computeds and effects that read it get TETHER_ESTALE
 * from then on. Its observers end (destroy functions called once).
 * Errors: TETHER_ESTALE. */
int tether_computed_free(tether_computed_t c);

/* Reads a computed as a new owned value, recomputing it first if a
 * dependency changed. From inside a compute callback or effect, the read is
 * recorded as a dependency (unless inside tether_untracked_begin/end).
 * Errors: TETHER_ESTALE; TETHER_EINVAL (out NULL); TETHER_ECYCLE when the
 * computed is being computed by this very read chain (it depends on itself;
 * the read is still recorded, so the reader recovers once the cycle is
 * broken);
 * any error code its callback returned (cached until a dependency changes). */
int tether_computed_get(tether_computed_t c, tether_value_t **out);

/* Reads the part of a computed's value at a JSON Pointer as a new owned
 * value, without copying the rest out (kairo mux's map[index]). The read is
 * of the whole computed (unlike tether_state_get_path's, which is of the
 * part): recorded as a dependency even when the path names nothing.
 * Errors: those of tether_computed_get and of tether_value_get_path
 * (checked in that order, the pointer's syntax first); *out is untouched. */
int tether_computed_get_path(tether_computed_t c, const char *pointer, tether_value_t **out);

/* Typed readers of the part of a computed's value at a JSON Pointer (kairo
 * molBench's D[2].x): as tether_computed_get_path followed by
 * tether_value_get_bool / _int / _double, without making, copying or
 * freeing a value. The read is of the whole computed, as
 * tether_computed_get_path's. Errors: those of tether_computed_get_path,
 * then TETHER_ETYPE when the part has another type (get_path_double also
 * reads an int); *out is written only on success. */
int tether_computed_get_path_bool(tether_computed_t c, const char *pointer, bool *out);
/* Reads the int at a JSON Pointer inside a computed's value; see above. */
int tether_computed_get_path_int(tether_computed_t c, const char *pointer, int64_t *out);
/* Reads the double (or int) at a JSON Pointer inside a computed; see above. */
int tether_computed_get_path_double(tether_computed_t c, const char *pointer, double *out);

/* Typed readers of a computed; as tether_computed_get, plus TETHER_ETYPE
 * when the value has another type (get_double also reads an int). */
int tether_computed_get_bool(tether_computed_t c, bool *out);
/* Reads an int computed; see the typed reader notes above. */
int tether_computed_get_int(tether_computed_t c, int64_t *out);
/* Reads a double (or int) computed; see the typed reader notes above. */
int tether_computed_get_double(tether_computed_t c, double *out);
/* Writes a computed's value as JSON into buf, snprintf-style (flags 0 or
 * TETHER_JSON_PRETTY); as tether_computed_get otherwise. */
int tether_computed_get_json(tether_computed_t c, unsigned flags, char *buf, size_t size,
                             size_t *len);

/* Observes a computed exactly as tether_observe observes a state (same
 * flags, same tether_change_t, with change->computed set and change->state
 * {0}; pointer may name a
 * part of the value). The computed is kept up to date while observed: an
 * observer is called only when the computed's (part of the) value actually
 * changed. Errors: as tether_observe. */
int tether_computed_observe(tether_computed_t c, const char *pointer, unsigned flags,
                            tether_observer_fn fn, void *user_data, tether_destroy_fn destroy,
                            tether_observer_t *out);

/* Opens an untracked section on this thread: reads made inside the current
 * compute callback or effect until the matching tether_untracked_end are not
 * recorded as dependencies. Nests. Errors: TETHER_ESTALE. */
int tether_untracked_begin(tether_runtime_t rt);

/* Closes the innermost untracked section of this thread.
 * Errors: TETHER_ESTALE; TETHER_EINVAL when none is open. */
int tether_untracked_end(tether_runtime_t rt);

/* ------------------------------------------------------------------------ */
/* Effects                                                                   */
/* ------------------------------------------------------------------------ */

/* An effect body: a SwiftUI view's `body`. Reads made here are recorded;
 * the effect runs again when any of them changes. It may write states
 * (those writes are delivered after it returns, as a new round). */
typedef void (*tether_effect_fn)(tether_effect_t effect, void *user_data);

/* Runs before each re-run of an effect and when it is freed. */
typedef void (*tether_cleanup_fn)(void *user_data);

/* A fallible effect's callback: TETHER_OK for a run that succeeded, or a
 * negative error code for one that failed (the message is that of the
 * failing call inside it, as for compute callbacks). A run that fails stays
 * subscribed to what it read before failing, so it runs again (and can
 * recover) when that changes. */
typedef int (*tether_effect_try_fn)(tether_effect_t effect, void *user_data);

/* tether_effect_new for an effect that can fail. With TETHER_EFFECT_SYNC,
 * outside callbacks and batches (where the first run happens before this
 * returns), a failing first run fails the creation (Preact's rule): the
 * effect subscribes to nothing, is freed (its cleanups run; destroy does
 * not: the caller keeps user_data), and this returns the run's error code
 * with its message in tether_last_error(). Any other failing run (a later
 * one, or a first one that runs later) goes to the runtime's effect-error
 * handler (tether_runtime_on_effect_error) and can be read with
 * tether_effect_last_error. Errors: as tether_effect_new, plus the first
 * run's. */
int tether_effect_new_fallible(tether_runtime_t rt, unsigned flags, tether_effect_try_fn fn,
                               tether_cleanup_fn cleanup, void *user_data, tether_destroy_fn destroy,
                               tether_effect_t *out);

/* How a failed effect run is reported: effect, code, message (valid during
 * the call), user_data. Runs on the thread that ran the effect, right after
 * the failed run, as a callback (never concurrently with others). */
typedef void (*tether_effect_error_fn)(tether_effect_t effect, int code, const char *message, void *user_data);

/* Sets where the runtime reports failed effect runs; NULL fn restores the
 * default, which prints one line to stderr ("tether: effect 0x...
 * failed: ..."). destroy (may be NULL) runs once with user_data when the
 * handler is replaced or the runtime is freed. Errors: TETHER_ESTALE. */
int tether_runtime_on_effect_error(tether_runtime_t rt, tether_effect_error_fn fn, void *user_data,
                                   tether_destroy_fn destroy);

/* ------------------------------------------------------------------------ */
/* Tracing: why did this run                                                 */
/* ------------------------------------------------------------------------ */

/* One source of a traced run that changed since the reader last read it. */
typedef struct tether_trace_source {
  uint64_t handle;          /* the state's (tether_state_t) or computed's
                               (tether_computed_t) id */
  bool is_computed;         /* handle names a computed, not a state */
  const char *name;         /* the state's descriptor name, or NULL */
  const char *pointer;      /* the JSON Pointer read; "" for the whole value */
  uint64_t revision_before; /* the runtime revision when the reader last ran
                               while traced (0: its first traced run) */
  uint64_t revision_after;  /* the revision of the state's latest change; for
                               a computed source, the runtime revision now */
} tether_trace_source_t;

/* tether_trace_event_t.kind */
#define TETHER_TRACE_RECOMPUTE 1  /* a computed is about to be recomputed */
#define TETHER_TRACE_EFFECT_RUN 2 /* an effect is about to run */

/* A recompute or effect run about to happen, and why (MobX's trace()). */
typedef struct tether_trace_event {
  int kind;                              /* TETHER_TRACE_* */
  uint64_t reader;                       /* the computed's or effect's id */
  bool first_run;                        /* its first run: a computed never
                                            evaluated, an effect that has
                                            read nothing yet */
  size_t source_count;
  const tether_trace_source_t *sources;  /* the sources that changed, in the
                                            order they were read */
  const char *tag;                       /* the transaction's tag, or NULL */
  uint64_t origin;                       /* the transaction's origin (0: none) */
  uint64_t revision;                     /* the runtime revision now */
} tether_trace_event_t;

/* Gets each traced run. The event and everything it points to are borrowed:
 * valid only until the call returns. Called on the thread about to
 * recompute or run, right before the compute or effect callback (after an
 * effect's cleanups), as a callback: never concurrently with other
 * callbacks, and it must not write states (a write fails: TETHER_EBUSY in
 * a recompute's report, TETHER_ELOOP in an effect run's). Its reads are not
 * recorded as the reader's dependencies. Reading the computed being
 * recomputed from here is TETHER_ECYCLE (it is being evaluated); freeing
 * the reader cancels the run. */
typedef void (*tether_trace_fn)(const tether_trace_event_t *event, void *user_data);

/* tether_runtime_trace modes. */
#define TETHER_TRACE_OFF 0u    /* no tracing (the default) */
#define TETHER_TRACE_ALL 1u    /* every recompute and effect run */
#define TETHER_TRACE_MARKED 2u /* only computeds and effects marked with
                                  tether_computed_trace / tether_effect_trace */

/* Turns tracing of rt on or off. With fn NULL (and a mode other than OFF),
 * each run prints one line on stderr:
 *   tether: trace: effect 0x... ran at revision 12: state 'form' 0x... at
 *   /email changed (revision 3 -> 12); transaction 'undo' origin 7
 * A recompute pulled by a callback's read carries the cause of that
 * callback. Off, tracing costs nothing measurable (docs/performance.md:
 * one test per recompute and effect run). destroy (may be NULL) runs once
 * with user_data when the trace is replaced or turned off or the runtime is
 * freed (with TETHER_TRACE_OFF: at once). Trackings are not traced.
 * Errors: TETHER_ESTALE, TETHER_EINVAL (unknown mode; destroy is not called). */
int tether_runtime_trace(tether_runtime_t rt, unsigned mode, tether_trace_fn fn, void *user_data,
                         tether_destroy_fn destroy);

/* Marks (on) or unmarks a computed for TETHER_TRACE_MARKED. Errors:
 * TETHER_ESTALE. */
int tether_computed_trace(tether_computed_t c, bool on);
/* Marks (on) or unmarks an effect for TETHER_TRACE_MARKED. Errors:
 * TETHER_ESTALE. */
int tether_effect_trace(tether_effect_t e, bool on);

/* The error of the effect's last run: *code gets TETHER_OK when it
 * succeeded (or it is not a fallible effect) and buf its message
 * (snprintf-style; "" for none). Any thread may ask, also while the effect
 * runs on another: the answer is that of the last run that finished, whole.
 * Errors: TETHER_EINVAL (code NULL, buf NULL with size > 0), TETHER_ESTALE. */
int tether_effect_last_error(tether_effect_t e, int *code, char *buf, size_t size, size_t *len);

/* Ownership: an effect owns what its run creates (Solid's and Vue's rule):
 * effects, computeds, trackings, bindings, states, observers and scopes made
 * from inside its callback, on a thread that has no scope entered (an
 * entered scope owns what is made in it). Before the effect runs again, and
 * before it is freed, what the previous run made is freed first (newest
 * first; children's cleanups and destroys before the parent's own cleanup),
 * so re-runs never pile up generations of children; a change that only a
 * child read re-runs only the child. Freeing from inside any of these
 * callbacks is allowed, a child freeing its parent included. */

/* Registers one more cleanup for the current run of effect e, from inside
 * that run (Solid's onCleanup, Vue's onWatcherCleanup): the cleanups a run
 * registered are called newest first, then the effect's own cleanup, before
 * its next run and when it is freed (or its runtime is). Each is called
 * once, as a callback, with its user_data. Errors: TETHER_EINVAL (fn NULL),
 * TETHER_ESTALE (e), TETHER_EBUSY when e is not running (a cleanup belongs
 * to a run; register it from inside the effect's callback). */
int tether_effect_on_cleanup(tether_effect_t e, tether_cleanup_fn fn, void *user_data);

/* Effect flags: run synchronously at the end of the writer's outermost write
 * or batch (TETHER_OBSERVE_SYNC is accepted with the same meaning). */
#define TETHER_EFFECT_SYNC 1u

/* Creates an effect and runs it once: before this returns with
 * TETHER_EFFECT_SYNC (inside an open batch: when the outermost batch ends),
 * else on the loop thread. Effects and observers of one delivery round run
 * in the order they were created. It runs again, at most once
 * per write or batch, whenever something it read changed (a value changed
 * and changed back in one batch is no change); cleanup (may be NULL) runs
 * before each re-run and when the effect is freed; destroy (may be NULL) runs
 * once after the last cleanup. An effect that keeps waking itself is stopped
 * after max_rounds rounds: its write fails with TETHER_ELOOP.
 * Errors: TETHER_ESTALE (rt), TETHER_EINVAL (fn or out NULL, unknown flag),
 * TETHER_ENOMEM. On error neither cleanup nor destroy is called. */
int tether_effect_new(tether_runtime_t rt, unsigned flags, tether_effect_fn fn,
                      tether_cleanup_fn cleanup, void *user_data, tether_destroy_fn destroy,
                      tether_effect_t *out);

/* Frees an effect: a pending run is cancelled, cleanup runs once, then
 * destroy, both inside this call (also inside a batch). Safe from inside its
 * own run or cleanup (then they run right after that run or cleanup
 * returns), and from a callback of a batch that would re-run it (if it is
 * running on another thread at that moment, cleanup and destroy run when that
 * run returns).
 * Errors: TETHER_ESTALE (already freed, or never an effect). */
int tether_effect_free(tether_effect_t e);

/* ------------------------------------------------------------------------ */
/* One-shot observation tracking                                             */
/* ------------------------------------------------------------------------ */

/* The part of withObservationTracking that runs now: its reads are recorded. */
typedef void (*tether_track_apply_fn)(void *user_data);

/* Called once, after the first committed change to anything apply read. */
typedef void (*tether_track_change_fn)(tether_tracking_t tracking, uint64_t revision,
                                       void *user_data);

/* Swift's withObservationTracking(apply:onChange:) for C: runs apply now on
 * the calling thread, records every state and computed it read, and calls
 * on_change once — with the revision of that first change — after the first change
 * to any of them, then disarms (destroy, if not NULL, runs after on_change or
 * on cancel). Unlike Swift's, which fires in willSet (before the new value is
 * stored), on_change runs after the change is committed, so it can read the
 * new values. Delivery: on the loop thread, or with TETHER_EFFECT_SYNC at the
 * end of the writer's write or batch. apply runs as a callback: it never
 * overlaps other callbacks of rt, so another thread's write that owes SYNC
 * callbacks waits until apply returns (do not make apply wait for such a
 * write). A change committed by another thread while apply ran fires
 * on_change right away.
 * Errors: TETHER_ESTALE (rt), TETHER_EINVAL (apply, on_change or out NULL,
 * unknown flag), TETHER_ENOMEM. */
int tether_track(tether_runtime_t rt, unsigned flags, tether_track_apply_fn apply,
                 tether_track_change_fn on_change, void *user_data, tether_destroy_fn destroy,
                 tether_tracking_t *out);

/* Cancels a tracking before it fires; destroy runs once. Errors:
 * TETHER_ESTALE (fired already, cancelled already, or never a tracking). */
int tether_tracking_cancel(tether_tracking_t t);

/* ------------------------------------------------------------------------ */
/* Transactions                                                              */
/* ------------------------------------------------------------------------ */

/* Opens a transaction on the calling thread (SwiftUI's withTransaction, and a
 * database transaction): until it is committed or aborted, every state write
 * this thread makes in rt — through tether_state_set*, bindings, or a custom
 * binding's set — is staged, not applied. This thread reads its own staged
 * values (tether_state_get*, tether_binding_get*); every other thread, and
 * every computed, sees the committed values only.
 *
 * Transactions nest: an inner one is a savepoint. Committing it keeps its
 * writes in the outer one; aborting it drops only its own writes. Only the
 * outermost commit applies anything, and it carries the outermost
 * transaction's info.
 *
 * info may be NULL; its tag is copied, user_data is passed through.
 * Errors: TETHER_ESTALE (rt), TETHER_EINVAL (out NULL, tag not UTF-8),
 * TETHER_EBUSY (called from a compute callback or a validator),
 * TETHER_ENOMEM. */
int tether_transaction_begin(tether_runtime_t rt, const tether_transaction_info_t *info,
                             tether_transaction_t *out);

/* Commits the innermost open transaction (which must be txn, on the thread
 * that began it). For a nested one: its writes stay staged in the outer
 * transaction and *revision (if not NULL) is set to 0. For the outermost
 * one: checks every staged state (type
 * lock, read-only, range, validator — each validator once, with the state's
 * final staged value), then applies all of them at once under one new
 * runtime revision, stored in *revision when revision is not NULL (the
 * current revision when nothing changed). Each observer is called once for
 * the commit (SYNC ones before this returns), with the final value.
 * If any check fails, nothing is applied, no callback runs, the transaction
 * is closed all the same, and the error names the state and the reason.
 * Writes staged on top of values that other threads changed meanwhile are
 * replayed onto the current values (a write at a path keeps the other
 * thread's writes to sibling paths).
 * Errors: TETHER_ESTALE (txn not open: committed, aborted, or its runtime
 * freed); TETHER_ETHREAD (another thread began it); TETHER_EINVAL (txn is not
 * the innermost open transaction of this thread: commit or abort that first);
 * TETHER_EREADONLY, TETHER_ERANGE, TETHER_EREJECTED, TETHER_ETYPE (a check
 * failed: see above); the error of the first write that failed while the
 * transaction was open (a refused write dooms its transaction); TETHER_ESTALE
 * also when a staged state was freed before the commit. */
int tether_transaction_commit(tether_transaction_t txn, uint64_t *revision);

/* Drops the innermost open transaction (which must be txn) and everything
 * staged in it: nothing is applied, nothing is called, values are as before.
 * Errors: as tether_transaction_commit, minus the check failures. */
int tether_transaction_abort(tether_transaction_t txn);

/* The transaction info that applies on this thread now, copied into *out:
 * this thread's innermost open transaction in rt if it has one; otherwise,
 * inside a callback of rt, the info of the transaction that caused it.
 * The tag pointer is borrowed (valid during the callback, or until the
 * transaction ends). Errors: TETHER_ESTALE (rt), TETHER_EINVAL (out NULL),
 * TETHER_ENOTFOUND (no transaction applies). */
int tether_transaction_current(tether_runtime_t rt, tether_transaction_info_t *out);

/* ------------------------------------------------------------------------ */
/* Validation                                                                */
/* ------------------------------------------------------------------------ */

/* A validator: called with the value a write would give the state (the whole
 * value, also for a write at a path) and the transaction info (NULL outside
 * transactions). Return true to accept. To reject, return false, optionally
 * after writing a reason (NUL-terminated, truncated to reason_size) into
 * reason; the failing write or commit reports it. Runs on the writing thread
 * before anything is applied, never concurrently with other callbacks. It may
 * read states (it sees committed values); a write from it fails with
 * TETHER_EBUSY. */
typedef bool (*tether_validate_fn)(tether_state_t state, const tether_value_t *proposed,
                                   const tether_transaction_info_t *transaction, char *reason,
                                   size_t reason_size, void *user_data);

/* Descriptor flags. */
#define TETHER_DESCRIBE_READ_ONLY 1u /* every write fails: TETHER_EREADONLY */
#define TETHER_DESCRIBE_RANGE 2u     /* the value must be a number in [min, max] */

/* What a state accepts (ROS 2 parameter descriptors are the model). Fill
 * with tether_state_descriptor_init() first. */
typedef struct tether_state_descriptor {
  unsigned flags;               /* TETHER_DESCRIBE_* */
  double min, max;              /* TETHER_DESCRIBE_RANGE: inclusive bounds; an int
                                   value is compared as a double */
  tether_validate_fn validate;  /* NULL for none */
  void *user_data;              /* passed to validate */
  tether_destroy_fn destroy;    /* called once with user_data when the
                                   descriptor is replaced, removed or its state
                                   freed; may be NULL */
  const char *name;             /* NULL, or a name for error messages
                                   ("state 'volume' must stay in [0, 100]");
                                   copied */
  unsigned reserved[4];         /* zero */
} tether_state_descriptor_t;

/* Fills *d with "accept everything". NULL is ignored. */
void tether_state_descriptor_init(tether_state_descriptor_t *d);

/* Sets (d not NULL) or removes (d NULL) the descriptor of s, replacing any
 * earlier one (whose destroy runs, on this thread, before this returns).
 * The current value is not checked. From then on every write to s — plain,
 * at a path, through a binding, in a transaction — is checked: read-only
 * first (TETHER_EREADONLY), then the range (TETHER_ERANGE; a value that is
 * not a number is TETHER_ETYPE), then the validator (TETHER_EREJECTED, the
 * message gives the state and the validator's reason). A refused write
 * changes nothing and calls no observer.
 * Errors: TETHER_ESTALE (s), TETHER_EINVAL (unknown flag, non-zero reserved
 * field, min > max or a NaN bound with TETHER_DESCRIBE_RANGE), TETHER_EBUSY
 * (from a validator). On error destroy is not called. */
int tether_state_describe(tether_state_t s, const tether_state_descriptor_t *d);

/* ------------------------------------------------------------------------ */
/* Bindings                                                                  */
/* ------------------------------------------------------------------------ */

/* A binding is SwiftUI's Binding: a two-way reference to a value someone
 * else owns. Every kind shares one handle type and the functions below:
 *
 *   tether_state_binding     $state
 *   tether_binding_project   $user.firstName (a JSON Pointer; chainable)
 *   tether_binding_index     $list[3] (an element of an array)
 *   tether_binding_new_custom   Binding(get:set:)
 *   tether_binding_new_constant Binding.constant(x)
 *   tether_binding_bind      GBinding: two states kept in sync
 *
 * A binding does not own its source: freeing a binding never frees the state
 * behind it, and a binding whose source was freed fails with TETHER_ESTALE.
 * Freeing a state does not free bindings to it (free them, or use a scope).
 *
 * Errors common to the get/set functions: TETHER_ESTALE (the binding or its
 * source was freed); TETHER_ETYPE (a projection step meets a value that is
 * not an object or array, or an index step one that is not an array; typed
 * getters: another type); TETHER_ENOTFOUND (a projected member is missing —
 * reads only: a write creates it, JSON Patch "add"); TETHER_ERANGE (an index
 * past the end of its array); TETHER_EREADONLY (a constant binding, or a
 * custom binding without set); and, for writes, every error of
 * tether_state_set (validators included). */

/* The binding of a whole state ($state). Errors: TETHER_ESTALE (s),
 * TETHER_EINVAL (out NULL), TETHER_ENOMEM. */
int tether_state_binding(tether_state_t s, tether_binding_t *out);

/* Narrows b by a JSON Pointer ("/firstName", "/address/city"; "" is b
 * itself): reads and writes reach only that part. Projections chain:
 * projecting a projection appends the path. A write through a projection
 * updates the parent value and wakes observers of that path and of its
 * ancestors, never of its siblings. The path is checked for syntax now and
 * against the value at each use (the value may change shape).
 * Errors: TETHER_ESTALE (b), TETHER_EINVAL (out NULL), TETHER_EPATH
 * (malformed pointer), TETHER_ENOMEM. */
int tether_binding_project(tether_binding_t b, const char *pointer, tether_binding_t *out);

/* Narrows b to element `index` of the array it holds. Unlike the pointer
 * "/3", which also names an object member "3", this requires an array:
 * TETHER_ETYPE on use when the value is not one, TETHER_ERANGE when index is
 * past its end (also for writes: an index projection never appends).
 * Errors: TETHER_ESTALE (b), TETHER_EINVAL (out NULL), TETHER_ENOMEM. */
int tether_binding_index(tether_binding_t b, size_t index, tether_binding_t *out);

/* A custom binding's get: store the current value in `result` (a
 * runtime-owned value, null on entry; fill it with tether_value_set_* or
 * tether_value_assign). Return TETHER_OK or a negative error code, which the
 * reader gets. It runs as a compute callback: the states it reads are
 * recorded, its result is cached until one of them changes, and observers of
 * the binding are woken when the result changes. It must not write. */
typedef int (*tether_binding_get_fn)(tether_value_t *result, void *user_data);

/* A custom binding's set: called by every write to the binding, on the
 * writing thread, before the write returns, with the value written and the
 * write's transaction (NULL outside transactions). It may write states and
 * call anything else (hooks, requests); return TETHER_OK, or a negative code
 * that the write returns.
 *
 * Order: set runs before any observer of what it writes. Its writes apply at
 * once (set can read them back) and their observers are called after set
 * returns — SYNC observers before the binding write returns, loop observers
 * on the loop thread — so everything set does after writing the source
 * (an analytics hook, then a network request) happens in the order set does
 * it, and before any change callback. Inside an open transaction, set still
 * runs at once, and its writes are staged with the transaction. */
typedef int (*tether_binding_set_fn)(const tether_value_t *value,
                                     const tether_transaction_info_t *transaction,
                                     void *user_data);

/* Binding(get:set:). get is required; set may be NULL for a binding that
 * refuses writes (TETHER_EREADONLY). destroy (may be NULL) runs once with
 * user_data when the binding is freed. On error destroy is not called.
 * Errors: TETHER_ESTALE (rt), TETHER_EINVAL (get or out NULL),
 * TETHER_ENOMEM. */
int tether_binding_new_custom(tether_runtime_t rt, tether_binding_get_fn get,
                              tether_binding_set_fn set, void *user_data,
                              tether_destroy_fn destroy, tether_binding_t *out);

/* Binding.constant(value): reads a copy of value (NULL means null); every
 * write fails with TETHER_EREADONLY. Observers with TETHER_OBSERVE_INITIAL
 * get the value once; no other call ever comes.
 * Errors: TETHER_ESTALE (rt), TETHER_EINVAL (out NULL), TETHER_ENOMEM. */
int tether_binding_new_constant(tether_runtime_t rt, const tether_value_t *value,
                                tether_binding_t *out);

/* A transform between the two sides of a tether_binding_bind: fill `to`
 * (runtime-owned, null on entry) from `from` and return TETHER_OK; return 1
 * to decline (the other side is left as it is, GBinding's FALSE); or return
 * a negative error code (also leaves the other side as it is; reported where
 * a caller waits: tether_binding_bind with TETHER_BIND_SYNC_CREATE, and
 * tether_binding_set on the binding). Runs as a callback on the thread
 * delivering the change, never concurrently with other callbacks. */
typedef int (*tether_transform_fn)(const tether_value_t *from, tether_value_t *to,
                                   void *user_data);

/* tether_binding_bind flags (GBindingFlags). */
#define TETHER_BIND_DEFAULT 0u
/* Changes to the target flow back to the source (through transform_from). */
#define TETHER_BIND_BIDIRECTIONAL 1u
/* Set the target from the source now, before tether_binding_bind returns. */
#define TETHER_BIND_SYNC_CREATE 2u
/* Both sides are bools and each is the other's negation (instead of the
 * transforms, which must then be NULL). */
#define TETHER_BIND_INVERT_BOOLEAN 4u

/* GLib's g_object_bind_property_full for states: keeps the part of target at
 * target_pointer equal to transform_to(the part of source at
 * source_pointer) (NULL or "" is the whole value), and with
 * TETHER_BIND_BIDIRECTIONAL the source equal to transform_from(target). A
 * NULL transform copies the value unchanged. Propagation is synchronous: when
 * a write to one side returns, the other side has been written (through the
 * ordinary write path, so its validators and observers apply, and the write
 * carries the transaction of the change that caused it).
 *
 * Loops: each binding carries a change across at most once per direction per
 * original write, and never carries its own write back, so a ring of
 * bidirectional bindings (A<->B<->C<->A) settles after one pass even when
 * transforms round.
 *
 * The handle is a binding of the target (get, set and observe reach the
 * target part; a set is carried to the source like any target change).
 * tether_binding_free unbinds: nothing is carried from then on, destroy runs
 * once. The binding also ends (destroy runs) when either state is freed; the
 * handle then fails with TETHER_ESTALE.
 * Errors: TETHER_ESTALE (a state), TETHER_EINVAL (out NULL, unknown flag,
 * transforms given with TETHER_BIND_INVERT_BOOLEAN, the states in different
 * runtimes, or source and target parts of one state that overlap: the same
 * part, or one inside the other), TETHER_EPATH, and with
 * TETHER_BIND_SYNC_CREATE: the errors of reading the source, of the
 * transform (TETHER_EREJECTED when it declines, TETHER_ETYPE for a non-bool
 * with TETHER_BIND_INVERT_BOOLEAN) and of writing the target. On error
 * nothing is bound and destroy is not called. */
int tether_binding_bind(tether_state_t source, const char *source_pointer, tether_state_t target,
                        const char *target_pointer, unsigned flags,
                        tether_transform_fn transform_to, tether_transform_fn transform_from,
                        void *user_data, tether_destroy_fn destroy, tether_binding_t *out);

/* Frees a binding (unbinds a tether_binding_bind). Observers registered on
 * it end too (destroy functions run once). Projections made from it keep
 * working when it was a state binding or projection (they name the state
 * directly); projections of a custom or constant binding fail with
 * TETHER_ESTALE from then on. Errors: TETHER_ESTALE. */
int tether_binding_free(tether_binding_t b);

/* Reads the binding's value as a new owned value. From inside a compute
 * callback or effect, a projection or index binding's read is a dependency
 * on its part of the state only, as tether_state_get_path's (see
 * tether_compute_fn); a binding of the whole state depends on the whole
 * value; a custom binding's, on its computed. */
int tether_binding_get(tether_binding_t b, tether_value_t **out);
/* Typed readers; as tether_state_get_*. */
int tether_binding_get_bool(tether_binding_t b, bool *out);
/* Reads an int; see the typed reader notes above. */
int tether_binding_get_int(tether_binding_t b, int64_t *out);
/* Reads a double (or an int); see the typed reader notes above. */
int tether_binding_get_double(tether_binding_t b, double *out);
/* Copies a string into buf, snprintf-style. */
int tether_binding_get_string(tether_binding_t b, char *buf, size_t size, size_t *len);
/* Writes the value as JSON into buf, snprintf-style (flags 0 or
 * TETHER_JSON_PRETTY). */
int tether_binding_get_json(tether_binding_t b, unsigned flags, char *buf, size_t size,
                            size_t *len);

/* Writes through the binding (a copy of v): to the state part it names, or
 * through the custom set, or refused (constant). Same rules as
 * tether_state_set: equal writes wake no one, SYNC observers have run when it
 * returns, inside a transaction the write is staged. */
int tether_binding_set(tether_binding_t b, const tether_value_t *v);
/* Typed writers; see tether_binding_set. */
int tether_binding_set_bool(tether_binding_t b, bool v);
/* Writes an int; see tether_binding_set. */
int tether_binding_set_int(tether_binding_t b, int64_t v);
/* Writes a double; see tether_binding_set. */
int tether_binding_set_double(tether_binding_t b, double v);
/* Writes a string (len bytes, or -1); also TETHER_EINVAL for invalid UTF-8. */
int tether_binding_set_string(tether_binding_t b, const char *str, ptrdiff_t len);
/* Writes a value parsed from JSON (len or -1); also TETHER_EJSON. */
int tether_binding_set_json(tether_binding_t b, const char *json, ptrdiff_t len);

/* Observes a binding exactly as tether_observe observes a state: same flags,
 * same order, same tether_change_t, with change->binding set. pointer (NULL
 * or "") is relative to the binding. For bindings onto a state,
 * change->state is that state and change->path the full pointer inside it;
 * for custom bindings change->state is {0}. The observer outlives neither
 * the binding nor its source: freeing either ends it (destroy runs once).
 * Errors: as tether_observe. */
int tether_binding_observe(tether_binding_t b, const char *pointer, unsigned flags,
                           tether_observer_fn fn, void *user_data, tether_destroy_fn destroy,
                           tether_observer_t *out);

/* ------------------------------------------------------------------------ */
/* Scopes                                                                    */
/* ------------------------------------------------------------------------ */

/* A scope owns what is created in it (SwiftUI ties @State to the view that
 * installs it). While a scope is entered on a thread, every state, binding,
 * observer, computed, effect and tracking that thread creates in the scope's
 * runtime belongs to the scope; tether_scope_free frees them all, newest
 * first, calling each destroy function exactly once, and their handles go
 * stale. Anything freed earlier by hand is skipped.
 *
 * Scopes nest: a scope created while another is entered on the same thread
 * belongs to it and is freed with it (before the parent's own objects). */

/* Creates a scope (inside the thread's current scope of rt, if any).
 * Errors: TETHER_ESTALE (rt), TETHER_EINVAL (out NULL), TETHER_ENOMEM. */
int tether_scope_new(tether_runtime_t rt, tether_scope_t *out);

/* Makes scope the current scope of the calling thread (for its runtime)
 * until the matching tether_scope_leave. Enters nest, innermost wins.
 * Errors: TETHER_ESTALE, TETHER_ENOMEM (more than 16 nested enters). */
int tether_scope_enter(tether_scope_t scope);

/* Leaves scope, which must be the innermost scope this thread entered (it
 * may have been freed meanwhile: leaving it still pairs the enter).
 * Errors: TETHER_ESTALE (never entered and freed, or runtime freed),
 * TETHER_EINVAL (not entered on this thread, or not the innermost). */
int tether_scope_leave(tether_scope_t scope);

/* Frees the scope and everything in it (see above). Safe from inside any
 * callback, including one of an object in the scope (that object's destroy
 * then runs when its call returns). A scope still entered on some thread is
 * left there (its enters become no-ops: objects created later belong to no
 * scope). Errors: TETHER_ESTALE (already freed). */
int tether_scope_free(tether_scope_t scope);

/* ---------------------------------------------------------------------
 * Remote states: tetherd
 *
 * tetherd (the Tether state daemon) holds named states for every process
 * of the machine. A remote state is an ordinary tether_state_t of your
 * runtime, its *mirror*: every function that reads a state reads it
 * locally (get, paths, observers with old and new value, computeds and
 * effects that read it, bindings and projections of it, scopes), and the
 * daemon keeps it current through a Watch of its own (one connection per
 * remote state, on the runtime's loop thread). As for every state, an
 * observer's change->revision is the runtime's own revision;
 * tether_remote_revision gives the daemon's.
 *
 * Writes (tether_state_set_*, paths, removes, bindings, transform
 * bindings) go to the daemon instead of the mirror, and come back as the
 * daemon's commit, applied to the mirror in the daemon's order, with the
 * commit's tag and origin in the observers' tether_change_t.transaction.
 * So:
 *   - outside callbacks, a write returns once the daemon has committed it
 *     and the mirror shows it (or something later): the writer reads its
 *     own write, and a refusal is the daemon's, with a local state's error
 *     code (TETHER_EREADONLY, TETHER_ETYPE, TETHER_ERANGE, TETHER_EPATH,
 *     TETHER_ENOTFOUND, ...). Its observers run as for any write; a SYNC
 *     observer runs on the loop thread, when the mirror changes;
 *   - inside a callback the write is sent and the call returns TETHER_OK at
 *     once (the loop thread must stay free to apply the daemon's answers);
 *     it reaches the mirror later, and a refusal is written to stderr;
 *   - tether_runtime_flush() first waits until every such write was
 *     acknowledged and applied (at most the remote's timeout: then it
 *     fails with TETHER_ETIMEDOUT, running no callbacks, and the writes
 *     not yet acknowledged may or may not have been applied), then for
 *     the callbacks as usual;
 *   - while the connection is down, a write fails at once with TETHER_EUV
 *     and changes nothing (a write whose connection broke after it was
 *     sent, before the answer, fails with TETHER_EUV too, and may or may
 *     not have been applied: the message says so). The runtime reconnects
 *     by itself (backoff from 25 ms to 2 s) and every remote state resumes
 *     its watch from the last daemon revision it applied: nothing in
 *     between is lost or repeated (when the daemon no longer has that
 *     history, the state is resent whole). A daemon that restarted with
 *     another history (a new epoch: --memory, --restore of a snapshot,
 *     whose revisions may be lower) resends every state whole, and the
 *     mirror then follows the new history's revisions;
 *   - a mirror that receives a change it cannot read (or cannot apply even
 *     after the state is resent whole) stops following the daemon instead
 *     of retrying the same change: one line on stderr says which state and
 *     why, tether_remote_connected gives false, and writes to it,
 *     tether_remote_revision and tether_remote_sync fail with TETHER_EJSON
 *     (or the failed apply's code). Its plain reads keep the last value it
 *     applied. Free the state and make it again to start over;
 *   - a mirror whose watch the daemon refuses for a reason retrying cannot
 *     fix (this uid may no longer read the state: io.tether.AccessDenied;
 *     a name or parameter it refuses) stops the same way, with that
 *     refusal's code (TETHER_EREADONLY for an access refusal), instead of
 *     asking again every 2 s; other refusals are retried with the backoff.
 * A write the daemon cannot store (its disk is full) fails with
 * TETHER_EBUSY, changing nothing; it may succeed later.
 * Timeouts: no call waits on the daemon for ever. tether_remote_connect,
 * tether_remote_state (its first value), a write or transaction commit
 * made outside callbacks, tether_remote_sync, and tether_runtime_flush
 * waiting for writes made inside callbacks each wait at most the
 * remote's timeout (TETHER_REMOTE_TIMEOUT_MS, 10 s, by default;
 * tether_remote_connect_timeout and tether_remote_set_timeout change it),
 * then fail with TETHER_ETIMEDOUT, naming the daemon and the timeout: a
 * daemon that is stopped (SIGSTOP), hung, or not a daemon at all accepts
 * connections but answers nothing. A write or commit that timed out is
 * like one whose connection broke before the answer: its outcome is
 * unknown (the daemon may still commit it, and the mirror then shows it);
 * read the state again once the daemon answers. The connection stays up,
 * so a daemon that resumes answers the calls in order and the remote goes
 * on by itself.
 * Transactions: writes to remote states inside tether_transaction_begin /
 * commit are sent as one daemon transaction at the outermost commit (all
 * or nothing, one revision, the tag and origin of the transaction), with
 * the preconditions added by tether_remote_expect. One transaction may not
 * mix local and remote states, nor states of two remotes (TETHER_EINVAL);
 * reads inside it see the mirrors' committed values, not its own writes.
 * A daemon transaction over several remote states reaches each mirror as
 * its own local commit (each atomically; an observer of two of them may
 * run between the two).
 * A remote state's descriptor (type lock, read-only, range) is the
 * daemon's (tetherctl declare); tether_state_describe on it is refused.
 * Remote states need a runtime with its own loop thread (TETHER_LOOP_THREAD).
 * --------------------------------------------------------------------- */

/* Connects rt to tetherd at address ("unix:/path/to/socket"; NULL: the
 * default: $TETHER_ADDRESS, else /run/tether/tetherd.sock for root, else
 * $XDG_RUNTIME_DIR/tether/tetherd.sock, else (no XDG_RUNTIME_DIR)
 * ${TMPDIR:-/tmp}/tether-UID/tetherd.sock) and waits until connected.
 * Before anything is sent, on this and every later connection of the
 * remote (reconnections and each remote state's watch), the socket is
 * checked: a per-user private directory ($XDG_RUNTIME_DIR/tether, the
 * tether-UID fallback) must be a real directory (not a symbolic link)
 * owned by this uid with mode 0700; any other socket directory must not
 * be a symbolic link, must belong to this uid, root or $TETHER_DAEMON_UID
 * and not be writable by group or others unless sticky; and the process
 * listening must run as this uid, root or $TETHER_DAEMON_UID (a uid or
 * user name: set it to trust a daemon that runs as another user), as
 * SO_PEERCRED says. Another user's directory or server is thus never sent
 * a call (docs/security-local.md).
 * Must not be called from a callback of rt. *out is yours to
 * tether_remote_free (tether_runtime_free closes its connections too).
 * It waits at most TETHER_REMOTE_TIMEOUT_MS (see
 * tether_remote_connect_timeout) for the daemon to answer a first call.
 * Errors: TETHER_EINVAL (out NULL, bad address, rt not TETHER_LOOP_THREAD),
 * TETHER_ESTALE (rt), TETHER_EBUSY (inside a callback of rt), TETHER_EUV
 * (nothing listens there: the message says why), TETHER_ETIMEDOUT (it
 * accepted the connection but did not answer in time), TETHER_EUNTRUSTED (the
 * socket failed the checks above: the message names the path, its owner
 * and what was wrong, e.g. "the private socket directory
 * /tmp/tether-1000 belongs to uid 1001 (mallory), not to uid 1000
 * (alice)"; nothing was sent), TETHER_EREADONLY (the daemon refused this
 * uid when it connected: no grant in its access configuration, or one of
 * its caps on a uid's connections reached; the message has the daemon's
 * words). */
int tether_remote_connect(tether_runtime_t rt, const char *address, tether_remote_t *out);

/* The default timeout of a remote, in milliseconds (see "Timeouts" above). */
#define TETHER_REMOTE_TIMEOUT_MS 10000u

/* Connecting waits until connected and the daemon has answered one call
 * (org.varlink.service.GetInfo), at most the timeout: TETHER_REMOTE_TIMEOUT_MS
 * for tether_remote_connect, timeout_ms here (0: without limit), which
 * also becomes the remote's timeout (tether_remote_set_timeout). Errors as
 * tether_remote_connect, and TETHER_ETIMEDOUT: something accepted the
 * connection but did not answer within the timeout (a stopped or hung
 * daemon; the message says so); nothing is left connected. TETHER_EUV
 * still means nothing listens there (no socket, connection refused).
 * Otherwise as tether_remote_connect: the same checks of the socket, not
 * from a callback of rt, and *out is yours to tether_remote_free. */
int tether_remote_connect_timeout(tether_runtime_t rt, const char *address, uint32_t timeout_ms,
                                  tether_remote_t *out);

/* Sets how long the remote's calls that wait on the daemon (the first
 * value of tether_remote_state, writes and transaction commits made
 * outside callbacks, tether_remote_sync, tether_runtime_flush waiting for
 * writes made inside callbacks) wait before they fail with
 * TETHER_ETIMEDOUT: timeout_ms milliseconds, 0 for without limit. Applies
 * to calls that start after it returns. Any thread, callbacks included;
 * it runs no callback. A write that timed out may or may not have been
 * applied (see "Timeouts" above). Errors: TETHER_ESTALE (remote). */
int tether_remote_set_timeout(tether_remote_t remote, uint32_t timeout_ms);

/* Frees the remote: its connections close and every state it mirrors is
 * freed (observers end, destroy functions run, handles go stale).
 * Errors: TETHER_ESTALE (already freed or forged). */
int tether_remote_free(tether_remote_t remote);

/* Makes *out a state of the remote's runtime mirroring the daemon's state
 * name (NUL-terminated, 1 to 256 bytes, no control characters; it need not
 * exist yet: the mirror then holds null until it is created). Outside
 * callbacks it returns once the mirror holds the daemon's value. Free it
 * with tether_state_free (its watch ends) or with the remote.
 * Errors: TETHER_EINVAL (NULL name or out, bad name), TETHER_ESTALE
 * (remote), TETHER_EREADONLY (the daemon does not let this uid read it),
 * TETHER_EUV (the watch could not start), TETHER_EUNTRUSTED (its watch
 * connection failed the trust checks of tether_remote_connect),
 * TETHER_ETIMEDOUT (no value within the remote's timeout; the state is
 * not made). */
int tether_remote_state(tether_remote_t remote, const char *name, tether_state_t *out);

/* *out = whether the remote's connection is up now (writes fail with
 * TETHER_EUV while it is not), and no state of it stopped following the
 * daemon (see above). Errors: TETHER_EINVAL, TETHER_ESTALE. */
int tether_remote_connected(tether_remote_t remote, bool *out);

/* Waits until every state the remote mirrors shows at least what the
 * daemon held when this was called (what other processes wrote before it,
 * they having returned): the read barrier between processes. Callbacks the
 * changes cause are owed as usual (tether_runtime_flush runs them).
 * Must not be called from a callback of the remote's runtime.
 * Errors: TETHER_ESTALE, TETHER_EBUSY (inside a callback), TETHER_EUV
 * (the connection is down or dropped meanwhile), TETHER_ETIMEDOUT (the
 * daemon did not answer, or a state's watch did not catch up, within the
 * remote's timeout). */
int tether_remote_sync(tether_remote_t remote);

/* Waits up to timeout_ms milliseconds until the daemon answers on the
 * remote's connection (after it restarted, say): connected, and one round
 * trip made, so a connection whose daemon has just died does not count.
 * Must not be called from a callback of the remote's runtime.
 * Errors: TETHER_ESTALE, TETHER_EBUSY (inside a callback), TETHER_EUV (no
 * answer in time: the message has the last connection error). */
int tether_remote_wait(tether_remote_t remote, uint32_t timeout_ms);

/* *out = the daemon revision that last changed the remote state, as its
 * mirror has applied it (0: the daemon has no such state). Pair it with
 * tether_remote_expect for compare-and-set. Errors: TETHER_EINVAL (out
 * NULL, not a remote state), TETHER_ESTALE. */
int tether_remote_revision(tether_state_t state, uint64_t *out);

/* Adds a precondition to the calling thread's open transaction: it
 * commits only if the daemon's state was last changed at revision (0: it
 * must not exist). When it does not hold, the commit changes nothing and
 * returns TETHER_EREJECTED (the message names the revision found): read
 * again and retry. Errors: TETHER_EINVAL (no open transaction, not a
 * remote state, another remote's state), TETHER_ESTALE. */
int tether_remote_expect(tether_state_t state, uint64_t revision);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_H */
