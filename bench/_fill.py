"""Fill the benchmarks' source table and its change table directly in the emulator's engine.

``dbo.bench`` is the 12-column change row the benchmarks share (the CDC columns plus id,
person_id, store_id, territory_id, account nvarchar(20), rowguid uniqueidentifier, modified
datetime2(3)). Loading a million rows through TDS INSERTs and the capture scan takes minutes on
a small machine and measures the emulator's write path, which no benchmark is about; this fills
the source table with ``rows`` rows and the change table with one insert change row per source
row, ``rows_per_commit`` rows to a commit (each commit its own LSN in ``cdc.lsn_time_mapping``),
in a few SQL statements.
"""

from __future__ import annotations

from typing import Any

from mssql_cdc.emulator.engine.executor import Executor

VALUES = (
    "i::INTEGER, (i % 5000)::INTEGER, (i % 700)::INTEGER, (i % 10)::INTEGER, "
    "'AW' || lpad(i::VARCHAR, 8, '0'), uuid(), '2024-01-01 10:00:00.000'"
)


def fill(emu: Any, rows: int, *, rows_per_commit: int | None = None) -> int:
    """Create and CDC-enable ``dbo.bench`` and fill it and ``cdc.dbo_bench_CT``.

    ``rows_per_commit`` ``None`` puts every change in one commit. Returns the number of commits.
    """
    ex = Executor(emu.db, 1)
    for sql in (
        "CREATE TABLE dbo.bench (id int PRIMARY KEY, person_id int, store_id int, "
        "territory_id int, account nvarchar(20), rowguid uniqueidentifier, modified datetime2(3))",
        "EXEC sys.sp_cdc_enable_db",
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'bench', "
        "@role_name = NULL",
    ):
        outcome = ex.run_batch(sql)
        assert outcome.error is None, outcome.error
    ex.close()
    emu.scan()
    per_commit = rows_per_commit or max(rows, 1)
    commits = max(1, -(-rows // per_commit))
    lsns = [bytes(emu.db.log.next_lsn()) for _ in range(commits)]
    emu.scan()
    cur = emu.db.system
    cur.execute(f'INSERT INTO dbo."bench" SELECT {VALUES} FROM range(?) t(i)', [rows])
    cur.execute("CREATE TEMP TABLE bench_commits (n BIGINT, lsn BLOB)")
    cur.executemany("INSERT INTO bench_commits VALUES (?, ?)", list(enumerate(lsns)))
    cur.execute(
        'INSERT INTO cdc."dbo_bench_CT" SELECT c.lsn, NULL, '
        "from_hex(lpad(printf('%x', i + 1), 20, '0')), 2, '\\x7F'::BLOB, "
        f"{VALUES}, (i % ? + 1)::INTEGER FROM range(?) t(i) "
        "JOIN bench_commits c ON c.n = i // ?",
        [per_commit, rows, per_commit],
    )
    cur.execute(
        'INSERT INTO cdc."lsn_time_mapping" SELECT lsn, '
        "TIMESTAMP '2024-01-01 00:00:00' + n * INTERVAL 1 MILLISECOND, "
        "TIMESTAMP '2024-01-01 00:00:00' + n * INTERVAL 1 MILLISECOND, '\\x01'::BLOB "
        "FROM bench_commits"
    )
    cur.execute("DROP TABLE bench_commits")
    return commits
