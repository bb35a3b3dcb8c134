"""Arrow helpers for the readers: LSN text, constant columns, casting to the declared schema.

Everything is vectorized in Arrow's C++ kernels; no value becomes a Python object. Nothing here
hands pyarrow a Python value to convert (``pa.array``, ``pa.scalar``, or a ``str`` argument to
a compute function): pyarrow imports pandas on the first such conversion, to rule out pandas
input, and that import cost about 0.25 s in every new Python worker (docs/performance.md). The
few values the readers need are built from their bytes instead, with :func:`scalar`.
"""

from __future__ import annotations

import datetime as dt
import sys

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["cast_to", "constant", "lsn_text", "pylist", "scalar", "timestamps"]

_LSN_BYTES = 10
_EPOCH = dt.datetime(1970, 1, 1)
#: microseconds in one unit of a ``timestamp``/``duration`` type
_UNIT_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1}


def _string_array(values: list[str]) -> pa.Array:
    """A ``string`` array of ``values`` from its offsets and UTF-8 bytes."""
    data = [v.encode("utf-8") for v in values]
    offsets = [0]
    for item in data:
        offsets.append(offsets[-1] + len(item))
    buffers = [None, pa.py_buffer(_int_bytes(offsets, 4)), pa.py_buffer(b"".join(data))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers)


def _int_bytes(values: list[int], width: int, *, signed: bool = True) -> bytes:
    """``values`` as integers of ``width`` bytes in the machine's byte order (Arrow's in-memory
    layout).

    Raises ``OverflowError`` for a value that does not fit."""
    return b"".join(v.to_bytes(width, sys.byteorder, signed=signed) for v in values)


_HEX_PAIRS = _string_array([f"{i:02X}" for i in range(256)])
_NO_TEXT = _string_array([""])[0]
_HEX_PREFIX = _string_array(["0x"])[0]


def scalar(value: object, type_: pa.DataType) -> pa.Scalar:
    """``value`` as an Arrow scalar of ``type_``, without pyarrow's Python conversion.

    Built from bytes for ``None``, ``str`` as ``string``, ``int`` as an integer type, a naive
    ``datetime`` (read as UTC) as ``timestamp`` and ``timedelta`` as ``duration`` in seconds,
    milliseconds or microseconds; any other pair goes through ``pa.scalar`` (which imports
    pandas). Runs wherever rows are made.

    Raises
    ------
    OverflowError
        An integer that does not fit ``type_``.
    """
    if value is None:
        return pa.nulls(1, type_)[0]
    if isinstance(value, str) and pa.types.is_string(type_):
        return _string_array([value])[0]
    raw: bytes | None = None
    if isinstance(value, int) and not isinstance(value, bool) and pa.types.is_integer(type_):
        signed = pa.types.is_signed_integer(type_)
        raw = _int_bytes([value], type_.bit_width // 8, signed=signed)
    elif _has_unit(type_):
        micros = _micros(value, type_)
        if micros is not None:
            raw = _int_bytes([micros // _UNIT_MICROS[type_.unit]], 8)
    if raw is None:
        return pa.scalar(value, type_)
    return pa.Array.from_buffers(type_, 1, [None, pa.py_buffer(raw)])[0]


def _has_unit(type_: pa.DataType) -> bool:
    if pa.types.is_timestamp(type_):
        return type_.tz is None and type_.unit in _UNIT_MICROS
    return pa.types.is_duration(type_) and type_.unit in _UNIT_MICROS


def _micros(value: object, type_: pa.DataType) -> int | None:
    """Whole microseconds of ``value`` for ``type_``, or ``None`` when not exact or not ours."""
    if pa.types.is_timestamp(type_):
        if not isinstance(value, dt.datetime) or value.tzinfo is not None:
            return None
        value = value - _EPOCH
    if not isinstance(value, dt.timedelta):
        return None
    micros = _whole_micros(value)
    return micros if micros % _UNIT_MICROS[type_.unit] == 0 else None


def _whole_micros(delta: dt.timedelta) -> int:
    """``delta`` in microseconds, exactly (no float)."""
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def timestamps(values: list[dt.datetime | None]) -> pa.Array:
    """Datetimes as ``timestamp[us]`` (a naive one read as UTC, an aware one converted to UTC),
    NULL for ``None``; from bytes."""
    validity = bytearray((len(values) + 7) // 8)
    micros = []
    for i, value in enumerate(values):
        if value is None:
            micros.append(0)
            continue
        validity[i >> 3] |= 1 << (i & 7)
        utc = value if value.tzinfo is None else value.astimezone(dt.timezone.utc)
        micros.append(_whole_micros(utc.replace(tzinfo=None) - _EPOCH))
    buffers = [pa.py_buffer(bytes(validity)), pa.py_buffer(_int_bytes(micros, 8))]
    return pa.Array.from_buffers(pa.timestamp("us"), len(values), buffers)


def lsn_text(values: pa.Array) -> pa.Array:
    """``binary(10)`` values as ``0x`` + 20 upper-case hex digits (NULL stays NULL)."""
    n = len(values)
    if n == 0:
        return pa.nulls(0, pa.string())
    fixed = values.cast(pa.binary(_LSN_BYTES))
    data = fixed.buffers()[1]
    octets = pa.Array.from_buffers(pa.uint8(), (fixed.offset + n) * _LSN_BYTES, [None, data])
    octets = octets.slice(fixed.offset * _LSN_BYTES, n * _LSN_BYTES)
    pairs = pc.take(_HEX_PAIRS, octets)
    grouped = pa.FixedSizeListArray.from_arrays(pairs, _LSN_BYTES).cast(pa.list_(pa.string()))
    text = pc.binary_join_element_wise(_HEX_PREFIX, pc.binary_join(grouped, _NO_TEXT), _NO_TEXT)
    if values.null_count:
        text = pc.if_else(values.is_valid(), text, pa.nulls(1, pa.string())[0])
    return text


def constant(value: object, type_: pa.DataType, length: int) -> pa.Array:
    """An array of ``length`` copies of ``value`` (NULLs for ``None``); see :func:`scalar`."""
    nulls = pa.nulls(length, type_)
    return nulls if value is None else nulls.fill_null(scalar(value, type_))


def pylist(table: pa.Table) -> list[dict[str, object]]:
    """``table.to_pylist()``, except that a time-zone-aware timestamp column (a
    ``datetimeoffset`` key value, ``timestamp[us, tz=UTC]``) is read as its naive UTC values and
    given ``datetime.timezone.utc``: pyarrow imports pandas to convert an aware timestamp."""
    aware = [
        (i, field.name)
        for i, field in enumerate(table.schema)
        if pa.types.is_timestamp(field.type) and field.type.tz is not None
    ]
    for i, name in aware:
        naive = table.column(i).cast(pa.timestamp(table.schema.field(i).type.unit))
        table = table.set_column(i, name, naive)
    rows: list[dict[str, object]] = table.to_pylist()
    for row in rows:
        for _, name in aware:
            value = row[name]
            if isinstance(value, dt.datetime):
                row[name] = value.replace(tzinfo=dt.timezone.utc)
    return rows


def cast_to(values: pa.Array, type_: pa.DataType) -> pa.Array:
    """``values`` as ``type_`` (a no-op when it already is)."""
    if values.type.equals(type_):
        return values
    return values.cast(type_)
