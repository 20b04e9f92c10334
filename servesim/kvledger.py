"""The device fields a reader of a run file needs to count pages (``PageDevice``).

The run viewer's compact replay (``runview/compact_replay.py``) counts each holder's pages with
``rules.pages_for`` of this device; a full run entry is counted by the engine's own state
(``recorded.Recorded``), which the viewer drives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class PageDevice:
    """The device fields page counting reads (a run file's ``device`` may hold others)."""

    page_tokens: int
    kv_pages: int | None = None
    prefix_caching: bool = False

    @classmethod
    def of_run(cls, device: Mapping) -> PageDevice:
        """The fields of a run file's ``device`` object (``pageTokens`` 16 when absent)."""
        return cls(
            int(device.get("pageTokens") or 16),
            device.get("kvPages"),
            bool(device.get("prefixCaching", False)),
        )
