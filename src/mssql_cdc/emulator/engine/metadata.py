"""The metadata functions: object, schema, type and database names and ids, ``QUOTENAME`` and
``HAS_PERMS_BY_NAME``, each as its Microsoft reference page states it.

:class:`Metadata` answers for one database; the rewriter calls it for constant arguments and
the engine (through the functions :mod:`udfs` registers) for any other.

* ``OBJECT_ID('[db.][schema.]name' [, 'type'])`` ("OBJECT_ID (Transact-SQL)"): the id of a
  table (type ``U``) or primary key (``PK``); a one-part name is in the user's default schema
  (``dbo``); a database other than the emulated one (or a system database, which stand for
  it) and a temporary table (``#t``) are NULL, as is an object the user may not see
  ("Metadata Visibility Configuration").
* ``OBJECT_NAME(id [, database_id])``, ``OBJECT_SCHEMA_NAME(id [, database_id])``: NULL for an
  unknown or invisible id, or another database.
* ``SCHEMA_NAME([id])``, ``SCHEMA_ID(['name'])``: the default schema (``dbo``) without an
  argument; NULL when unknown.
* ``TYPE_NAME(id)``, ``TYPE_ID('name')``: the system types ("TYPE_NAME (Transact-SQL)").
* ``DB_ID(['name'])``: the emulated database's ``database_id`` (5, as ``sys.databases`` says)
  for it and for the system databases that stand for it; NULL for another name.
* ``QUOTENAME(s [, q])`` ("QUOTENAME (Transact-SQL)"): ``[s]`` with ``]`` doubled (or ``q``
  one of ``'``, ``"``, ``[``, ``]``, ``(``, ``)``, ``<``, ``>``, `````, ``{``, ``}``); NULL
  for a string longer than 128 characters or another quote character.
* ``HAS_PERMS_BY_NAME(securable, class, permission [, sub_securable, 'COLUMN'])``
  ("HAS_PERMS_BY_NAME (Transact-SQL)"): 1 when the user has the effective permission, 0 when
  not, NULL when the class or permission is not valid or the securable does not exist.
  Classes: ``OBJECT`` (with a ``COLUMN`` sub-securable: ``SELECT``, ``UPDATE`` or
  ``REFERENCES``; ``ANY`` is not valid for a column), ``SCHEMA``, ``DATABASE`` and the server
  (``NULL`` securable and class, or class ``SERVER``), decided by the security model
  (:mod:`security`: grants, roles, column GRANT/DENY; ``db_owner`` and ``sa`` hold every
  permission, ``db_datareader`` SELECT). The other classes SQL Server knows (``LOGIN``,
  ``USER``, ``ROLE``, ...) are not modelled: :func:`unmodelled_class` names them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.emulator.core.systypes import type_by_id, type_by_name

if TYPE_CHECKING:
    from mssql_cdc.emulator.core.catalog import TableDef
    from mssql_cdc.emulator.engine.database import Database

__all__ = ["DATABASE_ID", "Metadata", "parse_name", "quotename", "unmodelled_class"]

#: the emulated database's id (``sys.databases``)
DATABASE_ID = 5
_QUOTES = {"[": ("[", "]"), "]": ("[", "]"), "'": ("'", "'"), '"': ('"', '"'), "(": ("(", ")"),
           ")": ("(", ")"), "<": ("<", ">"), ">": ("<", ">"), "`": ("`", "`"), "{": ("{", "}"),
           "}": ("{", "}")}  # fmt: skip
#: securable classes of sys.fn_builtin_permissions the emulator does not model
_OTHER_CLASSES = frozenset(
    {
        "APPLICATION ROLE",
        "ASSEMBLY",
        "ASYMMETRIC KEY",
        "AVAILABILITY GROUP",
        "CERTIFICATE",
        "CONTRACT",
        "ENDPOINT",
        "FULLTEXT CATALOG",
        "FULLTEXT STOPLIST",
        "LOGIN",
        "MESSAGE TYPE",
        "REMOTE SERVICE BINDING",
        "ROLE",
        "ROUTE",
        "SEARCH PROPERTY LIST",
        "SERVER ROLE",
        "SERVICE",
        "SYMMETRIC KEY",
        "TYPE",
        "USER",
        "XML SCHEMA COLLECTION",
        "DATABASE SCOPED CREDENTIAL",
    }
)
_OBJECT_PERMISSIONS = frozenset(
    {
        "ALTER",
        "CONTROL",
        "DELETE",
        "EXECUTE",
        "INSERT",
        "RECEIVE",
        "REFERENCES",
        "SELECT",
        "TAKE OWNERSHIP",
        "UPDATE",
        "VIEW CHANGE TRACKING",
        "VIEW DEFINITION",
        "UNMASK",
        "ANY",
    }
)
_COLUMN_PERMISSIONS = frozenset({"SELECT", "UPDATE", "REFERENCES"})
_SCHEMA_PERMISSIONS = frozenset(
    {
        "ALTER",
        "CONTROL",
        "CREATE SEQUENCE",
        "DELETE",
        "EXECUTE",
        "INSERT",
        "REFERENCES",
        "SELECT",
        "TAKE OWNERSHIP",
        "UPDATE",
        "VIEW CHANGE TRACKING",
        "VIEW DEFINITION",
        "UNMASK",
        "ANY",
    }
)
_DATABASE_PERMISSIONS = frozenset(
    {
        "ALTER",
        "ALTER ANY ROLE",
        "ALTER ANY SCHEMA",
        "ALTER ANY USER",
        "AUTHENTICATE",
        "BACKUP DATABASE",
        "BACKUP LOG",
        "CHECKPOINT",
        "CONNECT",
        "CONTROL",
        "CREATE FUNCTION",
        "CREATE PROCEDURE",
        "CREATE ROLE",
        "CREATE SCHEMA",
        "CREATE TABLE",
        "CREATE TYPE",
        "CREATE VIEW",
        "DELETE",
        "EXECUTE",
        "INSERT",
        "REFERENCES",
        "SELECT",
        "SHOWPLAN",
        "TAKE OWNERSHIP",
        "UPDATE",
        "VIEW DATABASE STATE",
        "VIEW DATABASE PERFORMANCE STATE",
        "VIEW DEFINITION",
        "ANY",
    }
)
_SERVER_PERMISSIONS = frozenset(
    {
        "ALTER ANY DATABASE",
        "ALTER ANY LOGIN",
        "ALTER SERVER STATE",
        "CONNECT SQL",
        "CONTROL SERVER",
        "CREATE ANY DATABASE",
        "SHUTDOWN",
        "VIEW ANY DATABASE",
        "VIEW ANY DEFINITION",
        "VIEW SERVER STATE",
        "VIEW SERVER PERFORMANCE STATE",
        "ANY",
    }
)
#: what every login holds on the server and every database user in its database (``public``)
_PUBLIC_SERVER = frozenset({"CONNECT SQL", "VIEW ANY DATABASE", "ANY"})
_PUBLIC_DATABASE = frozenset({"CONNECT", "ANY"})


def parse_name(text: str) -> list[str] | None:
    """The parts of a multipart name (``a.[b.c]`` -> ``["a", "b.c"]``; ``db..t`` has an empty
    schema); ``None`` when malformed (an unclosed bracket or quote)."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in '["':
            close = "]" if ch == "[" else '"'
            i += 1
            while True:
                if i >= len(text):
                    return None
                if text[i] == close:
                    if i + 1 < len(text) and text[i + 1] == close:
                        current.append(close)
                        i += 2
                        continue
                    break
                current.append(text[i])
                i += 1
        elif ch == ".":
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current).strip())
    return parts


