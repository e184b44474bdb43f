/*
 * test_config.c - CUnit suite for common/config.c: good files load with the right
 * values, and each kind of error is refused at its line:column with its wording.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config.h"

#ifndef A2A_TEST_CONFIGS
#define A2A_TEST_CONFIGS "configs"
#endif

/* Lines 1-2: the coordinator. */
#define HEAD "coordinator:\n  url: tcp://c:7000\n"
/* Lines 3-11: two workers of two ranks each, a (world ranks 0, 1) and b (2, 3). */
#define WORKERS                    \
    "workers:\n"                   \
    "  - name: a\n"                \
    "    url: tcp://a:7100\n"      \
    "    data_url: tcp://a:7101\n" \
    "    ranks: 2\n"               \
    "  - name: b\n"                \
    "    url: tcp://b:7100\n"      \
    "    data_url: tcp://b:7101\n" \
    "    ranks: 2\n"

static char errbuf[1024];

static cfg_cluster *
load_ok(const char *yaml)
{
    cfg_cluster *c = NULL;
    a2a_status r = cfg_load_string(&c, "t.yaml", yaml, strlen(yaml), errbuf, sizeof(errbuf));

    CU_ASSERT_EQUAL(r, A2A_OK);
    if (r != A2A_OK)
        fprintf(stderr, "\n  unexpected error: %s\n", errbuf);
    return c;
}

/* expect_err loads yaml and checks the error's line:column and a keyword. */
static void
expect_err_at(const char *yaml, size_t len, int line, int col, const char *keyword)
{
    cfg_cluster *c = (cfg_cluster *)&c;
    char want[64];
    a2a_status r = cfg_load_string(&c, "t.yaml", yaml, len, errbuf, sizeof(errbuf));
    int ok_pos, ok_word;

    snprintf(want, sizeof(want), "t.yaml:%d:%d: ", line, col);
    ok_pos = strncmp(errbuf, want, strlen(want)) == 0;
    ok_word = strstr(errbuf, keyword) != NULL;
    CU_ASSERT_EQUAL(r, A2A_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(c);
    if (r == A2A_OK)
        cfg_free(c);
    CU_ASSERT(ok_pos);
    CU_ASSERT(ok_word);
    if (!ok_pos || !ok_word)
        fprintf(stderr, "\n  wanted %s... with \"%s\", got: %s\n", want, keyword, errbuf);
}

static void
expect_err(const char *yaml, int line, int col, const char *keyword)
{
    expect_err_at(yaml, strlen(yaml), line, col, keyword);
}

static void
test_good_minimal(void)
{
    cfg_cluster *c = load_ok(HEAD WORKERS);

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->path, "t.yaml");
    CU_ASSERT_STRING_EQUAL(c->coordinator_url, "tcp://c:7000");
    CU_ASSERT_STRING_EQUAL(c->token_file, "");
    CU_ASSERT_STRING_EQUAL(c->journal, "");
    CU_ASSERT_STRING_EQUAL(c->tls_cert, "");
    CU_ASSERT_EQUAL(c->nworkers, 2);
    CU_ASSERT_EQUAL(c->world_size, 4);
    CU_ASSERT_STRING_EQUAL(c->workers[0].name, "a");
    CU_ASSERT_STRING_EQUAL(c->workers[1].url, "tcp://b:7100");
    CU_ASSERT_STRING_EQUAL(c->workers[1].data_url, "tcp://b:7101");
    CU_ASSERT_EQUAL(c->workers[0].first_rank, 0);
    CU_ASSERT_EQUAL(c->workers[1].first_rank, 2);
    CU_ASSERT_EQUAL(c->workers[1].ranks, 2);
    CU_ASSERT_EQUAL(c->ngroups, 0);
    cfg_free(c);
}

