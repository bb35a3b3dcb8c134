"""The engine's foundation, below CDC: SQL errors, the catalog, the transaction log and its
LSNs, locks, security, the clock, fault injection, statement results and engine literals.
Imports only :mod:`mssql_cdc.emulator.protocol`."""
