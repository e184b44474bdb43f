#!/usr/bin/env bash
# test_install.sh BUILD_DIR SOURCE_DIR PYTHON: the Python package installs as its users do it
# and runs the seed's example on a local cluster from there:
#  - `cmake --install --prefix ~/.local` (HOME a temporary folder): the user site, found with
#    no PYTHONPATH, the extension finding the installed liba2a by its RPATH;
#  - `pip install ./python` into a venv with the system's packages (numpy found, no index).
set -euo pipefail
build=$1
src=$2
py=$3
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
mkdir -p "$tmp/home"
export HOME=$tmp/home
cd "$tmp"
check "cmake --install --prefix ~/.local" cmake --install "$build" --prefix "$HOME/.local"
check "import a2a from the user site" env -u PYTHONPATH "$py" -c "
import a2a, a2a._core, sys
assert a2a.__file__.startswith('$HOME/.local/lib/'), a2a.__file__
print(a2a.__file__)"
check "the seed's example from the installed prefix" env -u PYTHONPATH -u LD_LIBRARY_PATH \
    timeout 60 "$HOME/.local/bin/a2a-launch" -n 2 -- "$py" "$src/examples/seed_all_to_all_v.py"
grep -q "verified" "$tmp/out" || { echo "FAILED: no verified line"; fail=$((fail + 1)); }

check "venv --system-site-packages" "$py" -m venv --system-site-packages "$tmp/venv"
# in-tree build (python/build, python/a2a.egg-info: ignored by git) against BUILD_DIR's liba2a
check "pip install ./python" env A2A_BUILD_DIR="$build" "$tmp/venv/bin/pip" install \
    --no-index "$src/python"
check "import a2a from the venv" env -u PYTHONPATH "$tmp/venv/bin/python" -c "
import a2a, inspect
assert a2a.__file__.startswith('$tmp/venv/'), a2a.__file__
assert 'all_to_all_v(send_data, send_counts, send_displacements, recv_counts, recv_displacements, group=\"hccl_world_group\")' in a2a.all_to_all_v.__doc__
print(inspect.signature(a2a.all_to_all_v))"
check "the seed's example from the venv" env -u PYTHONPATH timeout 60 \
    "$build/bin/a2a-launch" -n 2 -- "$tmp/venv/bin/python" "$src/examples/seed_all_to_all_v.py"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
