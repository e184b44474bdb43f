/* status.c - names and messages of the status codes, from A2A_STATUS_TABLE. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define STATUS_CHECK(suffix, name, msg) _Static_assert((int)A2A_##suffix >= 0, name);
A2A_STATUS_TABLE(STATUS_CHECK)
_Static_assert(A2A_ERR_INTERNAL == A2A_STATUS_COUNT - 1, "status table out of step");

#define STATUS_NAME(suffix, name, msg) [A2A_##suffix] = name,
#define STATUS_MSG(suffix, name, msg) [A2A_##suffix] = msg,
static const char *const status_names[A2A_STATUS_COUNT] = {A2A_STATUS_TABLE(STATUS_NAME)};
static const char *const status_msgs[A2A_STATUS_COUNT] = {A2A_STATUS_TABLE(STATUS_MSG)};

const char *
a2a_status_name(a2a_status status)
{
    if ((unsigned)status >= A2A_STATUS_COUNT)
        return "UNKNOWN_STATUS";
    return status_names[status];
}

const char *
status_message(a2a_status status)
{
    if ((unsigned)status >= A2A_STATUS_COUNT)
        return "unknown status";
    return status_msgs[status];
}

int
status_valid(int64_t raw)
{
    return raw >= 0 && raw < A2A_STATUS_COUNT;
}

int
status_from_name(const char *name)
{
    for (int i = 0; i < A2A_STATUS_COUNT; i++)
        if (strcmp(status_names[i], name) == 0)
            return i;
    return -1;
}

a2a_status
status_fail(char *err, size_t errlen, a2a_status st, const char *fmt, ...)
{
    va_list ap;
    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

int
msg_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
