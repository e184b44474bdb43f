#!/bin/sh
# help2man.sh BINARY NAME SUMMARY OUT: OUT is the man page of NAME, made from
# `BINARY --help` and `BINARY --version` (the one source of both): NAME and
# SUMMARY, the usage lines as SYNOPSIS, the rest verbatim as DESCRIPTION.
set -eu
bin=$1 name=$2 summary=$3 out=$4
version=$("$bin" --version)
"$bin" --help | awk -v name="$name" -v summary="$summary" -v version="$version" '
    function esc(s) { gsub(/\\/, "\\e", s); if (s ~ /^[.\047]/) s = "\\&" s; return s }
    BEGIN {
        printf(".TH %s 1 \"\" \"%s\" \"a2a manual\"\n", toupper(name), version)
        printf(".SH NAME\n%s \\- %s\n.SH SYNOPSIS\n.nf\n", name, summary)
        state = "usage"
    }
    state == "usage" && /^$/ { printf(".fi\n.SH DESCRIPTION\n.nf\n"); state = "body"; next }
    state == "usage" { sub(/^usage: /, ""); print esc($0); next }
    { print esc($0) }
    END {
        if (state == "usage") printf(".fi\n.SH DESCRIPTION\n.nf\n")
        printf(".fi\n.SH SEE ALSO\nThe README.md of the a2a sources; every a2a tool has --help and --version.\n")
    }' >"$out.tmp"
mv "$out.tmp" "$out"
