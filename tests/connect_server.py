"""A local Spark Connect server for the tests, in its own process.

``python tests/connect_server.py PORT WAREHOUSE`` starts a classic local Spark session with
Delta (``mssql_cdc.spark.get_spark``) and Spark's Connect plugin listening on
``127.0.0.1:PORT``, prints ``ready`` and serves until its standard input closes. The server is
plain Spark Connect: Delta's SQL extension and catalog are loaded, Delta's Connect plugin
(the ``DeltaTable`` Python API over Connect) is not, as on a server that only speaks SQL and
the DataFrame reader and writer.

Its own process, because PySpark refuses to start a Connect server next to a classic session
in one process, and because it is what a Connect client meets: a server it cannot reach
through py4j.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

READY = "ready"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(port: int, warehouse: Path, log: Path) -> subprocess.Popen[str]:
    """Starts the server process and waits until it says it is ready.

    Raises:
        RuntimeError: the process ended before it was ready (its log's tail in the message).
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")
    }
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, __file__, str(port), str(warehouse)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
        )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the server prints or exits
    if line.strip() != READY:
        proc.kill()
        proc.wait()
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"the Spark Connect server did not start: {tail}")
    return proc


def launch_on_a_free_port(
    warehouse: Path, log: Path, attempts: int = 3
) -> tuple[int, subprocess.Popen[str]]:
    """:func:`launch` on a port :func:`free_port` found, ``(port, process)``. The port is free
    when found but not held: a Spark JVM of another test process can be given it (its own
    ports are the kernel's picks) before the server binds it, so a ``BindException`` is tried
    again on another port, up to ``attempts`` times.

    Raises:
        RuntimeError: as :func:`launch`, or the last ``BindException``.
    """
    for attempt in range(1, attempts + 1):
        port = free_port()
        try:
            return port, launch(port, warehouse, log)
        except RuntimeError as exc:
            if "BindException" not in str(exc) or attempt == attempts:
                raise
    raise AssertionError("unreachable")


def main(port: str, warehouse: str) -> None:
    from local_spark import master, spark_config
    from mssql_cdc.spark import get_spark

    spark = get_spark(
        "mssql-cdc-connect-server",
        master(),
        config=spark_config(
            warehouse,
            {
                "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
                "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": port,
            },
        ),
    )
    print(READY, flush=True)
    sys.stdin.read()  # until the test process closes the pipe (or dies)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
