"""Arrow helpers for the readers: LSN text, constant columns, casting to the declared schema.

Everything is vectorized in Arrow's C++ kernels; no value becomes a Python object.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["cast_to", "constant", "lsn_text"]

_LSN_BYTES = 10
_HEX_PAIRS = pa.array([f"{i:02X}" for i in range(256)], pa.string())


def lsn_text(values: pa.Array) -> pa.Array:
    """``binary(10)`` values as ``0x`` + 20 upper-case hex digits (NULL stays NULL)."""
    n = len(values)
    if n == 0:
        return pa.array([], pa.string())
    fixed = values.cast(pa.binary(_LSN_BYTES))
    data = fixed.buffers()[1]
    octets = pa.Array.from_buffers(pa.uint8(), (fixed.offset + n) * _LSN_BYTES, [None, data])
    octets = octets.slice(fixed.offset * _LSN_BYTES, n * _LSN_BYTES)
    pairs = pc.take(_HEX_PAIRS, octets)
    grouped = pa.FixedSizeListArray.from_arrays(pairs, _LSN_BYTES).cast(pa.list_(pa.string()))
    text = pc.binary_join_element_wise("0x", pc.binary_join(grouped, ""), "")
    if values.null_count:
        text = pc.if_else(values.is_valid(), text, pa.scalar(None, pa.string()))
    return text


def constant(value: object, type_: pa.DataType, length: int) -> pa.Array:
    """An array of ``length`` copies of ``value`` (NULLs for ``None``)."""
    nulls = pa.nulls(length, type_)
    return nulls if value is None else nulls.fill_null(pa.scalar(value, type_))


def cast_to(values: pa.Array, type_: pa.DataType) -> pa.Array:
    """``values`` as ``type_`` (a no-op when it already is)."""
    if values.type.equals(type_):
        return values
    return values.cast(type_)
