"""The TDS server: the listener, one session per connection (login, batches, RPC, attention)
and the rendering of statement results as TDS tokens. Imports every lower layer."""
