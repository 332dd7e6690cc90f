#define _GNU_SOURCE
#include "CDaemonSupport.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's struct sched_attr (include/uapi/linux/sched/types.h), first
 * version: glibc before 2.41 does not declare it. */
struct tetherd_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
};

int tetherd_request_short_slice(uint64_t slice_ns) {
#ifdef SYS_sched_setattr
    struct tetherd_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.sched_policy = SCHED_OTHER;
    /* The thread keeps its nice value (SCHED_FLAG_KEEP_PARAMS would keep
     * it too, but also skips the slice). */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (errno != 0) return errno;
    attr.sched_nice = nice;
    attr.sched_runtime = slice_ns;
    if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) return errno;
    return 0;
#else
    (void)slice_ns;
    return ENOSYS;
#endif
}

int tetherd_name_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
