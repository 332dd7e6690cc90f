/*
 * bench_sqlite.c — SQLite alone, the floor under tetherd's durable store
 * (issue 15): one INSERT OR REPLACE per transaction (autocommit), WAL,
 * synchronous=FULL, from T threads, each with its own connection to one
 * database file and its own key. SQLite has one writer at a time; the
 * threads take turns through a process mutex around each commit (SQLite's
 * own busy handler sleeps milliseconds between retries, which would measure
 * the sleeps). No group commit: each commit is its own WAL append and
 * fsync, which is what tetherd's group commit is there to beat.
 *
 * Usage: bench_sqlite DIR THREADS SECONDS WARM_SECONDS
 * One result line (benchmarks/common/bench.h) on stdout: sys "sqlite",
 * group "daemon", name "commits, T thread(s)", ops/s of commits finished in
 * the measured window, p50/p99 per commit, and the block device's flushes
 * in that window (diskflush.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>

#include "common/bench.h"
#include "daemon/diskflush.h"

static const char *db_path;
static pthread_mutex_t turn = PTHREAD_MUTEX_INITIALIZER;
static atomic_int phase; /* 0 warm-up, 1 measuring, 2 stop */
static atomic_int failed;

typedef struct {
  int id;
  long n, cap;
  int64_t *lat;
} worker_t;

static void *work(void *arg) {
  worker_t *w = arg;
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  char key[32];
  long long v = 0;
  snprintf(key, sizeof key, "d%d", w->id);
  if (sqlite3_open(db_path, &db) != SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_busy_timeout(db, 10000) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)", -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench_sqlite: %s\n", db ? sqlite3_errmsg(db) : "open failed");
    atomic_store(&failed, 1);
    goto out;
  }
  while (atomic_load(&phase) < 2) {
    int64_t t0 = bench_now_ns(), t1;
    int rc;
    pthread_mutex_lock(&turn);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v++);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    pthread_mutex_unlock(&turn);
    t1 = bench_now_ns();
    if (rc != SQLITE_DONE) {
      fprintf(stderr, "bench_sqlite: step: %s\n", sqlite3_errmsg(db));
      atomic_store(&failed, 1);
      break;
    }
    if (atomic_load(&phase) == 1) {
      if (w->n == w->cap) {
        long cap = w->cap ? w->cap * 2 : 4096;
        int64_t *nl = realloc(w->lat, (size_t)cap * sizeof *nl);
        if (nl == NULL) break;
        w->lat = nl;
        w->cap = cap;
      }
      w->lat[w->n++] = t1 - t0;
    }
  }
out:
  sqlite3_finalize(st);
  sqlite3_close(db);
  return NULL;
}

int main(int argc, char **argv) {
  char path[512], name[64], extra[400], proto[400], dev[64] = "?";
  int threads, i;
  double secs, warm;
  sqlite3 *db;
  pthread_t *tid;
  worker_t *ws;
  long total = 0, k = 0;
  int64_t *all, t_start, t_end;
  long long f0, f1;
  unsigned maj = 0, min = 0;
  if (argc != 5) {
    fprintf(stderr, "usage: bench_sqlite DIR THREADS SECONDS WARM_SECONDS\n");
    return 2;
  }
  threads = atoi(argv[2]);
  secs = atof(argv[3]);
  warm = atof(argv[4]);
  snprintf(path, sizeof path, "%s/sqlite-%d.db", argv[1], threads);
  db_path = path;
  if (sqlite3_open(path, &db) != SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                       "CREATE TABLE IF NOT EXISTS kv(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;",
                   NULL, NULL, NULL) != SQLITE_OK) {
    fprintf(stderr, "bench_sqlite: %s: %s\n", path, sqlite3_errmsg(db));
    return 1;
  }
  sqlite3_close(db);
  diskflush_dev(argv[1], &maj, &min);
  tid = calloc((size_t)threads, sizeof *tid);
  ws = calloc((size_t)threads, sizeof *ws);
  for (i = 0; i < threads; i++) {
    ws[i].id = i;
    pthread_create(&tid[i], NULL, work, &ws[i]);
  }
  usleep((useconds_t)(warm * 1e6));
  f0 = diskflush_count(maj, min, dev);
  t_start = bench_now_ns();
  atomic_store(&phase, 1);
  usleep((useconds_t)(secs * 1e6));
  atomic_store(&phase, 2);
  t_end = bench_now_ns();
  f1 = diskflush_count(maj, min, NULL);
  for (i = 0; i < threads; i++) pthread_join(tid[i], NULL);
  for (i = 0; i < threads; i++) total += ws[i].n;
  all = malloc((size_t)(total ? total : 1) * sizeof *all);
  for (i = 0; i < threads; i++) {
    memcpy(all + k, ws[i].lat, (size_t)ws[i].n * sizeof *all);
    k += ws[i].n;
  }
  qsort(all, (size_t)total, sizeof *all, bench_cmp_i64);
  snprintf(name, sizeof name, "durable commits, %d %s", threads, threads == 1 ? "thread" : "threads");
  snprintf(proto, sizeof proto,
           "SQLite %s alone: WAL, synchronous=FULL, one INSERT OR REPLACE per transaction (autocommit), "
           "%d thread%s each with its own connection and key, taking turns through a mutex; "
           "%.1f s measured after %.1f s warm-up",
           sqlite3_libversion(), threads, threads == 1 ? "" : "s", secs, warm);
  snprintf(extra, sizeof extra,
           "\"p50_us\":%.3f,\"p99_us\":%.3f,\"samples\":%ld,\"flushes\":%lld,\"flushes_per_s\":%.1f,"
           "\"device\":\"%s\"",
           bench_quantile(all, total, 0.5) / 1e3, bench_quantile(all, total, 0.99) / 1e3, total,
           f0 >= 0 && f1 >= 0 ? f1 - f0 : -1LL,
           f0 >= 0 && f1 >= 0 ? (double)(f1 - f0) * 1e9 / (double)(t_end - t_start) : -1.0, dev);
  bench_emit("sqlite", "daemon", name, !atomic_load(&failed) && total > 0,
             (double)total * 1e9 / (double)(t_end - t_start), "ops/s", proto, extra, NULL);
  return atomic_load(&failed);
}
