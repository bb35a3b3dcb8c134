"""The CLR system types ``hierarchyid``, ``geography`` and ``geometry``: how the engine holds
them, how SQL Server serializes them on the wire, and their text and WKB forms.

SQL Server sends a CLR type as a UDT column (MS-TDS 2.2.5.5.6, TYPE_INFO 0xF0 with the
database, schema, type and assembly-qualified names) whose values are PLP bytes in the type's
own serialization, documented in [MS-SSCLRT] "Microsoft SQL Server CLR Types Serialization
Formats":

* ``hierarchyid`` (MS-SSCLRT 2.1): each level of the path is a bit pattern chosen by the
  label's range (``01xxT`` for 0-3, ``100xxT`` for 4-7, ...), the label's offset in the range in
  the ``x`` bits, most significant first, and ``T`` = 1 ending the level; the bits of all levels
  are padded with zeros to a whole byte. ``/`` is empty, ``/1/`` is ``0x58``, ``/1/1/`` is
  ``0x5AC0``.
* ``geography`` and ``geometry`` (MS-SSCLRT 2.2, version 1): SRID (int32), version 1, a
  properties byte (valid 0x04, single point 0x08, single line segment 0x10), then either the
  one point or the two points, or the points, the figures (attribute byte, first point) and the
  shapes (parent shape, first figure, OGC type). A geography point is serialized latitude
  first; its WKT and WKB put the longitude first (x), as for every OGC format.

The engine holds a ``hierarchyid`` as its canonical ``/1/2/`` text (``CAST(h AS nvarchar)`` and
``h.ToString()`` give it) and a spatial value as ``<srid>;<WKB in hex>`` (``g.STAsBinary()``
gives the WKB). The emulator supports integer path labels from 0 to 5199 and 2-D points, line
strings and polygons; anything else is refused with a clear error.
"""

from __future__ import annotations

import re
import struct

__all__ = [
    "CLR_TYPES",
    "UDT_NAMES",
    "hierarchyid_bytes",
    "parse_hierarchyid",
    "point",
    "spatial_bytes",
    "spatial_from_wkt",
    "wkb_of",
]

#: the CLR system types the emulator knows, as T-SQL names them
CLR_TYPES = ("hierarchyid", "geography", "geometry")
_ASSEMBLY = (
    "Microsoft.SqlServer.Types, Version=11.0.0.0, Culture=neutral, PublicKeyToken=89845dcd8080cc91"
)
#: type name -> (MAX_BYTE_SIZE as sent, assembly-qualified class name)
UDT_NAMES = {
    "hierarchyid": (892, f"Microsoft.SqlServer.Types.SqlHierarchyId, {_ASSEMBLY}"),
    "geography": (0xFFFF, f"Microsoft.SqlServer.Types.SqlGeography, {_ASSEMBLY}"),
    "geometry": (0xFFFF, f"Microsoft.SqlServer.Types.SqlGeometry, {_ASSEMBLY}"),
}
#: (lowest, highest, pattern) of non-negative hierarchyid labels (MS-SSCLRT 2.1.1)
_PATTERNS = (
    (0, 3, "01xxT"),
    (4, 7, "100xxT"),
    (8, 15, "101xxxT"),
    (16, 79, "110xx0x1xxxT"),
    (80, 1103, "1110xxx0xxx0x1xxxT"),
    (1104, 5199, "11110xxxxx0xxx0x1xxxT"),
)
_LABEL = re.compile(r"[0-9]+")


# --- hierarchyid -----------------------------------------------------------------------------


def parse_hierarchyid(text: str) -> str:
    """The canonical text of ``hierarchyid::Parse(text)``.

    Raises:
        ValueError: not a path of integer labels 0-5199 (``/``, ``/1/``, ``/1/2/``).
    """
    if not text.startswith("/") or not text.endswith("/"):
        raise ValueError(f"'{text}' is not a valid string representation of a SqlHierarchyId")
    labels = text[1:-1].split("/") if text != "/" else []
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise ValueError(
                f"'{text}' is not a valid string representation of a SqlHierarchyId "
                "(the emulator supports integer labels from 0 to 5199)"
            )
        if int(label) > _PATTERNS[-1][1]:
            raise ValueError(f"hierarchyid label {label} is past the emulator's 5199")
    return "/" + "".join(f"{int(label)}/" for label in labels)


