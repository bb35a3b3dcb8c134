"""The test Spark Connect server is started again on another port when its port was taken
between being found free and being bound (tests/connect_server.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import connect_server


def test_a_taken_port_is_tried_again_and_other_failures_are_not(monkeypatch):
    ports = iter([41001, 41002, 41003, 41004])
    monkeypatch.setattr(connect_server, "free_port", lambda: next(ports))
    tried: list[int] = []

    def launch(port, warehouse, log):
        tried.append(port)
        if port == 41001:
            raise RuntimeError("did not start: java.net.BindException: Failed to bind")
        return "process"

    monkeypatch.setattr(connect_server, "launch", launch)
    assert connect_server.launch_on_a_free_port(Path("w"), Path("l")) == (41002, "process")
    assert tried == [41001, 41002]

    def broken(port, warehouse, log):
        tried.append(port)
        raise RuntimeError("did not start: ClassNotFoundException")

    monkeypatch.setattr(connect_server, "launch", broken)
    with pytest.raises(RuntimeError, match="ClassNotFoundException"):
        connect_server.launch_on_a_free_port(Path("w"), Path("l"))
    assert tried == [41001, 41002, 41003]  # not tried again
