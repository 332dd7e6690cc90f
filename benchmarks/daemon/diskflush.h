/*
 * diskflush.h — the block device's completed flush requests (the 16th
 * counter after the device name in /proc/diskstats, kernel 5.5 and later):
 * what an fsync or fdatasync costs at the device, counted for every process
 * writing to it. Shared by bench_tetherd.c (durable section) and
 * bench_sqlite.c.
 */
#ifndef TETHER_DISKFLUSH_H
#define TETHER_DISKFLUSH_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* The device (major, minor) holding path; 0 or -1. */
static inline int diskflush_dev(const char *path, unsigned *major_out, unsigned *minor_out) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  *major_out = major(st.st_dev);
  *minor_out = minor(st.st_dev);
  return 0;
}

/* Completed flushes of device major:minor so far, -1 if unknown (the
 * device is not in /proc/diskstats, or the kernel has no flush counters).
 * name_out (64 bytes, may be NULL) gets the device's name. */
static inline long long diskflush_count(unsigned maj, unsigned min, char *name_out) {
  char line[512], name[64];
  unsigned a, b;
  unsigned long long f[17];
  long long found = -1;
  FILE *d = fopen("/proc/diskstats", "r");
  if (d == NULL) return -1;
  while (fgets(line, sizeof line, d)) {
    int n = sscanf(line, "%u %u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
                   &a, &b, name, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9],
                   &f[10], &f[11], &f[12], &f[13], &f[14], &f[15], &f[16]);
    if (a == maj && b == min) {
      if (n >= 3 + 16) found = (long long)f[15];
      if (name_out != NULL) snprintf(name_out, 64, "%s", name);
      break;
    }
  }
  fclose(d);
  return found;
}

#endif