def hierarchyid_bytes(text: str) -> bytes:
    """The serialization of a canonical hierarchyid text (MS-SSCLRT 2.1)."""
    bits = []
    for label in (int(p) for p in text.strip("/").split("/") if p):
        low, _high, pattern = next(p for p in _PATTERNS if p[0] <= label <= p[1])
        width = pattern.count("x")
        value = format(label - low, f"0{width}b")
        it = iter(value)
        bits.append("".join(next(it) if c == "x" else "1" if c == "T" else c for c in pattern))
    joined = "".join(bits)
    if not joined:
        return b""
    joined += "0" * (-len(joined) % 8)
    return int(joined, 2).to_bytes(len(joined) // 8, "big")


# --- geography and geometry ------------------------------------------------------------------

_WKT = re.compile(r"\s*(POINT|LINESTRING|POLYGON)\s*\((.*)\)\s*", re.IGNORECASE | re.DOTALL)
_OGC = {"POINT": 1, "LINESTRING": 2, "POLYGON": 3}
Ring = list[tuple[float, float]]


def _points(text: str) -> Ring:
    out = []
    for pair in text.split(","):
        parts = pair.split()
        if len(parts) != 2:
            raise ValueError(f"'{pair.strip()}' is not a 2-D point (the emulator has no Z or M)")
        out.append((float(parts[0]), float(parts[1])))
    return out


def _rings(text: str) -> list[Ring]:
    rings = re.findall(r"\(([^()]*)\)", text)
    if not rings or re.sub(r"\([^()]*\)", "", text).strip(" ,"):
        raise ValueError("a POLYGON is a list of rings in parentheses")
    return [_points(r) for r in rings]


def _wkb(kind: str, rings: list[Ring]) -> bytes:
    out = bytearray(struct.pack("<BI", 1, _OGC[kind]))
    if kind == "POINT":
        out += struct.pack("<dd", *rings[0][0])
        return bytes(out)
    if kind == "POLYGON":
        out += struct.pack("<I", len(rings))
    for ring in rings:
        out += struct.pack("<I", len(ring))
        for x, y in ring:
            out += struct.pack("<dd", x, y)
    return bytes(out)


def spatial_from_wkt(wkt: str, srid: int) -> str:
    """The storage text of ``STGeomFromText(wkt, srid)``: ``<srid>;<WKB hex>``.

    Raises:
        ValueError: not a 2-D POINT, LINESTRING or POLYGON in WKT.
    """
    match = _WKT.fullmatch(wkt)
    if match is None:
        raise ValueError(
            "the emulator reads 2-D POINT, LINESTRING and POLYGON well-known text only"
        )
    kind = match.group(1).upper()
    body = match.group(2)
    rings = _rings(body) if kind == "POLYGON" else [_points(body)]
    if kind == "POINT" and len(rings[0]) != 1:
        raise ValueError("a POINT has one point")
    if kind == "LINESTRING" and len(rings[0]) < 2:
        raise ValueError("a LINESTRING has at least two points")
    return f"{srid};{_wkb(kind, rings).hex()}"


def point(latitude_or_x: float, longitude_or_y: float, srid: int, *, geography: bool) -> str:
    """``geography::Point(lat, long, srid)`` or ``geometry::Point(x, y, srid)``, stored."""
    if geography:
        return f"{srid};{_wkb('POINT', [[(longitude_or_y, latitude_or_x)]]).hex()}"
    return f"{srid};{_wkb('POINT', [[(latitude_or_x, longitude_or_y)]]).hex()}"


def wkb_of(stored: str) -> bytes:
    """``STAsBinary()`` of a stored spatial value."""
    return bytes.fromhex(stored.partition(";")[2])


def _read_wkb(data: bytes) -> tuple[int, list[Ring]]:
    order, kind = struct.unpack_from("<BI", data)
    if order != 1 or kind not in (1, 2, 3):
        raise ValueError("not a 2-D little-endian WKB point, line string or polygon")
    pos = 5
    if kind == 1:
        return kind, [[struct.unpack_from("<dd", data, pos)]]
    count = 1
    if kind == 3:
        (count,) = struct.unpack_from("<I", data, pos)
        pos += 4
    rings = []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        rings.append([struct.unpack_from("<dd", data, pos + 16 * i) for i in range(n)])
        pos += 16 * n
    return kind, rings


def spatial_bytes(stored: str, *, geography: bool) -> bytes:
    """The serialization of a stored spatial value (MS-SSCLRT 2.2, version 1)."""
    srid_text, _, hex_wkb = stored.partition(";")
    kind, rings = _read_wkb(bytes.fromhex(hex_wkb))

    def pack(p: tuple[float, float]) -> bytes:
        x, y = p
        return struct.pack("<dd", y, x) if geography else struct.pack("<dd", x, y)

    head = struct.pack("<iB", int(srid_text), 1)
    valid = 0x04
    if kind == 1:
        return head + bytes([valid | 0x08]) + pack(rings[0][0])
    if kind == 2 and len(rings[0]) == 2:
        return head + bytes([valid | 0x10]) + pack(rings[0][0]) + pack(rings[0][1])
    points = [p for ring in rings for p in ring]
    out = bytearray(head + bytes([valid]))
    out += struct.pack("<I", len(points))
    for p in points:
        out += pack(p)
    out += struct.pack("<I", len(rings))
    offset = 0
    for i, ring in enumerate(rings):
        attribute = 0x01 if kind == 2 else (0x02 if i == 0 else 0x00)
        out += struct.pack("<Bi", attribute, offset)
        offset += len(ring)
    out += struct.pack("<I", 1)
    out += struct.pack("<iiB", -1, 0, kind)
    return bytes(out)
