/*
 * bench_tetherd.c — tetherd beside Redis, in one run (issue 14).
 *
 * Starts a tetherd of its own (--memory, a socket in a temporary
 * directory; READY=1 on NOTIFY_SOCKET, never a sleep) and a redis-server
 * of its own (--port 0 --unixsocket, nothing saved; its READY=1 through
 * --supervised systemd, or a PING answered, whichever comes first, with a
 * deadline), and measures both over their Unix sockets, section after
 * section, tetherd first and Redis right after it, so each pair of figures
 * comes from the same window of this machine:
 *
 *   rtt       one client, one call at a time: Set, then Get: ops/s, p50/p99
 *             (tetherd: this file's Varlink client; Redis: redis-benchmark
 *             -c 1, and this file's RESP client as a cross-check)
 *   pipeline  one client, 16 calls written at once, 16 replies read: ops/s
 *             (Redis: redis-benchmark -P 16 -c 1)
 *   clients   50 connections, one call in flight on each: total ops/s
 *             (Redis: redis-benchmark -c 50)
 *   watch     100 watcher connections on one state, one writer; each write
 *             waits for its 100 deliveries: latency p50/p99 from before the
 *             write is sent to each watcher's read of it (Redis: 100
 *             SUBSCRIBE connections; PUBLISH, and SET with keyspace
 *             notifications)
 *   e2e       through libtether.so: a process writes a remote state with
 *             tether_state_set_int, another has a TETHER_OBSERVE_SYNC
 *             observer on its mirror; set call start to observer call,
 *             across processes (CLOCK_MONOTONIC through a shared page)
 *   durable   (issue 15) acknowledged durable commits per second with 1, 16
 *             and 64 clients, each its own key, one call in flight each:
 *             tetherd with a store (--durability full, then normal) and
 *             Redis with --appendonly yes (appendfsync always, then
 *             everysec), each started for this section with its data in
 *             this driver's temporary directory; and SQLite alone
 *             (bench_sqlite, next to this executable, or $BENCH_SQLITE).
 *             Each row also counts the block device's flushes
 *             (/proc/diskstats) in its window
 *   raw       the floors: a Unix socket ping-pong between two processes;
 *             a process writing 64 bytes to 100 sockets (the fan-out's)
 *
 * Usage: bench_tetherd [TETHERD] (default $TETHERD, else .build/release/tetherd);
 * REDIS_SERVER and REDIS_BENCHMARK override the Redis binaries (default
 * from PATH). BENCH_ONLY selects sections ("rtt pipeline clients watch e2e durable
 * raw"); BENCH_QUICK=1 runs small sizes. Result lines (benchmarks/common/
 * bench.h) on stdout, sys "tetherd", "redis" or "raw", group "daemon";
 * progress on stderr. Exit status 0 unless tetherd could not be started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "common/bench.h"
#include "daemon/diskflush.h"
#include "tether.h"

#define GROUP "daemon"
#define SYS_T "tetherd"
#define SYS_R "redis"

static int quick;
static char tmpdir[] = "/tmp/bench-tetherd.XXXXXX";
static char t_sock[108], r_sock[108], t_notify[108], r_notify[108], t_log[160], r_log[160];
static char t_address[120];
static pid_t t_pid = -1, r_pid = -1;
/* The durable section's own servers: a tetherd with a store and, beside it,
 * a Redis with an append-only file, started together so that their rows can
 * alternate. */
static pid_t d_pid = -1, d2_pid = -1;
static char d_log[240] = "", d2_log[240] = "";
static const char *self_path = "bench_tetherd";
static const char *redis_server = "redis-server", *redis_benchmark = "redis-benchmark";
static char redis_version[64] = "?";
/* Placement: the client side (this driver, redis-benchmark, the e2e
 * processes, the echo process's peer) on client_cpu, the servers (and the
 * echo process) on server_cpu; -1: not pinned (BENCH_DAEMON_PIN=0 or one CPU). */
static int client_cpu = -1, server_cpu = -1;

/* Pins every thread of pid (0: this process) to cpu. */
static void pin(pid_t pid, int cpu) {
  char dir[64];
  DIR *d;
  struct dirent *e;
  cpu_set_t set;
  if (cpu < 0) return;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  snprintf(dir, sizeof dir, "/proc/%d/task", pid == 0 ? (int)getpid() : (int)pid);
  if ((d = opendir(dir)) == NULL) {
    sched_setaffinity(pid, sizeof set, &set);
    return;
  }
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') sched_setaffinity((pid_t)atoi(e->d_name), sizeof set, &set);
  closedir(d);
}

/* ---- servers ------------------------------------------------------------ */

static int notify_socket(const char *path) {
  struct sockaddr_un sa;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  unlink(path);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int unix_connect(const char *path) {
  struct sockaddr_un sa;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Whether a Redis answers PING on path now (the fallback readiness check). */
static int redis_pings(const char *path) {
  char buf[64];
  ssize_t n;
  int fd = unix_connect(path), ok = 0;
  if (fd < 0) return 0;
  if (write(fd, "PING\r\n", 6) == 6) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 1000) > 0 && (n = read(fd, buf, sizeof buf - 1)) > 0) {
      buf[n] = 0;
      ok = strncmp(buf, "+PONG", 5) == 0;
    }
  }
  close(fd);
  return ok;
}

static void print_file(const char *path) {
  char line[512];
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  fprintf(stderr, "--- %s ---\n", path);
  while (fgets(line, sizeof line, f)) fputs(line, stderr);
  fclose(f);
}

/* Forks and execs argv with NOTIFY_SOCKET=notify_path and its output in
 * log_path, then waits for READY=1 on that socket (or, when ping_path is
 * given, for a Redis PING answered there), up to 60 s. Returns the pid or
 * -1. The child gets SIGTERM if this driver dies. */
static pid_t start_server(char *const argv[], const char *notify_path, const char *log_path,
                          const char *ping_path) {
  int nfd = notify_socket(notify_path), status;
  int64_t deadline = bench_now_ns() + 60 * (int64_t)1000000000;
  pid_t pid, me = getpid();
  if (nfd < 0) {
    fprintf(stderr, "bench_tetherd: notify socket %s: %s\n", notify_path, strerror(errno));
    return -1;
  }
  pid = fork();
  if (pid == 0) {
    int out = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != me) _exit(1);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    setenv("NOTIFY_SOCKET", notify_path, 1);
    pin(0, server_cpu);
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  while (pid > 0) {
    struct pollfd p = {nfd, POLLIN, 0};
    char buf[512];
    if (poll(&p, 1, ping_path ? 20 : 250) > 0) {
      ssize_t n = recv(nfd, buf, sizeof buf - 1, 0);
      if (n > 0) {
        buf[n] = 0;
        if (strstr(buf, "READY=1")) break;
      }
    } else if (ping_path != NULL && redis_pings(ping_path)) {
      break;
    }
    if (waitpid(pid, &status, WNOHANG) == pid) {
      fprintf(stderr, "bench_tetherd: %s exited before it was ready\n", argv[0]);
      print_file(log_path);
      pid = -1;
    } else if (bench_now_ns() > deadline) {
      fprintf(stderr, "bench_tetherd: %s was not ready within 60 s\n", argv[0]);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      print_file(log_path);
      pid = -1;
    }
  }
  close(nfd);
  return pid;
}

static void stop_server(pid_t *pid, const char *what, const char *log_path) {
  int status;
  if (*pid <= 0) return;
  kill(*pid, SIGTERM);
  while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench_tetherd: %s did not stop cleanly (%s %d)\n", what,
            WIFSIGNALED(status) ? "signal" : "exit",
            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    print_file(log_path);
  }
  *pid = -1;
}

static void cleanup(void) {
  char cmd[200];
  stop_server(&t_pid, "tetherd", t_log);
  stop_server(&r_pid, "redis-server", r_log);
  stop_server(&d_pid, "durable server", d_log);
  stop_server(&d2_pid, "durable server", d2_log);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "bench_tetherd: could not remove %s\n", tmpdir);
}

