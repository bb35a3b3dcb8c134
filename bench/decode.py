"""Decode speed: clients reading the same recorded CDC change result from a replay server.

A result of change rows shaped like ``cdc.fn_cdc_get_all_changes_Sales_Customer`` (12 columns:
__$start_lsn, __$seqval, __$operation, __$update_mask, __$command_id, CustomerID, PersonID,
StoreID, TerritoryID, AccountNumber, rowguid, ModifiedDate) is encoded once by the emulator's
own encoders, cached under build/bench, and served from memory by the emulator's replay mode
(mssql_cdc.emulator.replay), so the server is not the bottleneck. Each client reads it whole;
the floor is a memcpy of the same TDS bytes. An nvarchar-heavy shape is reported separately.

    .venv/bin/python bench/decode.py [--rows 1000000] [--repeat 3] [--clients native,pytds,...]
    .venv/bin/python bench/decode.py --rss --rows 10000000     # peak RSS of the native client

Prints a table and exits 0. Not a test: numbers on shared machines are noise; compare ratios.
Each client reads on the calling thread, so besides wall seconds the table shows that thread's
CPU seconds (time.thread_time: the client's own work, without the replay server's thread or the
waits for a core on a loaded machine), and both as ratios to the native client.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import resource
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from mssql_cdc import _native
from mssql_cdc.emulator.core.results import BatchOutcome, result_set
from mssql_cdc.emulator.protocol.types import scalar
from mssql_cdc.emulator.replay import ReplayServer
from mssql_cdc.emulator.server.render import render

CACHE = Path(__file__).resolve().parent.parent / "build" / "bench"

CHANGE_COLUMNS = [
    ("__$start_lsn", scalar("binary", 10)),
    ("__$seqval", scalar("binary", 10)),
    ("__$operation", scalar("int")),
    ("__$update_mask", scalar("varbinary", 128)),
    ("__$command_id", scalar("int")),
    ("CustomerID", scalar("int")),
    ("PersonID", scalar("int")),
    ("StoreID", scalar("int")),
    ("TerritoryID", scalar("int")),
    ("AccountNumber", scalar("varchar", 10)),
    ("rowguid", scalar("uniqueidentifier")),
    ("ModifiedDate", scalar("datetime")),
]

TEXT_COLUMNS = [
    ("__$start_lsn", scalar("binary", 10)),
    ("__$seqval", scalar("binary", 10)),
    ("__$operation", scalar("int")),
    ("__$update_mask", scalar("varbinary", 128)),
    ("EmailAddress", scalar("nvarchar", 50)),
    ("FirstName", scalar("nvarchar", 50)),
    ("LastName", scalar("nvarchar", 50)),
    ("Title", scalar("nvarchar", 8)),
]


def _lsn(n: int) -> bytes:
    return (
        (0x2A).to_bytes(4, "big") + (n // 65536).to_bytes(4, "big") + (n % 65536).to_bytes(2, "big")
    )


def change_row(i: int) -> tuple[object, ...]:
    return (
        _lsn(i // 3),
        _lsn(i),
        2 if i % 7 else 4,
        b"\xff\x0f",
        1 + i % 3,
        i,
        None if i % 5 == 0 else 20000 + i,
        1000 + i % 700,
        1 + i % 10,
        f"AW{i:08d}",
        uuid.UUID(int=i * 2654435761 % (1 << 128)),
        dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i),
    )


def text_row(i: int) -> tuple[object, ...]:
    return (
        _lsn(i // 3),
        _lsn(i),
        2,
        b"\x0f",
        f"customer.{i}@adventure-works.com",
        ["Ken", "Terri", "Gail", "Jos\u00e9", "Fran\u00e7ois"][i % 5],
        f"S\u00e1nchez-{i % 977}",
        None if i % 3 else "Mr.",
    )


def encode(shape: str, rows: int) -> tuple[bytes, bytes, bytes]:
    """(head, body, tail) of the response: COLMETADATA + first ROW tokens, ..., DONE."""
    columns, make = (CHANGE_COLUMNS, change_row) if shape == "change" else (TEXT_COLUMNS, text_row)
    path = CACHE / f"{shape}-{rows}.tds"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        payload = render(BatchOutcome([result_set(columns, [make(i) for i in range(rows)])]))
        path.write_bytes(payload)
        print(
            f"# encoded {rows:,} {shape} rows in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    payload = path.read_bytes()
    return payload, b"", b""


def read_native(port: int, sql: str) -> int:
    text = f"Server=127.0.0.1,{port};Encrypt=optional"
    with _native.connect(text, user="bench", password="bench") as conn:
        return sum(b.num_rows for b in pa.RecordBatchReader.from_stream(conn.execute(sql)))


def read_pytds(port: int, sql: str) -> int:
    import pytds

    with pytds.connect(
        "127.0.0.1", port=port, user="bench", password="bench", autocommit=True
    ) as c:
        cur = c.cursor()
        cur.execute(sql)
        return len(cur.fetchall())


def read_pymssql(port: int, sql: str) -> int:
    import pymssql

    with pymssql.connect(
        server="127.0.0.1", port=port, user="bench", password="bench", tds_version="7.4"
    ) as c:
        cur = c.cursor()
        cur.execute(sql)
        return len(cur.fetchall())


def read_mssql_python(port: int, sql: str) -> int:
    import mssql_python

    text = f"Server=127.0.0.1,{port};UID=bench;PWD=bench;Encrypt=no;TrustServerCertificate=yes"
    conn = mssql_python.connect(text)
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return sum(b.num_rows for b in cur.arrow_reader())
    finally:
        conn.close()


def read_connectorx(port: int, sql: str) -> int:
    import connectorx

    url = f"mssql://bench:bench@127.0.0.1:{port}/master?encrypt=false&trusted_connection=false"
    return int(connectorx.read_sql(url, sql, return_type="arrow").num_rows)


CLIENTS: dict[str, Callable[[int, str], int]] = {
    "native": read_native,
    "mssql-python": read_mssql_python,
    "pymssql": read_pymssql,
    "python-tds": read_pytds,
    "connectorx": read_connectorx,
}


def floor_seconds(payload: bytes, repeat: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one memcpy of the whole response, the best of ``repeat``."""
    times, cpus = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.thread_time()
        copy = bytearray(payload)  # one memcpy of the whole response
        cpus.append(time.thread_time() - cpu)
        times.append(time.perf_counter() - started)
        del copy
    return min(times), min(cpus)


