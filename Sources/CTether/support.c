/* The parts of the C face that are plain C: version strings, error strings
 * and the per-thread state they read. */
#define _GNU_SOURCE
#include "CTether.h"

#include <pthread.h>
#include <string.h>

static _Thread_local char message[1024];
__thread unsigned tether_internal_depth __attribute__((tls_model("initial-exec")));
__thread tether_internal_tls_t tether_internal_context __attribute__((tls_model("initial-exec")));

__thread unsigned tether_internal_errors __attribute__((tls_model("initial-exec")));
__thread unsigned tether_internal_contexts __attribute__((tls_model("initial-exec")));
__thread unsigned tether_internal_wrong_thread __attribute__((tls_model("initial-exec")));
uintptr_t tether_internal_slot_owners[TETHER_INTERNAL_MAX_RUNTIMES];

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
