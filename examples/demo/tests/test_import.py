"""Import and device registration, as a backend's first tier checks them."""
import ctypes
import importlib
import os

import pytest


def test_python_runs():
    assert importlib.import_module("json").dumps({"ok": True}) == '{"ok": true}'


def test_device_is_assigned():
    # crcrd passes the slot's env: the demo slots set SIM_DEVICE.
    assert os.environ.get("SIM_DEVICE") in {"0", "1"}


def test_extension_is_built():
    # With a build stage (docs/build.md) crcrd gives the run's build, read-only.
    build = os.environ.get("CRCR_BUILD_DIR")
    if not build:
        pytest.skip("no build stage configured")
    ext = ctypes.CDLL(os.path.join(build, "libdemo_ext.so"))
    assert ext.demo_ext_add(2, 3) == 5
