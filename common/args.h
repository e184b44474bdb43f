/* args.h - the checks of a2a_all_to_all_v's arguments, shared by liba2a and the worker. */
#ifndef A2A_COMMON_ARGS_H
#define A2A_COMMON_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "a2a.h"

/*
 * args_check checks one rank's arguments for a group of n ranks: dtype,
 * counts and displacements non-negative, every slice inside its buffer
 * (send_len and recv_len in elements), no overflow of count * size, and no
 * two receive slices overlapping (with count discovery, args_discover, only the send side and
 * recv_len). counts holds send_counts, send_displs,
 * recv_counts and recv_displs, n each. Returns A2A_OK or
 * A2A_ERR_INVALID_ARGUMENT with the reason in err.
 */
/* Count discovery on the wire: every receive count and displacement is ARGS_DISCOVER (the
 * job passed recv_counts == NULL); the slices land packed in group-rank order from element 0
 * of the receive buffer, and the worker answers the counts. */
#define ARGS_DISCOVER (-1)

/* args_discover reports whether counts (4n, as args_check's) ask for count discovery. */
int args_discover(size_t n, const int64_t *counts);

a2a_status args_check(size_t n, int64_t dtype, uint64_t send_len, uint64_t recv_len,
                      const int64_t *counts, char *err, size_t errlen);

#endif
