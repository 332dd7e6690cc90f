/*
 * runner.c — runs one registered C test case by name (cases.h), in this
 * process, and exits with its result: 0 when every check passed. The
 * harness (run.sh) starts one runner per case.
 *
 *     tether-tests --list        every case name, one per line
 *     tether-tests NAME          run the case NAME
 */
#include <stdio.h>
#include <string.h>

#include "cases.h"

#define DECLARE_CASE(name) int tcase_##name(void);
TETHER_TEST_CASES(DECLARE_CASE)

typedef struct {
  const char *name;
  int (*run)(void);
} test_case_t;

#define CASE_ENTRY(name) {#name, tcase_##name},
static const test_case_t cases[] = {TETHER_TEST_CASES(CASE_ENTRY)};
static const size_t case_count = sizeof cases / sizeof cases[0];

int main(int argc, char **argv) {
  size_t i;
  if (argc != 2) {
    fprintf(stderr, "usage: %s --list | CASE\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "--list") == 0) {
    for (i = 0; i < case_count; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  for (i = 0; i < case_count; i++) {
    if (strcmp(argv[1], cases[i].name) == 0) {
      setvbuf(stdout, NULL, _IOLBF, 0);
      int rc = cases[i].run();
      return rc == 0 ? 0 : rc == 77 ? 77 : 1; /* 77: skipped (check_skip) */
    }
  }
  fprintf(stderr, "%s: no case named \"%s\" (--list shows them)\n", argv[0], argv[1]);
  return 2;
}
