/*
 * fuzz_state.c - libFuzzer target for the lines of the worker's state file (SOCKET.ranks,
 * worker/group.c group_state_parse, as engine.c's prior_load reads them: the input is the file,
 * cut into lines at each '\n' and at the reader's buffer size). Every line either is refused or
 * parses to a rank >= 0 and a valid group name that formats back to the same bytes.
 */
#include <stdint.h>
#include <string.h>

#include "a2a.h"
#include "fuzz.h"
#include "group.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    char name[A2A_GROUP_NAME_MAX + 1], again[A2A_GROUP_NAME_MAX + 64];
    const size_t cap = A2A_GROUP_NAME_MAX + 63; /* fgets's share of prior_load's buffer */

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl != NULL ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        int64_t rank = -1;
        if (len > cap)
            len = cap;
        memset(name, 0x5a, sizeof(name));
        if (group_state_parse(p, len, &rank, name) == 0) {
            size_t n = strnlen(name, sizeof(name));
            CHECK(rank >= 0 && n > 0 && n <= A2A_GROUP_NAME_MAX);
            int k = group_state_format(again, sizeof(again), rank, name);
            CHECK(k > 0 && (size_t)k <= len);
            /* the same line, but for leading zeros of the rank */
            CHECK(memcmp(again + k - (int)n - 1, p + len - n - 1, n + 1) == 0);
        }
        p += len;
    }
    return 0;
}
