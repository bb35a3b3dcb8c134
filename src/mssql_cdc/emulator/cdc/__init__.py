"""CDC semantics: capture instances and change tables (``state``), the capture job's cleanup,
the ``sys.sp_cdc_*`` procedures and the ``cdc.fn_cdc_*`` / ``sys.fn_cdc_*`` functions.
Imports only the ``core`` and ``protocol`` layers; the engine calls into it."""
