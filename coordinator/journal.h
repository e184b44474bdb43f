/*
 * journal.h - the coordinator's state on disk: runtime groups, the epochs it
 * gave and the fingerprints they were given for, the workers' incarnations,
 * and the next epoch. Written whole (a snapshot), atomically (a temporary file,
 * fsync, rename, fsync of the folder) after every change and before any reply
 * that depends on it; read once at start.
 *
 * The file is text, one record a line, names last (a group name may hold
 * spaces, never a control character):
 *
 *   a2a-coordinator journal 1
 *   next_epoch EPOCH
 *   worker INCARNATION_HEX NAME
 *   epoch EPOCH FINGERPRINT_HEX NAME
 *   group N RANK_0 ... RANK_N-1 NAME
 *   end FNV1A64_HEX               (of every byte before this line)
 *
 * A file that does not end with a matching "end" line is damaged (truncated
 * or changed): journal_decode says which line and what is wrong.
 */
#ifndef A2A_COORDINATOR_JOURNAL_H
#define A2A_COORDINATOR_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "a2a.h"
#include "common/config.h"

#define JOURNAL_MAX_BYTES ((size_t)64 << 20) /* the largest journal written or read */
#define JOURNAL_MAX_GROUPS 4096              /* runtime groups */
#define JOURNAL_MAX_EPOCHS 65536             /* epoch records */

typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
    size_t n;
    int64_t *ranks;
} journal_group;

/* What a group's epoch was given for: the fingerprint of its member list. */
typedef struct {
    char name[A2A_GROUP_NAME_MAX + 1];
    uint64_t fingerprint;
    uint64_t epoch;
} journal_epoch;

typedef struct {
    char name[CFG_WORKER_NAME_MAX + 1];
    uint64_t incarnation;
} journal_worker;

typedef struct {
    uint64_t next_epoch; /* the last epoch given; the next is larger */
    journal_group *groups;
    size_t ngroups;
    journal_epoch *epochs;
    size_t nepochs;
    journal_worker *workers;
    size_t nworkers;
} journal_state;

/* journal_state_fini frees what journal_decode or journal_read allocated in s. */
void journal_state_fini(journal_state *s);

/*
 * journal_encode writes s as journal text into *out (malloc'd, *len bytes).
 * Returns 0, or -1 with the reason in err (out of memory, larger than
 * JOURNAL_MAX_BYTES).
 */
int journal_encode(const journal_state *s, char **out, size_t *len, char *err, size_t errlen);

/*
 * journal_decode parses len bytes of journal text into *s (zeroed first).
 * Returns 0, or -1 with "line L: what is wrong" in err and nothing allocated.
 */
int journal_decode(journal_state *s, const char *text, size_t len, char *err, size_t errlen);

/*
 * journal_read reads and decodes path. A2A_OK; A2A_ERR_NOT_FOUND when there is
 * no file (err says so; *s is empty); A2A_ERR_INVALID_ARGUMENT when it is
 * damaged, A2A_ERR_UNAVAILABLE when it cannot be read (err: "PATH: why").
 */
a2a_status journal_read(const char *path, journal_state *s, char *err, size_t errlen);

/*
 * journal_write replaces path by len bytes of data atomically: PATH.tmp is
 * written and fsync'd, renamed over path, and path's folder fsync'd. Returns
 * 0, or -1 with "PATH: why" in err (path is then unchanged).
 */
int journal_write(const char *path, const char *data, size_t len, char *err, size_t errlen);

#endif
