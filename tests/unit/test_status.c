/* test_status.c - the status and dtype tables: names, messages, sizes, look-ups. */
#include "cu_main.h"
#include <CUnit/Basic.h>
#include <string.h>

#include "common/dtype.h"
#include "common/status.h"

static void
test_status_names_distinct(void)
{
    for (int i = 0; i < A2A_STATUS_COUNT; i++) {
        const char *ni = a2a_status_name((a2a_status)i);
        const char *mi = status_message((a2a_status)i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ni);
        CU_ASSERT_PTR_NOT_NULL_FATAL(mi);
        CU_ASSERT(strlen(ni) > 0);
        CU_ASSERT(strlen(mi) > 0);
        CU_ASSERT_STRING_NOT_EQUAL(ni, "UNKNOWN_STATUS");
        for (int j = 0; j < i; j++) {
            CU_ASSERT_STRING_NOT_EQUAL(ni, a2a_status_name((a2a_status)j));
            CU_ASSERT_STRING_NOT_EQUAL(mi, status_message((a2a_status)j));
        }
    }
}

static void
test_status_known_names(void)
{
    CU_ASSERT_STRING_EQUAL(a2a_status_name(A2A_OK), "OK");
    CU_ASSERT_STRING_EQUAL(a2a_status_name(A2A_ERR_INVALID_ARGUMENT), "INVALID_ARGUMENT");
    CU_ASSERT_STRING_EQUAL(a2a_status_name(A2A_ERR_NOT_FOUND), "NOT_FOUND");
    CU_ASSERT_STRING_EQUAL(a2a_status_name(A2A_ERR_COUNT_MISMATCH), "COUNT_MISMATCH");
    CU_ASSERT_STRING_EQUAL(a2a_status_name(A2A_ERR_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
    CU_ASSERT_STRING_EQUAL(a2a_status_name(A2A_ERR_UNAVAILABLE), "UNAVAILABLE");
    CU_ASSERT_STRING_EQUAL(a2a_status_name(A2A_ERR_INTERNAL), "INTERNAL");
    CU_ASSERT_EQUAL(A2A_ERR_INTERNAL, A2A_STATUS_COUNT - 1);
}

static void
test_status_out_of_range(void)
{
    CU_ASSERT_STRING_EQUAL(a2a_status_name((a2a_status)A2A_STATUS_COUNT), "UNKNOWN_STATUS");
    CU_ASSERT_STRING_EQUAL(a2a_status_name((a2a_status)1000), "UNKNOWN_STATUS");
    CU_ASSERT_STRING_EQUAL(a2a_status_name((a2a_status)-1), "UNKNOWN_STATUS");
    CU_ASSERT_PTR_NOT_NULL(status_message((a2a_status)A2A_STATUS_COUNT));
    CU_ASSERT_PTR_NOT_NULL(status_message((a2a_status)-1));
    CU_ASSERT_FALSE(status_valid(-1));
    CU_ASSERT_FALSE(status_valid(A2A_STATUS_COUNT));
    CU_ASSERT_FALSE(status_valid(INT64_MAX));
    CU_ASSERT_FALSE(status_valid(INT64_MIN));
    for (int i = 0; i < A2A_STATUS_COUNT; i++)
        CU_ASSERT_TRUE(status_valid(i));
}

static void
test_status_from_name(void)
{
    for (int i = 0; i < A2A_STATUS_COUNT; i++)
        CU_ASSERT_EQUAL(status_from_name(a2a_status_name((a2a_status)i)), i);
    CU_ASSERT_EQUAL(status_from_name("UNKNOWN_STATUS"), -1);
    CU_ASSERT_EQUAL(status_from_name(""), -1);
    CU_ASSERT_EQUAL(status_from_name("ok"), -1);
    CU_ASSERT_EQUAL(status_from_name("NOT_FOUND "), -1);
}

static const struct {
    a2a_dtype dtype;
    const char *name;
    size_t size;
} dtype_expect[] = {
    {A2A_INT8, "int8", 1},       {A2A_UINT8, "uint8", 1},     {A2A_INT16, "int16", 2},
    {A2A_UINT16, "uint16", 2},   {A2A_INT32, "int32", 4},     {A2A_UINT32, "uint32", 4},
    {A2A_INT64, "int64", 8},     {A2A_UINT64, "uint64", 8},   {A2A_FLOAT16, "float16", 2},
    {A2A_FLOAT32, "float32", 4}, {A2A_FLOAT64, "float64", 8}, {A2A_BFLOAT16, "bfloat16", 2},
};

static void
test_dtype_table(void)
{
    size_t n = sizeof(dtype_expect) / sizeof(dtype_expect[0]);
    CU_ASSERT_EQUAL(n, A2A_DTYPE_COUNT);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(a2a_dtype_size(dtype_expect[i].dtype), dtype_expect[i].size);
        CU_ASSERT_STRING_EQUAL(dtype_name(dtype_expect[i].dtype), dtype_expect[i].name);
        CU_ASSERT_TRUE(dtype_valid(dtype_expect[i].dtype));
    }
}

static void
test_dtype_from_name(void)
{
    for (int i = 0; i < A2A_DTYPE_COUNT; i++) {
        CU_ASSERT_EQUAL(dtype_from_name(dtype_name((a2a_dtype)i)), i);
        for (int j = 0; j < i; j++)
            CU_ASSERT_STRING_NOT_EQUAL(dtype_name((a2a_dtype)i), dtype_name((a2a_dtype)j));
    }
    CU_ASSERT_EQUAL(dtype_from_name("invalid"), -1);
    CU_ASSERT_EQUAL(dtype_from_name(""), -1);
    CU_ASSERT_EQUAL(dtype_from_name("FLOAT32"), -1);
    CU_ASSERT_EQUAL(dtype_from_name("float128"), -1);
}

static void
test_dtype_invalid(void)
{
    CU_ASSERT_EQUAL(a2a_dtype_size((a2a_dtype)A2A_DTYPE_COUNT), 0);
    CU_ASSERT_EQUAL(a2a_dtype_size((a2a_dtype)-1), 0);
    CU_ASSERT_EQUAL(a2a_dtype_size((a2a_dtype)1000), 0);
    CU_ASSERT_STRING_EQUAL(dtype_name((a2a_dtype)A2A_DTYPE_COUNT), "invalid");
    CU_ASSERT_STRING_EQUAL(dtype_name((a2a_dtype)-1), "invalid");
    CU_ASSERT_FALSE(dtype_valid(-1));
    CU_ASSERT_FALSE(dtype_valid(A2A_DTYPE_COUNT));
    CU_ASSERT_FALSE(dtype_valid(INT64_MAX));
}

int
main(int argc, char **argv)
{
    static const cu_test tests[] = {
        {"status names distinct", test_status_names_distinct},
        {"status known names", test_status_known_names},
        {"status out of range", test_status_out_of_range},
        {"status from name", test_status_from_name},
        {"dtype table", test_dtype_table},
        {"dtype from name", test_dtype_from_name},
        {"dtype invalid", test_dtype_invalid},
    };
    return cu_main("status", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
