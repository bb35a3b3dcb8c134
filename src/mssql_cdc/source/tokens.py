"""Microsoft Entra ID access tokens for each new connection (``accessTokenProvider``).

An access token lives about an hour; a stream runs for days. With ``accessTokenProvider`` the
reader asks for a token each time it opens a connection (on the driver for offsets and plans,
on an executor for each task), so a token that expired is never reused. The option is text,
because options travel to the executors as strings: ``azure-identity`` (the package's
``DefaultAzureCredential``, scope ``https://database.windows.net/.default``) or
``module:callable`` naming a function of no arguments that returns the token (its own caching is
its business; ``azure-identity``'s credential caches and refreshes).

A token is never logged, and an error names the provider, never a token.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable

__all__ = ["AZURE_SCOPE", "access_token", "resolve"]

log = logging.getLogger("mssql_cdc.source.tokens")

#: the scope of an access token for Azure SQL and SQL Server with Entra ID
AZURE_SCOPE = "https://database.windows.net/.default"
_lock = threading.Lock()
_resolved: dict[str, Callable[[], str]] = {}


def _azure_identity() -> Callable[[], str]:
    try:
        identity = importlib.import_module("azure.identity")
    except ImportError:
        raise ValueError(
            "Option 'accessTokenProvider' is 'azure-identity' but the azure-identity package is "
            "not installed (pip install 'mssql-cdc[azure]')"
        ) from None
    credential = identity.DefaultAzureCredential()

    def token() -> str:
        return str(credential.get_token(AZURE_SCOPE).token)

    return token


def resolve(spec: str) -> Callable[[], str]:
    """The provider function ``spec`` names (resolved once per process).

    Raises:
        ValueError: the module or the callable cannot be found, naming the option.
    """
    with _lock:
        found = _resolved.get(spec)
    if found is not None:
        return found
    if spec == "azure-identity":
        found = _azure_identity()
    else:
        module_name, _, attr = spec.partition(":")
        try:
            target: object = importlib.import_module(module_name)
            for part in attr.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise ValueError(
                f"Option 'accessTokenProvider' names {spec!r}, which cannot be loaded: "
                f"{type(exc).__name__}"
            ) from None
        if not callable(target):
            raise ValueError(f"Option 'accessTokenProvider' names {spec!r}, which is not callable")
        found = target  # checked callable; its result is checked in access_token
    with _lock:
        _resolved.setdefault(spec, found)
    return found


def access_token(provider: str | None, fixed: str | None) -> str | None:
    """The token for a new connection: the provider's fresh one, else the fixed option.

    Raises:
        ValueError: the provider failed or returned something other than non-blank text; the
            message names the provider and the error's class, never a token.
    """
    if provider is None:
        return fixed
    fn = resolve(provider)
    try:
        token = fn()
    except Exception as exc:
        raise ValueError(
            f"Option 'accessTokenProvider': {provider!r} failed ({type(exc).__name__})"
        ) from None
    if not isinstance(token, str) or not token.strip():
        raise ValueError(
            f"Option 'accessTokenProvider': {provider!r} returned {type(token).__name__}, "
            "not the token text"
        )
    log.debug("took a fresh access token from %s", provider)
    return token
