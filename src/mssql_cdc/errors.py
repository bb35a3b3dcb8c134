"""Exceptions raised by mssql-cdc.

The tree, by layer::

    MssqlCdcError                     base of every error this package defines
    ├── DataLossError(RuntimeError)   change data was purged by CDC cleanup before it was read
    └── SchemaChangedError(RuntimeError)
                                      the source schema changed in a way a running query
                                      cannot absorb; restart to re-infer

Bad options and arguments raise the built-in ``ValueError`` / ``TypeError``, naming the option,
the value received and what is allowed; a missing grant raises ``PermissionError`` holding the
exact GRANT to run (reference/compat-reference.md section 1.15). The native client's errors
(``SqlServerError`` and the connection, login, TLS, timeout and protocol errors) join this tree
with the native TDS client.

No exception message or repr ever holds a password or an access token.
"""

from __future__ import annotations

__all__ = ["DataLossError", "MssqlCdcError", "SchemaChangedError"]


class MssqlCdcError(Exception):
    """Base class of every exception mssql-cdc defines."""


class DataLossError(MssqlCdcError, RuntimeError):
    """Requested change data is no longer held by CDC.

    Raised when the range a stream needs was purged by the CDC cleanup job (retention), or is
    held only by a disabled older capture instance. A stream that stops with it needs a
    decision (re-snapshot, or ``failOnDataLoss=false``), not a blind retry.
    """


class SchemaChangedError(MssqlCdcError, RuntimeError):
    """The source table's schema changed in a way the running query cannot absorb."""