static void
test_good_full(void)
{
    const char *y =
        HEAD "security:\n  token_file: /run/secrets/t\n"
             "  tls: {cert: /c.crt, key: /c.key, ca: /ca.crt}\n"
             "workers:\n"
             "  - {name: n.1, url: 'tls+tcp://[::1]:1', data_url: ipc:///tmp/d, ranks: 3}\n"
             "  - {name: N_2-x, url: inproc://w, data_url: tcp://h:0, ranks: 1}\n"
             "  - {name: z, url: tcp://10.0.0.1:65535, data_url: tcp://z:2, ranks: 4}\n"
             "groups:\n"
             "  - {name: \"with space ü\", ranks: [7, 0, 3]}\n"
             "  - name: one\n    ranks:\n      - 5\n";
    cfg_cluster *c = load_ok(y);

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->token_file, "/run/secrets/t");
    CU_ASSERT_STRING_EQUAL(c->tls_cert, "/c.crt");
    CU_ASSERT_STRING_EQUAL(c->tls_key, "/c.key");
    CU_ASSERT_STRING_EQUAL(c->tls_ca, "/ca.crt");
    CU_ASSERT_EQUAL(c->world_size, 8);
    CU_ASSERT_EQUAL(c->workers[0].first_rank, 0);
    CU_ASSERT_EQUAL(c->workers[1].first_rank, 3);
    CU_ASSERT_EQUAL(c->workers[2].first_rank, 4);
    CU_ASSERT_EQUAL_FATAL(c->ngroups, 2);
    CU_ASSERT_STRING_EQUAL(c->groups[0].name, "with space ü");
    CU_ASSERT_EQUAL_FATAL(c->groups[0].n, 3);
    CU_ASSERT_EQUAL(c->groups[0].ranks[0], 7);
    CU_ASSERT_EQUAL(c->groups[0].ranks[2], 3);
    CU_ASSERT_EQUAL(c->groups[1].n, 1);
    CU_ASSERT_EQUAL(c->groups[1].ranks[0], 5);
    CU_ASSERT_PTR_EQUAL(cfg_find_worker(c, "N_2-x"), &c->workers[1]);
    CU_ASSERT_PTR_NULL(cfg_find_worker(c, "nope"));
    CU_ASSERT_PTR_EQUAL(cfg_worker_of_rank(c, 0), &c->workers[0]);
    CU_ASSERT_PTR_EQUAL(cfg_worker_of_rank(c, 2), &c->workers[0]);
    CU_ASSERT_PTR_EQUAL(cfg_worker_of_rank(c, 3), &c->workers[1]);
    CU_ASSERT_PTR_EQUAL(cfg_worker_of_rank(c, 4), &c->workers[2]);
    CU_ASSERT_PTR_EQUAL(cfg_worker_of_rank(c, 7), &c->workers[2]);
    CU_ASSERT_PTR_NULL(cfg_worker_of_rank(c, 8));
    CU_ASSERT_PTR_NULL(cfg_worker_of_rank(c, -1));
    CU_ASSERT_PTR_EQUAL(cfg_find_group(c, "one"), &c->groups[1]);
    CU_ASSERT_PTR_NULL(cfg_find_group(c, A2A_WORLD_GROUP));
    cfg_free(c);
    cfg_free(NULL);
}

/* coordinator.journal: a path, optional, never empty */
static void
test_journal_key(void)
{
    cfg_cluster *c =
        load_ok("coordinator:\n  url: tcp://c:7000\n  journal: /var/lib/a2a/j\n" WORKERS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->journal, "/var/lib/a2a/j");
    cfg_free(c);
    expect_err("coordinator:\n  url: tcp://c:7000\n  journal: \"\"\n" WORKERS, 3, 12,
               "\"journal\" must not be empty");
    expect_err("coordinator:\n  url: tcp://c:7000\n  journal: [a]\n" WORKERS, 3, 12, "journal");
}

static void
test_null_sections(void)
{
    cfg_cluster *c = load_ok("---\n" HEAD "security:\n" WORKERS "groups: []\n...\n");

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->ngroups, 0);
    CU_ASSERT_STRING_EQUAL(c->token_file, "");
    cfg_free(c);
}

