"""Microsoft Entra ID logins named in the connection string (``Authentication=...``), through
``azure-identity`` (the ``azure`` extra; docs/entra.md, ADR 0189).

The keywords are those of Microsoft's ODBC Driver 18 ("Using Microsoft Entra ID with the ODBC
Driver", Microsoft Learn):

=================================== ======================================================
``Authentication=``                 credential (``azure.identity``)
=================================== ======================================================
``ActiveDirectoryServicePrincipal`` ``ClientSecretCredential``: ``UID`` the application
                                    (client) id, ``PWD`` its secret; the tenant from
                                    ``AZURE_TENANT_ID``
``ActiveDirectoryMsi`` /            ``ManagedIdentityCredential``: ``UID`` the client id of a
``ActiveDirectoryManagedIdentity``  user-assigned identity (none: the system-assigned one)
``ActiveDirectoryDefault``          ``DefaultAzureCredential`` (environment, workload and
                                    managed identity, Azure CLI, ...)
``ActiveDirectoryPassword``         ``UsernamePasswordCredential``: ``UID`` the user, ``PWD``
                                    the password (no MFA; tenant ``AZURE_TENANT_ID`` or
                                    ``organizations``)
=================================== ======================================================

The token's scope is ``https://database.windows.net/.default`` (Azure SQL Database and Managed
Instance). ``AZURE_AUTHORITY_HOST`` picks another cloud, as azure-identity documents; with it
set, the credentials with a secret trust the host named without msal's instance discovery
(:func:`_authority_kwargs`).

Tokens are cached per process until :data:`REFRESH_MARGIN_S` before they expire, so each new
connection of a stream that runs for days has a valid one (the credential is asked again
then). Where the tasks get theirs: a method with a secret (service principal, password) never
ships the secret to executors: the driver asks for a token valid for at least
:data:`TASK_TOKEN_MIN_S` while it plans a batch and each partition carries it
(:func:`task_token`); the reader copy pickled into the tasks has no ``password``
(``ReaderOptions.__getstate__``). Methods without a secret (managed identity, default) get
their tokens on each node from the same configuration. A token or secret is never logged,
shown in a ``repr`` or put in an error message.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from mssql_cdc.connection_string import ENTRA_SECRET_METHODS, attributes
from mssql_cdc.errors import LoginError
from mssql_cdc.options import ReaderOptions

__all__ = [
    "METHODS",
    "REFRESH_MARGIN_S",
    "SCOPE",
    "SECRET_METHODS",
    "TASK_TOKEN_MIN_S",
    "EntraLogin",
    "connect_token",
    "entra_login",
    "native_connection_string",
    "ship_token",
    "task_token",
    "token",
    "with_task_token",
]

log = logging.getLogger("mssql_cdc.source.entra")

#: the scope of a token for Azure SQL Database and Managed Instance
SCOPE = "https://database.windows.net/.default"
#: the methods, by the lower-cased keyword value, in their documented spelling
METHODS = {
    m.lower(): m
    for m in (
        "ActiveDirectoryServicePrincipal",
        "ActiveDirectoryMsi",
        "ActiveDirectoryManagedIdentity",
        "ActiveDirectoryDefault",
        "ActiveDirectoryPassword",
    )
}
#: the methods whose credential holds a secret (``PWD``): tokens are made on the driver only
SECRET_METHODS = frozenset(METHODS[m] for m in ENTRA_SECRET_METHODS)
#: a cached token is renewed this many seconds before it expires
REFRESH_MARGIN_S = 300.0
#: a token shipped with a batch's tasks is valid for at least this long when planned
TASK_TOKEN_MIN_S = 1800.0
#: the public client id Microsoft's SQL Server drivers use for ActiveDirectoryPassword
_DRIVER_CLIENT_ID = "2fd908ad-0664-4344-b9be-cd3e8b574c38"
_ENTRA_KEYS = frozenset({"authentication", "uid", "user id", "user", "pwd", "password"})
_OTHER_VALUES = frozenset({"sqlpassword", "notspecified"})
_AADSTS = re.compile(r"AADSTS\d+")


@dataclass(frozen=True)
class EntraLogin:
    """An ``Authentication=`` login: the method (documented spelling) and ``UID`` (client id,
    user or managed identity's client id; ``None`` when absent). Holds no secret."""

    method: str
    uid: str | None = None

    @property
    def has_secret(self) -> bool:
        """Whether the credential needs ``PWD`` (the ``password`` option)."""
        return self.method in SECRET_METHODS


def entra_login(connection_string: str | None, user: str | None = None) -> EntraLogin | None:
    """The Entra login the connection string names, or ``None`` for a SQL login
    (``Authentication`` absent, ``SqlPassword`` or ``NotSpecified``). ``user`` (the ``user``
    option) wins over ``UID``, as it does for SQL logins.

    Raises:
        ValueError: an ``Authentication`` value that is not supported, naming the keyword and
            the values allowed (``ActiveDirectoryIntegrated`` and the interactive methods
            need a person or Kerberos at the keyboard of every node).
    """
    if not connection_string:
        return None
    pairs = {a.key.lower(): a.value for a in attributes(connection_string)}
    value = pairs.get("authentication", "").strip()
    if not value or value.lower() in _OTHER_VALUES:
        return None
    method = METHODS.get(value.lower())
    if method is None:
        raise ValueError(
            f"connectionString: Authentication={value[:60]!r} is not supported; allowed: "
            f"{', '.join(METHODS.values())}, SqlPassword (docs/entra.md)"
        )
    uid = user or pairs.get("uid") or pairs.get("user id") or pairs.get("user") or None
    return EntraLogin(method, uid)


def native_connection_string(connection_string: str) -> str:
    """The connection string the native client gets with a token: without ``Authentication``,
    ``UID`` and ``PWD`` (the credential's, not a SQL login's)."""
    kept = [a.text for a in attributes(connection_string) if a.key.lower() not in _ENTRA_KEYS]
    return ";".join(kept)


def _identity() -> Any:  # noqa: ANN401 (the azure.identity module)
    try:
        return importlib.import_module("azure.identity")
    except ImportError:
        raise ValueError(
            "connectionString asks for an Entra ID login (Authentication=...) but the "
            "azure-identity package is not installed where this runs: pip install "
            "'mssql-cdc[azure]' on the driver and every node"
        ) from None


def _authority_kwargs() -> dict[str, Any]:
    """What a credential that asks an authority (a secret's) gets besides the environment:
    with ``AZURE_AUTHORITY_HOST`` set, ``disable_instance_discovery=True``. azure-identity
    reads the host itself, but msal then checks a host it does not know (an air-gapped cloud's,
    a private one's) with Microsoft's instance discovery at login.microsoftonline.com, which
    such a cloud cannot reach; the operator who named the host vouches for it. Well-known
    hosts (the sovereign clouds) are never discovered, so nothing changes for them."""
    return {"disable_instance_discovery": True} if _authority_host() else {}


def _authority_host() -> str:
    return os.environ.get("AZURE_AUTHORITY_HOST", "").strip()


def _credential(login: EntraLogin, secret: str | None) -> Any:  # noqa: ANN401 (a credential)
    identity = _identity()
    tenant = os.environ.get("AZURE_TENANT_ID") or None
    if login.method == "ActiveDirectoryServicePrincipal":
        if not login.uid or not secret or not tenant:
            raise ValueError(
                "Authentication=ActiveDirectoryServicePrincipal needs UID (the application id), "
                "PWD (its client secret, moved to the password option) and the tenant in the "
                "AZURE_TENANT_ID environment variable where the stream is planned"
            )
        return identity.ClientSecretCredential(tenant, login.uid, secret, **_authority_kwargs())
    if login.method == "ActiveDirectoryPassword":
        if not login.uid or not secret:
            raise ValueError("Authentication=ActiveDirectoryPassword needs UID and PWD")
        return identity.UsernamePasswordCredential(
            _DRIVER_CLIENT_ID,
            login.uid,
            secret,
            tenant_id=tenant or "organizations",
            **_authority_kwargs(),
        )
    if login.method in ("ActiveDirectoryMsi", "ActiveDirectoryManagedIdentity"):
        return identity.ManagedIdentityCredential(client_id=login.uid)
    return identity.DefaultAzureCredential(managed_identity_client_id=login.uid)


@dataclass
class _Cached:
    credential: Any
    token: str | None = None
    expires_on: float = 0.0


_lock = threading.Lock()
_cache: dict[str, _Cached] = {}
_clock: Callable[[], float] = time.time  # tests replace it


def _key(login: EntraLogin, secret: str | None) -> str:
    digest = hashlib.sha256((secret or "").encode()).hexdigest()
    tenant = os.environ.get("AZURE_TENANT_ID", "")
    return f"{login.method}|{login.uid or ''}|{tenant}|{_authority_host()}|{digest}"


def _refused(login: EntraLogin, exc: Exception, secret: str | None) -> LoginError:
    """The credential's failure as a ``LoginError`` naming the keyword and the error's class and
    AADSTS code, never the secret (the provider's text may echo anything)."""
    text = str(exc)
    if secret:
        text = text.replace(secret, "<hidden>")
    codes = sorted(set(_AADSTS.findall(text)))
    code = f" {', '.join(codes)}" if codes else ""
    return LoginError(
        f"Authentication={login.method}: Microsoft Entra ID refused the token request "
        f"({type(exc).__name__}{code}); check UID, the secret (PWD) and AZURE_TENANT_ID "
        "(docs/entra.md)"
    )


def token(login: EntraLogin, secret: str | None, *, min_valid_s: float = REFRESH_MARGIN_S) -> str:
    """An access token for ``login`` valid for at least ``min_valid_s`` seconds: the cached
    one, else a new one from the credential (a fresh credential when the credential's own
    cache returns one that expires sooner). Runs where the connection opens.

    Raises:
        ValueError: azure-identity is not installed, or the login lacks UID, PWD or tenant.
        LoginError: Entra ID refused (a wrong secret); names the keyword, never the secret.
    """
    key = _key(login, secret)
    with _lock:
        entry = _cache.get(key)
        if entry is not None and entry.token and entry.expires_on - _clock() > min_valid_s:
            return entry.token
        if entry is None:
            entry = _Cached(_credential(login, secret))
            _cache[key] = entry
        value = ""
        for attempt in range(2):
            try:
                got = entry.credential.get_token(SCOPE)
            except Exception as exc:
                raise _refused(login, exc, secret) from None
            value, entry.expires_on = str(got.token), float(got.expires_on)
            entry.token = value
            if entry.expires_on - _clock() > min_valid_s or attempt:
                break
            entry.credential = _credential(login, secret)  # its own cache held an older one
        log.debug(
            "Authentication=%s: a token valid until %s",
            login.method,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(entry.expires_on)),
        )
        return value


