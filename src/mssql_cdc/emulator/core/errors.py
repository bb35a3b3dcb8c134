"""SQL Server errors the emulator raises: number, state, class (severity) and message text.

Texts are SQL Server's (``sys.messages``) with the placeholders filled in; numbers used:
102 syntax, 174 wrong argument count, 201 missing parameter, 207 invalid column, 208 invalid
object, 229 permission, 245 conversion, 313 CDC range (Microsoft docs,
"cdc.fn_cdc_get_all_changes_<capture_instance>"), 515 NULL into NOT NULL, 911 ``USE`` of a
missing database, 1007 numeric constant past precision 38, 2627 primary key, 2714 object
exists, 2812 unknown procedure, 3902/3903 COMMIT/ROLLBACK without BEGIN, 4060 then 18456 login
to a missing database, 8134 divide by zero, 18456 login, 22901-22962 CDC configuration, 40517
unsupported statement.
"""

from __future__ import annotations

__all__ = ["SqlError"]


class SqlError(Exception):
    """An error reported to the client as an ERROR token; the session continues."""

    def __init__(self, number: int, message: str, *, state: int = 1, klass: int = 16) -> None:
        super().__init__(f"Msg {number}, Level {klass}, State {state}: {message}")
        self.number = number
        self.message = message
        self.state = state
        self.klass = klass


def invalid_object(name: str) -> SqlError:
    return SqlError(208, f"Invalid object name '{name}'.")


def invalid_column(name: str) -> SqlError:
    return SqlError(207, f"Invalid column name '{name}'.")


def syntax_near(token: str) -> SqlError:
    return SqlError(102, f"Incorrect syntax near '{token}'.", state=1, klass=15)


def unsupported(what: str) -> SqlError:
    return SqlError(
        40517,
        f"Keyword or statement option '{what}' is not supported in this version of SQL Server.",
    )


def cdc_range(function: str = "cdc.fn_cdc_get_all_changes_") -> SqlError:
    """Error 313, State 3: how SQL Server reports a NULL or out-of-range LSN to the TVFs."""
    return SqlError(
        313,
        "An insufficient number of arguments were supplied for the procedure or function "
        f"{function} ... .",
        state=3,
    )


def missing_parameter(proc: str, name: str) -> SqlError:
    return SqlError(
        201, f"Procedure or function '{proc}' expects parameter '{name}', which was not supplied."
    )


def conversion(text: str) -> SqlError:
    return SqlError(245, text)


def computed_column(name: str) -> SqlError:
    return SqlError(
        271,
        f'The column "{name}" cannot be modified because it is either a computed column or is '
        "the result of a UNION operator.",
    )


def no_permission() -> SqlError:
    return SqlError(15247, "User does not have permission to perform this action.")
