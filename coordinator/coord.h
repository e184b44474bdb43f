/*
 * coord.h - the coordinator's state and RPC methods: groups from the YAML,
 * groups created at run time, and their epochs.
 *
 * An epoch names one version of a group's resolved member list: it changes
 * when the list changes (a reload that moves a worker, a worker that
 * registers with a new incarnation). Epochs start from the coordinator's
 * start time, so that they grow across coordinator restarts too; with a
 * journal (coord_journal_open), runtime groups, epochs and the workers'
 * incarnations survive a restart, and an unchanged group keeps its epoch.
 */
#ifndef A2A_COORDINATOR_COORD_H
#define A2A_COORDINATOR_COORD_H

#include "common/config.h"
#include "server/rpc.h"

typedef struct coord coord;

/* coord_alloc takes ownership of cfg; *out is freed with coord_free. */
a2a_status coord_alloc(coord **out, cfg_cluster *cfg);

/* coord_free frees c and its configuration; NULL is fine. */
void coord_free(coord *c);

/*
 * coord_journal_open loads the state kept in path (none yet is fine) and
 * writes it back, so that the file is known to be writable; from then on
 * every change is written before a reply shows it. Called once, before
 * serving. A damaged or unwritable journal: an error in err, and c keeps no
 * journal.
 */
a2a_status coord_journal_open(coord *c, const char *path, char *err, size_t errlen);

/* coord_reload swaps in cfg (taking ownership), keeping runtime groups that still fit; 0. A
 * file that would move a running worker's world ranks or addresses (a worker removed, inserted
 * or resized anywhere but at the end, or moved) is refused: -1 with err, cfg freed, the file in
 * use kept. Workers appended at the end join the cluster, and the last ones may leave: the
 * running workers learn them from hccl_world_group's members (worker/watch.c). */
int coord_reload(coord *c, cfg_cluster *cfg, char *err, size_t errlen);

/* coord_methods returns the method table, for rpc_server_alloc with c as its argument. */
const rpc_method *coord_methods(size_t *n);

#endif