static void
check_sample(const char *file, const char *coordinator)
{
    char path[1024];
    cfg_cluster *c = NULL;
    const cfg_group *g;
    size_t i;

    snprintf(path, sizeof(path), "%s/%s", A2A_TEST_CONFIGS, file);
    CU_ASSERT_EQUAL_FATAL(cfg_load_file(&c, path, errbuf, sizeof(errbuf)), A2A_OK);
    CU_ASSERT_STRING_EQUAL(c->path, path);
    CU_ASSERT_STRING_EQUAL(c->coordinator_url, coordinator);
    CU_ASSERT_EQUAL(c->nworkers, 2);
    CU_ASSERT_EQUAL(c->world_size, 4);
    CU_ASSERT_STRING_EQUAL(c->workers[1].name, "node-b");
    CU_ASSERT_EQUAL(c->workers[1].first_rank, 2);
    CU_ASSERT_EQUAL_FATAL(c->ngroups, 3);
    g = cfg_find_group(c, "experts_odd");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(g->n, 2);
    CU_ASSERT_EQUAL(g->ranks[0], 1);
    CU_ASSERT_EQUAL(g->ranks[1], 3);
    CU_ASSERT_EQUAL(strlen(c->groups[2].name), 127);
    CU_ASSERT_EQUAL_FATAL(c->groups[2].n, 4);
    for (i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(c->groups[2].ranks[i], (int64_t)i);
    cfg_free(c);
}

static void
test_sample_cluster(void)
{
    check_sample("cluster.yaml", "tcp://127.0.0.1:7000");
    check_sample("docker-cluster.yaml", "tcp://coordinator:7000");
}

static void
test_missing_file(void)
{
    cfg_cluster *c = (cfg_cluster *)&c;
    const char *path = "/nonexistent/a2a/cluster.yaml";
    char want[256];

    CU_ASSERT_EQUAL(cfg_load_file(&c, path, errbuf, sizeof(errbuf)), A2A_ERR_NOT_FOUND);
    CU_ASSERT_PTR_NULL(c);
    snprintf(want, sizeof(want), "%s: %s", path, strerror(ENOENT));
    CU_ASSERT_STRING_EQUAL(errbuf, want);
    c = (cfg_cluster *)&c;
    CU_ASSERT_EQUAL(cfg_load_file(&c, "/", errbuf, sizeof(errbuf)), A2A_ERR_NOT_FOUND);
    CU_ASSERT_PTR_NULL(c);
}

static void
test_err_syntax(void)
{
    expect_err(HEAD WORKERS "groups:\n  - name: x: y\n", 13, 12, "YAML syntax error");
    expect_err(HEAD "workers: [a, b\n", 4, 1, "YAML syntax error");
    expect_err("a: *nope\n", 1, 4, "YAML syntax error");
    expect_err_at("coordinator:\n  url: \xff\n", 21, 2, 8, "YAML syntax error");
}

static void
test_err_unknown_key(void)
{
    expect_err(HEAD WORKERS "    foo: 1\n", 12, 5, "unknown key \"foo\" in worker");
    expect_err(HEAD "extra: 1\n" WORKERS, 3, 1, "unknown key \"extra\" in the top level");
    expect_err("coordinator: {url: tcp://c:1, port: 7}\n" WORKERS, 1, 31, "unknown key \"port\"");
    expect_err(HEAD "security: {tls: {cert: a, key: b, ca: c, crl: d}}\n" WORKERS, 3, 42,
               "unknown key \"crl\" in tls");
}

static void
test_err_wrong_type(void)
{
    expect_err(HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:2, ranks: two}\n", 4,
               59, "\"ranks\" must be an integer, got \"two\"");
    expect_err(HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:2, ranks: \"2\"}\n",
               4, 59, "quoted string \"2\"");
    expect_err(HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:2, ranks: 0x2}\n", 4,
               59, "must be an integer");
    expect_err("coordinator:\n  - url\n" WORKERS, 2, 3,
               "coordinator must be a mapping, got a sequence");
    expect_err("- a\n", 1, 1, "the top level must be a mapping, got a sequence");
    expect_err(HEAD "workers:\n  name: a\n", 4, 3, "\"workers\" must be a sequence, got a mapping");
    expect_err(HEAD "workers:\n  - a\n", 4, 5, "worker must be a mapping, got \"a\"");
    expect_err(HEAD "workers:\n  - {name: [a], url: tcp://a:1}\n", 4, 12,
               "\"name\" must be a string, got a sequence");
    expect_err(HEAD WORKERS "groups: {name: g}\n", 12, 9, "\"groups\" must be a sequence");
    expect_err(HEAD WORKERS "groups:\n  - {name: g, ranks: 1}\n", 13, 22,
               "\"ranks\" must be a sequence");
    expect_err(HEAD WORKERS "groups:\n  - {name: g, ranks: [a]}\n", 13, 23,
               "\"rank\" must be an integer, got \"a\"");
    expect_err(HEAD "security: {token_file: [a]}\n" WORKERS, 3, 24,
               "\"token_file\" must be a string");
    expect_err(HEAD "security: {token_file: \"\"}\n" WORKERS, 3, 24, "must not be empty");
    expect_err(HEAD "{a: 1}: 2\n" WORKERS, 3, 1,
               "keys in the top level must be strings, got a mapping");
}

