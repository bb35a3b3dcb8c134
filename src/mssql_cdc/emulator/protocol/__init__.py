"""The TDS wire protocol (MS-TDS) and SQL Server's data types as TDS carries them: packets,
PRELOGIN and TLS, LOGIN7, RPC requests, response tokens, type info and value encoding,
collations, date/time values. The emulator's bottom layer: it imports no other part of it."""
