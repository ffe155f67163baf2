"""svc-helpers for Python: helpers shared by the svc SDKs (sdk.md §14, §15).

Subpackages: :mod:`svc_helpers.observability` (telemetry and ``Logger``, sdk.md §12).
"""

__version__ = "0.1.0"
