/* cu_main.h - the main of every CUnit suite in tests/unit/. */
#ifndef A2A_TESTS_CU_MAIN_H
#define A2A_TESTS_CU_MAIN_H

#include <CUnit/Basic.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    const char *name;
    CU_TestFunc fn;
} cu_test;

/*
 * cu_main runs tests[0..n) as the suite called suite, verbosely; with
 * arguments, only the tests whose names contain one of them. Returns the
 * exit status: 0 when every assertion held.
 */
static inline int
cu_main(const char *suite, const cu_test *tests, size_t n, int argc, char **argv)
{
    CU_pSuite s;
    int failures;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    if ((s = CU_add_suite(suite, NULL, NULL)) == NULL) {
        CU_cleanup_registry();
        return 2;
    }
    for (size_t i = 0; i < n; i++) {
        int wanted = argc < 2;
        for (int a = 1; a < argc && !wanted; a++)
            wanted = strstr(tests[i].name, argv[a]) != NULL;
        if (wanted && CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            CU_cleanup_registry();
            return 2;
        }
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (CU_basic_run_tests() != CUE_SUCCESS) {
        CU_cleanup_registry();
        return 2;
    }
    failures = (int)CU_get_number_of_failures();
    CU_cleanup_registry();
    return failures != 0;
}

#endif
