"""Which stream a facts row belongs to: a stream is all its generations (docs/generations.md).

After ``on_data_loss="resnapshot"`` opens generation ``n``, the stream writes its facts rows as
``<app_id>.g<n>``; ``mssql-cdc status`` and ``report`` show each stream once, under the
``app_id`` the user gave, with its live generation's figures. The id rule itself is the sink's
(``mssql_cdc.sink.of_stream``); this module only asks it. Pure Python; runs on the driver.
"""

from __future__ import annotations

from mssql_cdc.sink import of_stream

__all__ = ["stream_of"]


def stream_of(sink_id: str) -> str:
    """The stream ``sink_id`` (a facts row's ``app_id``) belongs to: the ``app_id`` whose
    generation it is (``of_stream``), else ``sink_id`` itself (generation 0)."""
    for end in range(len(sink_id) - 1, 0, -1):
        if of_stream(sink_id[:end], sink_id):
            return sink_id[:end]
    return sink_id