static void on_signal(int sig) {
  if (t_pid > 0) kill(t_pid, SIGTERM);
  if (r_pid > 0) kill(r_pid, SIGTERM);
  if (d_pid > 0) kill(d_pid, SIGTERM);
  if (d2_pid > 0) kill(d2_pid, SIGTERM);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* ---- a minimal client: Varlink (NUL-framed JSON) or RESP ---------------- */

typedef enum { P_VARLINK, P_RESP } proto_t;

typedef struct {
  int fd;
  proto_t proto;
  char *buf;
  size_t cap, start, end;
} conn_t;

static int conn_open(conn_t *c, const char *path, proto_t proto) {
  memset(c, 0, sizeof *c);
  c->proto = proto;
  c->fd = unix_connect(path);
  if (c->fd < 0) return -1;
  c->cap = 1 << 16;
  c->buf = malloc(c->cap);
  return c->buf ? 0 : -1;
}

static void conn_close(conn_t *c) {
  if (c->fd >= 0) close(c->fd);
  free(c->buf);
  c->fd = -1;
  c->buf = NULL;
}

static int conn_send(conn_t *c, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(c->fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* One read() into the buffer. Returns the bytes read, 0 at EOF, -1. */
static ssize_t conn_fill(conn_t *c) {
  ssize_t n;
  if (c->start == c->end) c->start = c->end = 0;
  if (c->cap - c->end < 4096 && c->start > 0) {
    memmove(c->buf, c->buf + c->start, c->end - c->start);
    c->end -= c->start;
    c->start = 0;
  }
  if (c->cap - c->end < 4096) {
    char *nb = realloc(c->buf, c->cap * 2);
    if (nb == NULL) return -1;
    c->buf = nb;
    c->cap *= 2;
  }
  do n = read(c->fd, c->buf + c->end, c->cap - c->end);
  while (n < 0 && errno == EINTR);
  if (n > 0) c->end += (size_t)n;
  return n;
}

/* The length of the complete RESP reply at p (0: incomplete, -1: bad). */
static long resp_len(const char *p, size_t n) {
  const char *crlf;
  size_t head;
  long k, off, r;
  if (n < 3) return 0;
  crlf = memmem(p, n, "\r\n", 2);
  if (crlf == NULL) return 0;
  head = (size_t)(crlf - p) + 2;
  switch (p[0]) {
  case '+': case '-': case ':':
    return (long)head;
  case '$':
    k = strtol(p + 1, NULL, 10);
    if (k < 0) return (long)head;
    return n < head + (size_t)k + 2 ? 0 : (long)(head + (size_t)k + 2);
  case '*':
    k = strtol(p + 1, NULL, 10);
    off = (long)head;
    while (k-- > 0) {
      r = resp_len(p + off, n - (size_t)off);
      if (r <= 0) return r;
      off += r;
    }
    return off;
  default:
    return -1;
  }
}

/* The next complete message in the buffer: 1 (msg, len set), 0 none yet, -1 bad. */
static int conn_next(conn_t *c, const char **msg, size_t *len) {
  const char *p = c->buf + c->start;
  size_t n = c->end - c->start;
  if (n == 0) return 0;
  if (c->proto == P_VARLINK) {
    const char *nul = memchr(p, 0, n);
    if (nul == NULL) return 0;
    *msg = p;
    *len = (size_t)(nul - p);
    c->start += *len + 1;
    return 1;
  } else {
    long r = resp_len(p, n);
    if (r <= 0) return (int)r;
    *msg = p;
    *len = (size_t)r;
    c->start += (size_t)r;
    return 1;
  }
}

/* Blocks until a whole message is there. 0 or -1. */
static int conn_recv(conn_t *c, const char **msg, size_t *len) {
  *msg = NULL;
  *len = 0;
  for (;;) {
    int r = conn_next(c, msg, len);
    if (r != 0) return r > 0 ? 0 : -1;
    if (conn_fill(c) <= 0) return -1;
  }
}

/* Whether a reply is an error (printed once per kind). */
static int reply_failed(const conn_t *c, const char *msg, size_t len) {
  int bad = c->proto == P_VARLINK ? memmem(msg, len, "\"error\"", 7) != NULL : (len > 0 && msg[0] == '-');
  if (bad) fprintf(stderr, "bench_tetherd: error reply: %.*s\n", (int)(len > 300 ? 300 : len), msg);
  return bad;
}

typedef enum { OP_SET, OP_GET } op_t;

static const char *op_name(op_t op) { return op == OP_SET ? "set" : "get"; }

/* One call (with its NUL for Varlink) into out; returns its length. */
static size_t make_call(proto_t proto, op_t op, const char *key, long long v, char *out, size_t cap) {
  int n;
  if (proto == P_VARLINK) {
    if (op == OP_SET)
      n = snprintf(out, cap, "{\"method\":\"io.tether.Set\",\"parameters\":{\"name\":\"%s\",\"value\":%lld}}",
                   key, v);
    else
      n = snprintf(out, cap, "{\"method\":\"io.tether.Get\",\"parameters\":{\"name\":\"%s\"}}", key);
    return (size_t)n + 1; /* the NUL snprintf wrote */
  }
  if (op == OP_SET) {
    char val[32];
    int vl = snprintf(val, sizeof val, "%lld", v);
    n = snprintf(out, cap, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%d\r\n%s\r\n", strlen(key), key, vl, val);
  } else {
    n = snprintf(out, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
  }
  return (size_t)n;
}

static const char *proto_sock(proto_t p) { return p == P_VARLINK ? t_sock : r_sock; }
static const char *proto_sys(proto_t p) { return p == P_VARLINK ? SYS_T : SYS_R; }

/* ---- statistics ---------------------------------------------------------- */

typedef struct {
  int ok;
  long n;
  double ops_s, p50_us, p99_us, avg_us, p999_us, max_us;
} stats_t;

static void stats_from(stats_t *s, int64_t *lat, long n, int64_t elapsed_ns, long ops) {
  long i;
  double sum = 0;
  qsort(lat, (size_t)n, sizeof *lat, bench_cmp_i64);
  for (i = 0; i < n; i++) sum += (double)lat[i];
  s->n = n;
  s->ops_s = elapsed_ns > 0 ? (double)ops * 1e9 / (double)elapsed_ns : 0;
  s->p50_us = bench_quantile(lat, n, 0.5) / 1e3;
  s->p99_us = bench_quantile(lat, n, 0.99) / 1e3;
  s->p999_us = bench_quantile(lat, n, 0.999) / 1e3;
  s->max_us = n ? lat[n - 1] / 1e3 : 0;
  s->avg_us = n ? sum / (double)n / 1e3 : 0;
}

static void emit_rate(const char *sys, const char *name, const stats_t *s, const char *protocol,
                      const char *note) {
  char extra[300];
  snprintf(extra, sizeof extra,
           "\"p50_us\":%.3f,\"p99_us\":%.3f,\"avg_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,"
           "\"samples\":%ld",
           s->p50_us, s->p99_us, s->avg_us, s->p999_us, s->max_us, s->n);
  bench_emit(sys, GROUP, name, s->ok, s->ops_s, "ops/s", protocol, s->ok ? extra : NULL,
             note ? "%s" : NULL, note);
}

static void emit_latency(const char *sys, const char *name, const stats_t *s, const char *protocol,
                         const char *note) {
  char extra[300], n50[80], n99[80];
  snprintf(extra, sizeof extra,
           "\"p50_us\":%.3f,\"p99_us\":%.3f,\"avg_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,"
           "\"samples\":%ld",
           s->p50_us, s->p99_us, s->avg_us, s->p999_us, s->max_us, s->n);
  snprintf(n50, sizeof n50, "%s p50", name);
  snprintf(n99, sizeof n99, "%s p99", name);
  bench_emit(sys, GROUP, n50, s->ok, s->p50_us, "us", protocol, s->ok ? extra : NULL,
             note ? "%s" : NULL, note);
  bench_emit(sys, GROUP, n99, s->ok, s->p99_us, "us", protocol, s->ok ? extra : NULL,
             note ? "%s" : NULL, note);
}

/* ---- (a)(b) one client, one call at a time ------------------------------- */

static stats_t run_rtt(proto_t proto, op_t op, long n, long warm) {
  stats_t s;
  conn_t c;
  char call[256];
  int64_t *lat = calloc((size_t)n, sizeof *lat), t_start = 0;
  long i;
  memset(&s, 0, sizeof s);
  if (lat == NULL || conn_open(&c, proto_sock(proto), proto) != 0) {
    fprintf(stderr, "bench_tetherd: cannot connect to %s\n", proto_sys(proto));
    free(lat);
    return s;
  }
  s.ok = 1;
  for (i = -warm; i < n && s.ok; i++) {
    const char *msg;
    size_t len, cl = make_call(proto, op, "k", 1000000 + i, call, sizeof call);
    int64_t t0;
    if (i == 0) t_start = bench_now_ns();
    t0 = bench_now_ns();
    if (conn_send(&c, call, cl) != 0 || conn_recv(&c, &msg, &len) != 0) {
      s.ok = 0;
      break;
    }
    if (i >= 0) lat[i] = bench_now_ns() - t0;
    if (reply_failed(&c, msg, len)) s.ok = 0;
  }
  if (s.ok) stats_from(&s, lat, n, bench_now_ns() - t_start, n);
  conn_close(&c);
  free(lat);
  return s;
}

/* ---- (c) pipelined: 16 calls written at once, 16 replies read ------------ */

static stats_t run_pipelined(proto_t proto, op_t op, long batches, int depth, long warm) {
  stats_t s;
  conn_t c;
  char *calls = malloc((size_t)depth * 256);
  int64_t *lat = calloc((size_t)batches, sizeof *lat), t_start = 0;
  long b;
  memset(&s, 0, sizeof s);
  if (calls == NULL || lat == NULL || conn_open(&c, proto_sock(proto), proto) != 0) {
    free(calls);
    free(lat);
    return s;
  }
  s.ok = 1;
  for (b = -warm; b < batches && s.ok; b++) {
    size_t used = 0;
    int k;
    int64_t t0;
    for (k = 0; k < depth; k++)
      used += make_call(proto, op, "k", 2000000 + b * depth + k, calls + used, 256);
    if (b == 0) t_start = bench_now_ns();
    t0 = bench_now_ns();
    if (conn_send(&c, calls, used) != 0) s.ok = 0;
    for (k = 0; k < depth && s.ok; k++) {
      const char *msg;
      size_t len;
      if (conn_recv(&c, &msg, &len) != 0 || reply_failed(&c, msg, len)) s.ok = 0;
    }
    if (b >= 0) lat[b] = bench_now_ns() - t0;
  }
  if (s.ok) stats_from(&s, lat, batches, bench_now_ns() - t_start, batches * depth);
  conn_close(&c);
  free(calls);
  free(lat);
  return s;
}

/* ---- (d) many clients, one call in flight on each ------------------------ */

/* One thread drives every connection through epoll, as redis-benchmark
 * does (one event loop, -c connections): a reply is answered at once with
 * the client's next call. */
static stats_t run_clients(proto_t proto, op_t op, int nclients, long total, long warm) {
  stats_t s;
  conn_t *cs = calloc((size_t)nclients, sizeof *cs);
  int64_t *sent = calloc((size_t)nclients, sizeof *sent);
  int64_t *lat = calloc((size_t)total, sizeof *lat), t_start = 0;
  long issued = 0, done = 0, all = total + warm;
  int ep = epoll_create1(EPOLL_CLOEXEC), i;
  char call[256];
  memset(&s, 0, sizeof s);
  if (cs == NULL || sent == NULL || lat == NULL || ep < 0) goto out;
  for (i = 0; i < nclients; i++) cs[i].fd = -1;
  for (i = 0; i < nclients; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (conn_open(&cs[i], proto_sock(proto), proto) != 0 || epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev) != 0)
      goto out;
  }
  s.ok = 1;
  for (i = 0; i < nclients && issued < all; i++) {
    size_t cl = make_call(proto, op, "k", 3000000 + issued, call, sizeof call);
    sent[i] = bench_now_ns();
    if (conn_send(&cs[i], call, cl) != 0) s.ok = 0;
    issued++;
  }
  while (done < all && s.ok) {
    struct epoll_event evs[64];
    int n = epoll_wait(ep, evs, 64, 10000), k;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "bench_tetherd: %s: no reply within 10 s\n", proto_sys(proto));
      s.ok = 0;
      break;
    }
    for (k = 0; k < n && s.ok; k++) {
      conn_t *c = &cs[evs[k].data.u32];
      const char *msg;
      size_t len;
      int64_t now;
      if (conn_fill(c) <= 0) {
        s.ok = 0;
        break;
      }
      now = bench_now_ns();
      while (s.ok && conn_next(c, &msg, &len) == 1) {
        if (reply_failed(c, msg, len)) s.ok = 0;
        if (done >= warm) lat[done - warm] = now - sent[evs[k].data.u32];
        if (++done == warm) t_start = bench_now_ns();
        if (issued < all) {
          size_t cl = make_call(proto, op, "k", 3000000 + issued, call, sizeof call);
          sent[evs[k].data.u32] = bench_now_ns();
          if (conn_send(c, call, cl) != 0) s.ok = 0;
          issued++;
        }
      }
    }
  }
  if (s.ok) stats_from(&s, lat, total, bench_now_ns() - t_start, total);
out:
  for (i = 0; cs != NULL && i < nclients; i++)
    if (cs[i].buf != NULL || cs[i].fd >= 0) conn_close(&cs[i]);
  if (ep >= 0) close(ep);
  free(cs);
  free(sent);
  free(lat);
  return s;
}

/* ---- (e) watch fan-out ----------------------------------------------------- */

typedef enum { FAN_TETHERD, FAN_REDIS_PUBSUB, FAN_REDIS_KEYSPACE } fan_t;

/* Sends one command, reads one reply; 0 when it is not an error. */
static int conn_call(conn_t *c, const char *call, size_t len) {
  const char *msg;
  size_t ml;
  if (conn_send(c, call, len) != 0 || conn_recv(c, &msg, &ml) != 0) return -1;
  return reply_failed(c, msg, ml) ? -1 : 0;
}

/* Whether msg is watcher w's delivery of write v (a tetherd progress reply
 * is skipped: returns 0 with *skip set). */
static int fan_delivery(fan_t kind, const char *msg, size_t len, long long v, int *skip) {
  char want[64];
  *skip = 0;
  if (kind == FAN_TETHERD) {
    if (memmem(msg, len, "\"event\":\"progress\"", 18) != NULL) {
      *skip = 1;
      return 0;
    }
    snprintf(want, sizeof want, "\"value\":%lld}", v);
    return memmem(msg, len, "\"event\":\"change\"", 16) != NULL && memmem(msg, len, want, strlen(want)) != NULL;
  }
  if (len < 14 || memmem(msg, len, "$7\r\nmessage\r\n", 13) == NULL) return 0;
  if (kind == FAN_REDIS_KEYSPACE) return memmem(msg, len, "\r\n$3\r\nset\r\n", 10) != NULL;
  snprintf(want, sizeof want, "\r\n%lld\r\n", v);
  return len >= strlen(want) && memcmp(msg + len - strlen(want), want, strlen(want)) == 0;
}

static stats_t run_fanout(fan_t kind, int nwatch, long writes, long warm) {
  stats_t s;
  proto_t proto = kind == FAN_TETHERD ? P_VARLINK : P_RESP;
  conn_t *ws = calloc((size_t)nwatch + 1, sizeof *ws), *writer;
  long *seen = calloc((size_t)nwatch, sizeof *seen);
  int64_t *lat = calloc((size_t)(writes * nwatch), sizeof *lat);
  long nl = 0, w;
  int ep = epoll_create1(EPOLL_CLOEXEC), i;
  char call[512];
  size_t cl;
  memset(&s, 0, sizeof s);
  if (ws == NULL || seen == NULL || lat == NULL || ep < 0) goto out;
  for (i = 0; i <= nwatch; i++) ws[i].fd = -1;
  writer = &ws[nwatch];
  if (conn_open(writer, proto_sock(proto), proto) != 0) goto out;
  if (kind == FAN_REDIS_KEYSPACE) {
    cl = (size_t)snprintf(call, sizeof call,
                          "*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$22\r\nnotify-keyspace-events\r\n$2\r\nK$\r\n");
    if (conn_call(writer, call, cl) != 0) goto out;
  }
  /* The watchers: each its own connection, each subscribed before the first write. */
  for (i = 0; i < nwatch; i++) {
    const char *msg;
    size_t len;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (conn_open(&ws[i], proto_sock(proto), proto) != 0) goto out;
    if (kind == FAN_TETHERD) {
      cl = (size_t)snprintf(call, sizeof call,
                            "{\"method\":\"io.tether.Watch\",\"parameters\":{\"names\":[\"fan\"]},\"more\":true}") + 1;
      if (conn_send(&ws[i], call, cl) != 0) goto out;
      /* the snapshot, then progress: subscribed */
      do {
        if (conn_recv(&ws[i], &msg, &len) != 0 || reply_failed(&ws[i], msg, len)) goto out;
      } while (memmem(msg, len, "\"event\":\"progress\"", 18) == NULL);
    } else {
      const char *ch = kind == FAN_REDIS_PUBSUB ? "fan" : "__keyspace@0__:fan";
      cl = (size_t)snprintf(call, sizeof call, "*2\r\n$9\r\nSUBSCRIBE\r\n$%zu\r\n%s\r\n", strlen(ch), ch);
      if (conn_send(&ws[i], call, cl) != 0 || conn_recv(&ws[i], &msg, &len) != 0 ||
          reply_failed(&ws[i], msg, len))
        goto out;
    }
    if (epoll_ctl(ep, EPOLL_CTL_ADD, ws[i].fd, &ev) != 0) goto out;
  }
  {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)nwatch};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, writer->fd, &ev) != 0) goto out;
  }
  s.ok = 1;
  for (w = -warm; w < writes && s.ok; w++) {
    long long v = 4000000 + w;
    int got = 0, writer_done = 0;
    int64_t t0;
    if (kind == FAN_TETHERD) {
      cl = make_call(P_VARLINK, OP_SET, "fan", v, call, sizeof call);
    } else if (kind == FAN_REDIS_KEYSPACE) {
      cl = make_call(P_RESP, OP_SET, "fan", v, call, sizeof call);
    } else {
      char val[32];
      int vl = snprintf(val, sizeof val, "%lld", v);
      cl = (size_t)snprintf(call, sizeof call, "*3\r\n$7\r\nPUBLISH\r\n$3\r\nfan\r\n$%d\r\n%s\r\n", vl, val);
    }
    t0 = bench_now_ns();
    if (conn_send(writer, call, cl) != 0) {
      s.ok = 0;
      break;
    }
    while ((got < nwatch || !writer_done) && s.ok) {
      struct epoll_event evs[128];
      int n = epoll_wait(ep, evs, 128, 10000), k;
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fprintf(stderr, "bench_tetherd: fan-out: %d of %d deliveries after 10 s\n", got, nwatch);
        s.ok = 0;
        break;
      }
      for (k = 0; k < n && s.ok; k++) {
        uint32_t idx = evs[k].data.u32;
        conn_t *c = &ws[idx];
        const char *msg;
        size_t len;
        int64_t now;
        if (conn_fill(c) <= 0) {
          s.ok = 0;
          break;
        }
        now = bench_now_ns();
        while (s.ok && conn_next(c, &msg, &len) == 1) {
          int skip;
          if (idx == (uint32_t)nwatch) {
            if (reply_failed(c, msg, len)) s.ok = 0;
            writer_done = 1;
          } else if (fan_delivery(kind, msg, len, v, &skip)) {
            if (seen[idx] == w + warm + 1) {
              fprintf(stderr, "bench_tetherd: fan-out: watcher %u got write %ld twice\n", idx, w);
              s.ok = 0;
            }
            seen[idx] = w + warm + 1;
            got++;
            if (w >= 0) lat[nl++] = now - t0;
          } else if (!skip) {
            fprintf(stderr, "bench_tetherd: fan-out: unexpected message for write %lld: %.*s\n", v,
                    (int)(len > 200 ? 200 : len), msg);
            s.ok = 0;
          }
        }
      }
    }
  }
  if (s.ok) stats_from(&s, lat, nl, 1, 0);
  if (kind == FAN_REDIS_KEYSPACE && writer->fd >= 0) {
    cl = (size_t)snprintf(call, sizeof call,
                          "*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$22\r\nnotify-keyspace-events\r\n$0\r\n\r\n");
    conn_call(writer, call, cl);
  }
