/* test_journal.c - the coordinator's journal (coordinator/journal.c): round trip, and every
 * truncation, changed byte and bad record refused with a reason. */
#include "cu_main.h"
#include <CUnit/Basic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coordinator/journal.h"

static int64_t ranks_a[] = {3, 1, 0};
static int64_t ranks_b[] = {7};

static journal_state
sample(void)
{
    static journal_group g[2];
    static journal_epoch e[3];
    static journal_worker w[2];
    journal_state s = {.next_epoch = 1796000000123ULL,
                       .groups = g,
                       .ngroups = 2,
                       .epochs = e,
                       .nepochs = 3,
                       .workers = w,
                       .nworkers = 2};
    memset(g, 0, sizeof(g));
    memset(e, 0, sizeof(e));
    memset(w, 0, sizeof(w));
    snprintf(g[0].name, sizeof(g[0].name), "my group with  spaces ");
    g[0].n = 3;
    g[0].ranks = ranks_a;
    snprintf(g[1].name, sizeof(g[1].name), "one");
    g[1].n = 1;
    g[1].ranks = ranks_b;
    snprintf(e[0].name, sizeof(e[0].name), "hccl_world_group");
    e[0].epoch = 1796000000100ULL;
    e[0].fingerprint = 0xfedcba9876543210ULL;
    snprintf(e[1].name, sizeof(e[1].name), "my group with  spaces ");
    e[1].epoch = 1796000000123ULL;
    e[1].fingerprint = 1;
    snprintf(e[2].name, sizeof(e[2].name), "one");
    e[2].epoch = 5;
    snprintf(w[0].name, sizeof(w[0].name), "node-a");
    w[0].incarnation = 0x0123456789abcdefULL;
    snprintf(w[1].name, sizeof(w[1].name), "node-b");
    w[1].incarnation = UINT64_MAX;
    return s;
}

static void
test_round_trip(void)
{
    journal_state s = sample(), d;
    char *text, err[512];
    size_t len;

    CU_ASSERT_EQUAL_FATAL(journal_encode(&s, &text, &len, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(journal_decode(&d, text, len, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(d.next_epoch, s.next_epoch);
    CU_ASSERT_EQUAL_FATAL(d.ngroups, 2);
    CU_ASSERT_STRING_EQUAL(d.groups[0].name, "my group with  spaces ");
    CU_ASSERT_EQUAL_FATAL(d.groups[0].n, 3);
    CU_ASSERT(memcmp(d.groups[0].ranks, ranks_a, sizeof(ranks_a)) == 0);
    CU_ASSERT_EQUAL(d.groups[1].ranks[0], 7);
    CU_ASSERT_EQUAL_FATAL(d.nepochs, 3);
    for (size_t i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL(d.epochs[i].name, s.epochs[i].name);
        CU_ASSERT_EQUAL(d.epochs[i].epoch, s.epochs[i].epoch);
        CU_ASSERT_EQUAL(d.epochs[i].fingerprint, s.epochs[i].fingerprint);
    }
    CU_ASSERT_EQUAL_FATAL(d.nworkers, 2);
    CU_ASSERT_STRING_EQUAL(d.workers[1].name, "node-b");
    CU_ASSERT_EQUAL(d.workers[0].incarnation, 0x0123456789abcdefULL);
    CU_ASSERT_EQUAL(d.workers[1].incarnation, UINT64_MAX);
    journal_state_fini(&d);
    free(text);
}

/* every prefix of the file (a write cut short) and every byte changed is refused */
static void
test_truncated_and_changed(void)
{
    journal_state s = sample(), d;
    char *text, err[512];
    size_t len, refused = 0;

    CU_ASSERT_EQUAL_FATAL(journal_encode(&s, &text, &len, err, sizeof(err)), 0);
    for (size_t n = 0; n < len; n++) {
        err[0] = '\0';
        if (journal_decode(&d, text, n, err, sizeof(err)) == 0) {
            printf("prefix of %zu bytes accepted\n", n);
            journal_state_fini(&d);
            continue;
        }
        refused++;
        CU_ASSERT(strlen(err) > 10);
    }
    CU_ASSERT_EQUAL(refused, len);
    refused = 0;
    for (size_t i = 0; i < len; i++)
        for (int bit = 0; bit < 8; bit++) {
            text[i] ^= (char)(1 << bit);
            if (journal_decode(&d, text, len, err, sizeof(err)) == 0) {
                printf("byte %zu bit %d changed, accepted\n", i, bit);
                journal_state_fini(&d);
            } else {
                refused++;
            }
            text[i] ^= (char)(1 << bit);
        }
    CU_ASSERT_EQUAL(refused, len * 8);
    free(text);
}

/* with_sum: body + a correct end line, so that only the record's check can refuse it */
static char *
with_sum(const char *body, size_t *len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t n = strlen(body);
    char *t = malloc(n + 32);
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)body[i]) * 0x100000001b3ULL;
    snprintf(t, n + 32, "%send %016" PRIx64 "\n", body, h);
    *len = strlen(t);
    return t;
}

static void
expect_refused(const char *body, const char *why)
{
    journal_state d;
    char err[512] = "";
    size_t len;
    char *t = with_sum(body, &len);
    int rv = journal_decode(&d, t, len, err, sizeof(err));
    CU_ASSERT_EQUAL(rv, -1);
    if (rv == 0)
        journal_state_fini(&d);
    if (strstr(err, why) == NULL)
        printf("\nfor %s: got \"%s\", expected it to say \"%s\"\n", body, err, why);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, why));
    free(t);
}

