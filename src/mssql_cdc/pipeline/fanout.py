"""Many tables in one session: ``start_many``, ``await_all``, ``stop_all`` (docs/many-tables.md).

One ``to_delta`` stream per capture instance, each with its own bronze table, ``app_id`` and
checkpoint made from templates holding ``{ci}``, sharing one facts table. Runs on the driver.
A failed query stops alone (failure isolation); ``await_all`` reports the failures and raises
nothing, so the job decides what a failure means.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from mssql_cdc.options import SourceOptions
from mssql_cdc.pipeline.arguments import copy_options
from mssql_cdc.pipeline.cdc_stream import stream
from mssql_cdc.sink import ensure_facts_table, sink_arguments

if TYPE_CHECKING:
    import os

    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["await_all", "expand_template", "start_many", "stop_all"]

log = logging.getLogger("mssql_cdc.pipeline")

#: the placeholder every per-table template must hold
PLACEHOLDER = "{ci}"


def expand_template(name: str, template: object, capture_instance: str) -> str:
    """``template`` with ``{ci}`` replaced by ``capture_instance``.

    Only ``{ci}`` is replaced (other braces are kept as written), so a path such as
    ``/chk/{ci}/x{1}`` is safe.

    Raises:
        TypeError: ``template`` is not a string or path.
        ValueError: ``template`` does not contain ``{ci}`` (``name`` is the argument's name).
    """
    text = template if isinstance(template, str) else _fspath(name, template)
    if PLACEHOLDER not in text:
        raise ValueError(
            f"{name} {text!r} must contain '{PLACEHOLDER}', which is replaced by each capture "
            f"instance's name (e.g. {name}='bronze.{PLACEHOLDER}'), so that no two streams share it"
        )
    return text.replace(PLACEHOLDER, capture_instance)


def _fspath(name: str, value: object) -> str:
    import os

    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str):
            return path
    raise TypeError(f"{name} must be a string template containing '{PLACEHOLDER}'")


def _instances(
    capture_instances: str | Sequence[str] | Mapping[str, Mapping[str, object] | None],
) -> dict[str, dict[str, str]]:
    """Capture instance -> its option overrides, in the order given."""
    if isinstance(capture_instances, str):
        capture_instances = [capture_instances]
    if isinstance(capture_instances, Mapping):
        pairs: Iterable[tuple[object, object]] = capture_instances.items()
    elif isinstance(capture_instances, Sequence):
        pairs = ((ci, None) for ci in capture_instances)
    else:
        raise TypeError(
            "capture_instances must be a capture instance name, a list of names or a mapping "
            f"of names to option overrides, got {type(capture_instances).__name__}"
        )
    out: dict[str, dict[str, str]] = {}
    for ci, overrides in pairs:
        if not isinstance(ci, str) or not ci.strip():
            raise ValueError(f"capture_instances: {ci!r} is not a capture instance name")
        if ci in out:
            raise ValueError(f"capture_instances: {ci!r} is given twice")
        if overrides is not None and not isinstance(overrides, Mapping):
            raise TypeError(
                f"capture_instances[{ci!r}] must be a mapping of option overrides or None, got "
                f"{type(overrides).__name__}"
            )
        out[ci] = copy_options(overrides or {})
    if not out:
        raise ValueError("capture_instances is empty: give at least one capture instance")
    return out


def table_options(
    shared: Mapping[str, str], overrides: Mapping[str, str], ci: str
) -> dict[str, str]:
    """The options of one table: ``shared`` with ``overrides`` replacing the options they name
    (names match ignoring case) and ``captureInstance`` set to ``ci``."""
    replaced = {name.lower() for name in overrides} | {"captureinstance"}
    out = {k: v for k, v in shared.items() if k.lower() not in replaced}
    out.update(overrides)
    out["captureInstance"] = ci
    return out


def start_many(
    spark: SparkSession,
    options: SourceOptions | Mapping[str, object],
    capture_instances: str | Sequence[str] | Mapping[str, Mapping[str, object] | None],
    *,
    target: str,
    app_id: str,
    checkpoint: str | os.PathLike[str],
    facts_table: str | None = None,
    **to_delta_kwargs: object,
) -> dict[str, StreamingQuery]:
    """Starts one :meth:`CdcStream.to_delta` stream per capture instance.

    Args:
        spark: the session; every query runs in it.
        options: the data source options shared by every table (``captureInstance`` is set per
            table and may be left out).
        capture_instances: a name, a list of names, or a mapping of name to option overrides
            (``{"dbo_orders": {"maxCommitsPerBatch": 100}}``); an override replaces the shared
            option of the same name, ignoring case.
        target, app_id, checkpoint: templates that must each contain ``{ci}``, replaced by the
            capture instance (``"bronze.{ci}"``, ``"orders-{ci}"``, ``"/chk/{ci}"``).
        facts_table: the facts table every stream shares (created once, before the first
            start, so streams do not race to create it); ``None``: none.
        **to_delta_kwargs: passed to every ``to_delta`` (``trigger``, ``bootstrap``, ...);
            ``query_name`` is refused (each query is named after its ``app_id``).

    Returns:
        The started queries by capture instance, in the order given.

    Raises:
        TypeError, ValueError: a bad argument (a template without ``{ci}``, an empty or
            repeated capture instance, ``query_name``), or what ``to_delta`` raises for one
            table. Everything is checked before the first start; a start that raises stops the
            queries already started, then the error propagates.
    """
    if "query_name" in to_delta_kwargs:
        raise ValueError(
            "start_many names each query after its app_id: remove query_name (make app_id's "
            "template unique per session instead)"
        )
    tables = _instances(capture_instances)
    shared = copy_options(options)
    plans: list[tuple[str, dict[str, str], str, str, str]] = []
    seen_ids: set[str] = set()
    for ci, overrides in tables.items():
        one_target = expand_template("target", target, ci)
        one_app = expand_template("app_id", app_id, ci)
        one_checkpoint = expand_template("checkpoint", checkpoint, ci)
        if one_app in seen_ids:
            raise ValueError(f"app_id {app_id!r} gives {one_app!r} for two capture instances")
        seen_ids.add(one_app)
        sink_arguments(one_target, one_app, facts_table)  # checked before anything starts
        plans.append(
            (ci, table_options(shared, overrides, ci), one_target, one_app, one_checkpoint)
        )

    if facts_table is not None:
        _, _, facts_ref = sink_arguments(plans[0][2], plans[0][3], facts_table)
        assert facts_ref is not None
        ensure_facts_table(spark, facts_ref)

    started: dict[str, StreamingQuery] = {}
    for ci, table, one_target, one_app, one_checkpoint in plans:
        began = time.monotonic()
        try:
            query = stream(spark, table).to_delta(
                one_target,
                one_app,
                one_checkpoint,
                facts_table,
                **to_delta_kwargs,  # type: ignore[arg-type]
            )
        except BaseException:
            log.error(
                "start_many: %s failed to start; stopping the %d queries already started",
                ci,
                len(started),
            )
            stop_all(started)
            raise
        started[ci] = query
        log.info(
            "start_many: %s started as %r (%d of %d, %.1f s)",
            ci,
            query.name,
            len(started),
            len(plans),
            time.monotonic() - began,
        )
    return started


def await_all(
    queries: Mapping[str, StreamingQuery], *, timeout: float | None = None
) -> dict[str, Exception]:
    """Waits until every query has stopped, or ``timeout`` seconds in total.

    Raises nothing for a failed query: the job decides what a failure means
    (:func:`mssql_cdc.is_data_loss`, :func:`mssql_cdc.is_schema_changed` classify it).

    Args:
        queries: queries by capture instance, as :func:`start_many` returns them.
        timeout: seconds for all queries together; ``None``: no limit.

    Returns:
        The error of each query that stopped with one, by capture instance. Queries still
        running at the timeout, and queries that stopped cleanly, are not in it.

    Raises:
        ValueError: a negative ``timeout``.
    """
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be None or at least 0 seconds, got {timeout!r}")
    deadline = None if timeout is None else time.monotonic() + timeout
    failures: dict[str, Exception] = {}
    for ci, query in queries.items():
        try:
            if deadline is None:
                query.awaitTermination()
            else:
                left = math.ceil(max(0.0, deadline - time.monotonic()))  # whole seconds
                if not query.awaitTermination(left):
                    continue  # still running: not in the result
        except Exception as exc:  # the query's StreamingQueryException
            failures[ci] = exc
            log.warning("await_all: %s (%s) stopped with an error: %s", ci, _name(query), exc)
            continue
        error = _error(query)
        if error is not None:
            failures[ci] = error
    return failures


def _name(query: StreamingQuery) -> str:
    try:
        return str(query.name)
    except Exception:  # a query whose session is gone
        return "?"


def _error(query: StreamingQuery) -> Exception | None:
    try:
        return query.exception()
    except Exception as exc:  # a session that cannot answer
        log.debug("could not read a query's error: %s", exc)
        return None


def stop_all(queries: Mapping[str, StreamingQuery]) -> None:
    """Stops every query (each stop waits for its running batch); an error stopping one is
    logged and the others are still stopped."""
    for ci, query in queries.items():
        try:
            query.stop()
        except Exception as exc:
            log.warning("stop_all: stopping %s failed: %s", ci, exc)
