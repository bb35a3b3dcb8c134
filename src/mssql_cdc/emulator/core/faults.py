"""Injected faults: dropped connections and deadlock victims, armed through the control API.

A fault targets one session: a spid, or (``spid=None``) the next connection the server accepts
after the fault was armed. It fires once, at its point:

* ``login``: the server has read LOGIN7 and closes the connection without answering;
* ``mid_result``: the response is cut after ``after_rows`` rows or ``after_bytes`` bytes (of
  the framed reply) and the connection is closed, as a network failure would;
* ``between_requests``: the connection is closed after the session has answered
  ``after_requests`` more requests;
* ``deadlock``: the session's next statement is chosen as a deadlock victim: its transaction is
  rolled back and it gets error 1205, severity 13 ("Detect and end deadlocks", Microsoft docs:
  the victim's transaction is rolled back and 1205 is returned to its application);
* ``error``: the session's next statement fails with error ``number`` (default 50000, severity
  16, the number ``RAISERROR`` with a message text uses) and ``message``; the session and its
  transaction go on, as after any statement error of severity 16. A reader task that gets it
  fails (Spark's "failed task").

:attr:`Fault.fired` is set when the fault hits, so tests wait for the event instead of sleeping.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

__all__ = ["POINTS", "Fault", "FaultRegistry"]

log = logging.getLogger("mssql_cdc.emulator.core.faults")
POINTS = ("login", "mid_result", "between_requests", "deadlock", "error")


@dataclass
class Fault:
    point: str
    spid: int | None
    min_spid: int
    after_rows: int | None = None
    after_bytes: int | None = None
    after_requests: int = 1
    number: int = 50000
    message: str = "injected fault"
    fired: threading.Event = field(default_factory=threading.Event)
    hit_spid: int | None = None

    def matches(self, spid: int) -> bool:
        if self.hit_spid is not None:
            return spid == self.hit_spid
        if self.spid is not None:
            return spid == self.spid
        return spid >= self.min_spid

    def wait(self, timeout: float = 10.0) -> bool:
        """Block until the fault has fired (or ``timeout`` seconds passed)."""
        return self.fired.wait(timeout)


class FaultRegistry:
    """The armed faults of one server; sessions ask it at each point."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self.next_spid = 0

    def arm(self, fault: Fault) -> Fault:
        if fault.point not in POINTS:
            raise ValueError(f"unknown fault point {fault.point!r}; expected one of {POINTS}")
        with self._lock:
            self._faults.append(fault)
        log.info("fault armed: %s for spid %s", fault.point, fault.spid or "next connection")
        return fault

    def take(self, point: str, spid: int) -> Fault | None:
        """The armed fault for ``point`` and ``spid``, removed and marked fired (or ``None``)."""
        with self._lock:
            for fault in self._faults:
                if fault.point == point and fault.matches(spid):
                    self._faults.remove(fault)
                    fault.hit_spid = spid
                    break
            else:
                return None
        log.info("fault fired: %s on spid %d", point, spid)
        fault.fired.set()
        return fault

    def armed_for(self, point: str, spid: int) -> list[Fault]:
        """The faults for ``point`` that would match ``spid`` now (read when a request arrives)."""
        with self._lock:
            return [f for f in self._faults if f.point == point and f.matches(spid)]

    def count_request(self, spid: int, eligible: list[Fault]) -> Fault | None:
        """A request was answered: the ``between_requests`` fault that is now due, if any.

        Only faults armed before the request arrived (``eligible``) count it.
        """
        with self._lock:
            for fault in self._faults:
                if fault in eligible and fault.matches(spid):
                    fault.hit_spid = spid
                    fault.after_requests -= 1
                    if fault.after_requests > 0:
                        return None
                    self._faults.remove(fault)
                    break
            else:
                return None
        log.info("fault fired: between_requests on spid %d", spid)
        fault.fired.set()
        return fault

    def pending(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
