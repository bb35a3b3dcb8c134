"""Which failures are Delta's optimistic-concurrency conflicts: another writer committed to the
same table between this transaction's read and its commit (Delta Lake documentation,
"Concurrency control": the conflict exceptions). Pure; runs wherever a commit is made.

A conflict means the commit did not land and may be retried, or, for an idempotent commit whose
transaction another writer just made, that the work is already done.
"""

from __future__ import annotations

__all__ = ["CONFLICTS", "is_conflict"]

#: the names of Delta's conflict exceptions, as a JVM class name or a Python class name
CONFLICTS = (
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "DeltaConcurrentModificationException",
)


def is_conflict(exc: BaseException) -> bool:
    """True when ``exc`` is one of :data:`CONFLICTS`: by its class (delta-spark's Python
    exceptions) or named in its text (a JVM exception PySpark passes on)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc)
    return any(name in names or name in text for name in CONFLICTS)