out:
  for (i = 0; ws != NULL && i <= nwatch; i++)
    if (ws[i].buf != NULL || ws[i].fd >= 0) conn_close(&ws[i]);
  if (ep >= 0) close(ep);
  free(ws);
  free(seen);
  free(lat);
  return s;
}

/* ---- redis-benchmark ------------------------------------------------------- */

typedef struct {
  int ok;
  double rps, avg_ms, p50_ms, p99_ms;
} rb_t;

/* Runs redis-benchmark -t set,get with extra arguments; fills set and get
 * from its --csv lines. */
static int run_redis_benchmark(const char *args, rb_t *set, rb_t *get) {
  char cmd[600], line[512];
  FILE *p;
  memset(set, 0, sizeof *set);
  memset(get, 0, sizeof *get);
  snprintf(cmd, sizeof cmd, "'%s' -s '%s' -t set,get --csv %s 2>&1", redis_benchmark, r_sock, args);
  fprintf(stderr, "  $ %s\n", cmd);
  p = popen(cmd, "r");
  if (p == NULL) return -1;
  while (fgets(line, sizeof line, p)) {
    char test[32];
    double rps, avg, mn, p50, p95, p99, mx;
    if (sscanf(line, "\"%31[^\"]\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\"", test, &rps, &avg,
               &mn, &p50, &p95, &p99, &mx) == 8) {
      rb_t *r = strcmp(test, "SET") == 0 ? set : strcmp(test, "GET") == 0 ? get : NULL;
      if (r != NULL) {
        r->ok = 1;
        r->rps = rps;
        r->avg_ms = avg;
        r->p50_ms = p50;
        r->p99_ms = p99;
      }
    } else if (strncmp(line, "\"test\"", 6) != 0) {
      fprintf(stderr, "  redis-benchmark: %s", line);
    }
  }
  if (pclose(p) != 0) fprintf(stderr, "bench_tetherd: redis-benchmark exited with an error\n");
  return set->ok && get->ok ? 0 : -1;
}

