#!/usr/bin/env bash
# Checks what `make wheel` left in dist/ as a user's node would get it (make wheel-check):
#   1. the wheel of this machine's architecture installs into a fresh venv with no C compiler
#      on PATH (binary packages only), imports, and connects over TLS to the emulator and runs a
#      query through mssql_cdc._native (the node's OpenSSL 3, not a bundled one); once for each
#      CPython found of CHECK_PYTHONS (default python3.10 to python3.13: the one abi3 binary);
#   2. the aarch64 wheel (on an x86_64 machine): the same check under qemu-user with Debian 12's
#      arm64 CPython 3.11 and OpenSSL 3 (packages unpacked under build/wheel-check, not
#      installed), pyarrow's aarch64 wheel as its dependency;
#   3. the sdist builds and installs in another fresh venv (pip install, its own build
#      isolation, warnings not errors) and passes the same check.
# The emulator runs natively from the project's .venv (scripts/with-emulator.sh).
#   scripts/check-wheel.sh                  all three
#   CHECK_AARCH64=0 CHECK_SDIST=0 scripts/check-wheel.sh   the native wheel only
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
python="${PYTHON:-python3}"
work="$root/build/wheel-check"
log() { printf 'wheel-check: %s\n' "$*" >&2; }
arch=$(uname -m)
wheel=$(ls dist/mssql_cdc-*-cp310-abi3-manylinux*_"$arch".whl 2>/dev/null | head -n 1)
sdist=$(ls dist/mssql_cdc-*.tar.gz 2>/dev/null | head -n 1)
if [ -z "$wheel" ] || [ -z "$sdist" ]; then
  log "no wheel for $arch or no sdist in dist/: run make wheel first"
  exit 1
fi
rm -rf "$work"
mkdir -p "$work/bin"

# A PATH without compilers: every command of the current PATH except C/C++ compilers, zig and
# the build tools a source build would reach for.
IFS=: read -r -a path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
  [ -d "$dir" ] || continue
  for cmd in "$dir"/*; do
    name=$(basename "$cmd")
    case $name in
      cc | c++ | c89 | c99 | gcc* | g++* | cpp* | clang* | *-gcc* | *-g++* | zig* | tcc | \
        cmake* | ninja | make | ld | ld.* | *-ld | as) continue ;;
    esac
    [ -x "$cmd" ] && [ ! -e "$work/bin/$name" ] && ln -s "$cmd" "$work/bin/$name"
  done
done

# The check itself, run by the fresh venv's Python: a TLS login and a query.
cat >"$work/check.py" <<'PY'
import os, platform
import mssql_cdc
from mssql_cdc import _native
machine = platform.machine()
assert machine == os.environ.get("CHECK_MACHINE", machine), f"running on {machine}"
print(f"{machine}: imported {_native.__file__} (C library {_native.version()}, {_native.tls_library_version()})")
connstr = os.environ["MSSQL_CDC_TEST_CONNSTR"] + ";Encrypt=yes;TrustServerCertificate=yes"
with _native.connect(connstr) as conn:
    table = __import__("pyarrow").RecordBatchReader.from_stream(
        conn.execute("SELECT 42 AS answer, N'abi3' AS tag")
    ).read_all()
    assert table.to_pylist() == [{"answer": 42, "tag": "abi3"}], table.to_pylist()
    lsn = conn.scalar("SELECT sys.fn_cdc_increment_lsn(0x00000000000000000001)")
    assert mssql_cdc.Lsn(lsn) == mssql_cdc.Lsn("0x00000000000000000002"), lsn
    print(f"query ok against {conn.server_version}: {table.to_pylist()}")
PY

install_and_check() { # name, python, pip arguments...
  local name=$1 venv="$work/$1" base=$2
  shift 2
  local start=$SECONDS
  "$base" -m venv "$venv"
  # constraints.txt pins the dependencies for the project's own Python (pyarrow's pin may have
  # no wheel for another one): other CPythons take the newest binary releases pip finds.
  local constraints=()
  if [ "$("$base" -c 'import sys; print(sys.version_info[:2])')" = \
    "$("$python" -c 'import sys; print(sys.version_info[:2])')" ]; then
    constraints=(-c constraints.txt)
  fi
  env -u CC -u CXX PATH="$venv/bin:$work/bin" "$venv/bin/python" -m pip install \
    --disable-pip-version-check -q "${constraints[@]}" "$@" >"$work/$name.log" 2>&1 \
    || { log "$name: pip install failed:"; cat "$work/$name.log"; exit 1; }
  log "$name: installed in $((SECONDS - start)) s ($("$venv/bin/python" -V))"
  env -u CC -u CXX PATH="$venv/bin:$work/bin" scripts/with-emulator.sh \
    "$venv/bin/python" "$work/check.py"
}

start=$SECONDS
if PATH="$work/bin" command -v cc gcc clang zig >/dev/null 2>&1; then
  log "a compiler is still on the stripped PATH"
  exit 1
fi
# --only-binary: nothing of the wheel's dependencies (pyarrow, tzdata, tzlocal) is built either.
# An interpreter by name: on PATH, or one of pyenv's versions (its shims answer only for the
# selected version).
find_python() {
  local name=$1 candidate
  if command -v "$name" >/dev/null 2>&1 && "$name" -c '' 2>/dev/null; then
    echo "$name"
    return
  fi
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"${name#python}".*/bin/"$name"; do
    [ -x "$candidate" ] && "$candidate" -c '' 2>/dev/null && { echo "$candidate"; return; }
  done
}

