#!/usr/bin/env bash
# test_install.sh BUILD_DIR SOURCE_DIR: `cmake --install` gives a prefix from which
# a job builds against liba2a with pkg-config and with find_package(a2a), and
# the installed tools run.
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # check NAME CMD...
    local name=$1
    shift
    if "$@" >"$tmp/out" 2>&1; then
        echo "ok: $name"
        pass=$((pass + 1))
    else
        echo "FAILED: $name"
        sed 's/^/    /' "$tmp/out" | tail -20
        fail=$((fail + 1))
    fi
}

check "cmake --install" cmake --install "$build" --prefix "$tmp/prefix"
for f in bin/a2a-coordinator bin/a2a-worker bin/a2a-ctl bin/a2a-launch bin/a2a-demo bin/a2a-bench \
    include/a2a.h; do
    check "installed $f" test -e "$tmp/prefix/$f"
done
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -1)
check "liba2a.so installed" test -e "$libdir/liba2a.so"
check "liba2a.a installed" test -e "$libdir/liba2a.a"
check "liba2a exports only a2a_*" bash -c \
    "! nm -D --defined-only '$libdir/liba2a.so' | awk '{print \$3}' | grep -v '^a2a_' | grep -v '^$' | grep -q ."

cat >"$tmp/job.c" <<'C'
#include <a2a.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    a2a_job *job = NULL;
    a2a_status st = a2a_job_open(&job, "tcp://127.0.0.1:1", 0);
    printf("%s %zu\n", a2a_status_name(st), a2a_dtype_size(A2A_BFLOAT16));
    return st == A2A_ERR_UNAVAILABLE && job == NULL && strlen(a2a_job_error(NULL)) > 0 ? 0 : 1;
}
C
export PKG_CONFIG_PATH="$libdir/pkgconfig"
check "pkg-config --cflags --libs a2a" pkg-config --cflags --libs a2a
check "build a job with pkg-config" bash -c \
    "cc -o '$tmp/job_pc' '$tmp/job.c' \$(pkg-config --cflags --libs a2a) -Wl,-rpath,'$libdir'"
check "the job runs (UNAVAILABLE for a missing worker)" "$tmp/job_pc"
check "build a job against the static liba2a" bash -c \
    "cc -o '$tmp/job_static' '$tmp/job.c' -I'$tmp/prefix/include' '$libdir/liba2a.a' \$(pkg-config --libs-only-l --static a2a | sed 's/-la2a//')"
check "the static job runs" "$tmp/job_static"

mkdir -p "$tmp/consumer"
cp "$tmp/job.c" "$tmp/consumer/"
cat >"$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(a2a REQUIRED)
add_executable(job job.c)
target_link_libraries(job PRIVATE a2a::a2a)
CM
check "find_package(a2a) configures" cmake -S "$tmp/consumer" -B "$tmp/consumer/build" \
    -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_RPATH="$libdir"
check "find_package(a2a) builds" cmake --build "$tmp/consumer/build"
check "the CMake-built job runs" "$tmp/consumer/build/job"
check "a2a-ctl --help" "$tmp/prefix/bin/a2a-ctl" --help
check "a2a-launch --help" "$tmp/prefix/bin/a2a-launch" --help
if [ -f "$build/man/man1/a2a-launch.1" ]; then # not in sanitizer builds
    for t in a2a-coordinator a2a-worker a2a-ctl a2a-launch a2a-demo a2a-bench; do
        check "man page $t.1 installed" grep -q "^\.SH SYNOPSIS" "$tmp/prefix/share/man/man1/$t.1"
    done
    check "man a2a-launch reads its --help" bash -c \
        "man -l '$tmp/prefix/share/man/man1/a2a-launch.1' 2>/dev/null | grep -q -- '-np' ||
         grep -q -- '-np' '$tmp/prefix/share/man/man1/a2a-launch.1'"
fi
: "$src"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