static void emit_rb(const char *name, const rb_t *r, const char *protocol) {
  char extra[200];
  snprintf(extra, sizeof extra, "\"p50_us\":%.1f,\"p99_us\":%.1f,\"avg_us\":%.1f,\"client\":\"redis-benchmark\"",
           r->p50_ms * 1e3, r->p99_ms * 1e3, r->avg_ms * 1e3);
  bench_emit(SYS_R, GROUP, name, r->ok, r->rps, "ops/s", protocol, r->ok ? extra : NULL,
             r->ok ? NULL : "redis-benchmark gave no figure (see the log)");
}

/* ---- sections --------------------------------------------------------------- */

static int redis_up(void) { return r_pid > 0; }

static void skip_redis(const char *name) {
  bench_skip(SYS_R, GROUP, name, "redis-server or redis-benchmark not available (scripts/install-bench-deps.sh)");
}

/* one_cpu: the servers are moved to the client's CPU for the duration, so
 * a round trip costs no cross-CPU wake-up (on this VM that wake-up is most
 * of a one-client round trip: see the raw ping-pong rows). */
static void section_rtt(int one_cpu) {
  long n = quick ? 2000 : 50000, warm = quick ? 200 : 2000;
  op_t ops[2] = {OP_SET, OP_GET};
  char proto_text[400], args[80], names[2][64];
  const char *where = one_cpu ? ", one CPU" : "";
  rb_t rset, rget;
  int k;
  if (one_cpu) {
    if (client_cpu < 0) return;
    pin(t_pid, client_cpu);
    if (redis_up()) pin(r_pid, client_cpu);
  }
  snprintf(proto_text, sizeof proto_text,
           "one connection, one call at a time (no pipelining), %ld calls after %ld warm-up; "
           "latency: call written to reply read%s", n, warm,
           one_cpu ? "; client and server pinned to the same CPU" : "");
  for (k = 0; k < 2; k++) {
    stats_t s = run_rtt(P_VARLINK, ops[k], n, warm);
    snprintf(names[k], sizeof names[k], "%s, 1 client%s", op_name(ops[k]), where);
    emit_rate(SYS_T, names[k], &s, proto_text, NULL);
    if (redis_up()) {
      char own[128];
      s = run_rtt(P_RESP, ops[k], n, warm);
      snprintf(own, sizeof own, "%.63s [bench client]", names[k]);
      emit_rate(SYS_R, own, &s, proto_text, "this driver's RESP client, the same loop as tetherd's");
    }
  }
  if (!redis_up()) {
    skip_redis(names[0]);
    skip_redis(names[1]);
  } else {
    snprintf(args, sizeof args, "-n %ld -c 1", n);
    run_redis_benchmark(args, &rset, &rget);
    snprintf(proto_text, sizeof proto_text, "redis-benchmark -t set,get -n %ld -c 1%s", n,
             one_cpu ? "; redis-benchmark and redis-server pinned to the same CPU" : "");
    emit_rb(names[0], &rset, proto_text);
    emit_rb(names[1], &rget, proto_text);
  }
  if (one_cpu) {
    pin(t_pid, server_cpu);
    if (redis_up()) pin(r_pid, server_cpu);
  }
}

static void section_pipeline(void) {
  long batches = quick ? 500 : 40000, warm = quick ? 50 : 2000;
  int depth = 16, k;
  op_t ops[2] = {OP_SET, OP_GET};
  char proto_text[300], args[80];
  rb_t rset, rget;
  snprintf(proto_text, sizeof proto_text,
           "one connection; %d calls written at once, then their %d replies read; %ld batches "
           "(%ld calls) after %ld warm-up batches", depth, depth, batches, batches * depth, warm);
  for (k = 0; k < 2; k++) {
    char name[64];
    stats_t s = run_pipelined(P_VARLINK, ops[k], batches, depth, warm);
    snprintf(name, sizeof name, "%s, pipelined 16", op_name(ops[k]));
    emit_rate(SYS_T, name, &s, proto_text, "latency figures are per batch of 16");
    if (redis_up()) {
      char own[128];
      s = run_pipelined(P_RESP, ops[k], batches, depth, warm);
      snprintf(own, sizeof own, "%s [bench client]", name);
      emit_rate(SYS_R, own, &s, proto_text, "this driver's RESP client; latency per batch of 16");
    }
  }
  if (!redis_up()) {
    skip_redis("set, pipelined 16");
    skip_redis("get, pipelined 16");
    return;
  }
  snprintf(args, sizeof args, "-n %ld -c 1 -P 16", quick ? 50000L : 2000000L);
  run_redis_benchmark(args, &rset, &rget);
  snprintf(proto_text, sizeof proto_text, "redis-benchmark -t set,get %s", args);
  emit_rb("set, pipelined 16", &rset, proto_text);
  emit_rb("get, pipelined 16", &rget, proto_text);
}

