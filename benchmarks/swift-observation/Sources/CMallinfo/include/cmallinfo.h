/* mallinfo2() for Swift, which cannot import <malloc.h> from Glibc. */
#ifndef CMALLINFO_H
#define CMALLINFO_H
/* Bytes in use from malloc: uordblks + hblkhd (benchmarks/common/bench.h). */
long long bench_malloc_in_use(void);
#endif
