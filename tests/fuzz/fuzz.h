/* fuzz.h - what every libFuzzer target of tests/fuzz shares. */
#ifndef A2A_TESTS_FUZZ_H
#define A2A_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* CHECK aborts (a crash the fuzzer reports) when a property the code promises does not hold. */
#define CHECK(c)     \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

#endif
