"""A test that depends on the upstream commit under test: the demo upstream's commit 13 adds
demo/regressed, and from there on this test fails (README: a bisection and a pre-existing
failure). Without a pinned checkout (no upstream mirror) it is skipped."""
import os
import pathlib

import pytest


def test_trunk_contract():
    checkout = os.environ.get("CRCR_PYTORCH_DIR")
    if not checkout:
        pytest.skip("no pinned upstream checkout")
    marker = pathlib.Path(checkout) / "demo" / "regressed"
    assert not marker.exists(), marker.read_text().strip()
