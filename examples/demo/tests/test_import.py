"""Import and device registration, as a backend's first tier checks them."""
import importlib
import os


def test_python_runs():
    assert importlib.import_module("json").dumps({"ok": True}) == '{"ok": true}'


def test_device_is_assigned():
    # crcrd passes the slot's env: the demo slots set SIM_DEVICE.
    assert os.environ.get("SIM_DEVICE") in {"0", "1"}
