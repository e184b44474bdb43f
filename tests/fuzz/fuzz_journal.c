/*
 * fuzz_journal.c - libFuzzer target for the coordinator's journal decoder
 * (coordinator/journal.c). The input's first byte picks how it is read: even,
 * as a whole file (so the checksum line must hold); odd, as the records before
 * an end line with the right checksum, so that the parser behind the checksum
 * is reached. Either way it decodes or is refused with a message, without
 * crashes or leaks, and what decodes encodes back to text that decodes to the
 * same state.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/journal.h"
#include "fuzz.h"

static int
same(const journal_state *a, const journal_state *b)
{
    if (a->next_epoch != b->next_epoch || a->ngroups != b->ngroups || a->nepochs != b->nepochs ||
        a->nworkers != b->nworkers)
        return 0;
    for (size_t i = 0; i < a->ngroups; i++)
        if (strcmp(a->groups[i].name, b->groups[i].name) != 0 || a->groups[i].n != b->groups[i].n ||
            memcmp(a->groups[i].ranks, b->groups[i].ranks, a->groups[i].n * sizeof(int64_t)) != 0)
            return 0;
    for (size_t i = 0; i < a->nepochs; i++)
        if (strcmp(a->epochs[i].name, b->epochs[i].name) != 0 ||
            a->epochs[i].epoch != b->epochs[i].epoch ||
            a->epochs[i].fingerprint != b->epochs[i].fingerprint)
            return 0;
    for (size_t i = 0; i < a->nworkers; i++)
        if (strcmp(a->workers[i].name, b->workers[i].name) != 0 ||
            a->workers[i].incarnation != b->workers[i].incarnation)
            return 0;
    return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    journal_state s, t;
    char err[512], *text = NULL, *again = NULL;
    size_t len, alen;

    if (size == 0 || size > (1 << 20))
        return 0;
    if (data[0] % 2 == 0) {
        text = malloc(size - 1 + 1);
        memcpy(text, data + 1, size - 1);
        len = size - 1;
    } else { /* the records, then "end SUM\n" */
        uint64_t h = 0xcbf29ce484222325ULL;
        for (size_t i = 1; i < size; i++)
            h = (h ^ data[i]) * 0x100000001b3ULL;
        text = malloc(size - 1 + 32);
        memcpy(text, data + 1, size - 1);
        len = size - 1 + (size_t)snprintf(text + size - 1, 32, "end %016" PRIx64 "\n", h);
    }
    if (journal_decode(&s, text, len, err, sizeof(err)) != 0) {
        if (err[0] == '\0')
            __builtin_trap(); /* refused without a reason */
        free(text);
        return 0;
    }
    if (journal_encode(&s, &again, &alen, err, sizeof(err)) != 0 ||
        journal_decode(&t, again, alen, err, sizeof(err)) != 0 || !same(&s, &t))
        __builtin_trap();
    journal_state_fini(&t);
    journal_state_fini(&s);
    free(again);
    free(text);
    return 0;
}
