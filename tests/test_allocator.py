"""Handing the C allocator's free memory back: a no-op where glibc is not the C library."""

from __future__ import annotations

import platform

import pytest

import pyinformers._allocator as allocator


def test_it_does_nothing_where_the_c_library_is_not_glibc(monkeypatch):
    monkeypatch.setattr(allocator, "_trim", allocator._UNRESOLVED)
    monkeypatch.setattr(platform, "libc_ver", lambda: ("musl", "1.2"))
    assert allocator.trim_free_memory() is False
    assert allocator._trim is None  # resolved once, to nothing


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_on_glibc_it_calls_malloc_trim():
    # Whether pages come back depends on where malloc put what was freed: only the call is certain.
    blocks = [bytearray(4096) for _ in range(5_000)]
    del blocks
    assert isinstance(allocator.trim_free_memory(), bool)
    assert allocator._trim is not None and allocator._trim is not allocator._UNRESOLVED