static void
test_err_dup_worker(void)
{
    expect_err(HEAD WORKERS "  - {name: a, url: tcp://x:1, data_url: tcp://x:2, ranks: 1}\n", 12,
               12, "duplicate worker name \"a\" (first at line 4)");
}

static void
test_err_dup_group(void)
{
    expect_err(HEAD WORKERS "groups:\n  - {name: g, ranks: [0]}\n  - {name: h, ranks: [1]}\n"
                            "  - {name: g, ranks: [2]}\n",
               15, 12, "duplicate group name \"g\" (first at line 13)");
}

static void
test_err_dup_key(void)
{
    expect_err(HEAD WORKERS "    url: tcp://b:7300\n", 12, 5,
               "duplicate key \"url\" in worker (first at line 9)");
    expect_err(HEAD WORKERS "coordinator: {url: tcp://c:7000}\n", 12, 1,
               "duplicate key \"coordinator\"");
}

static void
test_err_rank_range(void)
{
    expect_err(HEAD WORKERS "groups:\n  - name: g\n    ranks: [0, 9]\n", 14, 16,
               "rank 9 is out of range: the world has 4 ranks (0..3)");
    expect_err(HEAD WORKERS "groups:\n  - name: g\n    ranks: [-1]\n", 14, 13,
               "rank -1 is out of range");
    expect_err(HEAD WORKERS "groups:\n  - name: g\n    ranks: [4]\n", 14, 13, "rank 4 is out");
}

static void
test_err_dup_rank(void)
{
    expect_err(HEAD WORKERS "groups:\n  - name: g\n    ranks: [1, 3, 1]\n", 14, 19,
               "duplicate rank 1 in group \"g\" (first at line 14, column 13)");
}

static void
test_err_empty_group(void)
{
    expect_err(HEAD WORKERS "groups:\n  - name: g\n    ranks: []\n", 14, 12,
               "group \"g\" is empty");
    expect_err(HEAD WORKERS "groups:\n  - name: g\n", 13, 5, "group is missing \"ranks\"");
}

