"""The cyclic collector paused, and given back as it was."""

from __future__ import annotations

import gc

import pytest

from pfscope.spark_jobs.runtime.collector import cyclic_gc_paused


@pytest.mark.parametrize("enabled", [True, False])
def test_cyclic_gc_paused_restores_the_previous_state(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with pytest.raises(RuntimeError), cyclic_gc_paused():
            assert not gc.isenabled()
            raise RuntimeError("a task fails inside")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
