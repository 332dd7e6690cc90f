/*
 * prng.c — the pseudo-random generator of the "reactively" dynamic graphs
 * (BENCHMARKS.md, "Dynamic graphs"): sfc32 seeded with four successive
 * outputs of xmur3a("seed"), bit for bit as the JS benchmark's
 * pseudoRandom() (js-reactivity-benchmark, util/pseudoRandom.ts, adapted
 * there from bryc's public-domain PRNGs.md). JS's `x | 0`, `x >>> 0` and
 * Math.imul are 32-bit wrap-around arithmetic, which uint32_t gives in C.
 */
#include <string.h>

#include "workloads.h"

static uint32_t wl_rotl32(uint32_t x, unsigned r) { return (x << r) | (x >> (32u - r)); }

uint32_t wl_xmur3a_init(const char *str) {
  /* str is ASCII here ("seed"); JS hashes UTF-16 code units, which for
   * ASCII are the bytes. */
  size_t len = strlen(str), i;
  uint32_t h = 2166136261u;
  for (i = 0; i < len; i++) {
    uint32_t k = (uint32_t)(unsigned char)str[i] * 3432918353u;
    k = wl_rotl32(k, 15);
    h ^= k * 461845907u;
    h = wl_rotl32(h, 13);
    h = h * 5u + 3864292196u;
  }
  h ^= (uint32_t)len;
  return h;
}

uint32_t wl_xmur3a_next(uint32_t *h) {
  uint32_t x = *h;
  x ^= x >> 16;
  x *= 2246822507u;
  x ^= x >> 13;
  x *= 3266489909u;
  x ^= x >> 16;
  *h = x;
  return x;
}

void wl_rng_seed(wl_rng_t *r, const char *seed) {
  uint32_t h = wl_xmur3a_init(seed);
  r->a = wl_xmur3a_next(&h);
  r->b = wl_xmur3a_next(&h);
  r->c = wl_xmur3a_next(&h);
  r->d = wl_xmur3a_next(&h);
}

double wl_rng_next(wl_rng_t *r) {
  uint32_t t = r->a + r->b;
  r->a = r->b ^ (r->b >> 9);
  r->b = r->c + (r->c << 3);
  r->c = wl_rotl32(r->c, 21);
  r->d = r->d + 1u;
  t = t + r->d;
  r->c = r->c + t;
  return (double)t / 4294967296.0;
}
