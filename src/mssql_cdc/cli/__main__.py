"""``python -m mssql_cdc.cli``: the same as the ``mssql-cdc`` command."""

from __future__ import annotations

import sys

from mssql_cdc.cli import main

sys.exit(main())
