"""harvestdef.files: the lock file a process holds a directory with."""

from __future__ import annotations

import os

import pytest

from harvestdef.errors import HarvestSuiteError
from harvestdef.files import exclusive_lock


def test_a_held_lock_names_its_holder_and_is_free_again_after(tmp_path):
    path = tmp_path / "x.lock"

    def busy(holder: str) -> Exception:
        return HarvestSuiteError(f"held by {holder}")

    with exclusive_lock(path, busy):
        assert path.read_text() == f"pid {os.getpid()}\n"
        # flock belongs to an open file, so a second open in the same process is refused as another would be
        with pytest.raises(HarvestSuiteError, match=f"held by pid {os.getpid()}"), exclusive_lock(path, busy):
            pass
    with exclusive_lock(path, busy):
        pass
