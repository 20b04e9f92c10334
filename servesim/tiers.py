"""Tier files: one serving configuration with its price and quality pass rate.

A tier is JSON: ``{"name", "description"?, "policy", "budget", "queueCap"?, "pricePerHour",
"qualityPassRate", "device": {...device profile...}}``. ``load_tier`` validates every field
and raises ``TierError`` naming the file and the field; impossible budgets are refused here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from .device import DeviceProfile
from .fields import unknown_field_message

FIELDS = (
    "name",
    "description",
    "policy",
    "budget",
    "queueCap",
    "pricePerHour",
    "qualityPassRate",
    "device",
)


class TierError(ValueError):
    """A tier file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Tier:
    name: str
    description: str
    policy: str
    budget: int | None
    queue_cap: int | None
    price_per_hour: float
    quality_pass_rate: float
    device: DeviceProfile


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _optional_int(doc: dict, key: str, where: str) -> int | None:
    value = doc.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise TierError(f"{where}: field '{key}' must be null or an integer >= 1, got {value!r}")
    return value


def check_budget(budget: int | None, device: DeviceProfile, where: str) -> None:
    """Refuse a token budget below the active cap: a step could not decode every holder."""
    if budget is not None and device.max_active is not None and budget < device.max_active:
        raise TierError(
            f"{where}: field 'budget' ({budget}) is below maxActive ({device.max_active}); "
            "a step could not decode every active sequence"
        )


def parse_tier(doc, where: str, policies: tuple[str, ...] | None = None) -> Tier:
    if not isinstance(doc, dict):
        raise TierError(f"{where}: must be a JSON object")
    if unknown := unknown_field_message(doc, FIELDS):
        raise TierError(f"{where}: {unknown}")
    for key in ("name", "policy", "pricePerHour", "qualityPassRate", "device"):
        if key not in doc:
            raise TierError(f"{where}: field '{key}' is missing")
    for key in ("name", "policy"):
        if not isinstance(doc[key], str) or not doc[key]:
            raise TierError(f"{where}: field '{key}' must be a non-empty string")
    if policies is not None and doc["policy"] not in policies:
        raise TierError(f"{where}: field 'policy' must be one of {', '.join(policies)}")
    price, rate = doc["pricePerHour"], doc["qualityPassRate"]
    if not _number(price) or price <= 0:
        raise TierError(f"{where}: field 'pricePerHour' must be a number > 0, got {price!r}")
    if not _number(rate) or not 0 <= rate <= 1:
        raise TierError(
            f"{where}: field 'qualityPassRate' must be a number in [0, 1], got {rate!r}"
        )
    if not isinstance(doc["device"], dict):
        raise TierError(f"{where}: field 'device' must be an object")
    try:
        device = DeviceProfile.from_json(doc["device"], source=f"{where}: field 'device'")
    except (TypeError, ValueError) as exc:
        raise TierError(str(exc)) from None
    budget = _optional_int(doc, "budget", where)
    check_budget(budget, device, where)
    return Tier(
        name=doc["name"],
        description=doc.get("description", ""),
        policy=doc["policy"],
        budget=budget,
        queue_cap=_optional_int(doc, "queueCap", where),
        price_per_hour=float(price),
        quality_pass_rate=float(rate),
        device=device,
    )


def load_tier(path, policies: tuple[str, ...] | None = None) -> Tier:
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TierError(f"tier {path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise TierError(f"tier {path}: not valid JSON ({exc})") from None
    return parse_tier(doc, f"tier {path}", policies)