static void section_clients(void) {
  long total = quick ? 5000 : 200000, warm = quick ? 500 : 10000;
  int nclients = 50, k;
  op_t ops[2] = {OP_SET, OP_GET};
  char proto_text[300], args[80];
  rb_t rset, rget;
  snprintf(proto_text, sizeof proto_text,
           "%d connections, one call in flight on each (no pipelining), driven by one epoll "
           "thread as redis-benchmark drives its clients; %ld calls after %ld warm-up",
           nclients, total, warm);
  for (k = 0; k < 2; k++) {
    char name[64];
    stats_t s = run_clients(P_VARLINK, ops[k], nclients, total, warm);
    snprintf(name, sizeof name, "%s, 50 clients", op_name(ops[k]));
    emit_rate(SYS_T, name, &s, proto_text, NULL);
    if (redis_up()) {
      char own[128];
      s = run_clients(P_RESP, ops[k], nclients, total, warm);
      snprintf(own, sizeof own, "%s [bench client]", name);
      emit_rate(SYS_R, own, &s, proto_text, "this driver's RESP client");
    }
  }
  if (!redis_up()) {
    skip_redis("set, 50 clients");
    skip_redis("get, 50 clients");
    return;
  }
  snprintf(args, sizeof args, "-n %ld -c 50", total);
  run_redis_benchmark(args, &rset, &rget);
  snprintf(proto_text, sizeof proto_text, "redis-benchmark -t set,get %s", args);
  emit_rb("set, 50 clients", &rset, proto_text);
  emit_rb("get, 50 clients", &rget, proto_text);
}

static void section_watch(void) {
  /* BENCH_FANOUT_WATCHERS: the scale section's 10,000 (issue 35) instead
   * of make bench's 100; fewer writes then, each with as many deliveries. */
  const char *wenv = getenv("BENCH_FANOUT_WATCHERS");
  int nwatch = wenv && atoi(wenv) > 0 ? atoi(wenv) : 100;
  long writes = quick ? 100 : nwatch > 1000 ? 100 : 2000, warm = quick ? 10 : nwatch > 1000 ? 10 : 100;
  char proto_text[400];
  stats_t s;
  snprintf(proto_text, sizeof proto_text,
           "%d watcher connections on one state and one writer connection, all read by one epoll "
           "thread; %ld writes after %ld warm-up, one at a time (each waits for its %d deliveries "
           "and its reply); latency: before the write is sent to each watcher's read of it "
           "(%ld samples)", nwatch, writes, warm, nwatch, writes * nwatch);
  s = run_fanout(FAN_TETHERD, nwatch, writes, warm);
  emit_latency(SYS_T, "watch fan-out", &s, proto_text,
               "Watch {names:[fan]} with more:true on each connection; the writer's Set; each "
               "change reply checked (event, value)");
  if (!redis_up()) {
    skip_redis("watch fan-out p50");
    skip_redis("watch fan-out p99");
    return;
  }
  s = run_fanout(FAN_REDIS_KEYSPACE, nwatch, writes, warm);
  emit_latency(SYS_R, "watch fan-out", &s, proto_text,
               "keyspace notifications (notify-keyspace-events K$): SUBSCRIBE "
               "__keyspace@0__:fan on each connection; the writer's SET fan; each message checked");
  s = run_fanout(FAN_REDIS_PUBSUB, nwatch, writes, warm);
  emit_latency(SYS_R, "pubsub fan-out", &s, proto_text,
               "pub/sub: SUBSCRIBE fan on each connection; the writer's PUBLISH fan <value> "
               "(nothing stored); each message checked");
}

/* ---- (f) end to end through libtether.so ------------------------------------ */

typedef struct {
  _Atomic int64_t t_send;
  _Atomic long calls;
  int ack_fd;
  long n;
  int64_t lat[]; /* observer call - set call start, by value written */
} e2e_shared_t;

static e2e_shared_t *e2e;

static void e2e_observer(const tether_change_t *change, void *user) {
  int64_t now = bench_now_ns(), v;
  (void)user;
  if (change->new_value == NULL || tether_value_get_int(change->new_value, &v) != TETHER_OK) return;
  if (v < 0 || v >= e2e->n) return;
  e2e->lat[v] = now - atomic_load(&e2e->t_send);
  atomic_fetch_add(&e2e->calls, 1);
  if (write(e2e->ack_fd, "x", 1) != 1) _exit(3);
}

static int wait_byte(int fd, int ms) {
  struct pollfd p = {fd, POLLIN, 0};
  char b;
  return poll(&p, 1, ms) > 0 && read(fd, &b, 1) == 1 ? 0 : -1;
}

static void section_e2e(void) {
  long n = quick ? 300 : 5000, warm = quick ? 30 : 300;
  long total = n + warm, i, nl = 0;
  size_t bytes = sizeof(e2e_shared_t) + (size_t)total * sizeof(int64_t) * 2;
  int ack[2], ready[2], done[2], failed = 0, status;
  int64_t *setcall, *lat = calloc((size_t)n, sizeof *lat), *sc = calloc((size_t)n, sizeof *sc);
  pid_t observer, writer;
  stats_t s, c;
  char proto_text[400];
  memset(&s, 0, sizeof s);
  memset(&c, 0, sizeof c);
  e2e = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (e2e == MAP_FAILED || lat == NULL || sc == NULL || pipe(ack) != 0 || pipe(ready) != 0 || pipe(done) != 0) {
    fprintf(stderr, "bench_tetherd: e2e setup failed\n");
    failed = 1;
    goto emit;
  }
  memset(e2e, 0, bytes);
  e2e->n = total;
  e2e->ack_fd = ack[1];
  setcall = e2e->lat + total;
  /* Fork first: a runtime's threads do not survive a fork. */
  observer = fork();
  if (observer == 0) {
    tether_runtime_t rt;
    tether_remote_t remote;
    tether_state_t st;
    tether_observer_t o;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (tether_runtime_new(NULL, &rt) != TETHER_OK || tether_remote_connect(rt, t_address, &remote) != TETHER_OK ||
        tether_remote_state(remote, "e2e", &st) != TETHER_OK ||
        tether_observe(st, NULL, TETHER_OBSERVE_SYNC, e2e_observer, NULL, NULL, &o) != TETHER_OK)
      _exit(2);
    if (write(ready[1], "r", 1) != 1) _exit(2);
    if (wait_byte(done[0], 600000) != 0) _exit(4);
    tether_runtime_free(rt);
    _exit(0);
  }
  writer = fork();
  if (writer == 0) {
    tether_runtime_t rt;
    tether_remote_t remote;
    tether_state_t st;
    int rc;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (tether_runtime_new(NULL, &rt) != TETHER_OK || tether_remote_connect(rt, t_address, &remote) != TETHER_OK ||
        tether_remote_state(remote, "e2e", &st) != TETHER_OK)
      _exit(2);
    if (wait_byte(ready[0], 60000) != 0) _exit(5);
    for (i = 0; i < total; i++) {
      int64_t t0 = bench_now_ns();
      atomic_store(&e2e->t_send, t0);
      if ((rc = tether_state_set_int(st, i)) != TETHER_OK) {
        fprintf(stderr, "bench_tetherd: e2e: tether_state_set_int: %d\n", rc);
        _exit(6);
      }
      setcall[i] = bench_now_ns() - t0;
      if (wait_byte(ack[0], 10000) != 0) {
        fprintf(stderr, "bench_tetherd: e2e: write %ld not observed within 10 s\n", i);
        _exit(7);
      }
    }
    tether_runtime_free(rt);
    _exit(0);
  }
  if (observer < 0 || writer < 0) failed = 1;
  if (writer > 0) {
    waitpid(writer, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "bench_tetherd: e2e writer failed (status %d)\n", status);
      failed = 1;
    }
  }
  if (write(done[1], "d", 1) != 1) failed = 1;
  if (observer > 0) {
    waitpid(observer, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "bench_tetherd: e2e observer failed (status %d)\n", status);
      failed = 1;
    }
  }
  if (!failed && atomic_load(&e2e->calls) != total) {
    fprintf(stderr, "bench_tetherd: e2e: %ld observer calls for %ld writes\n", atomic_load(&e2e->calls), total);
    failed = 1;
  }
  if (!failed) {
    for (i = warm; i < total; i++) {
      sc[nl] = setcall[i];
      lat[nl++] = e2e->lat[i];
    }
    stats_from(&s, lat, nl, 1, 0);
    stats_from(&c, sc, nl, 1, 0);
    s.ok = c.ok = 1;
  }
  close(ack[0]);
  close(ack[1]);
  close(ready[0]);
  close(ready[1]);
  close(done[0]);
  close(done[1]);