def quotename(text: str | None, quote: str | None = "[") -> str | None:
    if text is None or quote is None or len(text) > 128 or quote not in _QUOTES:
        return None
    left, right = _QUOTES[quote]
    return left + text.replace(right, right * 2) + right


def unmodelled_class(securable_class: str | None) -> bool:
    """Whether ``securable_class`` is a class SQL Server knows and the emulator does not."""
    return (securable_class or "").strip().upper() in _OTHER_CLASSES


class Metadata:
    """The metadata functions over one database, for one user at a time."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- databases, schemas, types ---

    def db_id(self, name: str | None) -> int | None:
        return DATABASE_ID if name is None or self.db.exists(name) else None

    def schema_name(self, schema_id: int | None) -> str | None:
        return None if schema_id is None else self.db.catalog.schema_name(int(schema_id))

    def schema_id(self, name: str | None) -> int | None:
        return self.db.catalog.schema_id("dbo" if name is None else name)

    @staticmethod
    def type_name(user_type_id: int | None) -> str | None:
        found = None if user_type_id is None else type_by_id(int(user_type_id))
        return None if found is None else found.name

    @staticmethod
    def type_id(name: str | None) -> int | None:
        parts = parse_name(name) if name is not None else None
        if not parts or len(parts) > 2 or (len(parts) == 2 and parts[0].lower() != "sys"):
            return None
        found = type_by_name(parts[-1])
        return None if found is None or parts[-1].lower() == "rowversion" else found.user_type_id

    # --- objects ---

    def _visible(self, user: str, table: TableDef) -> bool:
        return self.db.security.can_see(user, table.schema, table.name)

    def resolve(self, name: str | None, user: str) -> list[str] | None:
        """``[schema, object]`` of a one-, two- or three-part name in this database."""
        parts = parse_name(name) if name is not None else None
        if not parts or len(parts) > 3 or not parts[-1] or parts[-1].startswith("#"):
            return None
        if len(parts) == 3 and not self.db.exists(parts[0]):
            return None
        schema = (parts[-2] if len(parts) > 1 else "") or "dbo"
        return [schema, parts[-1]]

    def object_id(self, name: str | None, object_type: str | None, user: str) -> int | None:
        resolved = self.resolve(name, user)
        if resolved is None:
            return None
        schema, obj = resolved
        kind = None if object_type is None else object_type.strip().upper()
        for table in self.db.catalog.tables.values():
            if table.schema.lower() != schema.lower() or not self._visible(user, table):
                continue
            if table.name.lower() == obj.lower() and kind in (None, "U"):
                return table.object_id
            if table.primary_key and table.pk_name.lower() == obj.lower() and kind in (None, "PK"):
                return table.pk_object_id
        return None

    def object_name(
        self,
        object_id: int | None,
        user: str,
        *,
        schema: bool,
        database_id: int | None = DATABASE_ID,
    ) -> str | None:
        if object_id is None or database_id != DATABASE_ID:
            return None
        for table in self.db.catalog.tables.values():
            if not self._visible(user, table):
                continue
            if table.object_id == object_id:
                return table.schema if schema else table.name
            if table.primary_key and table.pk_object_id == object_id:
                return table.schema if schema else table.pk_name
        return None

    # --- permissions ---

    def has_perms(  # noqa: PLR0911, PLR0912, PLR0917 (a dispatch over classes; its arguments)
        self,
        user: str,
        securable: str | None,
        securable_class: str | None,
        permission: str | None,
        sub_securable: str | None = None,
        sub_class: str | None = None,
    ) -> int | None:
        if permission is None:
            return None
        perm = " ".join(permission.upper().split())
        cls = " ".join((securable_class or "").upper().split()) or None
        security = self.db.security
        owner = security.is_owner(user)
        if cls in (None, "SERVER"):
            if securable is not None or perm not in _SERVER_PERMISSIONS:
                return None
            return int(user == "dbo" or perm in _PUBLIC_SERVER)
        if cls == "DATABASE":
            if securable is not None and not self.db.exists(securable):
                return None
            if perm not in _DATABASE_PERMISSIONS:
                return None
            reader = perm == "SELECT" and security.is_member(user, "db_datareader")
            return int(owner or perm in _PUBLIC_DATABASE or reader)
        if cls == "SCHEMA":
            if securable is None or self.db.catalog.schema_id(securable) is None:
                return None
            if perm not in _SCHEMA_PERMISSIONS:
                return None
            names = ("SELECT", "INSERT", "UPDATE", "DELETE") if perm == "ANY" else (perm,)
            return int(any(security.has_permission(user, p, securable, "") for p in names))
        if cls != "OBJECT":
            return None
        resolved = self.resolve(securable, user)
        table = None if resolved is None else self.db.catalog.get(*resolved)
        if table is None or not self._visible(user, table):
            return None
        if sub_securable is not None or sub_class is not None:
            if (sub_class or "").strip().upper() != "COLUMN" or perm not in _COLUMN_PERMISSIONS:
                return None
            column = table.column(sub_securable or "")
            if column is None:
                return None
            allowed = security.column_permission(user, perm, table.schema, table.name, column.name)
            return int(allowed)
        if perm not in _OBJECT_PERMISSIONS:
            return None
        names = ("SELECT", "INSERT", "UPDATE", "DELETE") if perm == "ANY" else (perm,)
        return int(any(security.has_permission(user, p, table.schema, table.name) for p in names))
