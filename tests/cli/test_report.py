"""``mssql-cdc report`` on the facts table of a real run: a stream against the emulator with
the seed's bootstrap and two workloads, drawn as a self-contained HTML page and as a PNG."""

from __future__ import annotations

from mssql_cdc import stream
from mssql_cdc.cli import main


def test_report_of_a_real_run(spark, source, tmp_path, capsys):
    bronze, facts, cp = tmp_path / "bronze", tmp_path / "facts", tmp_path / "cp"
    for first in (1, 100):
        source.workload(first)
        query = stream(spark, source.options(maxCommitsPerBatch="2")).to_delta(
            str(bronze),
            app_id="orders-v1",
            checkpoint=str(cp),
            facts_table=str(facts),
            trigger={"availableNow": True},
        )
        query.awaitTermination()
    batches = spark.read.format("delta").load(str(facts)).where("event IS NULL").count()

    html, png = tmp_path / "report.html", tmp_path / "report.png"
    assert main(["report", "--facts", str(facts), "--out", str(html)]) == 0
    assert main(["report", "--facts", str(facts), "--out", str(png), "--hours", "1"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {html}" in out
    assert f"wrote {png}" in out
    page = html.read_text()
    changes = len(source.changes())
    # the stream's row: its micro-batches and every change it landed
    assert f"<td>orders-v1</td><td>{bronze}</td><td>{batches}</td><td>{changes}</td>" in page
    assert page.count("<svg") == 1
    assert "<script" not in page
    assert png.read_bytes().startswith(b"\x89PNG")
