#!/usr/bin/env bash
# Downloads Debian packages of one architecture and unpacks them into a folder, without
# installing them or touching the machine's apt configuration (a private apt state under
# build/wheel/apt-<arch>). Used to build and check the wheels of other architectures.
#   scripts/fetch-debs.sh arm64 DEST libssl-dev libssl3 ...
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
debarch=$1 dest=$2
shift 2
state="$root/build/wheel/apt-$debarch"
apt=(apt-get -q -o "APT::Architecture=$debarch" -o "APT::Architectures=$debarch"
  -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o "Dir::State::status=/dev/null")
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$dest/debs"
if [ -z "$(find "$state/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null)" ]; then
  "${apt[@]}" update >"$state/update.log" 2>&1 || { cat "$state/update.log"; exit 1; }
fi
(cd "$dest/debs" && "${apt[@]}" download "${@/%/:$debarch}") >"$state/download.log" 2>&1 \
  || { cat "$state/download.log"; exit 1; }
for deb in "$dest"/debs/*.deb; do dpkg-deb -x "$deb" "$dest/root"; done
