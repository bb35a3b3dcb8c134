"""The ledger: every commit decision of the exactly-once pipeline (see ``README.md`` here).

The only code that spells a ``txnAppId``, picks a ``txnVersion`` or asks what already landed.
"""

from __future__ import annotations
