/* xfer.h - copies to and from a job's memory (process_vm_readv/writev). */
#ifndef A2A_WORKER_XFER_H
#define A2A_WORKER_XFER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* xfer_read copies len bytes at addr in process pid into buf; 0 or an errno. */
int xfer_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* xfer_write copies len bytes of buf to addr in process pid; 0 or an errno. */
int xfer_write(pid_t pid, uint64_t addr, const void *buf, size_t len);

/* xfer_probe reports whether 16 bytes at addr in pid equal nonce (the job shares our host). */
int xfer_probe(pid_t pid, uint64_t addr, const uint64_t nonce[2]);

#endif