emit:
  snprintf(proto_text, sizeof proto_text,
           "two processes, each with a default runtime (loop thread), tether_remote_connect and "
           "tether_remote_state(\"e2e\"); one writes tether_state_set_int, the other has a "
           "TETHER_OBSERVE_SYNC observer on its mirror; %ld writes after %ld warm-up, each "
           "waiting for its observer call; CLOCK_MONOTONIC through a shared page", n, warm);
  emit_latency(SYS_T, "e2e set to observer", &s, proto_text, NULL);
  emit_latency(SYS_T, "e2e set call", &c, proto_text,
               "how long tether_state_set_int took: the daemon committed it and the writer's own "
               "mirror shows it");
  if (e2e != MAP_FAILED && e2e != NULL) munmap(e2e, bytes);
  free(lat);
  free(sc);
}

/* ---- the floor: a raw Unix-socket ping-pong ------------------------------- */

static void section_raw(int one_cpu) {
  long n = quick ? 2000 : 50000, warm = quick ? 200 : 2000, i;
  int sv[2];
  pid_t echo;
  stats_t s;
  int64_t *lat = calloc((size_t)n, sizeof *lat), t_start = 0;
  char msg[64];
  memset(&s, 0, sizeof s);
  memset(msg, 'p', sizeof msg);
  if (lat == NULL || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) goto out;
  echo = fork();
  if (echo == 0) {
    char b[256];
    ssize_t r;
    close(sv[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pin(0, one_cpu ? client_cpu : server_cpu);
    while ((r = read(sv[1], b, sizeof b)) > 0)
      if (write(sv[1], b, (size_t)r) != r) break;
    _exit(0);
  }
  close(sv[1]);
  s.ok = echo > 0;
  for (i = -warm; i < n && s.ok; i++) {
    char b[64];
    size_t got = 0;
    int64_t t0;
    if (i == 0) t_start = bench_now_ns();
    t0 = bench_now_ns();
    if (write(sv[0], msg, sizeof msg) != (ssize_t)sizeof msg) s.ok = 0;
    while (s.ok && got < sizeof msg) {
      ssize_t r = read(sv[0], b, sizeof b - got);
      if (r <= 0) s.ok = 0;
      else got += (size_t)r;
    }
    if (i >= 0) lat[i] = bench_now_ns() - t0;
  }
  close(sv[0]);
  if (echo > 0) waitpid(echo, NULL, 0);
  if (s.ok) stats_from(&s, lat, n, bench_now_ns() - t_start, n);
out:
  emit_rate("raw", one_cpu ? "unix ping-pong, one CPU" : "unix ping-pong", &s,
            one_cpu ? "two processes on the same CPU, a socketpair, 64 bytes written and echoed "
                      "back, one at a time"
                    : "two processes, a socketpair, 64 bytes written and echoed back, one at a "
                      "time: the floor of any one-client round trip here", NULL);
  free(lat);
}

/* The floor of the fan-out measurement: a process that, on a trigger
 * byte, writes 64 bytes to each of 100 sockets (one write() each, what any
 * server pays at the least), read by the same epoll loop as the watchers. */
static void section_raw_fanout(void) {
  /* As many sockets as the watch section has watchers (BENCH_FANOUT_WATCHERS),
   * as far as the descriptor limit allows both ends of each pair open at
   * the fork (the name says how many). */
  const char *wenv = getenv("BENCH_FANOUT_WATCHERS");
  struct rlimit nofile;
  int wanted = wenv && atoi(wenv) > 0 ? atoi(wenv) : 100;
  const int NW = getrlimit(RLIMIT_NOFILE, &nofile) == 0 && (rlim_t)wanted * 2 + 64 > nofile.rlim_cur
                     ? (int)((nofile.rlim_cur - 64) / 2) : wanted;
  long writes = quick ? 100 : NW > 1000 ? 100 : 2000, warm = quick ? 10 : NW > 1000 ? 10 : 100, w, nl = 0;
  int trig[2] = {-1, -1}, (*pairs)[2] = calloc((size_t)NW, sizeof *pairs), ep = -1, i;
  int64_t *lat = calloc((size_t)(writes * NW), sizeof *lat);
  char name[64], proto[256];
  pid_t child = -1;
  stats_t s;
  memset(&s, 0, sizeof s);
  if (pairs == NULL) goto out;
  for (i = 0; i < NW; i++) pairs[i][0] = pairs[i][1] = -1;
  if (lat == NULL || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, trig) != 0) goto out;
  for (i = 0; i < NW; i++)
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]) != 0) goto out;
  child = fork();
  if (child == 0) {
    char msg[64], b;
    memset(msg, 'f', sizeof msg);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pin(0, server_cpu);
    close(trig[0]);
    for (i = 0; i < NW; i++) close(pairs[i][0]);
    while (read(trig[1], &b, 1) == 1) {
      for (i = 0; i < NW; i++)
        if (write(pairs[i][1], msg, sizeof msg) != (ssize_t)sizeof msg) _exit(1);
      if (write(trig[1], "a", 1) != 1) _exit(1);
    }
    _exit(0);
  }
  if (child < 0) goto out;
  close(trig[1]);
  trig[1] = -1;
  for (i = 0; i < NW; i++) {
    close(pairs[i][1]);
    pairs[i][1] = -1;
  }
  ep = epoll_create1(EPOLL_CLOEXEC);
  for (i = 0; i <= NW && ep >= 0; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, i == NW ? trig[0] : pairs[i][0], &ev) != 0) goto out;
  }
  s.ok = ep >= 0;
  for (w = -warm; w < writes && s.ok; w++) {
    int got = 0, acked = 0;
    int64_t t0 = bench_now_ns();
    if (write(trig[0], "w", 1) != 1) s.ok = 0;
    while (s.ok && (got < NW || !acked)) {
      struct epoll_event evs[128];
      int n = epoll_wait(ep, evs, 128, 10000), k;
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        s.ok = 0;
        break;
      }
      for (k = 0; k < n; k++) {
        uint32_t idx = evs[k].data.u32;
        char buf[256];
        ssize_t r = read((int)idx == NW ? trig[0] : pairs[idx][0], buf, (int)idx == NW ? 1 : 64);
        int64_t now = bench_now_ns();
        if (r <= 0) {
          s.ok = 0;
          break;
        }
        if ((int)idx == NW) {
          acked = 1;
        } else if (r == 64) {
          got++;
          if (w >= 0) lat[nl++] = now - t0;
        } else {
          /* a message split by the kernel: read the rest */
          size_t have = (size_t)r;
          while (have < 64 && (r = read(pairs[idx][0], buf + have, 64 - have)) > 0) have += (size_t)r;
          got++;
          if (w >= 0) lat[nl++] = bench_now_ns() - t0;
        }
      }
    }
  }
  if (s.ok) stats_from(&s, lat, nl, 1, 0);
out:
  if (trig[0] >= 0) close(trig[0]);
  if (trig[1] >= 0) close(trig[1]);
  if (child > 0) waitpid(child, NULL, 0);
  for (i = 0; pairs != NULL && i < NW; i++) {
    if (pairs[i][0] >= 0) close(pairs[i][0]);
    if (pairs[i][1] >= 0) close(pairs[i][1]);
  }
  if (ep >= 0) close(ep);
  snprintf(name, sizeof name, "unix fan-out %d", NW);
  snprintf(proto, sizeof proto,
           "a process on the servers' CPU writes 64 bytes to each of %d sockets on a "
           "trigger byte, read by the same epoll loop as the watch fan-out: its floor here", NW);
  emit_latency("raw", name, &s, proto, NULL);
  free(pairs);
  free(lat);
}

static int have_program(const char *name);

/* ---- (g) durable commits (issue 15) ------------------------------------------ */

#include <libgen.h>
#include <sys/statfs.h>

static unsigned dur_major, dur_minor;
static char dur_dev[64] = "?", dur_fs[32] = "?";

/* nclients connections to path, each writing its own key ("d<i>") with one
 * Set in flight, driven by one epoll thread as in run_clients; warm seconds,
 * then secs seconds measured: the replies read in that window (each an
 * acknowledged commit), their latencies, and the block device's flushes in
 * that window (extra_out). Outstanding calls are drained before it returns. */
