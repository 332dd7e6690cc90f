#ifndef CDAEMON_SUPPORT_H
#define CDAEMON_SUPPORT_H

#include <stdint.h>

/* What tetherd needs from the kernel that Swift cannot call itself (a
 * system call without a glibc wrapper, a GNU extension). */

/* Asks the scheduler for a slice of `slice_ns` for the calling thread
 * (sched_setattr with sched_runtime, SCHED_OTHER: Linux 6.12's EEVDF
 * custom slices). A thread with a short slice that wakes preempts a busy
 * thread of the same CPU at once instead of when that thread's slice ends.
 * Returns 0, or an errno (EINVAL on kernels without custom slices: the
 * thread keeps the default slice). */
int tetherd_request_short_slice(uint64_t slice_ns);

/* Names the calling thread (pthread_setname_np: at most 15 bytes shown in
 * ps and /proc). Returns 0 or an errno. */
int tetherd_name_thread(const char *name);

#endif