#define HDR "a2a-coordinator journal 1\nnext_epoch 100\n"

static void
test_bad_records(void)
{
    journal_state d;
    char err[512];
    size_t len;
    char *t = with_sum(HDR, &len);

    CU_ASSERT_EQUAL(journal_decode(&d, t, len, err, sizeof(err)), 0); /* empty state is fine */
    CU_ASSERT_EQUAL(d.next_epoch, 100);
    journal_state_fini(&d);
    free(t);
    expect_refused("a2a-coordinator journal 2\nnext_epoch 100\n", "line 1: not an a2a-coordinator");
    expect_refused("a2a-coordinator journal 1\nnext 100\n", "line 2: expected \"next_epoch\"");
    expect_refused(HDR "group 2 0 0 g\n", "line 3: rank 0 appears twice");
    expect_refused(HDR "group 1 65536 g\n", "rank 65536 is out of range");
    expect_refused(HDR "group 0 g\n", "a group of 0 ranks");
    expect_refused(HDR "group 2 1 g\n", "rank is not a number");
    expect_refused(HDR "group 1 1\n", "nothing follows a rank");
    expect_refused(HDR "group 1 1 g\ngroup 1 2 g\n", "group \"g\" appears twice");
    expect_refused(HDR "epoch 101 00 g\n", "epoch 101 is past next_epoch 100");
    expect_refused(HDR "epoch 99 zz g\n", "the fingerprint is not a number");
    expect_refused(HDR "epoch 99999999999999999999 0 g\n", "the epoch is too large");
    expect_refused(HDR "worker 1 bad/name\n", "bad name \"bad/name\"");
    expect_refused(HDR "worker 1 w\nworker 2 w\n", "worker \"w\" appears twice");
    expect_refused(HDR "wibble 1 2\n", "line 3: unknown record \"wibble 1 2\"");
    expect_refused(HDR "end 0\n", "line 3: unknown record \"end 0\""); /* end is last only */
    t = with_sum(HDR "group 1 4 g\n", &len);
    t[strlen(HDR) + 8] = '5'; /* rank 4 -> 5: well formed, but not what was written */
    err[0] = '\0';
    CU_ASSERT_EQUAL(journal_decode(&d, t, len, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "line 4: the checksum does not match"));
    free(t);
}

static void
test_files(void)
{
    char folder[] = "/tmp/a2a-journal.XXXXXX", path[256], err[512];
    journal_state s = sample(), d;
    char *text;
    size_t len;
    struct stat st;

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(folder));
    snprintf(path, sizeof(path), "%s/j", folder);
    CU_ASSERT_EQUAL(journal_read(path, &d, err, sizeof(err)), A2A_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL_FATAL(journal_encode(&s, &text, &len, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(journal_write(path, text, len, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(journal_write(path, text, len, err, sizeof(err)), 0); /* over the old one */
    CU_ASSERT_EQUAL_FATAL(journal_read(path, &d, err, sizeof(err)), A2A_OK);
    CU_ASSERT_EQUAL(d.ngroups, 2);
    journal_state_fini(&d);
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    {
        char tmp[300];
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        CU_ASSERT_NOT_EQUAL(access(tmp, F_OK), 0); /* renamed away */
    }
    FILE *f = fopen(path, "r+"); /* damaged in place */
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fseek(f, 40, SEEK_SET);
    fputc('#', f);
    fclose(f);
    err[0] = '\0';
    CU_ASSERT_EQUAL(journal_read(path, &d, err, sizeof(err)), A2A_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
    snprintf(path, sizeof(path), "%s/no/such/folder/j", folder);
    CU_ASSERT_EQUAL(journal_write(path, text, len, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "No such file"));
    free(text);
    snprintf(path, sizeof(path), "rm -rf %s", folder);
    CU_ASSERT_EQUAL(system(path), 0);
}

/* a state larger than JOURNAL_MAX_BYTES is refused by the encoder, with the reason */
static void
test_too_large(void)
{
    static int64_t big[CFG_MAX_RANKS];
    journal_group *g = calloc(JOURNAL_MAX_GROUPS, sizeof(*g));
    journal_state s = {.groups = g, .ngroups = JOURNAL_MAX_GROUPS};
    char *text = NULL, err[512] = "";
    size_t len;

    for (int64_t i = 0; i < CFG_MAX_RANKS; i++)
        big[i] = CFG_MAX_RANKS - 1 - i;
    for (size_t i = 0; i < JOURNAL_MAX_GROUPS; i++) {
        snprintf(g[i].name, sizeof(g[i].name), "g%zu", i);
        g[i].n = CFG_MAX_RANKS;
        g[i].ranks = big;
    }
    CU_ASSERT_EQUAL(journal_encode(&s, &text, &len, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NULL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "larger than 64 MiB"));
    free(g);
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"journal round trip", test_round_trip},
        {"journal truncated and changed", test_truncated_and_changed},
        {"journal bad records", test_bad_records},
        {"journal files", test_files},
        {"journal too large", test_too_large},
    };
    return cu_main("journal", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