def task_token(connection_string: str | None, user: str | None, secret: str | None) -> str | None:
    """The token a batch's tasks carry (driver, while planning): for a method with a secret, one
    valid for at least :data:`TASK_TOKEN_MIN_S`; ``None`` otherwise (no Entra login, or the
    tasks ask the credential themselves)."""
    login = entra_login(connection_string, user)
    if login is None or not login.has_secret:
        return None
    return token(login, secret, min_valid_s=TASK_TOKEN_MIN_S)


def with_task_token(options: ReaderOptions, shipped: str | None) -> ReaderOptions:
    """``options`` for a task (executor) whose partition carries ``shipped``: the token becomes
    the ``accessToken`` the connection logs in with; ``options`` as they are without one."""
    return options if shipped is None else replace(options, access_token=shipped)


def connect_token(options: ReaderOptions) -> str | None:
    """The token a new connection logs in with for an ``Authentication=`` login, ``None`` for a
    SQL login. On the driver (the secret at hand) or for a method without a secret: the
    credential's (cached until near expiry); in a task of a method with a secret: the token its
    partition carried.

    Raises:
        LoginError: a task of a method with a secret got no token, or Entra ID refused.
        ValueError: see :func:`token`.
    """
    login = entra_login(options.connection_string, options.user)
    if login is None:
        return None
    if login.has_secret and options.password is None:
        if options.access_token:
            return options.access_token
        raise LoginError(
            f"Authentication={login.method}: this task has no token (the secret stays on the "
            "driver, which sends a token with each batch's partitions); read through the "
            "mssql_cdc data sources, which do"
        )
    return token(login, options.password)


P = TypeVar("P")


def ship_token(options: ReaderOptions, parts: list[P]) -> list[P]:
    """``parts`` (frozen dataclasses with ``access_token``), each carrying the token
    :func:`task_token` makes for them; unchanged when the tasks need none. Driver, once per
    batch (stream) or read (snapshot)."""
    shipped = task_token(options.connection_string, options.user, options.password)
    if shipped is None:
        return parts
    return [replace(p, access_token=shipped) for p in parts]  # type: ignore[type-var]
