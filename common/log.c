/* log.c - leveled logging. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char *log_prog = "a2a";
static int log_level_cur = LOG_INFO;
static int log_warned; /* a bad $A2A_LOG_LEVEL was reported */
static const char *const log_names[] = {"error", "warn", "info", "debug"};

void
log_init(const char *prog)
{
    const char *env = getenv("A2A_LOG_LEVEL");
    if (prog != NULL)
        log_prog = prog;
    if (env == NULL || *env == '\0')
        return;
    for (int i = LOG_ERROR; i <= LOG_DEBUG; i++)
        if (strcasecmp(env, log_names[i]) == 0) {
            log_level_cur = i;
            return;
        }
    if (!log_warned) { /* once per process, however often log_init runs */
        log_warned = 1;
        log_msg(LOG_WARN, "A2A_LOG_LEVEL=\"%s\" is not error, warn, info or debug: using %s", env,
                log_names[log_level_cur]);
    }
}

int
log_enabled(log_level level)
{
    return (int)level <= log_level_cur;
}

void
log_msg(log_level level, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    int n;

    if (!log_enabled(level))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld %s: %s: ", tm.tm_hour, tm.tm_min,
                 tm.tm_sec, ts.tv_nsec / 1000000, log_prog, log_names[level]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line); /* one call: lines from threads do not interleave */
}
