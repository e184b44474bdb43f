/* dtype.h - the twelve element types: sizes and names. */
#ifndef A2A_COMMON_DTYPE_H
#define A2A_COMMON_DTYPE_H

#include "a2a.h"

/* Number of data types. */
#define A2A_DTYPE_COUNT 12

/* dtype_valid reports whether a raw integer names a data type. */
int dtype_valid(int64_t raw);

/* dtype_name returns the lower-case name ("float32"), or "invalid". */
const char *dtype_name(a2a_dtype dtype);

/* dtype_from_name returns the type called name, or -1. */
int dtype_from_name(const char *name);

#endif
