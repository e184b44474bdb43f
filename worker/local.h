/*
 * local.h - the worker's Unix socket (config "socket"): one session per job
 * on this host or in a container that shares the socket's volume.
 *
 * The kernel names the caller (SO_PEERCRED: pid, uid, gid); the job proves
 * the token (as on the RPC port), claims its rank (Attach: one live session
 * per rank), and hands its memory over as memfd descriptors (SCM_RIGHTS):
 * its job channels (OpenChannel) and shared buffers (MapBuffer, which also
 * carries liba2a's staging memory for plain buffers). Every mapping belongs
 * to the session (xfer.h). When the connection closes, the session's rank is
 * free at once, its channels close, and its memory is unmapped once the
 * calls that use it are over.
 */
#ifndef A2A_WORKER_LOCAL_H
#define A2A_WORKER_LOCAL_H

#include <stddef.h>

#include "chan.h"
#include "common/auth.h"
#include "common/wire.h"
#include "engine.h"
#include "server/rpc.h"

#define LOCAL_MAX_SESSIONS 1024    /* connections at once */
#define LOCAL_MAX_UNPROVED 64      /* of which not yet past the token */
#define LOCAL_HANDSHAKE_MS 5000    /* a connection must prove the token within this */
#define LOCAL_FRAME_PREAUTH 4096   /* largest frame before the token is proved */
#define LOCAL_CLAIM_WAIT_MS 1000   /* how long Attach waits for a closing holder of the rank */
#define LOCAL_FRAME_MAX (5u << 20) /* largest frame: an RPC body and its envelope */
/* remote sessions: staging slots (calls at once), bytes held here for one, and the job-view
 * address of slot i, (i + 1) * LOCAL_REMOTE_SLOT_SPAN */
#define LOCAL_REMOTE_SLOTS WIRE_REMOTE_SLOTS
#define LOCAL_REMOTE_MAX (1ull << 30)
#define LOCAL_REMOTE_SLOT_SPAN WIRE_REMOTE_SLOT_SPAN

typedef struct local_srv local_srv;

/*
 * local_alloc listens on path (a stale socket file there is replaced; a live
 * worker's is not; NULL: no socket, remote sessions only) and serves sessions
 * on e and cs (borrowed); key NULL: no token. *out is freed with local_free.
 */
a2a_status local_alloc(local_srv **out, const char *path, engine *e, chan_set *cs,
                       const auth_key *key, char *err, size_t errlen);

/*
 * Remote sessions: a job that shares no kernel with its worker (RemoteAttach
 * on the TCP API, which proved the token). Its memory cannot be handed over,
 * so its slices travel in the RPC bodies (at most WIRE_REMOTE_CHUNK bytes
 * each) into staging the worker holds for it (at most LOCAL_REMOTE_MAX
 * bytes, in LOCAL_REMOTE_SLOTS slots, one per call at once), mapped into the
 * session like a local job's memfd; a call then runs on it as on a local
 * job's. The session holds its rank like a local one, for as long as the
 * RPC connection it attached on is up: when that closes (the job ended or
 * died), its rank is free at once and its staging is unmapped once its calls
 * are over (local_watch). These are the TCP API's handlers for them (api.c).
 */
a2a_status local_remote_attach(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len);
a2a_status local_remote_detach(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len);
a2a_status local_remote_reserve(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len);
a2a_status local_remote_data(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len, int put);
a2a_status local_remote_call(local_srv *s, rpc_ctx *ctx, const uint8_t *body, size_t len);

/* local_set_key: the token jobs prove from now on (SIGHUP); sessions that proved the old one
 * stay. -1 when the worker has no token. */
int local_set_key(local_srv *s, const auth_key *key);
/* local_watch ties remote sessions to their connections of rpc, the TCP API (borrowed; call
 * once, right after the server starts; local_free unties them). */
void local_watch(local_srv *s, rpc_server *rpc);

/* local_list answers ListJobs: every session that holds a rank, with its mode (remote, shared:
 * a local job that has handed over a shared buffer since it came, staging: a local job with plain
 * buffers only). */
a2a_status local_list(local_srv *s, rpc_ctx *ctx);

/* local_free stops listening, closes every session, waits for their threads, unlinks the socket
 * file and frees s; NULL is fine. */
void local_free(local_srv *s);

#endif
