"""Logins, database users, roles and grants; the permission checks of the emulator.

The model is a small part of SQL Server's:

* ``sa`` is sysadmin and passes every check; other logins come from ``CREATE LOGIN ... WITH
  PASSWORD``. A login maps to the user made by ``CREATE USER u FOR|FROM LOGIN l`` (else it
  is ``guest``, with no permissions).
* ``GRANT|REVOKE|DENY perm ON SCHEMA::s | [OBJECT::]s.t TO|FROM principal``; a DENY beats any
  GRANT. Column permissions: ``GRANT|DENY perm (c1, c2) ON s.t TO u`` or ``... ON s.t (c1, c2)
  TO u``; a column DENY beats a table GRANT, and a column GRANT beats a table DENY ("DENY
  Object Permissions (Transact-SQL)": a table-level DENY does not take precedence over a
  column-level GRANT). Roles: ``CREATE ROLE``, ``ALTER ROLE r ADD|DROP MEMBER u``,
  ``sp_addrolemember``; fixed roles ``db_owner`` (everything) and ``db_datareader`` (SELECT
  everywhere).
* Change data ("Work with change data", Microsoft docs):
  a caller may read a capture instance when it is sysadmin or ``db_owner``, or when it has
  SELECT on the source table and on the change data (the ``cdc`` schema or the change table)
  and, if the instance has a gating role (``@role_name``), is a member of it. Otherwise the
  query functions raise 229 and ``fn_cdc_get_min_lsn`` returns the zero LSN.
  ``sys.sp_cdc_enable_table`` creates the gating role if it does not exist (its reference page).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from mssql_cdc.emulator.core.errors import SqlError

__all__ = ["SYSADMIN", "Security", "permission_denied"]

SYSADMIN = "sa"
FIXED_ROLES = ("db_owner", "db_datareader", "public")
_NAME = r"\[?([A-Za-z_#@$][\w#@$]*)\]?"
_CREATE_LOGIN = re.compile(rf"^LOGIN\s+{_NAME}\s+WITH\s+PASSWORD\s*=\s*N?'((?:[^']|'')*)'", re.I)
_CREATE_USER = re.compile(rf"^USER\s+{_NAME}(?:\s+(?:FOR|FROM)\s+LOGIN\s+{_NAME})?", re.I)
_CREATE_ROLE = re.compile(rf"^ROLE\s+{_NAME}", re.I)
_ALTER_ROLE = re.compile(rf"^ROLE\s+{_NAME}\s+(ADD|DROP)\s+MEMBER\s+{_NAME}", re.I)
_PERMISSION = re.compile(
    r"^((?:\w+\s*,\s*)*\w+)\s*(?:\(([^)]*)\))?\s+ON\s+(?:(SCHEMA|OBJECT)::)?([\w\[\].]+)"
    rf"\s*(?:\(([^)]*)\))?\s+(?:TO|FROM)\s+{_NAME}\s*$",
    re.I,
)


def permission_denied(permission: str, schema: str, name: str, database: str) -> SqlError:
    """Error 229 as SQL Server words it."""
    return SqlError(
        229,
        f"The {permission.upper()} permission was denied on the object '{name}', "
        f"database '{database}', schema '{schema}'.",
        state=5,
        klass=14,
    )


@dataclass
class _Grants:
    granted: set[tuple[str, str]] = field(default_factory=set)  # (permission, securable)
    denied: set[tuple[str, str]] = field(default_factory=set)


def _strip(name: str) -> str:
    return name.strip().strip("[]").lower()


class Security:
    """Principals and permissions of the one emulated database (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.logins: dict[str, str] = {}
        self.users: dict[str, str] = {}  # user -> login
        self.roles: dict[str, set[str]] = {r: set() for r in FIXED_ROLES}
        self.grants: dict[str, _Grants] = {}

    # --- principals ---

    def authenticate(self, login: str, password: str) -> bool:
        with self._lock:
            return self.logins.get(login.lower()) == password

    def user_of(self, login: str) -> str:
        if login.lower() == SYSADMIN:
            return "dbo"
        with self._lock:
            for user, mapped in self.users.items():
                if mapped == login.lower():
                    return user
        return "guest"

    def create_role(self, role: str) -> None:
        with self._lock:
            self.roles.setdefault(role.lower(), set())

    def is_member(self, user: str, role: str) -> bool:
        if user == "dbo":
            return True
        with self._lock:
            return user in self.roles.get(role.lower(), set())

    # --- statements ---

    def execute(self, verb: str, text: str) -> None:  # noqa: PLR0912 (a dispatch over statements)
        """Run CREATE LOGIN/USER/ROLE, ALTER ROLE, GRANT/REVOKE/DENY (``text`` after the verb)."""
        verb = verb.upper()
        body = text.strip().rstrip(";").strip()
        with self._lock:
            if verb == "CREATE" and (m := _CREATE_LOGIN.match(body)):
                name = m.group(1).lower()
                if name in self.logins or name == SYSADMIN:
                    raise SqlError(15025, f"The server principal '{m.group(1)}' already exists.")
                self.logins[name] = m.group(2).replace("''", "'")
                return
            if verb == "CREATE" and (m := _CREATE_USER.match(body)):
                user = m.group(1).lower()
                if user in self.users:
                    raise SqlError(
                        15023,
                        f"User, group, or role '{m.group(1)}' already exists in the "
                        "current database.",
                    )
                login = (m.group(2) or m.group(1)).lower()
                if login not in self.logins:
                    raise SqlError(
                        15007,
                        f"'{m.group(2) or m.group(1)}' is not a valid login or you do not "
                        "have permission.",
                    )
                self.users[user] = login
                return
            if verb == "CREATE" and (m := _CREATE_ROLE.match(body)):
                self.roles.setdefault(m.group(1).lower(), set())
                return
            if verb == "ALTER" and (m := _ALTER_ROLE.match(body)):
                self._membership(m.group(1), m.group(3), m.group(2).upper() == "ADD")
                return
            if verb in ("GRANT", "REVOKE", "DENY") and (m := _PERMISSION.match(body)):
                permissions = [p.strip().upper() for p in m.group(1).split(",")]
                securable = self._securable(m.group(3), m.group(4))
                columns = [_strip(c) for c in (m.group(2) or m.group(5) or "").split(",")]
                securables = [f"column::{securable[8:]}.{c}" for c in columns if c]
                if securables and not securable.startswith("object::"):
                    raise SqlError(102, "Incorrect syntax near '('.", klass=15)
                principal = m.group(6).lower()
                if principal not in self.users and principal not in self.roles:
                    raise SqlError(
                        15151,
                        f"Cannot find the user '{m.group(6)}', because it does not exist "
                        "or you do not have permission.",
                    )
                grants = self.grants.setdefault(principal, _Grants())
                for permission in permissions:
                    for target in securables or [securable]:
                        key = (permission, target)
                        if verb == "GRANT":
                            grants.granted.add(key)
                            grants.denied.discard(key)
                        elif verb == "DENY":
                            grants.denied.add(key)
                        else:
                            grants.granted.discard(key)
                            grants.denied.discard(key)
                return
        raise SqlError(
            40517,
            f"Keyword or statement option '{verb} {body.split(' ')[0]}' is not supported in "
            "this version of SQL Server.",
        )

    def add_role_member(self, role: str, member: str) -> None:
        """``sp_addrolemember``."""
        with self._lock:
            self._membership(role, member, add=True)

    def _membership(self, role: str, member: str, add: bool) -> None:
        role_key = role.lower()
        if role_key not in self.roles:
            raise SqlError(
                15151,
                f"Cannot alter the role '{role}', because it does not exist or you do "
                "not have permission.",
            )
        if add:
            self.roles[role_key].add(member.lower())
        else:
            self.roles[role_key].discard(member.lower())

    @staticmethod
    def _securable(kind: str | None, name: str) -> str:
        parts = [_strip(p) for p in name.split(".")]
        if (kind or "").upper() == "SCHEMA":
            return f"schema::{parts[-1]}"
        if len(parts) == 1:
            parts.insert(0, "dbo")
        return f"object::{parts[-2]}.{parts[-1]}"

    # --- checks ---

    def _principals(self, user: str) -> list[str]:
        roles = [r for r, members in self.roles.items() if user in members]
        return [user, "public", *roles]

    def has_permission(self, user: str, permission: str, schema: str, table: str) -> bool:
        """``permission`` on ``schema.table`` through a grant on it, its schema, or a role."""
        if user == "dbo":
            return True
        with self._lock:
            principals = self._principals(user)
            if "db_owner" in principals:
                return True
            keys = {
                (permission.upper(), f"object::{schema.lower()}.{table.lower()}"),
                (permission.upper(), f"schema::{schema.lower()}"),
            }
            granted = permission.upper() == "SELECT" and "db_datareader" in principals
            for principal in principals:
                grants = self.grants.get(principal)
                if grants is None:
                    continue
                if keys & grants.denied:
                    return False
                granted = granted or bool(keys & grants.granted)
            return granted

    def column_permission(
        self, user: str, permission: str, schema: str, table: str, column: str
    ) -> bool:
        """``permission`` on one column: a column DENY beats every GRANT, a column GRANT beats
        a table DENY, else the table's permission decides (module docstring)."""
        if self.is_owner(user):
            return True
        key = (permission.upper(), f"column::{schema.lower()}.{table.lower()}.{column.lower()}")
        with self._lock:
            principals = self._principals(user)
            entries = [g for p in principals if (g := self.grants.get(p)) is not None]
        if any(key in g.denied for g in entries):
            return False
        if any(key in g.granted for g in entries):
            return True
        return self.has_permission(user, permission, schema, table)

    def has_column_rules(self, schema: str, table: str) -> bool:
        """Whether any principal holds a column GRANT or DENY on the table."""
        prefix = f"column::{schema.lower()}.{table.lower()}."
        with self._lock:
            return any(
                key[1].startswith(prefix)
                for g in self.grants.values()
                for key in (*g.granted, *g.denied)
            )

    def can_see(self, user: str, schema: str, table: str) -> bool:
        """Whether ``user`` sees the table's metadata: it holds some permission on it (on the
        table, its schema, or one of its columns)."""
        if any(
            self.has_permission(user, p, schema, table)
            for p in ("SELECT", "INSERT", "UPDATE", "DELETE")
        ):
            return True
        prefix = f"column::{schema.lower()}.{table.lower()}."
        with self._lock:
            principals = self._principals(user)
            return any(
                key[1].startswith(prefix)
                for p in principals
                if (g := self.grants.get(p)) is not None
                for key in g.granted
            )

    def is_owner(self, user: str) -> bool:
        return user == "dbo" or self.is_member(user, "db_owner")

    def can_read_changes(
        self, user: str, source: tuple[str, str], change_table: str, role: str | None
    ) -> bool:
        """The change-data rule of the module docstring."""
        if self.is_owner(user):
            return True
        if not self.has_permission(user, "SELECT", *source):
            return False
        if not self.has_permission(user, "SELECT", "cdc", change_table):
            return False
        return role is None or self.is_member(user, role)
