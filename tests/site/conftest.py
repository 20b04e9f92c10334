"""Shared fixtures of the site tests: one site build per test session."""

from __future__ import annotations

import pytest

from grader.sitebuild.build import build_site
from grader.units import load_unit


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "build"
    report = build_site(out)
    return out, report


@pytest.fixture(scope="session")
def unit07():
    return load_unit("unit07")
