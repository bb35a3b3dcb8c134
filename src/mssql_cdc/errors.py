"""Exceptions raised by mssql-cdc.

The tree, by layer::

    MssqlCdcError                        base of every error this package defines
    ├── DataLossError(RuntimeError)      change data was purged by CDC cleanup before it was read
    ├── SchemaChangedError(RuntimeError) the source schema changed in a way a running query
    │                                    cannot absorb; restart to re-infer
    ├── ProtocolError                    the server's byte stream is malformed or truncated
    ├── UnsupportedDataError             well-formed data the client does not decode (a data
    │                                    type, a code page); retrying fails the same way
    ├── ResultShapeError                 a result set lacks a column the product reads by name
    │                                    (names the statement, the column, the server version)
    ├── DeltaJarsError(RuntimeError)     local Spark cannot get a Delta jar for the installed
    │                                    pyspark and delta-spark (none is published for the
    │                                    pair, or Spark could not resolve it)
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

The native client's statuses (``native/include/mssqlcdc/status.h``) become these classes in
one place: :data:`STATUS_CLASSES`, which the C binding calls through :func:`from_status`.
Spark wraps an error raised in a data source into its own exceptions, keeping only the class
name and the message as text; :func:`find_error`, :func:`is_data_loss` and
:func:`is_schema_changed` see through that wrapping.

No exception message or repr ever holds a password or an access token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "STATUS_CLASSES",
    "ConnectionLostError",
    "DataLossError",
    "DeltaJarsError",
    "FoundError",
    "LoginError",
    "MssqlCdcError",
    "ProtocolError",
    "ResultShapeError",
    "SchemaChangedError",
    "ServerFields",
    "SqlServerError",
    "SqlTimeoutError",
    "TlsError",
    "UnsupportedDataError",
    "find_error",
    "find_error_in_text",
    "from_status",
    "is_data_loss",
    "is_schema_changed",
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


class DeltaJarsError(MssqlCdcError, RuntimeError):
    """Local Spark cannot get the Delta Lake jar for the installed pyspark and delta-spark.

    Raised by :func:`mssql_cdc.spark.get_spark` when no Delta jar is published for the pair
    (the message names the delta-spark releases that have one), or when Spark could not resolve
    the jar's Maven coordinate at start-up (the message names the coordinate, the two jar files
    and the ``MSSQL_CDC_JARS`` directory that makes Spark use them instead).
    """


class ProtocolError(MssqlCdcError):
    """The server sent bytes that do not follow MS-TDS (malformed or truncated).

    The connection is closed; open a new one.
    """


class UnsupportedDataError(MssqlCdcError):
    """The server sent well-formed data this client does not decode.

    A data type or a code page the native client does not support. The same request fails the
    same way again, so it is not retried; the message names the type or the code page.
    """


class ResultShapeError(MssqlCdcError):
    """SQL Server answered a statement with a result set that lacks a column mssql-cdc reads.

    The product reads each system procedure's and view's columns by the names the current
    Microsoft documentation gives (docs/reference/sql-inventory.md); a server whose answer
    differs (an older or newer version, a compatibility level) gets this error, naming what
    was missing, instead of a ``KeyError`` deep inside a reader. Retrying fails the same way.

    Attributes:
        statement: the statement's text (never holds a secret: parameters are not included).
        columns: the missing column names, in the order the product needs them.
        received: the column names the result set had.
        server_version: the server's version from its login acknowledgement (``16.0.4135``).
    """

    def __init__(
        self,
        statement: str,
        columns: tuple[str, ...],
        received: tuple[str, ...],
        server_version: str,
    ) -> None:
        self.statement = statement
        self.columns = columns
        self.received = received
        self.server_version = server_version
        missing = ", ".join(repr(c) for c in columns)
        super().__init__(
            f"SQL Server {server_version} answered {statement!r} without the column(s) "
            f"{missing} that mssql-cdc reads (it returned {', '.join(received) or 'no columns'}). "
            "This server's result differs from the current Microsoft documentation; please "
            "report it with the server version."
        )


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


#: The one map from a native status name (``mc_status_name``) to the class raised for it.
#: Every status but ``OK`` has exactly one entry (tests/source/test_errors.py checks it against
#: the C library's list). ``NEEDMORE`` never leaves the C library; if it did, it would mean a
#: truncated stream.
STATUS_CLASSES: Mapping[str, type[Exception]] = {
    "EINVAL": ValueError,
    "ERANGE": OverflowError,
    "ENOMEM": MemoryError,
    "EPROTO": ProtocolError,
    "NEEDMORE": ProtocolError,
    "EIO": ConnectionLostError,
    "ETIMEOUT": SqlTimeoutError,
    "ESERVER": SqlServerError,
    "ETLS": TlsError,
    "ECLOSED": ConnectionLostError,
    "EUNSUPPORTED": UnsupportedDataError,
    "ELOGIN": LoginError,
}


class ServerFields(TypedDict, total=False):
    """The fields of SQL Server's ERROR token, as the C binding passes them to
    :func:`from_status` (keyword arguments)."""

    number: int
    state: int
    severity: int
    server: str
    procedure: str
    line: int


def from_status(status: str, message: str, **fields: Unpack[ServerFields]) -> Exception:
    """The exception for a native status (``"ECLOSED"``) and its message.

    Called by the C binding (native/python/errors.c) for every failed call; the server's
    fields come as keyword arguments (:class:`ServerFields`) when SQL Server sent an ERROR
    token. An unknown status gives a :class:`ProtocolError` naming it.
    """
    cls = STATUS_CLASSES.get(status)
    if cls is None:
        return ProtocolError(f"native status {status}: {message}")
    if issubclass(cls, SqlServerError):
        return cls(
            message,
            number=fields.get("number"),
            state=fields.get("state"),
            severity=fields.get("severity"),
            server=fields.get("server") or None,
            procedure=fields.get("procedure") or None,
            line=fields.get("line"),
        )
    return cls(message)


class FoundError:
    """An error of ours found in an exception or in the text Spark wrapped it in.

    Attributes:
        cls: the class (from this module, or ``ValueError`` / ``PermissionError``).
        message: its message.
    """

    __slots__ = ("cls", "message")

    def __init__(self, cls: type[BaseException], message: str) -> None:
        self.cls = cls
        self.message = message

    def __str__(self) -> str:
        return f"{self.cls.__name__}: {self.message}"

    def __repr__(self) -> str:
        return f"FoundError({self.cls.__name__}, {self.message!r})"


# The last line of a Python traceback as Spark quotes it ("mssql_cdc.errors.X: message"), or a
# ValueError / PermissionError raised by our code.
_IN_TEXT = re.compile(
    r"mssql_cdc\.errors\.(\w+): (.+)|(?:^|\s)(ValueError|PermissionError): (.+)", re.MULTILINE
)
_BUILTIN: Mapping[str, type[BaseException]] = {
    "ValueError": ValueError,
    "PermissionError": PermissionError,
}


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes and contexts, each once, outermost first."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop(0)
        if item is None or any(item is s for s in seen):
            continue
        seen.append(item)
        todo += [item.__cause__, item.__context__]
    return seen


def _texts(exc: BaseException) -> list[str]:
    """What an exception says: ``str`` and, for Py4J / PySpark wrappers, their JVM message."""
    texts = [str(exc)]
    for attr in ("getMessage", "desc", "_desc"):
        value = getattr(exc, attr, None)
        try:
            value = value() if callable(value) else value
        except Exception:  # a JVM call on a dead gateway
            continue
        if isinstance(value, str) and value:
            texts.append(value)
    return texts


def find_error(exc: BaseException) -> FoundError | None:
    """The mssql-cdc error in ``exc``, whether raised as is or wrapped by Spark.

    Looks at ``exc`` and its causes: an instance of a class of this module (or a
    ``ValueError`` / ``PermissionError``) is returned as found; otherwise the text of
    Spark's ``StreamingQueryException`` / ``PythonException`` / ``Py4JJavaError`` (classic or
    Spark Connect) is searched for the traceback line ``mssql_cdc.errors.<Class>: <message>``
    that Spark quotes from the Python worker. ``None`` when there is none.
    """
    chain = _chain(exc)
    for item in chain:
        if isinstance(item, MssqlCdcError):
            return FoundError(type(item), str(item))
    for item in chain:
        for text in _texts(item):
            found = find_error_in_text(text)
            if found is not None:
                return found
    return None


def find_error_in_text(text: str) -> FoundError | None:
    """The ``mssql_cdc.errors.<Class>: <message>`` traceback line in ``text`` (or a
    ``ValueError`` / ``PermissionError`` line), as Spark quotes a Python worker's failure.

    The last such line wins: in a chained traceback the raised exception comes after its cause.
    """
    found = None
    for match in _IN_TEXT.finditer(text):
        ours, ours_message, builtin, builtin_message = match.groups()
        cls = globals().get(ours) if ours else _BUILTIN.get(builtin)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found = FoundError(cls, (ours_message or builtin_message).strip())
    return found


def _is(exc: BaseException, cls: type[MssqlCdcError]) -> bool:
    found = find_error(exc)
    return found is not None and issubclass(found.cls, cls)


def is_data_loss(exc: BaseException) -> bool:
    """Whether ``exc`` is a :class:`DataLossError`, raised as is or wrapped by Spark.

    A query that stops with it needs a decision (re-snapshot, or ``failOnDataLoss=false``),
    not a blind retry::

        try:
            query.awaitTermination()
        except Exception as exc:
            if mssql_cdc.is_data_loss(exc):
                ...  # re-snapshot
            raise

    Sees through Spark's ``StreamingQueryException``, ``PythonException`` and Py4J / Spark
    Connect wrapping, which keep only the class name and message as text.
    """
    return _is(exc, DataLossError)


def is_schema_changed(exc: BaseException) -> bool:
    """Whether ``exc`` is a :class:`SchemaChangedError`, raised as is or wrapped by Spark.

    The source table's schema changed in a way the running query cannot absorb; restart the
    query to re-infer. Sees through Spark's wrapping as :func:`is_data_loss` does.
    """
    return _is(exc, SchemaChangedError)
