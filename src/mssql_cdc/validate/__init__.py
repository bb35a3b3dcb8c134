"""Validation: ``reconcile()`` compares a silver table with its SQL Server table, and the checks
of a chunked snapshot's rows (docs/validation.md; ``README.md`` here).

Importing it does not import PySpark (ADR 0004).
"""

from __future__ import annotations

from mssql_cdc.validate.reconcile import ReconcileResult, reconcile

__all__ = ["ReconcileResult", "reconcile"]
