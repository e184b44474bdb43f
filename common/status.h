/* status.h - the status table: codes, names and messages from one X-macro. */
#ifndef A2A_COMMON_STATUS_H
#define A2A_COMMON_STATUS_H

#include "a2a.h"

/* X(enum suffix, name, default message), in the order of a2a_status. */
#define A2A_STATUS_TABLE(X)                                                   \
    X(OK, "OK", "success")                                                    \
    X(ERR_INVALID_ARGUMENT, "INVALID_ARGUMENT", "invalid argument")           \
    X(ERR_NOT_FOUND, "NOT_FOUND", "not found")                                \
    X(ERR_ALREADY_EXISTS, "ALREADY_EXISTS", "already exists")                 \
    X(ERR_PERMISSION_DENIED, "PERMISSION_DENIED", "permission denied")        \
    X(ERR_COUNT_MISMATCH, "COUNT_MISMATCH", "send and receive counts differ") \
    X(ERR_DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED", "deadline exceeded")        \
    X(ERR_UNAVAILABLE, "UNAVAILABLE", "unavailable")                          \
    X(ERR_RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED", "resource exhausted")     \
    X(ERR_INTERNAL, "INTERNAL", "internal error")

/* Number of status codes. */
#define A2A_STATUS_COUNT 10

/* status_message returns the static default message of a status. */
const char *status_message(a2a_status status);

/* status_valid reports whether a raw integer (e.g. off the wire) is a status. */
int status_valid(int64_t raw);

/*
 * status_fail writes the printf-style message into err[errlen] (when err is
 * not NULL) and returns st, for "return status_fail(err, errlen, st, ...)".
 */
a2a_status status_fail(char *err, size_t errlen, a2a_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* msg_fail writes the message like status_fail and returns -1, for decoders and checkers. */
int msg_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* status_from_name returns the status called name, or -1. */
int status_from_name(const char *name);

#endif
