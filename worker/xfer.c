/* xfer.c - process_vm_readv/writev, resumed after partial transfers. */
#include "xfer.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

typedef ssize_t (*xfer_fn)(pid_t, const struct iovec *, unsigned long, const struct iovec *,
                           unsigned long, unsigned long);

static int
xfer_loop(xfer_fn fn, pid_t pid, uint64_t addr, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        struct iovec local = {(char *)buf + done, len - done};
        struct iovec remote = {(void *)(uintptr_t)(addr + done), len - done};
        ssize_t n = fn(pid, &local, 1, &remote, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return EFAULT;
        done += (size_t)n;
    }
    return 0;
}

int
xfer_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    return xfer_loop(process_vm_readv, pid, addr, buf, len);
}

int
xfer_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
    return xfer_loop((xfer_fn)process_vm_writev, pid, addr, (void *)buf, len);
}

int
xfer_probe(pid_t pid, uint64_t addr, const uint64_t nonce[2])
{
    uint64_t got[2] = {0, 0};
    if (pid <= 0 || xfer_read(pid, addr, got, sizeof(got)) != 0)
        return 0;
    return memcmp(got, nonce, sizeof(got)) == 0;
}
