"""Every Delta ``txnAppId`` this project writes, named in one place (ADR 0073).

Pure, no Spark. A stream's ``app_id`` is the sink's identity; each kind of commit it makes
carries its own ``txnAppId`` derived from it, so Delta's ``SetTransaction`` keeps one version
per kind and a replay of any commit is skipped by Delta:

* :func:`bronze_app_id` (``<app_id>``): micro-batch appends to bronze, ``txnVersion`` the batch
  id;
* :func:`facts_app_id` (``<app_id>#facts``): each micro-batch's facts commit, ``txnVersion``
  the batch id;
* :func:`events_app_id` (``<app_id>#events``): the bootstrap snapshot's bronze append and its
  ``bootstrap`` facts row, ``txnVersion`` 0.

``snapshot_open`` facts rows carry no ``txnAppId`` (each run that reads the table writes one).
"""

from __future__ import annotations

__all__ = ["BOOTSTRAP_VERSION", "bronze_app_id", "events_app_id", "facts_app_id"]

#: ``txnVersion`` of the bootstrap snapshot's commits (one snapshot per app_id)
BOOTSTRAP_VERSION = 0


def bronze_app_id(app_id: str) -> str:
    """``txnAppId`` of a stream's micro-batch appends to bronze: the app_id itself."""
    return app_id


def facts_app_id(app_id: str) -> str:
    """``txnAppId`` of a stream's micro-batch facts commits."""
    return f"{app_id}#facts"


def events_app_id(app_id: str) -> str:
    """``txnAppId`` of a stream's snapshot commits (target and facts)."""
    return f"{app_id}#events"
