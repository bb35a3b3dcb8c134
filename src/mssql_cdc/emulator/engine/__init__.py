"""The SQL engine: T-SQL parsed by sqlglot, rewritten and run on DuckDB (``executor``,
``rewrite``), DDL, permission checks, stored procedures, and the :class:`Database` that holds
one emulated instance. Imports the ``cdc``, ``core`` and ``protocol`` layers."""
