"""Shared by membridge's Python tests: the GPU marker's policy.

Tests marked ``gpu`` run when a CUDA device is present or MEMBRIDGE_REQUIRE_GPU=1; with
MEMBRIDGE_REQUIRE_GPU=1 a missing GPU fails them (a GPU run never passes by skipping)."""
from __future__ import annotations

import os

import pytest

import membridge


def gpu_reason() -> str | None:
    """None when a CUDA device can be opened, else why not."""
    try:
        if membridge.Device.count() > 0:
            return None
        return "the CUDA driver reports no device"
    except membridge.Error as e:
        return str(e)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("MEMBRIDGE_REQUIRE_GPU") == "1":
        return  # gpu tests run, and fail without a GPU
    reason = gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"no CUDA device ({reason}); MEMBRIDGE_REQUIRE_GPU=1 makes this a failure")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
