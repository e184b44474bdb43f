#!/usr/bin/env bash
# pure_includes.sh - the engine's pure modules include nothing of worker/ but their own
# headers (each other's: op.h builds on group.h): only a2a.h, common/ and system headers
# (issue 9: the state machines are testable without sockets, threads or the engine).
#
# usage: pure_includes.sh [--also PREFIX] SOURCE_DIR MODULE...   (MODULE: worker/group, ...)
#   --also server/: headers under PREFIX are allowed too (liba2a, worker/lib/, carries
#   common/ and server/, and includes nothing else of worker/). A module may have no .h.
set -u
also=""
if [ "${1:-}" = --also ]; then
    also=$2
    shift 2
fi
root=$1
shift
rc=0
pure=" "
for m in "$@"; do pure+="$(basename "$m").h "; done
for m in "$@"; do
    for f in "$root/$m.c" "$root/$m.h"; do
        [ -f "$f" ] || [[ "$f" == *.h && -f "${f%.h}.c" ]] || { echo "FAIL: $f is missing"; rc=1; }
        [ -f "$f" ] || continue
        while IFS= read -r inc; do
            name=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]+)[">].*/\1/' <<<"$inc")
            case "$name" in
            a2a.h | common/*.h) ;;
            *.h) [[ "$inc" == *'<'* || "$pure" == *" $name "* || (-n "$also" && "$name" == "$also"*) ]] ||
                { echo "FAIL: $f includes \"$name\""; rc=1; } ;;
            esac
        done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$f")
    done
done
[ $rc -eq 0 ] && echo "pure: $* include only their own headers, a2a.h and common/${also:+ and $also}"
exit $rc
