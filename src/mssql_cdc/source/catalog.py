"""Catalog discovery: the configured capture instance, its table's other instances and the
stream's output columns (``sys.sp_cdc_help_change_data_capture`` and
``sys.sp_cdc_get_captured_columns``, through :class:`~mssql_cdc.source.client.CdcClient`).

Runs on the driver: at ``load()`` (the schema), when a stream or snapshot takes its first
position, and when each batch is planned (the instances may change while a query runs).
"""

from __future__ import annotations

from collections.abc import Mapping

from mssql_cdc.options import parse_options
from mssql_cdc.source.client import CaptureInstance, CdcClient, permission_error
from mssql_cdc.source.retry import with_retry
from mssql_cdc.source.schema import Column, declared_columns, output_columns, union_columns

__all__ = [
    "check_reachable",
    "find_instance",
    "infer_schema",
    "schema_capture_instances",
    "table_instances",
]


def _siblings(instances: list[CaptureInstance], table: tuple[str, str]) -> list[CaptureInstance]:
    return [i for i in instances if (i.source_schema, i.source_table) == table]


def _default_named(wanted: str, instances: list[CaptureInstance]) -> list[CaptureInstance]:
    """The instances of the table whose default capture instance name (``<schema>_<table>``,
    ``sys.sp_cdc_enable_table``) is ``wanted``, ignoring case; empty if none."""
    for i in instances:
        if f"{i.source_schema}_{i.source_table}".lower() == wanted.lower():
            return _siblings(instances, (i.source_schema, i.source_table))
    return []


def table_instances(wanted: str, instances: list[CaptureInstance]) -> list[CaptureInstance]:
    """Every instance (oldest first) of the table a ``captureInstance`` of ``wanted`` reads, as
    :func:`find_instance` resolves it: the instance of that exact name, else the one name that
    matches ignoring case, else the table whose default name it is (its newest instance is
    followed); empty when none matches or two match ignoring case (``find_instance`` says
    which). One listing, no statement."""
    chosen, folded = _named(wanted, instances)
    if chosen is not None and (len(folded) == 1 or chosen.name == wanted):
        return _siblings(instances, (chosen.source_schema, chosen.source_table))
    return [] if folded else _default_named(wanted, instances)


def _named(
    wanted: str, instances: list[CaptureInstance]
) -> tuple[CaptureInstance | None, list[CaptureInstance]]:
    """The instance named ``wanted`` (exactly, else the first matching ignoring case) and all
    those matching it ignoring case."""
    exact = [i for i in instances if i.name == wanted]
    folded = [i for i in instances if i.name.lower() == wanted.lower()]
    return (exact[0] if exact else (folded[0] if folded else None)), folded


def find_instance(
    client: CdcClient, table: tuple[str, str] | None = None
) -> tuple[CaptureInstance, list[CaptureInstance]]:
    """The configured capture instance and all of its table's instances (oldest first).

    A ``captureInstance`` with the table's default name (``<schema>_<table>``) that is no longer
    enabled follows the table's newest instance (the DBA's switch to a new column list);
    ``table`` is the ``(schema, table)`` the name was found for earlier in the query, so a
    custom name that was disabled gets an error naming the option's new value.

    Raises
    ------
    ValueError
        No readable instance has that name, or two differ only by case; or a custom name
        that was disabled while its table has other instances.
    PermissionError
        The instance exists but the login cannot read its change data.
    """
    wanted = client.options.capture_instance
    instances = client.capture_instances()
    chosen, folded = _named(wanted, instances)
    if (chosen is None or chosen.name != wanted) and len(folded) > 1:
        names = ", ".join(repr(i.name) for i in folded)
        raise ValueError(
            f"Option 'captureInstance' has the value {wanted!r}, which matches {names} "
            "ignoring case; give the exact name"
        )
    if chosen is None:
        followed = _default_named(wanted, instances)
        if followed:
            return followed[-1], followed
        others = _siblings(instances, table) if table is not None else []
        if table is not None and others:
            raise ValueError(
                f"Capture instance {wanted!r} was disabled; table {table[0]}.{table[1]} is now "
                f"captured by {', '.join(repr(i.name) for i in others)}: set the option "
                f"captureInstance to {others[-1].name!r} and restart (the checkpoint goes on "
                "where it stopped)"
            )
        denied = client.change_access_denied(wanted)
        if denied is not None:
            raise permission_error(client.options, wanted, denied)
        raise ValueError(
            f"Capture instance {wanted!r} not found, or the login lacks SELECT on its source "
            "columns (or membership in its gating role); check "
            "EXEC sys.sp_cdc_help_change_data_capture"
        )
    return chosen, _siblings(instances, (chosen.source_schema, chosen.source_table))


def infer_schema(client: CdcClient) -> list[Column]:
    """The output columns: metadata, then the ``columns`` option or the union of the table's
    capture instances' captured columns. Runs on the driver, once per ``load()``."""
    options = client.options
    _, siblings = find_instance(client)
    if options.columns:
        captured = declared_columns(options.columns)
        known = {c.lower() for i in siblings for c in i.columns}
        missing = [c.name for c in captured if c.name.lower() not in known]
        if missing:
            names = ", ".join(i.name for i in siblings)
            raise ValueError(
                f"No capture instance of the table ({names}) captures {', '.join(missing)}; "
                "fix the columns option"
            )
    else:
        captured = union_columns(
            [
                (i.name, client.captured_columns(i.name), client.computed_columns(i))
                for i in siblings
            ]
        )
    return output_columns(captured, include_command_id=options.include_command_id)


def _server_client(options: Mapping[str, str]) -> CdcClient:
    """A client of ``options`` (data source options; any ``captureInstance`` ignored) for
    questions about the server rather than one capture instance."""
    kept = {k: v for k, v in options.items() if k.lower() != "captureinstance"}
    return CdcClient(parse_options({**kept, "captureInstance": "-"}))


def check_reachable(options: Mapping[str, str]) -> None:
    """Opens one connection with ``options`` (the data source options) and closes it: the
    server answers, TLS is agreed and the login is accepted. The command line asks it before
    it starts Spark, so a wrong server, login or TLS setting fails before Spark's start with one
    line instead of after it with a JVM trace; transient errors are retried as the
    data source retries them (``source.retry``). Runs where it is called: the command line
    does not call it under Spark Connect, where the data source connects from the server.

    Raises:
        ValueError: a bad option. TlsError, LoginError, ConnectionLostError, SqlTimeoutError:
            from connecting (the client's errors, which name the server and never the password).
    """
    client = _server_client(options)
    try:
        # retried as the source's own first connection is (a failover, a network blip)
        with_retry(client, "connecting", lambda: client.connection)
    finally:
        client.close()


def schema_capture_instances(options: Mapping[str, str], schema: str) -> list[str]:
    """The newest capture instance (greatest ``start_lsn``) of each CDC-enabled table of source
    schema ``schema`` that the login can read, by table name. ``schema`` matches ignoring case.

    ``options`` are the data source options without ``captureInstance`` (one is ignored).
    Runs on the driver: one connection, one ``sys.sp_cdc_help_change_data_capture``.

    Raises:
        ValueError: a bad option. SqlServerError, OSError: from connecting.
    """
    client = _server_client(options)
    try:
        instances = client.capture_instances()  # oldest first: the newest wins below
    finally:
        client.close()
    newest: dict[str, CaptureInstance] = {}
    for instance in instances:
        if instance.source_schema.lower() == schema.lower():
            newest[instance.source_table] = instance
    return [newest[table].name for table in sorted(newest)]