checked=0
for name in ${CHECK_PYTHONS:-python3.10 python3.11 python3.12 python3.13}; do
  base=$(find_python "$name")
  [ -n "$base" ] || { log "$name: not found, skipped"; continue; }
  install_and_check "wheel-$("$base" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')" \
    "$base" --only-binary=:all: "$wheel"
  checked=$((checked + 1))
done
if [ "$checked" = 0 ]; then
  install_and_check wheel "$python" --only-binary=:all: "$wheel"
fi
aarch64_wheel=$(ls dist/mssql_cdc-*-cp310-abi3-manylinux*_aarch64.whl 2>/dev/null | head -n 1)
if [ "${CHECK_AARCH64:-1}" != 0 ] && [ "$arch" = x86_64 ] && [ -n "$aarch64_wheel" ]; then
  qemu_start=$SECONDS
  sysroot="$work/arm64"
  scripts/fetch-debs.sh arm64 "$sysroot" libc6 python3.11-minimal libpython3.11-minimal \
    libpython3.11-stdlib zlib1g libexpat1 libssl3 libffi8 libstdc++6 libgcc-s1 libbz2-1.0 \
    liblzma5 libuuid1
  scripts/fetch-debs.sh amd64 "$work/qemu" qemu-user-static
  "$python" -m pip install --disable-pip-version-check -q --target "$work/arm64-site" \
    --platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64 --python-version 3.11 \
    --implementation cp --only-binary=:all: -c constraints.txt "$aarch64_wheel" \
    >"$work/arm64-site.log" 2>&1 || { cat "$work/arm64-site.log"; exit 1; }
  log "aarch64: sysroot, qemu and packages ready in $((SECONDS - qemu_start)) s"
  scripts/with-emulator.sh env PYTHONPATH="$work/arm64-site" CHECK_MACHINE=aarch64 \
    "$work/qemu/root/usr/bin/qemu-aarch64-static" -L "$sysroot/root" \
    "$sysroot/root/usr/bin/python3.11" "$work/check.py"
  log "aarch64: checked under qemu in $((SECONDS - qemu_start)) s"
fi
if [ "${CHECK_SDIST:-1}" != 0 ]; then
  # The sdist needs a compiler, cmake and OpenSSL's headers: the machine's own PATH here.
  sdist_start=$SECONDS
  "$python" -m venv "$work/sdist"
  "$work/sdist/bin/python" -m pip install --disable-pip-version-check -q -c constraints.txt \
    "$sdist" >"$work/sdist.log" 2>&1 || { cat "$work/sdist.log"; exit 1; }
  log "sdist: built and installed in $((SECONDS - sdist_start)) s"
  scripts/with-emulator.sh "$work/sdist/bin/python" "$work/check.py"
fi
log "passed in $((SECONDS - start)) s"