static stats_t run_durable(proto_t proto, const char *path, int nclients, double secs, double warm,
                           char *extra_out, size_t extra_cap) {
  stats_t s;
  conn_t *cs = calloc((size_t)nclients, sizeof *cs);
  int64_t *sent = calloc((size_t)nclients, sizeof *sent), *lat = NULL;
  long nlat = 0, caplat = 0, inflight = 0, v = 0;
  int64_t t0 = bench_now_ns(), t_start = t0 + (int64_t)(warm * 1e9), t_end = t_start + (int64_t)(secs * 1e9);
  int64_t m_start = 0, m_end = 0;
  long long f0 = -1, f1 = -1;
  int ep = epoll_create1(EPOLL_CLOEXEC), i, measuring = 0, stopped = 0;
  char call[256], key[32];
  memset(&s, 0, sizeof s);
  extra_out[0] = 0;
  if (cs == NULL || sent == NULL || ep < 0) goto out;
  for (i = 0; i < nclients; i++) cs[i].fd = -1;
  for (i = 0; i < nclients; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (conn_open(&cs[i], path, proto) != 0 || epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev) != 0) goto out;
  }
  s.ok = 1;
  for (i = 0; i < nclients; i++) {
    size_t cl;
    snprintf(key, sizeof key, "d%d", i);
    cl = make_call(proto, OP_SET, key, v++, call, sizeof call);
    sent[i] = bench_now_ns();
    if (conn_send(&cs[i], call, cl) != 0) s.ok = 0;
    inflight++;
  }
  while (inflight > 0 && s.ok) {
    struct epoll_event evs[64];
    int n = epoll_wait(ep, evs, 64, 10000), k;
    int64_t now;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "bench_tetherd: durable: no reply within 10 s\n");
      s.ok = 0;
      break;
    }
    now = bench_now_ns();
    if (!measuring && now >= t_start) {
      measuring = 1;
      m_start = now;
      f0 = diskflush_count(dur_major, dur_minor, NULL);
    }
    if (measuring && !stopped && now >= t_end) {
      stopped = 1;
      m_end = now;
      f1 = diskflush_count(dur_major, dur_minor, NULL);
    }
    for (k = 0; k < n && s.ok; k++) {
      uint32_t id = evs[k].data.u32;
      conn_t *c = &cs[id];
      const char *msg;
      size_t len;
      if (conn_fill(c) <= 0) {
        s.ok = 0;
        break;
      }
      while (s.ok && conn_next(c, &msg, &len) == 1) {
        inflight--;
        if (reply_failed(c, msg, len)) s.ok = 0;
        if (measuring && !stopped) {
          if (nlat == caplat) {
            long cap = caplat ? caplat * 2 : 65536;
            int64_t *nl = realloc(lat, (size_t)cap * sizeof *nl);
            if (nl == NULL) {
              s.ok = 0;
              break;
            }
            lat = nl;
            caplat = cap;
          }
          lat[nlat++] = now - sent[id];
        }
        if (!stopped) {
          size_t cl;
          snprintf(key, sizeof key, "d%u", id);
          cl = make_call(proto, OP_SET, key, v++, call, sizeof call);
          sent[id] = bench_now_ns();
          if (conn_send(c, call, cl) != 0) s.ok = 0;
          inflight++;
        }
      }
    }
  }
  if (s.ok && stopped && nlat > 0) {
    double el = (double)(m_end - m_start);
    stats_from(&s, lat, nlat, m_end - m_start, nlat);
    snprintf(extra_out, extra_cap,
             "\"p50_us\":%.3f,\"p99_us\":%.3f,\"avg_us\":%.3f,\"samples\":%ld,\"clients\":%d,"
             "\"flushes\":%lld,\"flushes_per_s\":%.1f,\"commits_per_flush\":%.2f,\"device\":\"%s\",\"fs\":\"%s\"",
             s.p50_us, s.p99_us, s.avg_us, s.n, nclients, f0 >= 0 && f1 >= 0 ? f1 - f0 : -1LL,
             f0 >= 0 && f1 >= 0 ? (double)(f1 - f0) * 1e9 / el : -1.0,
             f0 >= 0 && f1 > f0 ? (double)nlat / (double)(f1 - f0) : -1.0, dur_dev, dur_fs);
  } else {
    s.ok = 0;
  }
out:
  for (i = 0; cs != NULL && i < nclients; i++)
    if (cs[i].buf != NULL || cs[i].fd >= 0) conn_close(&cs[i]);
  if (ep >= 0) close(ep);
  free(cs);
  free(sent);
  free(lat);
  return s;
}

static const int dur_clients[3] = {1, 16, 64};

static void durable_row(proto_t proto, const char *sys, const char *sock, const char *mode, const char *proto_text,
                        int k, double secs, double warm) {
  char name[96], extra[600];
  stats_t s = run_durable(proto, sock, dur_clients[k], secs, warm, extra, sizeof extra);
  snprintf(name, sizeof name, "durable set, %d %s, %s", dur_clients[k], dur_clients[k] == 1 ? "client" : "clients",
           mode);
  bench_emit(sys, GROUP, name, s.ok, s.ops_s, "ops/s", proto_text, s.ok ? extra : NULL,
             s.ok ? NULL : "failed (see the log)");
}

static void section_durable(const char *tetherd) {
  double secs = quick ? 0.5 : 3.0, warm = quick ? 0.2 : 1.0;
  char dir[64], proto_text[500];
  struct statfs sf;
  int m;
  snprintf(dir, sizeof dir, "%s/durable", tmpdir);
  mkdir(dir, 0700);
  diskflush_dev(dir, &dur_major, &dur_minor);
  if (diskflush_count(dur_major, dur_minor, dur_dev) < 0)
    fprintf(stderr, "bench_tetherd: durable: no flush counter for device %u:%u\n", dur_major, dur_minor);
  if (statfs(dir, &sf) == 0) {
    switch ((unsigned long)sf.f_type) {
    case 0xEF53: snprintf(dur_fs, sizeof dur_fs, "ext4"); break;
    case 0x58465342: snprintf(dur_fs, sizeof dur_fs, "xfs"); break;
    case 0x9123683E: snprintf(dur_fs, sizeof dur_fs, "btrfs"); break;
    case 0x01021994: snprintf(dur_fs, sizeof dur_fs, "tmpfs"); break;
    case 0x794c7630: snprintf(dur_fs, sizeof dur_fs, "overlayfs"); break;
    default: snprintf(dur_fs, sizeof dur_fs, "0x%lx", (unsigned long)sf.f_type);
    }
  }
  fprintf(stderr, "bench_tetherd: durable: data under %s (%s on %s, device %u:%u)\n", dir, dur_fs, dur_dev,
          dur_major, dur_minor);
  {
    char extra[400];
    snprintf(extra, sizeof extra, "\"dir\":\"%s\",\"fs\":\"%s\",\"device\":\"%s\",\"seconds\":%.1f,\"warm\":%.1f", dir,
             dur_fs, dur_dev, secs, warm);
    bench_emit("run", GROUP, "durable setup", 1, 0, "", "where the durable section's data lives", extra, NULL);
  }
  /* tetherd with a store (--durability full, then normal) and Redis with an
   * append-only file (appendfsync always, then everysec), both running: each
   * concurrency's tetherd row, then Redis's, so that a slow spell of this
   * VM's disk (its fsync rate drifts from minute to minute) falls on both
   * systems' rows of a pair, not on one system's three. */
  for (m = 0; m < 2; m++) {
    const char *mode = m == 0 ? "full" : "normal";
    const char *rmode = m == 0 ? "always" : "everysec";
    char sock[200], addr[210], data[200], notify[200];
    char rsock[200], rdata[200], rnotify[200], rproto_text[500];
    int k, redis = have_program(redis_server);
    snprintf(sock, sizeof sock, "%s/td-%s.sock", dir, mode);
    snprintf(addr, sizeof addr, "unix:%s", sock);
    snprintf(data, sizeof data, "%s/td-%s", dir, mode);
    snprintf(notify, sizeof notify, "%s/td-%s.notify", dir, mode);
    snprintf(d_log, sizeof d_log, "%s/td-%s.log", dir, mode);
    {
      char *argv[] = {(char *)tetherd, "--address", addr, "--data-dir", data, "--durability", (char *)mode, NULL};
      d_pid = start_server(argv, notify, d_log, NULL);
    }
    snprintf(proto_text, sizeof proto_text,
             "tetherd --durability %s (store in a temporary directory on %s, %s): N connections, each Set-ting "
             "its own state, one call in flight on each (each waits for its reply: acknowledged), driven by "
             "one epoll thread; %.1f s measured after %.1f s warm-up; its rows alternate with Redis "
             "appendfsync %s's, both servers running", mode, dur_fs, dur_dev, secs, warm, rmode);
    if (d_pid < 0) {
      for (k = 0; k < 3; k++) {
        char name[96];
        snprintf(name, sizeof name, "durable set, %d %s, %s", dur_clients[k], dur_clients[k] == 1 ? "client" : "clients", mode);
        bench_emit(SYS_T, GROUP, name, 0, 0, "ops/s", proto_text, NULL, "tetherd with a store could not be started");
      }
    } else {
      fprintf(stderr, "bench_tetherd: durable: tetherd --durability %s (pid %d)\n", mode, (int)d_pid);
    }
    if (redis) {
      snprintf(rsock, sizeof rsock, "%s/redis-%s.sock", dir, rmode);
      snprintf(rdata, sizeof rdata, "%s/redis-%s", dir, rmode);
      snprintf(rnotify, sizeof rnotify, "%s/redis-%s.notify", dir, rmode);
      snprintf(d2_log, sizeof d2_log, "%s/redis-%s.log", dir, rmode);
      mkdir(rdata, 0700);
      {
        char *argv[] = {(char *)redis_server, "--port", "0", "--unixsocket", rsock, "--unixsocketperm", "700",
                        "--save", "", "--appendonly", "yes", "--appendfsync", (char *)rmode, "--dir", rdata,
                        "--supervised", "systemd", "--daemonize", "no", NULL};
        d2_pid = start_server(argv, rnotify, d2_log, rsock);
      }
      snprintf(rproto_text, sizeof rproto_text,
               "redis-server %s --appendonly yes --appendfsync %s (AOF in a temporary directory on %s, %s): N "
               "connections, each SET-ting its own key, one call in flight on each, driven by one epoll thread "
               "(this driver's RESP client); %.1f s measured after %.1f s warm-up; its rows alternate with "
               "tetherd --durability %s's, both servers running",
               redis_version, rmode, dur_fs, dur_dev, secs, warm, mode);
    } else {
      for (k = 0; k < 3; k++) {
        char name[96];
        snprintf(name, sizeof name, "durable set, %d %s, %s", dur_clients[k], dur_clients[k] == 1 ? "client" : "clients", rmode);
        skip_redis(name);
      }
    }
    for (k = 0; k < 3; k++) {
      if (d_pid > 0) durable_row(P_VARLINK, SYS_T, sock, mode, proto_text, k, secs, warm);
      if (d2_pid > 0) durable_row(P_RESP, SYS_R, rsock, rmode, rproto_text, k, secs, warm);
    }
    stop_server(&d_pid, "tetherd (durable)", d_log);
    stop_server(&d2_pid, "redis-server (durable)", d2_log);
  }
  /* SQLite alone: bench_sqlite next to this executable (run.sh builds it). */
  {
    char exe[600], self[512];
    const char *env = getenv("BENCH_SQLITE");
    int k;
    snprintf(self, sizeof self, "%s", self_path);
    if (env != NULL) snprintf(exe, sizeof exe, "%s", env);
    else snprintf(exe, sizeof exe, "%s/bench_sqlite", dirname(self));
    for (k = 0; k < 3; k++) {
      char th[16], s1[32], s2[32], name[64];
      pid_t pid;
      int status;
      snprintf(name, sizeof name, "durable commits, %d %s", dur_clients[k], dur_clients[k] == 1 ? "thread" : "threads");
      if (access(exe, X_OK) != 0) {
        bench_skip("sqlite", GROUP, name, "bench_sqlite not built (run.sh builds it with -lsqlite3)");
        continue;
      }
      snprintf(th, sizeof th, "%d", dur_clients[k]);
      snprintf(s1, sizeof s1, "%.2f", secs);
      snprintf(s2, sizeof s2, "%.2f", warm);
      fflush(stdout);
      fflush(stderr);
      pid = fork();
      if (pid == 0) {
        execl(exe, exe, dir, th, s1, s2, (char *)NULL);
        _exit(127);
      }
      if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "bench_tetherd: %s %s failed\n", exe, th);
    }
  }
}

/* ---- main ------------------------------------------------------------------ */

static int have_program(const char *name) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

int main(int argc, char **argv) {
  const char *tetherd = argc > 1 ? argv[1] : getenv("TETHERD") ? getenv("TETHERD") : ".build/release/tetherd";
  char t_data[120], r_dir[120];
  quick = bench_quick();
  self_path = argv[0];
  {
    const char *pinning = getenv("BENCH_DAEMON_PIN");
    cpu_set_t set;
    if ((pinning == NULL || strcmp(pinning, "0") != 0) && sched_getaffinity(0, sizeof set, &set) == 0 &&
        CPU_COUNT(&set) >= 2) {
      int cpu;
      for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set)) continue;
        if (client_cpu < 0) client_cpu = cpu;
        else if (server_cpu < 0) server_cpu = cpu;
      }
    }
    pin(0, client_cpu);
  }
  if (getenv("REDIS_SERVER")) redis_server = getenv("REDIS_SERVER");
  if (getenv("REDIS_BENCHMARK")) redis_benchmark = getenv("REDIS_BENCHMARK");
  signal(SIGPIPE, SIG_IGN);
  if (mkdtemp(tmpdir) == NULL) {
    perror("bench_tetherd: mkdtemp");
    return 1;
  }
  snprintf(t_sock, sizeof t_sock, "%s/tetherd.sock", tmpdir);
  snprintf(t_address, sizeof t_address, "unix:%s", t_sock);
  snprintf(t_notify, sizeof t_notify, "%s/tetherd.notify", tmpdir);
  snprintf(t_log, sizeof t_log, "%s/tetherd.log", tmpdir);
  snprintf(t_data, sizeof t_data, "%s/data", tmpdir);
  snprintf(r_sock, sizeof r_sock, "%s/redis.sock", tmpdir);
  snprintf(r_notify, sizeof r_notify, "%s/redis.notify", tmpdir);
  snprintf(r_log, sizeof r_log, "%s/redis.log", tmpdir);
  snprintf(r_dir, sizeof r_dir, "%s/redis", tmpdir);
  mkdir(r_dir, 0700);
  atexit(cleanup);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  {
    char *targv[] = {(char *)tetherd, "--address", t_address, "--data-dir", t_data, "--memory", NULL};
    t_pid = start_server(targv, t_notify, t_log, NULL);
    if (t_pid < 0) {
      fprintf(stderr, "bench_tetherd: tetherd (%s) could not be started\n", tetherd);
      return 1;
    }
  }
  if (have_program(redis_server) && have_program(redis_benchmark)) {
    char *rargv[] = {(char *)redis_server, "--port", "0", "--unixsocket", r_sock, "--unixsocketperm", "700",
                     "--save", "", "--appendonly", "no", "--maxclients", "20000", "--dir", r_dir, "--supervised", "systemd",
                     "--daemonize", "no", NULL};
    FILE *v;
    char cmd[300];
    r_pid = start_server(rargv, r_notify, r_log, r_sock);
    snprintf(cmd, sizeof cmd, "'%s' --version 2>/dev/null", redis_server);
    if ((v = popen(cmd, "r")) != NULL) {
      char line[256], *p;
      if (fgets(line, sizeof line, v) && (p = strstr(line, "v=")) != NULL) sscanf(p + 2, "%63s", redis_version);
      pclose(v);
    }
  } else {
    fprintf(stderr, "bench_tetherd: %s or %s not found: Redis figures are skipped\n", redis_server,
            redis_benchmark);
  }
  fprintf(stderr, "bench_tetherd: tetherd %s (pid %d) on %s; redis-server %s (pid %d) on %s%s\n", tetherd,
          (int)t_pid, t_sock, redis_version, (int)r_pid, r_sock,
          quick ? " (BENCH_QUICK: small sizes, figures mean nothing)" : "");
  if (client_cpu >= 0)
    fprintf(stderr, "bench_tetherd: clients pinned to CPU %d, servers to CPU %d\n", client_cpu, server_cpu);
  else
    fprintf(stderr, "bench_tetherd: nothing pinned\n");
  {
    char extra[160];
    snprintf(extra, sizeof extra, "\"redis_version\":\"%s\",\"client_cpu\":%d,\"server_cpu\":%d", redis_version,
             client_cpu, server_cpu);
    bench_emit("run", GROUP, "setup", 1, 0, "", "placement and versions", extra, NULL);
  }
  if (bench_want("raw")) {
    section_raw(0);
    if (client_cpu >= 0) section_raw(1);
    section_raw_fanout();
  }
  if (bench_want("rtt")) {
    section_rtt(0);
    section_rtt(1);
  }
  if (bench_want("pipeline")) section_pipeline();
  if (bench_want("clients")) section_clients();
  if (bench_want("watch")) section_watch();
  if (bench_want("e2e")) section_e2e();
  if (bench_want("durable")) section_durable(tetherd);
  return 0;
}
