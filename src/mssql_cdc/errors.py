"""Exceptions raised by mssql-cdc.

The tree, by layer::

    MssqlCdcError                        base of every error this package defines
    ├── DataLossError(RuntimeError)      change data was purged by CDC cleanup before it was read
    ├── SchemaChangedError(RuntimeError) the source schema changed in a way a running query
    │                                    cannot absorb; restart to re-infer
    ├── ProtocolError                    the server's byte stream is malformed or truncated
    └── SqlServerError                   SQL Server answered with an error, or could not be
        │                                reached (number, state, severity, message, server,
        │                                procedure, line; None where not from the server)
        ├── LoginError                   the server refused the login (e.g. 18456)
        ├── ConnectionLostError(ConnectionError)
        │                                the connection could not be made or was lost
        ├── TlsError(ConnectionError)    TLS handshake or certificate verification failed
        └── SqlTimeoutError(TimeoutError) a login or query deadline passed

Bad options and arguments raise the built-in ``ValueError`` / ``TypeError``, naming the option,
the value received and what is allowed; a missing grant raises ``PermissionError`` holding the
exact GRANT to run (docs/data-sources.md, "Failures").

No exception message or repr ever holds a password or an access token.
"""

from __future__ import annotations

__all__ = [
    "ConnectionLostError",
    "DataLossError",
    "LoginError",
    "MssqlCdcError",
    "ProtocolError",
    "SchemaChangedError",
    "SqlServerError",
    "SqlTimeoutError",
    "TlsError",
]


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


class ProtocolError(MssqlCdcError):
    """The server sent bytes that do not follow MS-TDS (malformed or truncated).

    The connection is closed; open a new one.
    """


class SqlServerError(MssqlCdcError):
    """An error from SQL Server (an ERROR token, MS-TDS 2.2.7.10) or on the way to it.

    Attributes:
        number: the SQL Server error number (e.g. 313, 1205, 18456), or None when the error did
            not come from the server.
        state: the error state (int) or None.
        severity: the error class, 11-25 for errors (int) or None.
        message: the message text.
        server: the name of the server that raised it, or None.
        procedure: the procedure that raised it, or None.
        line: the line of the batch or procedure, or None.
    """

    def __init__(
        self,
        message: str,
        *,
        number: int | None = None,
        state: int | None = None,
        severity: int | None = None,
        server: str | None = None,
        procedure: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.number = number
        self.state = state
        self.severity = severity
        self.server = server
        self.procedure = procedure
        self.line = line

    def __str__(self) -> str:
        if self.number is None:
            return self.message
        return f"[{self.number}] {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, number={self.number!r})"


class LoginError(SqlServerError):
    """SQL Server refused the login (wrong user or password, database not available, ...)."""


class ConnectionLostError(SqlServerError, ConnectionError):
    """The connection to SQL Server could not be made or was lost; open a new one."""


class TlsError(SqlServerError, ConnectionError):
    """The TLS handshake failed or the server's certificate was not accepted."""


class SqlTimeoutError(SqlServerError, TimeoutError):
    """A login timeout (``Connection Timeout``) or query timeout passed."""
