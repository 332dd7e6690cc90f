/*
 * bench.h — what every C and C++ benchmark driver of benchmarks/ shares:
 * the clock, memory accounting, and the result lines the report generator
 * (benchmarks/report.py) reads.
 *
 * Result lines go to stdout, one JSON object per line:
 *
 *   {"sys":"tether","group":"kairo","name":"deepPropagation","ok":true,
 *    "value":12.345,"unit":"ms","protocol":"...","note":"..."}
 *
 * "ok":false lines carry no "value": a run whose checks failed reports no
 * figure. "skip":true lines say a workload is not expressed by that system
 * and why ("note"). Everything else a driver prints goes to stderr.
 *
 * Header-only (static functions), C99 and C++.
 */
#ifndef TETHER_BENCH_H
#define TETHER_BENCH_H

#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC, in nanoseconds. */
static inline int64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Bytes the process has allocated with malloc and not freed: glibc's
 * mallinfo2() uordblks (in use in the heap arenas) + hblkhd (blocks served
 * by mmap). Counts what the library asked malloc for plus malloc's own
 * per-chunk headers, not free memory malloc keeps cached. */
static inline long long bench_malloc_in_use(void) {
  struct mallinfo2 mi = mallinfo2();
  return (long long)mi.uordblks + (long long)mi.hblkhd;
}

/* Resident set size from /proc/self/statm, in bytes (-1 if unreadable). */
static inline long long bench_rss(void) {
  long pages_total = 0, pages_res = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL) return -1;
  if (fscanf(f, "%ld %ld", &pages_total, &pages_res) != 2) pages_res = -1;
  fclose(f);
  return pages_res < 0 ? -1 : (long long)pages_res * sysconf(_SC_PAGESIZE);
}

/* JSON string body escaping for the few free-text fields. */
static inline void bench_json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; s != NULL && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      fputc('\\', out);
      fputc(ch, out);
    } else if (ch < 0x20) {
      fprintf(out, "\\u%04x", ch);
    } else {
      fputc(ch, out);
    }
  }
  fputc('"', out);
}

/* One result line. extra_json: NULL or more members, e.g.
 * "\"p99_us\":12.5" (no leading comma). note: printf-style, may be NULL. */
static inline void bench_emit(const char *sys, const char *group, const char *name, int ok,
                              double value, const char *unit, const char *protocol,
                              const char *extra_json, const char *note_fmt, ...) {
  char note[1024];
  note[0] = 0;
  if (note_fmt != NULL) {
    va_list ap;
    va_start(ap, note_fmt);
    vsnprintf(note, sizeof note, note_fmt, ap);
    va_end(ap);
  }
  printf("{\"sys\":");
  bench_json_str(stdout, sys);
  printf(",\"group\":");
  bench_json_str(stdout, group);
  printf(",\"name\":");
  bench_json_str(stdout, name);
  printf(",\"ok\":%s", ok ? "true" : "false");
  if (ok) printf(",\"value\":%.6g", value);
  printf(",\"unit\":");
  bench_json_str(stdout, unit);
  if (protocol != NULL) {
    printf(",\"protocol\":");
    bench_json_str(stdout, protocol);
  }
  if (extra_json != NULL && extra_json[0]) printf(",%s", extra_json);
  if (note[0]) {
    printf(",\"note\":");
    bench_json_str(stdout, note);
  }
  printf("}\n");
  fflush(stdout);
  fprintf(stderr, "  %-8s %-22s %-28s %s", sys, group, name, ok ? "" : "FAILED (no figure)");
  if (ok) fprintf(stderr, "%12.4g %s", value, unit);
  fprintf(stderr, "\n");
}

/* A workload a system does not express; why. */
static inline void bench_skip(const char *sys, const char *group, const char *name,
                              const char *why) {
  printf("{\"sys\":");
  bench_json_str(stdout, sys);
  printf(",\"group\":");
  bench_json_str(stdout, group);
  printf(",\"name\":");
  bench_json_str(stdout, name);
  printf(",\"ok\":false,\"skip\":true,\"note\":");
  bench_json_str(stdout, why);
  printf("}\n");
  fflush(stdout);
}

static inline int bench_cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of n sorted values (nearest rank). */
static inline int64_t bench_quantile(const int64_t *sorted, long n, double q) {
  long i;
  if (n <= 0) return 0;
  i = (long)(q * (double)n + 0.999999) - 1;
  if (i < 0) i = 0;
  if (i >= n) i = n - 1;
  return sorted[i];
}

/* Fast mode (BENCH_QUICK=1 in the environment): small sizes, to check that
 * a driver builds and its checks pass. Figures from it mean nothing. */
static inline int bench_quick(void) {
  const char *q = getenv("BENCH_QUICK");
  return q != NULL && q[0] == '1';
}

/* Section selection: BENCH_ONLY="kairo cellx" runs just those sections. */
static inline int bench_want(const char *section) {
  const char *only = getenv("BENCH_ONLY");
  const char *p;
  size_t n = strlen(section);
  if (only == NULL || only[0] == 0) return 1;
  for (p = only; (p = strstr(p, section)) != NULL; p += n) {
    int starts = p == only || p[-1] == ' ' || p[-1] == ',';
    int ends = p[n] == 0 || p[n] == ' ' || p[n] == ',';
    if (starts && ends) return 1;
  }
  return 0;
}

/* Instruction-count mode (benchmarks/icount/icount.py runs each driver under
 * callgrind): `driver --icount WORKLOAD N [VARIANT]` runs the one timed
 * workload WORKLOAD (setnotify, fanout or chain) once, N times over (N
 * writes; for the chain N iter() of 51 writes each) in place of its timed
 * sizes, and exits. The workload is the timed code itself, with its setup,
 * warm-up and checks; only its sizes change, so the runs with N and 2N
 * differ by N repetitions exactly and (I(2N) - I(N)) / N is the
 * instructions per repetition. VARIANT picks a Tether runtime mode (host,
 * single, thread); the other drivers take none.
 * Returns 1 and fills the three outputs in that mode, 0 otherwise. */
static inline int bench_icount_args(int argc, char **argv, const char **workload, long *n,
                                    const char **variant) {
  if (argc < 2 || strcmp(argv[1], "--icount") != 0) return 0;
  if (argc < 4 || atol(argv[3]) <= 0) {
    fprintf(stderr, "usage: %s --icount setnotify|fanout|chain N [VARIANT]\n", argv[0]);
    exit(2);
  }
  *workload = argv[2];
  *n = atol(argv[3]);
  *variant = argc > 4 ? argv[4] : "";
  return 1;
}

#endif /* TETHER_BENCH_H */
