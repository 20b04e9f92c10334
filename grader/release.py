"""Release builders. The student zip is the lab folder as shipped, under ``infra-lab/``."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

from .units import Unit

ZIP_ROOT = "infra-lab"
SKIP_DIRS = {"__pycache__", ".pytest_cache", "runs", ".hypothesis"}


def student_files(unit: Unit) -> list[Path]:
    """Every file of the lab folder that goes into the student zip, sorted."""
    files = []
    for path in sorted(unit.lab_dir.rglob("*")):
        rel = path.relative_to(unit.lab_dir)
        if path.is_file() and not SKIP_DIRS.intersection(rel.parts) and path.suffix != ".pyc":
            files.append(path)
    return files


def build_student_zip(unit: Unit, dest: Path) -> Path:
    """Write the student lab zip to ``dest`` atomically (fixed timestamps: reproducible bytes)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in student_files(unit):
                rel = path.relative_to(unit.lab_dir).as_posix()
                info = zipfile.ZipInfo(f"{ZIP_ROOT}/{rel}", date_time=(2024, 1, 1, 0, 0, 0))
                info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest
