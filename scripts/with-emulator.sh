#!/usr/bin/env bash
# Runs a command with MSSQL_CDC_TEST_CONNSTR pointing at a SQL Server: the emulator, started
# here on a free port and stopped afterwards, or the real server in MSSQL_CDC_TEST_SERVER.
#   scripts/with-emulator.sh ctest --test-dir build/native
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${MSSQL_CDC_TEST_SERVER:-}" ]; then
  export MSSQL_CDC_TEST_CONNSTR="$MSSQL_CDC_TEST_SERVER"
  exec "$@"
fi
python="${MSSQL_CDC_VENV:-$root/.venv}/bin/python"
password="With-Emulator-$$-Pw!"
mkdir -p "$root/build"
fifo=$(mktemp -u)
mkfifo "$fifo"
"$python" -m mssql_cdc.emulator --port 0 --password "$password" >"$fifo" 2>"$root/build/emulator.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$fifo"' EXIT
read -r word address <"$fifo" || true
if [ "$word" != "ready" ]; then
  echo "with-emulator: the emulator did not start; see build/emulator.log" >&2
  exit 1
fi
export MSSQL_CDC_TEST_CONNSTR="Server=tcp:${address%:*},${address##*:};UID=sa;PWD={$password}"
"$@"
