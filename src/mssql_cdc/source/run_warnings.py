"""Planning and option warnings of a stream run, carried into the facts.

The stream's driver-side calls (schema inference, ``initialOffset``, ``latestOffset``,
``partitions``) run in a Python worker of the Spark driver, whose log records go to that
worker's stderr, not to the handlers the job configured. So that a warning found while planning
(an option with no effect, a computed column left out, a time zone that could not be resolved,
a retried call) is not lost there, :class:`RunWarnings` collects every WARNING logged under the
``mssql_cdc`` logger during such a call and, when the reader has a ``metricsPath``, writes each
distinct message once per run as a ``warning`` event file (``MetricsDir.write_event``). The
Delta sink folds those files into ``detail`` ``{"warnings": [...]}`` of the micro-batch it
writes next (``mssql_cdc.sink.facts.event_warnings``; docs/monitoring.md, "Warnings").

Runs on the driver. Never fails the call it wraps: an unwritable file is a WARNING under
``mssql_cdc.metrics`` (which is not collected again).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from mssql_cdc._metrics import WARNING_EVENT, metrics_dir

__all__ = ["AS_EVENT", "RunWarnings"]

#: ``extra=`` of a WARNING whose content an event row of the facts already carries (a schema
#: change, a capture-instance switch, skipped data): logged, but not collected a second time
AS_EVENT = {"mssql_cdc_event": True}

_ROOT = "mssql_cdc"
_OWN = "mssql_cdc.metrics"  # the metrics directory's own warnings: never collected (no loop)


def _key(message: str) -> str:
    return hashlib.sha256(message.encode()).hexdigest()[:16]


class _Collector(logging.Handler):
    def __init__(self, owner: RunWarnings) -> None:
        super().__init__(logging.WARNING)
        self.owner = owner
        self.thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        # only the wrapped call's own thread; the metrics directory's warnings never loop back;
        # a warning an event row carries is not repeated
        if record.thread != self.thread or record.name.startswith(_OWN):
            return
        if getattr(record, "mssql_cdc_event", False):
            return
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed log call is the logger's business
            return
        self.owner.record(message)


class RunWarnings:
    """The warnings of one stream run (one reader object, one query start).

    Args:
        metrics_path: the reader's ``metricsPath`` option; ``None``: warnings are only logged
            (nothing carries them to the facts).
    """

    def __init__(self, metrics_path: str | None) -> None:
        self.metrics_path = metrics_path
        self._recorded: set[str] = set()

    def __repr__(self) -> str:
        return f"RunWarnings(recorded={len(self._recorded)})"

    @property
    def recorded(self) -> frozenset[str]:
        """The messages recorded so far in this run."""
        return frozenset(self._recorded)

    def record(self, message: str) -> None:
        """Records ``message`` once per run: the first time, as a ``warning`` event file."""
        if message in self._recorded:
            return
        self._recorded.add(message)
        if self.metrics_path:
            try:
                metrics = metrics_dir(self.metrics_path)
            except ValueError:  # the option is checked where it is parsed; nothing to add here
                return
            metrics.write_event(WARNING_EVENT, _key(message), {"message": message})

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Records the WARNINGs logged under ``mssql_cdc`` by this thread inside the block."""
        handler = _Collector(self)
        logger = logging.getLogger(_ROOT)
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)
