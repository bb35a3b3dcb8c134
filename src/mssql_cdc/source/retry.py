"""Driver-side retries of transient SQL Server errors (docs/data-sources.md#failures).

Connection loss, failover, a deadlock (1205) and timeouts are retried on a new connection up to
three times, waiting 1, 3 and 9 seconds (about 14 s in all), each with a WARNING under
``mssql_cdc.source``. A refused login (``LoginError``, e.g. 18456) is retried only after such an
error in the same call: the same credentials logged in moments before, so the server is failing
over (SQL Server refuses logins to a database that is not yet online); a first login refused
is raised at once (a wrong password is not retried). ``DataLossError``, ``SchemaChangedError``,
``UnsupportedDataError`` (a data type or code page the client does not decode: not a corrupt
stream), ``ValueError`` and ``PermissionError`` (and any other error) are raised at once. Task reads
are not retried here: Spark retries a failed task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from mssql_cdc.errors import (
    ConnectionLostError,
    LoginError,
    ProtocolError,
    SqlServerError,
    SqlTimeoutError,
)
from mssql_cdc.source.client import CdcClient

__all__ = ["DELAYS", "is_transient", "with_retry"]

log = logging.getLogger("mssql_cdc.source")

T = TypeVar("T")

#: seconds to wait before each retry
DELAYS = (1.0, 3.0, 9.0)
#: SQL Server errors worth a new connection: deadlock, database/replica unavailable during a
#: failover (4060, 976, 978, 983, Azure 40613, 40197, 40501, 49918-49920, 10928, 10929), a
#: query timeout reported by the server (-2)
TRANSIENT_NUMBERS = frozenset(
    {1205, 4060, 976, 978, 983, 40613, 40197, 40501, 49918, 49919, 49920, 10928, 10929, -2}
)


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is worth retrying on a new connection."""
    if isinstance(exc, (ConnectionLostError, SqlTimeoutError, ProtocolError)):
        return True
    return isinstance(exc, SqlServerError) and exc.number in TRANSIENT_NUMBERS


def with_retry(
    client: CdcClient,
    what: str,
    call: Callable[[], T],
    *,
    sleep: Callable[[float], None] = time.sleep,
    delays: Sequence[float] = DELAYS,
) -> T:
    """Run ``call`` (which uses ``client``); retry transient errors on a new connection.

    Runs on the driver, once per driver-side call (offsets, planning). ``delays`` are the
    waits before each retry (tests shorten them).
    """
    failing_over = False
    for attempt, delay in enumerate((*delays, None), start=1):
        try:
            return call()
        except Exception as exc:
            transient = is_transient(exc) or (failing_over and isinstance(exc, LoginError))
            if delay is None or not transient:
                raise
            failing_over = True
            log.warning(
                "%s failed (%s: %s); retrying on a new connection in %.0f s (retry %d of %d)",
                what,
                type(exc).__name__,
                exc,
                delay,
                attempt,
                len(delays),
            )
            client.close()
            sleep(delay)
    raise AssertionError("unreachable")
