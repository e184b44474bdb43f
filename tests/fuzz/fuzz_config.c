/*
 * fuzz_config.c - libFuzzer target for the YAML loader: any input loads into a
 * consistent cluster or is refused with a message, without crashes or leaks.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cfg_cluster *c = NULL;
    char err[512];
    size_t i;

    if (cfg_load_string(&c, "fuzz.yaml", (const char *)data, size, err, sizeof(err)) == A2A_OK) {
        /* a loaded cluster is consistent: ranks add up and every rank has an owner */
        int64_t sum = 0;

        for (i = 0; i < c->nworkers; i++) {
            if (c->workers[i].first_rank != sum || c->workers[i].ranks < 1)
                __builtin_trap();
            sum += c->workers[i].ranks;
        }
        if (sum != c->world_size || sum > CFG_MAX_RANKS || c->nworkers == 0 ||
            cfg_worker_of_rank(c, sum - 1) != &c->workers[c->nworkers - 1])
            __builtin_trap();
        for (i = 0; i < c->ngroups; i++)
            if (c->groups[i].n == 0 || cfg_find_group(c, c->groups[i].name) != &c->groups[i])
                __builtin_trap();
    } else if (c != NULL || memchr(err, '\0', sizeof(err)) == NULL) {
        __builtin_trap();
    }
    cfg_free(c);
    return 0;
}
