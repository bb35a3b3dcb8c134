"""The change-data query functions and ``sys.fn_cdc_map_time_to_lsn``.

* ``cdc.fn_cdc_get_all_changes_<ci>(from, to, N'all' | N'all update old')``: a closed interval on
  ``__$start_lsn``; ``all`` omits the update before-images (operation 3)
  ("cdc.fn_cdc_get_all_changes_<capture_instance>", Microsoft Learn).
* ``cdc.fn_cdc_get_net_changes_<ci>(from, to, N'all' | N'all with mask' | N'all with merge')``
  exists only when the instance supports net changes; one row per row key with the final
  content and the LSN of the last change. A row inserted in the range is operation 2, a row that
  existed before is 4 (update) or 1 (delete); a row inserted and deleted in the range is left
  out. ``all`` gives a NULL mask, ``all with mask`` the updated columns of operation 4 rows,
  ``all with merge`` operation 5 for insert-or-update and 1 for delete
  ("cdc.fn_cdc_get_net_changes_<capture_instance>", Microsoft Learn).
* Both validate like ``sys.fn_cdc_check_parameters``: NULL, out-of-range or reversed LSNs and
  unknown row filters raise 313; a caller without access gets 229 (:mod:`security`).
* ``sys.fn_cdc_map_time_to_lsn(op, time)`` matches ``tran_end_time``: the "largest less than
  [or equal]" operators return the largest LSN, the "smallest greater than [or equal]" ones the
  smallest, so on ties the lower bound is the first and the upper bound the last commit; NULL
  past the ends [D-T2L]. Dummy rows (``tran_id = 0x00``) take part like any other row
  [inferred].
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from mssql_cdc.emulator.core.catalog import ColumnDef, TableDef
from mssql_cdc.emulator.core.duck import one_row
from mssql_cdc.emulator.core.errors import SqlError, cdc_range
from mssql_cdc.emulator.core.literals import typed_literal
from mssql_cdc.emulator.core.security import permission_denied
from mssql_cdc.emulator.protocol.temporal import datetime_text, parse_temporal
from mssql_cdc.emulator.protocol.types import scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.cdc.state import CaptureInstance
    from mssql_cdc.emulator.engine.database import Database

__all__ = ["change_function", "map_time_to_lsn"]

ALL_PREFIX = "fn_cdc_get_all_changes_"
#: the metadata columns ``fn_cdc_get_all_changes_<ci>`` returns before the captured columns
#: ("Table Returned" of its Microsoft Learn page)
RESULT_METADATA = ("__$start_lsn", "__$seqval", "__$operation", "__$update_mask")
NET_PREFIX = "fn_cdc_get_net_changes_"
_OPERATORS = {
    "largest less than": ("<", "max"),
    "largest less than or equal": ("<=", "max"),
    "smallest greater than": (">", "min"),
    "smallest greater than or equal": (">=", "min"),
}


def map_time_to_lsn(db: Database, operator: object, when: object) -> bytes | None:
    if not isinstance(operator, str) or operator.strip().lower() not in _OPERATORS:
        raise SqlError(
            22986,
            f"The value '{operator}' specified for the relational operator is not valid. Valid "
            "values are 'largest less than', 'largest less than or equal', 'smallest greater "
            "than', and 'smallest greater than or equal'.",
        )
    if when is None or not db.cdc.enabled:
        return None

    moment = parse_temporal(when if isinstance(when, (str, dt.datetime)) else str(when))
    text = datetime_text(moment.to_python())
    compare, aggregate = _OPERATORS[operator.strip().lower()]
    row = one_row(
        db.system.execute(
            f'SELECT {aggregate}(start_lsn) FROM cdc."lsn_time_mapping" '
            f"WHERE tran_end_time {compare} ?",
            [text],
        )
    )
    return None if row is None or row[0] is None else bytes(row[0])


def _check_access(db: Database, user: str, instance: CaptureInstance, function: str) -> None:
    source = (instance.source.schema, instance.source.name)
    if not db.security.can_read_changes(user, source, instance.change_table, instance.role_name):
        raise permission_denied("SELECT", "cdc", function, db.name)


def _lsn(value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise SqlError(
        257,
        "Implicit conversion from data type nvarchar to binary is not allowed. Use the CONVERT "
        "function to run this query.",
    )


def change_function(
    db: Database, user: str, name: str, args: list[object], alias: str | None
) -> exp.Expression | None:
    """The subquery a change function in FROM stands for (``None`` if ``name`` is not one)."""
    lowered = name.lower()
    if lowered.startswith(ALL_PREFIX):
        prefix, net = ALL_PREFIX, False
    elif lowered.startswith(NET_PREFIX):
        prefix, net = NET_PREFIX, True
    else:
        return None
    instance = db.cdc.instance(name[len(prefix) :])
    if instance is None or (net and not instance.supports_net_changes):
        raise SqlError(208, f"Invalid object name 'cdc.{name}'.")
    _check_access(db, user, instance, name)
    function = f"cdc.{prefix}"
    if len(args) != 3:
        raise cdc_range(function)
    from_lsn, to_lsn, row_filter = _lsn(args[0]), _lsn(args[1]), args[2]
    filters = ("all with mask", "all with merge", "all") if net else ("all", "all update old")
    mode = row_filter.strip().lower() if isinstance(row_filter, str) else ""
    if mode not in filters:
        raise cdc_range(function)
    try:
        db.cdc.check_range(instance, from_lsn, to_lsn)
    except SqlError:
        raise cdc_range(function) from None
    assert from_lsn is not None
    assert to_lsn is not None
    ct = db.catalog.get("cdc", instance.change_table)
    assert ct is not None
    if net:
        return _net(
            db,
            instance=instance,
            ct=ct,
            from_lsn=from_lsn,
            to_lsn=to_lsn,
            mode=mode,
            alias=alias or name,
        )
    # The documented result: four metadata columns, then the captured columns; never
    # __$end_lsn or __$command_id, which only the change table has.
    metadata = {c.name: c for c in ct.columns}
    columns = [metadata[name] for name in RESULT_METADATA] + [
        c for c in ct.columns if not c.name.startswith("__$")
    ]
    select = exp.select(*[exp.column(c.name, quoted=True) for c in columns]).from_(
        exp.table_(instance.change_table, db="cdc", quoted=True)
    )
    where: exp.Expression | exp.Condition = exp.Between(
        this=exp.column("__$start_lsn", quoted=True),
        low=exp.HexString(this=from_lsn.hex()),
        high=exp.HexString(this=to_lsn.hex()),
    )
    if mode == "all":
        where = exp.and_(
            where,
            exp.NEQ(this=exp.column("__$operation", quoted=True), expression=exp.Literal.number(3)),
        )
    return _subquery(select.where(where), alias or name, columns)


def _subquery(select: exp.Select, alias: str, columns: list[ColumnDef]) -> exp.Expression:
    sub = exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    sub.meta["tabledef"] = TableDef("cdc", alias, list(columns))
    return sub


@dataclass
class _Net:
    existed: bool
    op: int
    lsn: bytes
    values: list[object]
    order: int
    mask: int = 0


def _net(
    db: Database,
    *,
    instance: CaptureInstance,
    ct: TableDef,
    from_lsn: bytes,
    to_lsn: bytes,
    mode: str,
    alias: str,
) -> exp.Expression:

    captured = [c for c in ct.columns if not c.name.startswith("__$")]
    names = ", ".join(f'"{c.name}"' for c in captured)
    rows = db.system.execute(
        f'SELECT "__$start_lsn", "__$operation", "__$update_mask", {names} '
        f'FROM cdc."{instance.change_table}" WHERE "__$start_lsn" BETWEEN ? AND ? '
        'AND "__$operation" <> 3 '
        'ORDER BY "__$start_lsn", "__$command_id", "__$seqval", "__$operation"',
        [from_lsn, to_lsn],
    ).fetchall()
    keys = [i for i, c in enumerate(captured) if c.name in instance.source.primary_key] or list(
        range(len(captured))
    )
    state: dict[tuple[object, ...], _Net] = {}
    for lsn, op, mask, *values in rows:
        key = tuple(values[i] for i in keys)
        entry = state.get(key)
        if entry is None:
            entry = state[key] = _Net(op != 2, op, bytes(lsn), values, len(state))
        entry.op, entry.lsn, entry.values = op, bytes(lsn), values
        if op == 4 and mask is not None:
            entry.mask |= int.from_bytes(bytes(mask), "big")
    width = (len(instance.columns) + 7) // 8
    out: list[tuple[object, ...]] = []
    for entry in sorted(state.values(), key=lambda e: (e.lsn, e.order)):
        if entry.op == 1 and not entry.existed:
            continue  # inserted and deleted within the range
        final = 1 if entry.op == 1 else (4 if entry.existed else 2)
        net_mask: bytes | None = None
        if mode == "all with merge":
            final = 1 if final == 1 else 5
        elif mode == "all with mask" and final == 4:
            net_mask = entry.mask.to_bytes(width, "big")
        out.append((entry.lsn, final, net_mask, *entry.values))
    lsn_t = scalar("binary", length=10)
    columns = [
        ColumnDef("__$start_lsn", lsn_t, nullable=False),
        ColumnDef("__$operation", scalar("int"), nullable=False),
        ColumnDef("__$update_mask", scalar("varbinary", length=128)),
        *[ColumnDef(c.name, c.type) for c in captured],
    ]
    if not out:
        select = exp.select(
            *[exp.alias_(typed_literal(c.type, None), c.name, quoted=True) for c in columns]
        ).where(exp.false())
        return _subquery(select, alias, columns)
    values_node = exp.Values(
        expressions=[
            exp.Tuple(
                expressions=[typed_literal(c.type, v) for c, v in zip(columns, row, strict=True)]
            )
            for row in out
        ],
        alias=exp.TableAlias(
            this=exp.to_identifier("net"),
            columns=[exp.to_identifier(c.name, quoted=True) for c in columns],
        ),
    )
    select = exp.select(*[exp.column(c.name, quoted=True) for c in columns]).from_(values_node)
    return _subquery(select, alias, columns)
