"""Many tables in one session (docs/many-tables.md), at the import path scripts written for the
reference API use: ``from mssql_cdc.fanout import start_many, await_all, stop_all``.

The same functions as ``mssql_cdc.start_many``, ``mssql_cdc.await_all`` and
``mssql_cdc.stop_all``; importing this module imports PySpark.

* :func:`start_many`: one ``to_delta`` stream per capture instance, from templates holding
  ``{ci}``; returns ``{capture instance: StreamingQuery}`` in the order given;
* :func:`await_all`: waits for the queries, returns ``{capture instance: error}`` of those that
  failed, raises nothing;
* :func:`stop_all`: stops every query.
"""

from __future__ import annotations

from mssql_cdc import await_all, start_many, stop_all

__all__ = ["await_all", "start_many", "stop_all"]
