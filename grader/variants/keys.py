"""The course secret and the keyed hash that turns a roster id into a variant.

The secret is a file the TA keeps (``--secret FILE``, else ``$INFRALAB_VARIANT_SECRET``, else
``variant.secret`` in the course root, which git ignores). It never enters a student's lab
folder: without it a student cannot compute anyone's variant from their id. A variant's key is
HMAC-SHA256(secret, id) in hex; every seed of the variant is derived from the key and the name
of what it seeds, so the same id always gives the same traces, byte for byte.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

from ..units import UnitError, course_root

_READ: dict[Path, None] = {}  # every secret file this process has read, in order

SECRET_ENV = "INFRALAB_VARIANT_SECRET"
SECRET_NAME = "variant.secret"
MIN_SECRET_BYTES = 16


class SecretError(UnitError):
    """The course secret is missing, unreadable or too short."""


def secret_path(given: str | Path | None = None) -> Path:
    """Where the secret is read from: ``given``, else the environment, else the course root."""
    if given:
        return Path(given)
    if os.environ.get(SECRET_ENV):
        return Path(os.environ[SECRET_ENV])
    return course_root() / SECRET_NAME


def load_secret(given: str | Path | None = None) -> bytes:
    """The course secret's bytes (surrounding white space removed); ``SecretError`` when the
    file is missing or holds fewer than ``MIN_SECRET_BYTES`` bytes."""
    path = secret_path(given)
    hint = (
        f"create one with: (umask 077; python3 -c 'import secrets; print(secrets.token_hex(32))'"
        f" > {path}) "
        "and keep it out of every lab folder"
    )
    try:
        secret = path.read_bytes().strip()
    except FileNotFoundError:
        raise SecretError(f"the variant secret {path} does not exist; {hint}") from None
    except OSError as exc:
        raise SecretError(f"the variant secret {path}: cannot read it ({exc.strerror})") from None
    if len(secret) < MIN_SECRET_BYTES:
        raise SecretError(
            f"the variant secret {path} holds {len(secret)} bytes, fewer than "
            f"{MIN_SECRET_BYTES}; {hint}"
        )
    _READ[path.resolve()] = None
    return secret


def secrets_read() -> list[Path]:
    """Every secret file this process has read. Grading counts each as hidden material
    (``grading.limits.hidden_material``): a child that read one would hold the key to every
    student's variant."""
    return list(_READ)


def variant_key(secret: bytes, student_id: str) -> str:
    """HMAC-SHA256 of the student's roster id under the course secret, in hex."""
    return hmac.new(secret, student_id.encode("utf-8"), hashlib.sha256).hexdigest()


def derived_seed(key: str, label: str) -> int:
    """A 32-bit seed for ``label`` (a trace, a drawn parameter) of the variant ``key``."""
    digest = hashlib.sha256(f"{key}\0{label}".encode()).digest()
    return int.from_bytes(digest[:4], "big")
