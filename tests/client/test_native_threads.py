"""One Connection used from several threads: calls are serialised, close() from another thread
interrupts a blocked read, and nothing corrupts memory (found by adversarial testing)."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from mssql_cdc import _native


@pytest.fixture
def conn(sql_server):
    text = f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=yes;TrustServerCertificate=yes"
    c = _native.connect(text, user=sql_server.user, password=sql_server.password)
    c.execute("CREATE TABLE dbo.t300 (id int PRIMARY KEY)")
    c.execute("INSERT INTO dbo.t300 (id) VALUES " + ", ".join(f"({i})" for i in range(300)))
    yield c
    c.close()


CROSS = "SELECT a.id AS a, b.id AS b FROM dbo.t300 a CROSS JOIN dbo.t300 b"


def test_two_threads_reading_one_result_get_each_row_once(conn):
    reader = pa.RecordBatchReader.from_stream(conn.execute(CROSS, batch_rows=1000))
    counts = [0, 0]
    errors: list[BaseException] = []

    def consume(slot):
        try:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                counts[slot] += batch.num_rows
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(counts) == 90_000


def test_execute_from_threads_is_serialised(conn):
    results: list[object] = []
    lock = threading.Lock()

    def work(k):
        value = conn.scalar("SELECT @P1", [k])
        with lock:
            results.append(value)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(8))


def test_close_from_another_thread_interrupts_a_read(conn):
    reader = pa.RecordBatchReader.from_stream(conn.execute(CROSS, batch_rows=500))
    reader.read_next_batch()
    closer = threading.Thread(target=conn.close)
    closer.start()
    # superseded by close(), or interrupted mid-read; never a crash or a hang
    with pytest.raises(OSError, match=r"superseded|ECLOSED|EIO"):
        for _ in reader:
            pass
    closer.join()
    assert conn.closed


def test_new_execute_while_a_large_result_is_half_read_keeps_the_connection(conn):
    reader = pa.RecordBatchReader.from_stream(conn.execute(CROSS, batch_rows=1000))
    reader.read_next_batch()
    assert conn.scalar("SELECT 7") == 7  # cancels the old result (Attention) and goes on
    assert conn.scalar("SELECT 8") == 8