static void
test_group_name_length(void)
{
    char name[200], y[512];
    cfg_cluster *c;

    memset(name, 'n', 127);
    name[127] = '\0';
    snprintf(y, sizeof(y), HEAD WORKERS "groups:\n  - name: %s\n    ranks: [3]\n", name);
    c = load_ok(y);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->groups[0].name, name);
    cfg_free(c);
    strcat(name, "n");
    snprintf(y, sizeof(y), HEAD WORKERS "groups:\n  - name: %s\n    ranks: [3]\n", name);
    expect_err(y, 13, 11, "128 bytes");
    expect_err(HEAD WORKERS "groups:\n  - {name: '', ranks: [3]}\n", 13, 12, "must not be empty");
}

static void
test_err_group_name_control(void)
{
    expect_err(HEAD WORKERS "groups:\n  - {name: \"a\\x01b\", ranks: [3]}\n", 13, 12,
               "control characters");
    expect_err(HEAD WORKERS "groups:\n  - {name: \"a\\tb\", ranks: [3]}\n", 13, 12, "\"a\\x09b\"");
    expect_err(HEAD WORKERS "groups:\n  - {name: \"a\\0b\", ranks: [3]}\n", 13, 12, "NUL byte");
}

static void
test_err_reserved_group(void)
{
    expect_err(HEAD WORKERS "groups:\n  - {name: hccl_world_group, ranks: [0]}\n", 13, 12,
               "\"hccl_world_group\" is reserved");
}

static void
test_err_bad_url(void)
{
    char y[1024], url[300];

    expect_err("coordinator: {url: http://c:7000}\n" WORKERS, 1, 20,
               "bad \"url\": URL \"http://c:7000\" must start with tcp://");
    expect_err(HEAD "workers:\n  - {name: a, url: tcp://a, data_url: tcp://a:2, ranks: 1}\n", 4, 20,
               "needs host:port");
    expect_err(HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:65536, ranks: 1}\n",
               4, 41, "bad \"data_url\": URL \"tcp://a:65536\" has a bad port");
    expect_err(HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://:1, ranks: 1}\n", 4,
               41, "empty host");
    memset(url, 'h', sizeof(url));
    memcpy(url, "tcp://", 6);
    snprintf(url + 250, sizeof(url) - 250, ":7000"); /* 255 bytes: the longest allowed */
    snprintf(y, sizeof(y), "coordinator: {url: %s}\n" WORKERS, url);
    cfg_free(load_ok(y));
    url[250] = '\0';
    strcat(url, "h:7000"); /* 256 bytes */
    snprintf(y, sizeof(y), "coordinator: {url: %s}\n" WORKERS, url);
    expect_err(y, 1, 20, "256 bytes long; the limit is 255");
}

static void
test_err_missing_field(void)
{
    expect_err(HEAD "workers:\n  - name: a\n    url: tcp://a:1\n    ranks: 1\n", 4, 5,
               "worker is missing \"data_url\"");
    expect_err(WORKERS, 1, 1, "the top level is missing \"coordinator\"");
    expect_err(HEAD, 1, 1, "the top level is missing \"workers\"");
    expect_err("coordinator: {}\n" WORKERS, 1, 14, "coordinator is missing \"url\"");
    expect_err(HEAD "security:\n  tls:\n    cert: a\n    key: b\n" WORKERS, 5, 5,
               "tls is missing \"ca\"");
}

static void
test_err_empty_workers(void)
{
    expect_err(HEAD "workers: []\n", 3, 10, "\"workers\" is empty");
    expect_err(HEAD "workers:\n", 3, 9, "\"workers\" is empty");
}

static void
test_err_world_too_big(void)
{
    expect_err(HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:2, ranks: 65536}\n"
                    "  - {name: b, url: tcp://b:1, data_url: tcp://b:2, ranks: 1}\n",
               5, 5, "brings the world to 65537 ranks; the limit is 65536");
    expect_err(HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:2, ranks: 70000}\n",
               4, 59, "at most 65536");
}

