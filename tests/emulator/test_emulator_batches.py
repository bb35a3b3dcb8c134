"""IF...ELSE and BEGIN...END in a batch ("IF...ELSE (Transact-SQL)", "BEGIN...END
(Transact-SQL)"): the branch the condition chooses runs, an unbraced branch is one statement,
blocks nest, CASE's END and BEGIN TRANSACTION are not blocks; what the emulator does not have
(WHILE, TRY...CATCH) is error 40517, a block without END error 102."""

from __future__ import annotations

import pytest

pytds = pytest.importorskip("pytds")
pytest.importorskip("duckdb")


@pytest.fixture
def cur(emulator):
    with (
        pytds.connect(
            emulator.host, port=emulator.port, user="sa", password=emulator.password,
            autocommit=True,
        ) as conn,
        conn.cursor() as cursor,
    ):  # fmt: skip
        cursor.execute("CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY)")
        cursor.execute("INSERT INTO dbo.t VALUES (1)")
        yield cursor


def results(cur, sql):
    """Every result set of the batch, as lists of rows."""
    cur.execute(sql)
    out = [cur.fetchall()] if cur.description else []
    while cur.nextset():
        if cur.description:
            out.append(cur.fetchall())
    return out


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("IF 1 = 1 SELECT 'a' ELSE SELECT 'b'", [[("a",)]]),
        ("IF 1 = 0 SELECT 'a' ELSE SELECT 'b'", [[("b",)]]),
        ("IF NULL = NULL SELECT 'a' ELSE SELECT 'b'", [[("b",)]]),  # unknown is not true
        ("IF 1 = 1 BEGIN SELECT 1; SELECT 2 END ELSE SELECT 3", [[(1,)], [(2,)]]),
        ("IF 1 = 0 SELECT 1; SELECT 2", [[(2,)]]),  # the branch is one statement
        (
            "IF EXISTS (SELECT 1 FROM dbo.t WHERE id = 1) SELECT 'yes' ELSE SELECT 'no'",
            [[("yes",)]],
        ),
        (
            "DECLARE @v int = 5; IF @v > 3 BEGIN IF @v > 4 SELECT 'big' ELSE SELECT 'mid' END",
            [[("big",)]],
        ),
        ("IF 1 = 1 BEGIN SELECT CASE WHEN 1 = 1 THEN 'x' ELSE 'y' END END", [[("x",)]]),
        ("BEGIN SELECT 7 END", [[(7,)]]),
        ("BEGIN TRANSACTION; SELECT 8; COMMIT", [[(8,)]]),
    ],
)
def test_the_chosen_branch_runs(cur, sql, want):
    assert results(cur, sql) == want


def test_a_table_created_in_a_branch_exists_after_it(cur):
    sql = (
        "IF OBJECT_ID(N'dbo.z') IS NULL BEGIN CREATE TABLE dbo.z (a int) END; "
        "SELECT OBJECT_NAME(OBJECT_ID(N'dbo.z'))"
    )
    assert results(cur, sql) == [[("z",)]]
    assert results(cur, sql) == [[("z",)]]  # the second time the branch does not run


@pytest.mark.parametrize(
    ("sql", "number"),
    [
        ("WHILE 1 = 0 SELECT 1", 40517),
        ("BEGIN TRY SELECT 1 END TRY BEGIN CATCH SELECT 2 END CATCH", 40517),
        ("IF 1 = 1 BEGIN SELECT 1", 102),
        ("SELECT 1 END", 102),
    ],
)
def test_what_is_not_there_is_an_error(cur, sql, number):
    with pytest.raises(pytds.Error) as failed:
        results(cur, sql)
    assert failed.value.msg_no == number
