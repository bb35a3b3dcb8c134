"""Control of flow in a batch: ``IF condition statement [ELSE statement]`` and ``BEGIN ...
END`` blocks ("IF...ELSE (Transact-SQL)", "BEGIN...END (Transact-SQL)").

sqlglot does not parse these reliably (a ``CREATE TABLE`` in a block swallows its ``END``), so
:func:`split` cuts a batch into a tree on the tokens first: runs of plain statements (which
the executor parses as before), conditions and blocks. ``BEGIN TRAN[SACTION]`` is a statement,
and an ``END`` closes a ``CASE`` before a block. A branch without ``BEGIN`` is the first
statement of the text up to the next ``;``, ``ELSE`` or ``END`` (the executor parses that run
and runs its further statements after the ``IF``). ``WHILE``, ``BEGIN TRY``/``CATCH``,
``GOTO`` and ``RETURN`` are not there: error 40517 names them. A ``BEGIN`` without ``END`` (or
an ``END`` or ``ELSE`` out of place) is error 102, as SQL Server reports it.

A batch without these keywords is one run, parsed as it always was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import TokenType
from sqlglot.tokenizer_core import Token

from mssql_cdc.emulator.core.errors import syntax_near, unsupported

__all__ = ["Block", "If", "Run", "split"]

_CONTROL = frozenset({"IF", "BEGIN", "END", "ELSE", "WHILE", "GOTO", "RETURN", "BREAK", "CONTINUE"})
_TRANSACTION = frozenset({"TRAN", "TRANSACTION", "DISTRIBUTED"})
#: words that start a statement: where an IF's condition ends
_STATEMENT_START = frozenset(
    {
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "BEGIN",
        "EXEC",
        "EXECUTE",
        "SET",
        "DECLARE",
        "CREATE",
        "ALTER",
        "DROP",
        "IF",
        "COMMIT",
        "ROLLBACK",
        "GRANT",
        "REVOKE",
        "DENY",
        "USE",
        "TRUNCATE",
        "MERGE",
        "PRINT",
        "RAISERROR",
        "THROW",
        "WHILE",
        "RETURN",
        "WITH",
        "SAVE",
    }
)


@dataclass
class Run:
    """Text holding one or more plain statements."""

    text: str


@dataclass
class If:
    condition: str
    then: list[Run | If | Block]
    otherwise: list[Run | If | Block] | None = None
    #: statements of an unbraced branch's run that come after the branch's first one
    single_then: bool = False
    single_else: bool = False


@dataclass
class Block:
    items: list[Run | If | Block] = field(default_factory=list)


def _tokens(text: str) -> list[Token]:
    try:
        return list(sqlglot.Dialect.get_or_raise("tsql").tokenize(text))
    except sqlglot.errors.TokenError:
        return []  # the executor's parser reports the unclosed quote


def _word(token: Token) -> str:
    if token.token_type in (TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.IDENTIFIER):
        return ""  # a string or a [bracketed] name is never a keyword
    return token.text.upper()


def needs_split(text: str) -> bool:
    """Whether the batch has control-of-flow keywords (else it is one plain run)."""
    tokens = _tokens(text)
    case_depth = 0
    for i, token in enumerate(tokens):
        word = _word(token)
        if word == "CASE":
            case_depth += 1
        elif word == "END" and case_depth:
            case_depth -= 1
        elif case_depth:
            continue
        elif word == "BEGIN":
            following = _word(tokens[i + 1]) if i + 1 < len(tokens) else ""
            if following not in _TRANSACTION:
                return True
        elif word in _CONTROL - {"BEGIN"}:
            return True
    return False


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.pos = 0

    def _peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return _word(self.tokens[i]) if i < len(self.tokens) else ""

    def _start(self) -> int:
        return self.tokens[self.pos].start if self.pos < len(self.tokens) else len(self.text)

    def items(self, *, in_block: bool) -> list[Run | If | Block]:
        out: list[Run | If | Block] = []
        while self.pos < len(self.tokens):
            word = self._peek()
            if word == "END":
                if not in_block:
                    raise syntax_near("END")
                return out
            if word == "ELSE":
                raise syntax_near("ELSE")
            if word == ";":
                self.pos += 1
                continue
            out.append(self.item())
        if in_block:
            raise syntax_near(self.text.strip().split()[-1] if self.text.strip() else "END")
        return out

    def item(self) -> Run | If | Block:
        word = self._peek()
        if word in ("WHILE", "GOTO", "RETURN", "BREAK", "CONTINUE"):
            raise unsupported(word)
        if word == "IF":
            return self._if()
        if word == "BEGIN" and self._peek(1) not in _TRANSACTION:
            if self._peek(1) in ("TRY", "CATCH", "CONVERSATION", "DIALOG"):
                raise unsupported(f"BEGIN {self._peek(1)}")
            self.pos += 1
            block = Block(self.items(in_block=True))
            self.pos += 1  # END
            return block
        return self._run(single=False)

    def _run(self, *, single: bool) -> Run:
        """Plain statements up to a control keyword (or, for a branch, ``;``)."""
        start = self._start()
        case_depth = 0
        while self.pos < len(self.tokens):
            word = self._peek()
            if word == "CASE":
                case_depth += 1
            elif case_depth:  # CASE ... ELSE ... END is an expression
                case_depth -= word == "END"
            elif (
                word in ("END", "ELSE", "IF", "WHILE", "GOTO", "RETURN")
                or (word == "BEGIN" and self._peek(1) not in _TRANSACTION)
                or (word == ";" and single)
            ):
                break
            self.pos += 1
        return Run(self.text[start : self._start()])

    def _if(self) -> If:
        self.pos += 1
        start = self._start()
        depth = 0
        while self.pos < len(self.tokens):
            word = self._peek()
            depth += word == "("
            depth -= word == ")"
            if depth == 0 and word in _STATEMENT_START and self.pos > 0 and (self._start() > start):
                break
            self.pos += 1
        condition = self.text[start : self._start()].strip()
        if not condition or self.pos >= len(self.tokens):
            raise syntax_near(condition.split()[-1] if condition else "IF")
        node = If(condition, [])
        node.then, node.single_then = self._branch()
        while self._peek() == ";":
            self.pos += 1
        if self._peek() == "ELSE":
            self.pos += 1
            node.otherwise, node.single_else = self._branch()
        return node

    def _branch(self) -> tuple[list[Run | If | Block], bool]:
        word = self._peek()
        if word == "IF" or (word == "BEGIN" and self._peek(1) not in _TRANSACTION):
            return [self.item()], False
        return [self._run(single=True)], True


def split(text: str) -> list[Run | If | Block]:
    """The batch as a tree of :class:`Run`, :class:`If` and :class:`Block`."""
    return _Parser(text).items(in_block=False)
