/* dtype.c - the dtype table. */
#include "dtype.h"

#include <string.h>

/* clang-format off */
#define DTYPE_TABLE(X)           \
    X(INT8, "int8", 1)           \
    X(UINT8, "uint8", 1)         \
    X(INT16, "int16", 2)         \
    X(UINT16, "uint16", 2)       \
    X(INT32, "int32", 4)         \
    X(UINT32, "uint32", 4)       \
    X(INT64, "int64", 8)         \
    X(UINT64, "uint64", 8)       \
    X(FLOAT16, "float16", 2)     \
    X(FLOAT32, "float32", 4)     \
    X(FLOAT64, "float64", 8)     \
    X(BFLOAT16, "bfloat16", 2)
/* clang-format on */

#define DTYPE_ENTRY(e, n, s) [A2A_##e] = {n, s},
static const struct {
    const char *name;
    size_t size;
} dtypes[A2A_DTYPE_COUNT] = {DTYPE_TABLE(DTYPE_ENTRY)};
_Static_assert(A2A_BFLOAT16 == A2A_DTYPE_COUNT - 1, "dtype table out of step");

int
dtype_valid(int64_t raw)
{
    return raw >= 0 && raw < A2A_DTYPE_COUNT;
}

size_t
a2a_dtype_size(a2a_dtype dtype)
{
    return dtype_valid(dtype) ? dtypes[dtype].size : 0;
}

const char *
dtype_name(a2a_dtype dtype)
{
    return dtype_valid(dtype) ? dtypes[dtype].name : "invalid";
}

int
dtype_from_name(const char *name)
{
    for (int i = 0; i < A2A_DTYPE_COUNT; i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return i;
    return -1;
}
