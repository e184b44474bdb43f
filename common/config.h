/* config.h - the cluster YAML (DESIGN.md's schema), loaded with libyaml. */
#ifndef A2A_COMMON_CONFIG_H
#define A2A_COMMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "a2a.h"

#define CFG_WORKER_NAME_MAX 63 /* [A-Za-z0-9._-]{1,63} */
#define CFG_URL_MAX 255
#define CFG_PATH_MAX 1023
#define CFG_MAX_RANKS 65536           /* world size limit */
#define CFG_SOCKET_MAX 107            /* a Unix socket path: sizeof(sun_path) - 1 */
#define CFG_KEEP_AWAKE_MAX_US 1000000 /* a worker's keep_awake_us: at most 1 s */

typedef struct {
    char name[CFG_WORKER_NAME_MAX + 1];
    char url[CFG_URL_MAX + 1];       /* the worker API */
    char data_url[CFG_URL_MAX + 1];  /* peer links */
    char socket[CFG_SOCKET_MAX + 1]; /* local jobs (Unix socket, absolute path); "" when absent */
    int64_t ranks;                   /* number of local ranks, >= 1 */
    int64_t first_rank;              /* world rank of its first local rank */
    int64_t keep_awake_us; /* keep_awake_us: spin this long after the last call (0: off) */
} cfg_worker;

typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
    size_t n;
    int64_t *ranks; /* world ranks; group rank = index */
} cfg_group;

typedef struct {
    char path[CFG_PATH_MAX + 1]; /* the file it came from */
    char coordinator_url[CFG_URL_MAX + 1];
    char journal[CFG_PATH_MAX + 1];    /* coordinator.journal; "" when absent */
    char token_file[CFG_PATH_MAX + 1]; /* "" when security.token_file is absent */
    char tls_cert[CFG_PATH_MAX + 1];   /* "" when absent */
    char tls_key[CFG_PATH_MAX + 1];
    char tls_ca[CFG_PATH_MAX + 1];
    size_t nworkers;
    cfg_worker *workers;
    size_t ngroups; /* groups of the file, not hccl_world_group */
    cfg_group *groups;
    int64_t world_size; /* sum of the workers' ranks */
} cfg_cluster;

/*
 * cfg_load_file parses and checks path; on success *out is a new cluster that
 * the caller frees with cfg_free. On failure *out is NULL and err holds
 * "file:line:column: what is wrong" (A2A_ERR_INVALID_ARGUMENT), or why the
 * file could not be read (A2A_ERR_NOT_FOUND).
 */
a2a_status cfg_load_file(cfg_cluster **out, const char *path, char *err, size_t errlen);

/* cfg_load_string is cfg_load_file on len bytes of text; name stands for the file in messages. */
a2a_status cfg_load_string(cfg_cluster **out, const char *name, const char *text, size_t len,
                           char *err, size_t errlen);

/* cfg_free frees a cluster from cfg_load_*; NULL is fine. */
void cfg_free(cfg_cluster *c);

/* cfg_find_worker returns the worker called name, or NULL. */
const cfg_worker *cfg_find_worker(const cfg_cluster *c, const char *name);

/* cfg_worker_of_rank returns the worker that owns world rank r, or NULL. */
const cfg_worker *cfg_worker_of_rank(const cfg_cluster *c, int64_t r);

/* cfg_find_group returns the file's group called name, or NULL. */
const cfg_group *cfg_find_group(const cfg_cluster *c, const char *name);

/*
 * cfg_check_group_name checks a group name of len bytes: 1..127 bytes, no
 * control characters. Returns 0, or -1 with the reason in err.
 */
int cfg_check_group_name(const char *name, size_t len, char *err, size_t errlen);

/* cfg_check_worker_name checks [A-Za-z0-9._-]{1,63}; 0 or -1. */
int cfg_check_worker_name(const char *name);

/* cfg_check_url checks a tcp://, tls+tcp://, ipc:// or inproc:// URL; 0 or -1 with the reason. */
int cfg_check_url(const char *url, char *err, size_t errlen);

#endif
