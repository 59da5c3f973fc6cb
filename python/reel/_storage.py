"""``storage_options``: how the package reaches object stores (docs/storage.md).

The keys are the fields of reel::ObjectStoreOptions (include/reel/object_store.h), the CLI's
--endpoint-url, --region and --anonymous. A plain dict, so that it pickles to DataLoader and
Ray workers, which open the URI themselves."""

from __future__ import annotations

from typing import Any

from . import _core

STORAGE_OPTION_KEYS = ("endpoint_url", "region", "anonymous", "connect_timeout_s", "request_timeout_s",
                       "max_attempts")


def storage(storage_options: dict[str, Any] | None) -> "_core.StorageOptions":
    """``storage_options`` as the core's StorageOptions; unknown keys raise TypeError."""
    o = _core.StorageOptions()
    for key, value in (storage_options or {}).items():
        if key not in STORAGE_OPTION_KEYS:
            raise TypeError(f"storage_options: unknown key {key!r} (known: {', '.join(STORAGE_OPTION_KEYS)})")
        setattr(o, key, value)
    return o
