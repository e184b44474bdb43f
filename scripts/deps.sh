#!/usr/bin/env bash
# deps.sh - installs the Debian packages a2a needs that are not installed yet.
#
# usage: scripts/deps.sh [--build | --all]
#
#   --build  what building and running a2a needs (the demo)
#   --all    that, plus what the whole test suite needs (the default)
#
# Packages are detected with dpkg-query; only the missing ones are installed,
# with apt-get (directly as root, else through sudo), after one `apt-get
# update`. Prints nothing and changes nothing when all are present.
set -euo pipefail

# python3-dev: the Python package (python/); python3-setuptools, python3-wheel: pip install ./python
BUILD_PKGS=(build-essential cmake pkg-config libnng-dev libmsgpack-dev libyaml-dev libcunit1-dev
    libmbedtls-dev python3-dev python3-numpy python3-pip python3-setuptools python3-wheel)
# clang + libclang-rt: fuzz targets; valgrind, clang-format: test stages;
# iproute2: network-namespace tests; python3: the integration tests' JSON checks;
# git: the style stage lists tracked files; openssl: certificates for the TLS
# tests; docker-compose: validates docker/docker-compose.yml (no engine needed);
# python3-pytest, python3-torch: the Python package's tests (python/tests); python3-cffi:
# python/benchmarks/bench.py measures the cffi binding beside the extension; cython3: for a
# Cython binding, not measured yet.
TEST_PKGS=(clang libclang-rt-14-dev valgrind clang-format iproute2 python3 git openssl
    docker-compose python3-pytest python3-torch python3-cffi cython3)

case "${1:---all}" in
--build) want=("${BUILD_PKGS[@]}") ;;
--all) want=("${BUILD_PKGS[@]}" "${TEST_PKGS[@]}") ;;
-h | --help)
    sed -n '2,11s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
*)
    echo "usage: $0 [--build | --all]" >&2
    exit 2
    ;;
esac

missing=()
for pkg in "${want[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$pkg")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

echo "deps: installing missing Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    # No terminal to ask for a password on (CI): never prompt, fail instead.
    if [ -t 0 ]; then as_root=(sudo); else as_root=(sudo -n); fi
else
    echo "deps: missing packages (${missing[*]}) and not root, and sudo is not installed;" >&2
    echo "deps: as root, run: apt-get install ${missing[*]}" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
