#include "cmallinfo.h"

#include <malloc.h>

long long bench_malloc_in_use(void) {
  struct mallinfo2 mi = mallinfo2();
  return (long long)mi.uordblks + (long long)mi.hblkhd;
}