def run_shape(shape: str, rows: int, repeat: int, clients: list[str]) -> None:
    payload, _, _ = encode(shape, rows)
    columns = len(CHANGE_COLUMNS if shape == "change" else TEXT_COLUMNS)
    mb = len(payload) / 1e6
    floor = floor_seconds(payload, repeat)
    print(f"\n{shape} rows: {rows:,} rows x {columns} columns, {mb:.1f} MB of TDS")
    print(
        f"{'client':<14}{'seconds':>9}{'rows/s':>14}{'MB/s':>9}{'ns/value':>10}{'x native':>10}"
        f"{'CPU s':>9}{'CPU x native':>14}"
    )
    results: dict[str, tuple[float, float]] = {}
    with ReplayServer(payload, marker="changes") as server:
        for name in clients:
            try:
                times, cpus = [], []
                for _ in range(repeat):
                    gc.collect()
                    started, cpu = time.perf_counter(), time.thread_time()
                    got = CLIENTS[name](server.port, "SELECT * FROM changes")
                    cpus.append(time.thread_time() - cpu)
                    times.append(time.perf_counter() - started)
                    if got != rows:
                        raise RuntimeError(f"read {got} rows, expected {rows}")
                results[name] = (statistics.median(times), statistics.median(cpus))
            except Exception as exc:  # a client that cannot run here is reported, not fatal
                print(f"{name:<14}  n/a: {type(exc).__name__}: {str(exc)[:70]}")
    results["memcpy floor"] = floor
    native = results.get("native")
    for name, (seconds, cpu) in results.items():
        ratio = f"{seconds / native[0]:.1f}" if native else "-"
        cpu_ratio = f"{cpu / native[1]:.1f}" if native and native[1] > 0 else "-"
        print(
            f"{name:<14}{seconds:>9.3f}{rows / seconds:>14,.0f}{mb / seconds:>9.0f}"
            f"{seconds * 1e9 / (rows * columns):>10.1f}{ratio:>10}{cpu:>9.3f}{cpu_ratio:>14}"
        )
    if native and "mssql-python" in results:
        other = results["mssql-python"]
        print(
            f"native: {other[0] / native[0]:.1f}x mssql-python (CPU {other[1] / native[1]:.1f}x), "
            f"{native[0] / floor[0]:.1f}x memcpy (CPU {native[1] / floor[1]:.1f}x)"
        )


def run_rss(rows: int, batch_rows: int) -> None:
    block = 100_000
    payload, _, _ = encode("change", block)
    head = payload[: payload.index(b"\xd1")]
    body = payload[len(head) : payload.rindex(b"\xfd")]
    tail = payload[payload.rindex(b"\xfd") :]
    times = rows // block
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with ReplayServer(head, repeat=(body, times, tail)) as server:
        text = f"Server=127.0.0.1,{server.port};Encrypt=optional"
        with _native.connect(text, user="bench", password="bench") as conn:
            started = time.perf_counter()
            total = 0
            result = conn.execute("SELECT", batch_rows=batch_rows)
            for batch in pa.RecordBatchReader.from_stream(result):
                total += batch.num_rows
            seconds = time.perf_counter() - started
            stats = conn.stats()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\nnative client, {total:,} rows in batches of {batch_rows:,}: {seconds:.1f} s, "
        f"{total / seconds:,.0f} rows/s (server streams packets from Python; not a decode figure)"
    )
    print(
        f"peak RSS {peak:.0f} MiB (before the read: {before:.0f} MiB; includes the server thread)"
    )
    print(
        f"network wait {stats['network_wait_seconds']:.1f} s, "
        f"decode {stats['decode_seconds']:.1f} s, {stats['bytes_received'] / 1e6:.0f} MB received"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    # connectorx (tiberius) is left out by default: against a server that answers ENCRYPT_NOT_SUP
    # it still starts a TLS handshake and panics (tiberius 0.7.3); pass it explicitly to retry.
    parser.add_argument("--clients", default=",".join(c for c in CLIENTS if c != "connectorx"))
    parser.add_argument("--shapes", default="change,text")
    parser.add_argument("--rss", action="store_true", help="measure peak RSS over --rows instead")
    parser.add_argument("--batch-rows", type=int, default=65_536)
    args = parser.parse_args()
    if args.rss:
        run_rss(args.rows, args.batch_rows)
        return
    for shape in args.shapes.split(","):
        run_shape(shape, args.rows, args.repeat, args.clients.split(","))


if __name__ == "__main__":
    main()
