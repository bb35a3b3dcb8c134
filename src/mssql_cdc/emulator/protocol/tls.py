"""TLS for the emulator: a self-signed certificate, and TLS over a byte channel.

Two ways TLS meets TDS:

* TDS 7.x: after PRELOGIN the TLS handshake records travel as the payload of PRELOGIN (0x12)
  packets (MS-TDS 3.3.5.2 / 2.2.6.5); afterwards TLS records go straight over TCP. SQL Server
  offers at most TLS 1.2 in this mode, and so does the emulator.
* TDS 8.0 strict: the client's TLS ClientHello is the first thing on the connection, with ALPN
  ``tds/8.0``; PRELOGIN and LOGIN7 then run inside TLS (MS-TDS 3.3.5.1, "8.0 TLS").

Both run on ``ssl.SSLObject`` with memory BIOs, so the framing is under this module's control.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mssql_cdc.emulator.protocol.packets import PacketReader, PacketType, frame
from mssql_cdc.emulator.protocol.wire import ProtocolError

__all__ = ["Certificate", "RawChannel", "TlsChannel", "generate_certificate", "server_contexts"]

ALPN_TDS8 = "tds/8.0"


@dataclass(frozen=True)
class Certificate:
    cert_pem: bytes
    key_pem: bytes = b""

    def __repr__(self) -> str:  # the key never shows
        return "Certificate(<pem>)"


def generate_certificate(hostnames: tuple[str, ...] = ("localhost",)) -> Certificate:
    """A self-signed CA-capable certificate for localhost and 127.0.0.1 (valid 10 years)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0])])
    now = dt.datetime.now(dt.timezone.utc)
    alt_names: list[x509.GeneralName] = [x509.DNSName(h) for h in hostnames]
    alt_names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return Certificate(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def server_contexts(
    cert: Certificate, *, alpn: tuple[str, ...] = (ALPN_TDS8,)
) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(TDS 7.x context capped at TLS 1.2, TDS 8.0 strict context offering ``alpn``: tds/8.0,
    or nothing, for a server whose TLS stack selects no application protocol)."""
    with tempfile.TemporaryDirectory() as tmp:
        cert_file = Path(tmp) / "cert.pem"
        key_file = Path(tmp) / "key.pem"
        cert_file.write_bytes(cert.cert_pem)
        key_file.write_bytes(cert.key_pem)
        legacy = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        legacy.maximum_version = ssl.TLSVersion.TLSv1_2
        legacy.load_cert_chain(cert_file, key_file)
        strict = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        strict.minimum_version = ssl.TLSVersion.TLSv1_2
        strict.load_cert_chain(cert_file, key_file)
        if alpn:
            strict.set_alpn_protocols(list(alpn))
        strict.num_tickets = 0
    return legacy, strict


class RawChannel:
    """Plain TCP through asyncio streams; ``pending`` holds bytes to be read first."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read_some(self) -> bytes:
        return await self.reader.read(65536)

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()


class TlsChannel:
    """TLS on top of another channel, through ``ssl.SSLObject`` and memory BIOs."""

    def __init__(self, context: ssl.SSLContext, raw: RawChannel) -> None:
        self.raw = raw
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.obj = context.wrap_bio(self.incoming, self.outgoing, server_side=True)

    async def handshake_direct(self, first: bytes) -> None:
        """TDS 8.0: the handshake runs on the bare connection."""
        self.incoming.write(first)
        while True:
            try:
                self.obj.do_handshake()
            except ssl.SSLWantReadError:
                await self._flush_raw()
                data = await self.raw.read_some()
                if not data:
                    raise ProtocolError("connection closed during the TLS handshake") from None
                self.incoming.write(data)
                continue
            except ssl.SSLError as exc:
                raise ProtocolError(f"TLS handshake failed: {exc.reason}") from None
            await self._flush_raw()
            return

    async def handshake_in_prelogin(self, packets: PacketReader) -> None:
        """TDS 7.x: handshake records arrive and leave as PRELOGIN packet payloads."""
        while True:
            try:
                self.obj.do_handshake()
            except ssl.SSLWantReadError:
                await self._exchange_prelogin(packets)
                continue
            except ssl.SSLError as exc:
                raise ProtocolError(f"TLS handshake failed: {exc.reason}") from None
            out = self.outgoing.read()
            if out:
                await self.raw.write(frame(PacketType.PRELOGIN, out, 4096))
            # bytes the packet reader already holds are the first TLS records
            if packets.buffer:
                self.incoming.write(bytes(packets.buffer))
                packets.buffer.clear()
            return

    async def _exchange_prelogin(self, packets: PacketReader) -> None:
        out = self.outgoing.read()
        if out:
            await self.raw.write(frame(PacketType.PRELOGIN, out, 4096))
        packet = await packets.read_packet()
        if packet is None:
            raise ProtocolError("connection closed during the TLS handshake")
        ptype, _status, payload = packet
        if ptype != PacketType.PRELOGIN:
            raise ProtocolError(f"packet 0x{ptype:02x} during the TLS handshake")
        self.incoming.write(payload)

    async def _flush_raw(self) -> None:
        out = self.outgoing.read()
        if out:
            await self.raw.write(out)

    async def read_some(self) -> bytes:
        while True:
            try:
                return self.obj.read(65536)
            except ssl.SSLWantReadError:
                data = await self.raw.read_some()
                if not data:
                    return b""
                self.incoming.write(data)
            except ssl.SSLZeroReturnError:
                return b""
            except ssl.SSLError as exc:
                raise ProtocolError(f"TLS error: {exc.reason}") from None

    async def write(self, data: bytes) -> None:
        self.obj.write(data)
        await self._flush_raw()

    @property
    def alpn(self) -> str | None:
        return self.obj.selected_alpn_protocol()
