"""The secret in a connection string: found, and moved out of it (ADR 0035).

Spark shows a data source's options in plan strings (``explain()``, the Spark UI, event logs)
and hides only the values of keys its redaction patterns match (``password``, ``accessToken``,
...), so a password inside ``connectionString`` (``...;PWD=...``) would show in clear.
:func:`move_password` takes it out into the ``password`` option before the options reach Spark.

The grammar is the native client's (docs/native-client.md, "Connection strings"): ``key=value``
pairs separated by ``;``, keys matched ignoring case and surrounding spaces, a value starting
with ``{`` runs to the ``}`` that is not doubled (``}}`` stands for ``}``), an unbraced value
is trimmed. Pure Python; messages never show a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "ENTRA_SECRET_METHODS",
    "PASSWORD_KEYWORDS",
    "Attribute",
    "attributes",
    "has_password",
    "move_password",
    "password_is_entra_secret",
]

#: the keywords of the password in a connection string (lower case)
PASSWORD_KEYWORDS = frozenset({"pwd", "password"})
#: secrets no connection string should hold (the native client ignores the token keyword, but
#: its value would still show)
_SECRET_KEYWORDS = PASSWORD_KEYWORDS | {"accesstoken", "access token"}
_SPACES = " \t\r\n"
#: ``Authentication=`` values (lower case) whose ``PWD`` is an Entra ID secret (a client secret
#: or a user's password), which never travels to executors (mssql_cdc.source.entra, ADR 0189)
ENTRA_SECRET_METHODS = frozenset({"activedirectoryserviceprincipal", "activedirectorypassword"})


@dataclass(frozen=True)
class Attribute:
    """One ``key=value`` pair: the key as written (trimmed), the value unescaped, and the pair's
    text as written (without the ``;``)."""

    key: str
    value: str
    text: str

    def __repr__(self) -> str:  # the value may be a password
        return f"Attribute(key={self.key!r})"


def _bad(why: str) -> ValueError:
    return ValueError(f"Option 'connectionString' is not a connection string: {why}")


def _braced(text: str, i: int, key: str) -> tuple[str, int]:
    """The unescaped value of the braced value at ``text[i] == "{"``, and where it ends."""
    chars: list[str] = []
    n = len(text)
    i += 1
    while True:
        if i >= n:
            raise _bad(f"the braced value of {key[:40]!r} has no closing '}}'")
        if text[i] == "}":
            if i + 1 < n and text[i + 1] == "}":
                chars.append("}")
                i += 2
                continue
            i += 1
            break
        chars.append(text[i])
        i += 1
    while i < n and text[i] in _SPACES:
        i += 1
    if i < n and text[i] != ";":
        raise _bad(f"text after the braced value of {key[:40]!r} (write '}}' as '}}}}')")
    return "".join(chars), i


def attributes(text: str) -> list[Attribute]:
    """The pairs of a connection string, in order.

    Raises:
        ValueError: text the native client would refuse too (an attribute without ``=``, a key
            missing, a brace left open, text after a closing brace); the value is not shown.
    """
    out: list[Attribute] = []
    i, n = 0, len(text)
    while i < n:
        start = i
        while i < n and text[i] not in "=;":
            i += 1
        key = text[start:i].strip(_SPACES)
        if i == n or text[i] == ";":
            if key:
                raise _bad(
                    f"the attribute at offset {start} has no '=' (a value holding ';' goes in "
                    "braces, e.g. PWD={a;b})"
                )
            i += 1
            continue
        i += 1  # '='
        while i < n and text[i] in _SPACES:
            i += 1
        if i < n and text[i] == "{":
            value, i = _braced(text, i, key)
        else:
            value_start = i
            while i < n and text[i] != ";":
                i += 1
            value = text[value_start:i].strip(_SPACES)
        if not key:
            raise _bad("a value has no key before its '='")
        out.append(Attribute(key, value, text[start:i].strip(_SPACES)))
        i += 1  # ';' or the end
    return out


def has_password(text: str) -> bool:
    """True when the connection string holds a password or an access token.

    Raises:
        ValueError: not a connection string (see :func:`attributes`).
    """
    return any(a.key.lower() in _SECRET_KEYWORDS for a in attributes(text))


def move_password(options: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``options`` (documented spellings) whose ``connectionString`` holds no
    password: a ``PWD``/``Password`` in it becomes the ``password`` option (the last one, as
    the native client reads it), or is dropped when ``password`` is given, since that option
    overrides it. The client logs in exactly as before; Spark redacts ``password`` in plans.

    Raises:
        ValueError: ``connectionString`` is not a connection string.
    """
    out = dict(options)
    text = out.get("connectionString")
    if text is None:
        return out
    pairs = attributes(text)
    secrets = [a for a in pairs if a.key.lower() in PASSWORD_KEYWORDS]
    if not secrets:
        return out
    out["connectionString"] = ";".join(a.text for a in pairs if a not in secrets)
    out.setdefault("password", secrets[-1].value)
    return out


def password_is_entra_secret(text: str | None) -> bool:
    """True when the connection string logs in with an Entra ID method whose ``PWD`` (the
    ``password`` option) is a client secret or a user's password: only the driver may hold it.
    A string that does not parse is not one (it is refused where it is parsed)."""
    if not text:
        return False
    try:
        pairs = attributes(text)
    except ValueError:
        return False
    return any(
        a.key.lower() == "authentication" and a.value.strip().lower() in ENTRA_SECRET_METHODS
        for a in pairs
    )
