/* log.h - leveled logging to stderr; the level comes from $A2A_LOG_LEVEL. */
#ifndef A2A_COMMON_LOG_H
#define A2A_COMMON_LOG_H

typedef enum { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG } log_level;

/* log_init sets the program name and reads $A2A_LOG_LEVEL (error|warn|info|debug). */
void log_init(const char *prog);

/* log_enabled reports whether messages at level are printed. */
int log_enabled(log_level level);

/* log_msg prints one line "prog: level: message" when level is enabled. */
void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                       \
    do {                                     \
        if (log_enabled(LOG_DEBUG))          \
            log_msg(LOG_DEBUG, __VA_ARGS__); \
    } while (0)

#endif
