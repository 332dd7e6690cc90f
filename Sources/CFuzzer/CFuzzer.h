// CFuzzer.h — libFuzzer's entry point for a program with a main() of its
// own (tetherd-fuzz: SwiftPM gives every executable target its main). Only
// a build with -sanitize=fuzzer links it (libclang_rt.fuzzer).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