static void
test_err_worker_name(void)
{
    char y[512], name[65];

    expect_err(HEAD "workers:\n  - {name: a b, url: tcp://a:1, data_url: tcp://a:2, ranks: 1}\n", 4,
               12, "bad worker name \"a b\"");
    memset(name, 'w', 64);
    name[64] = '\0';
    snprintf(y, sizeof(y),
             HEAD "workers:\n  - {name: %s, url: tcp://a:1, data_url: tcp://a:2, ranks: 1}\n",
             name);
    expect_err(y, 4, 12, "bad worker name");
    name[63] = '\0';
    snprintf(y, sizeof(y),
             HEAD "workers:\n  - {name: %s, url: tcp://a:1, data_url: tcp://a:2, ranks: 1}\n",
             name);
    cfg_free(load_ok(y));
}

static void
test_err_ranks_value(void)
{
    const char *w = HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:2, ranks: ";
    char y[512];

    snprintf(y, sizeof(y), "%s99999999999999999999}\n", w);
    expect_err(y, 4, 59, "does not fit in 64 bits");
    snprintf(y, sizeof(y), "%s-3}\n", w);
    expect_err(y, 4, 59, "must be at least 1, got -3");
    snprintf(y, sizeof(y), "%s0}\n", w);
    expect_err(y, 4, 59, "must be at least 1, got 0");
    snprintf(y, sizeof(y), "%s007}\n", w);
    expect_err(y, 4, 59, "must be an integer, got \"007\"");
    snprintf(y, sizeof(y), "%s+2}\n", w);
    expect_err(y, 4, 59, "must be an integer, got \"+2\"");
    snprintf(y, sizeof(y), "%s2x}\n", w);
    expect_err(y, 4, 59, "must be an integer, got \"2x\"");
    snprintf(y, sizeof(y), "%s1.5}\n", w);
    expect_err(y, 4, 59, "must be an integer, got \"1.5\"");
    snprintf(y, sizeof(y), "%s-}\n", w);
    expect_err(y, 4, 59, "must be an integer, got \"-\"");
    expect_err(HEAD WORKERS "groups:\n  - name: g\n    ranks: [-99999999999999999999]\n", 14, 13,
               "does not fit in 64 bits");
}

/* keep_awake_us: absent is 0 (off); 0 to 1 s; anything else named with its place */
static void
test_keep_awake(void)
{
    const char *w = HEAD
        "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:2, ranks: 1, keep_awake_us: ";
    char y[512];
    cfg_cluster *c = load_ok(HEAD WORKERS);

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->workers[0].keep_awake_us, 0);
    cfg_free(c);
    snprintf(y, sizeof(y), "%s500}\n  - {name: b, url: tcp://b:1, data_url: tcp://b:2, ranks: 1}\n",
             w);
    c = load_ok(y);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->workers[0].keep_awake_us, 500);
    CU_ASSERT_EQUAL(c->workers[1].keep_awake_us, 0);
    cfg_free(c);
    snprintf(y, sizeof(y), "%s1000000}\n", w);
    c = load_ok(y);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->workers[0].keep_awake_us, 1000000);
    cfg_free(c);
    snprintf(y, sizeof(y), "%s~}\n", w); /* null: off */
    c = load_ok(y);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->workers[0].keep_awake_us, 0);
    cfg_free(c);
    snprintf(y, sizeof(y), "%s1000001}\n", w);
    expect_err(y, 4, 77, "\"keep_awake_us\" must be 0 (off) to 1000000 microseconds, got 1000001");
    snprintf(y, sizeof(y), "%s-1}\n", w);
    expect_err(y, 4, 77, "must be 0 (off) to 1000000 microseconds, got -1");
    snprintf(y, sizeof(y), "%s2ms}\n", w);
    expect_err(y, 4, 77, "must be an integer, got \"2ms\"");
    snprintf(y, sizeof(y), "%s[1]}\n", w);
    expect_err(y, 4, 77, "keep_awake_us");
}

static void
test_err_empty_file(void)
{
    expect_err("", 1, 1, "empty");
    expect_err("# only a comment\n\n", 1, 1, "empty");
}

