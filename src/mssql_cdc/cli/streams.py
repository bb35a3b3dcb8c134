"""Which stream a facts row belongs to: a stream is all its generations (docs/generations.md).

After ``on_data_loss="resnapshot"`` opens generation ``n``, the stream writes its facts rows as
``<app_id>.g<n>``; ``mssql-cdc status`` and ``report`` show each stream once, under the
``app_id`` the user gave, with its live generation's figures. The id rule itself is the
ledger's (``mssql_cdc.sink.stream_of_sink``, spelled in ``sink/ledger/ids.py``); this module
only asks it. Pure Python; runs on the driver.
"""

from __future__ import annotations

from mssql_cdc.sink import stream_of_sink

__all__ = ["stream_of"]


def stream_of(sink_id: str) -> str:
    """The stream ``sink_id`` (a facts row's ``app_id``) belongs to: the ``app_id`` whose
    generation it is (``stream_of_sink``), else ``sink_id`` itself (generation 0)."""
    return stream_of_sink(sink_id)