static void
test_err_two_documents(void)
{
    expect_err(HEAD WORKERS "---\nfoo: 1\n", 12, 1, "second YAML document");
    expect_err(HEAD WORKERS "---\n", 12, 1, "second YAML document");
    expect_err(HEAD WORKERS "---\n[a\n", 14, 1, "YAML syntax error");
}

static void
test_check_group_name(void)
{
    char name[200], err[256];

    memset(name, 'g', sizeof(name));
    CU_ASSERT_EQUAL(cfg_check_group_name(name, 127, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg_check_group_name(name, 128, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "128 bytes"));
    CU_ASSERT_EQUAL(cfg_check_group_name("", 0, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "empty"));
    CU_ASSERT_EQUAL(cfg_check_group_name("\x01", 1, err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "control"));
    CU_ASSERT_EQUAL(cfg_check_group_name("a\x7f", 2, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(cfg_check_group_name("a\xc2\x85", 3, err, sizeof(err)), -1);
    CU_ASSERT_EQUAL(cfg_check_group_name("\xc3\xbc ok", 5, NULL, 0), 0);
    CU_ASSERT_EQUAL(cfg_check_group_name("a\0b", 3, NULL, 0), -1);
}

static void
test_check_worker_name(void)
{
    CU_ASSERT_EQUAL(cfg_check_worker_name("node-a.b_9"), 0);
    CU_ASSERT_EQUAL(cfg_check_worker_name(""), -1);
    CU_ASSERT_EQUAL(cfg_check_worker_name("a/b"), -1);
    CU_ASSERT_EQUAL(cfg_check_worker_name(NULL), -1);
}

static void
test_check_url(void)
{
    static const char *const good[] = {"tcp://h:1",
                                       "tcp://127.0.0.1:7000",
                                       "tcp://h:0",
                                       "tcp://h:65535",
                                       "tls+tcp://a.b-c_d:443",
                                       "tcp://[::1]:7",
                                       "ipc:///tmp/a2a.sock",
                                       "inproc://x",
                                       NULL};
    static const char *const bad[] = {
        "",           "http://h:1", "tcp://h",        "tcp://h:",    "tcp://:1",    "tcp://h:65536",
        "tcp://h:1x", "tcp://h:-1", "tcp://h:123456", "tcp://a:b:1", "tcp://h:1/x", "tcp://[::1:7",
        "tcp://[]:7", "ipc://",     "inproc://",      "tcp://h :1",  "TCP://h:1",   "tcp://h:1\n",
        NULL};
    char err[512];
    size_t i;

    for (i = 0; good[i] != NULL; i++) {
        int r = cfg_check_url(good[i], err, sizeof(err));

        CU_ASSERT_EQUAL(r, 0);
        if (r != 0)
            fprintf(stderr, "\n  %s: %s\n", good[i], err);
    }
    for (i = 0; bad[i] != NULL; i++) {
        err[0] = '\0';
        CU_ASSERT_EQUAL(cfg_check_url(bad[i], err, sizeof(err)), -1);
        CU_ASSERT(err[0] != '\0');
    }
    CU_ASSERT_EQUAL(cfg_check_url(NULL, NULL, 0), -1);
    CU_ASSERT_EQUAL(cfg_check_url("tcp://h:99999", err, sizeof(err)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "\"tcp://h:99999\""));
}

static void
test_bad_args(void)
{
    cfg_cluster *c = (cfg_cluster *)&c;

    CU_ASSERT_EQUAL(cfg_load_string(NULL, "x", "", 0, NULL, 0), A2A_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(cfg_load_string(&c, "x", NULL, 5, NULL, 0), A2A_ERR_INVALID_ARGUMENT);
    c = (cfg_cluster *)&c;
    CU_ASSERT_EQUAL(cfg_load_string(&c, NULL, HEAD, strlen(HEAD), NULL, 0),
                    A2A_ERR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_EQUAL(cfg_load_string(&c, NULL, HEAD, strlen(HEAD), errbuf, 8),
                    A2A_ERR_INVALID_ARGUMENT);
    CU_ASSERT_EQUAL(strlen(errbuf), 7);
    CU_ASSERT_PTR_NULL(cfg_find_worker(NULL, "a"));
    CU_ASSERT_PTR_NULL(cfg_worker_of_rank(NULL, 0));
    CU_ASSERT_PTR_NULL(cfg_find_group(NULL, "a"));
}

/* socket: optional, an absolute path of at most 107 bytes */
static void
test_socket(void)
{
    cfg_cluster *c = NULL;
    char err[512], yaml[1024], longp[200];
    const char *w = HEAD "workers:\n  - {name: a, url: tcp://a:1, data_url: tcp://a:2, ranks: 1, "
                         "socket: %s}\n";

    snprintf(yaml, sizeof(yaml), w, "/run/a2a/a.sock");
    CU_ASSERT_EQUAL_FATAL(cfg_load_string(&c, "t.yaml", yaml, strlen(yaml), err, sizeof(err)),
                          A2A_OK);
    CU_ASSERT_STRING_EQUAL(c->workers[0].socket, "/run/a2a/a.sock");
    cfg_free(c);
    c = NULL;
    snprintf(yaml, sizeof(yaml), "%s", HEAD WORKERS);
    CU_ASSERT_EQUAL_FATAL(cfg_load_string(&c, "t.yaml", yaml, strlen(yaml), err, sizeof(err)),
                          A2A_OK);
    CU_ASSERT_STRING_EQUAL(c->workers[0].socket, ""); /* absent */
    cfg_free(c);
    snprintf(yaml, sizeof(yaml), w, "run/a.sock");
    expect_err(yaml, 4, 70, "must be an absolute path");
    memset(longp, 'x', sizeof(longp));
    longp[0] = '/';
    longp[108] = '\0';
    snprintf(yaml, sizeof(yaml), w, longp);
    expect_err(yaml, 4, 70, "the limit is 107");
}

static const struct {
    const char *name;
    CU_TestFunc fn;
} tests[] = {
    {"good_minimal", test_good_minimal},
    {"good_full", test_good_full},
    {"null_sections", test_null_sections},
    {"journal_key", test_journal_key},
    {"sample_cluster", test_sample_cluster},
    {"missing_file", test_missing_file},
    {"err_syntax", test_err_syntax},
    {"err_unknown_key", test_err_unknown_key},
    {"err_wrong_type", test_err_wrong_type},
    {"err_dup_worker", test_err_dup_worker},
    {"err_dup_group", test_err_dup_group},
    {"err_dup_key", test_err_dup_key},
    {"err_rank_range", test_err_rank_range},
    {"err_dup_rank", test_err_dup_rank},
    {"err_empty_group", test_err_empty_group},
    {"group_name_length", test_group_name_length},
    {"err_group_name_control", test_err_group_name_control},
    {"err_reserved_group", test_err_reserved_group},
    {"err_bad_url", test_err_bad_url},
    {"err_missing_field", test_err_missing_field},
    {"err_empty_workers", test_err_empty_workers},
    {"err_world_too_big", test_err_world_too_big},
    {"err_worker_name", test_err_worker_name},
    {"err_ranks_value", test_err_ranks_value},
    {"keep_awake", test_keep_awake},
    {"err_empty_file", test_err_empty_file},
    {"err_two_documents", test_err_two_documents},
    {"check_group_name", test_check_group_name},
    {"check_worker_name", test_check_worker_name},
    {"check_url", test_check_url},
    {"bad_args", test_bad_args},
    {"socket", test_socket},
};

int
main(void)
{
    CU_pSuite s;
    unsigned fails;
    size_t i;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    if ((s = CU_add_suite("config", NULL, NULL)) == NULL)
        goto fail;
    for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
            goto fail;
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails != 0;
fail:
    CU_cleanup_registry();
    return 2;
}
