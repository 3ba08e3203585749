"""The C LZ4 block decoder (runtime_c/src/lz4.c) against the `lz4` package's block compressor.

Byte-exact reproduction of what lz4.block.compress(data, store_size=False) wrote, on synthetic data of every kind of
compressibility and on every shared model's weights; refusal (a nonzero code, no out-of-bounds access: the decoder
is also fuzzed under AddressSanitizer in tests/fuzz) of truncated, extended and corrupted blocks.
"""
from __future__ import annotations

import random

import lz4.block
import numpy as np
import pytest

import _rt_plans as P
from tigris.host.build import runtime


def _decode(block: bytes, n: int) -> tuple[int, bytes]:
    rt = runtime()
    out = rt.ffi.new("uint8_t[]", max(1, n))
    rc = rt.lib.tgrs_lz4_decode(block, len(block), out, n)
    return rc, bytes(rt.ffi.buffer(out, n))


def _samples() -> list[bytes]:
    rng = random.Random(1234)
    nrng = np.random.default_rng(1234)
    out = [b"", b"a", b"abcd", b"x" * 15, b"x" * 16, b"x" * 19, b"x" * 270, b"x" * 70000]
    out.append(bytes(rng.randrange(256) for _ in range(5000)))  # incompressible: literal runs > 255
    out.append(bytes(rng.randrange(3) for _ in range(20000)))  # short matches
    out.append((b"0123456789abcdef" * 5000)[:77777])  # long matches, offsets > length
    out.append(b"ab" * 40000)  # overlapping matches (offset 2)
    out.append(nrng.standard_normal(4096).astype(np.float32).tobytes())
    out.append(nrng.integers(-3, 3, 65536, dtype=np.int8).tobytes())
    out.append(bytes(70000))
    return out


@pytest.mark.parametrize("mode", ["default", "high_compression", "fast"])
def test_decodes_reference_blocks_exactly(mode: str) -> None:
    for data in _samples():
        block = lz4.block.compress(data, store_size=False, mode=mode)
        rc, got = _decode(block, len(data))
        assert rc == 0, (len(data), rc)
        assert got == data


def test_decodes_every_shared_model_weight_blob() -> None:
    import onnx
    from onnx import numpy_helper

    models = P.all_shared_models()
    assert models
    for path in models:
        model = onnx.load(str(path))
        blob = b"".join(numpy_helper.to_array(t).tobytes() for t in model.graph.initializer)
        block = lz4.block.compress(blob, store_size=False)
        rc, got = _decode(block, len(blob))
        assert rc == 0 and got == blob, path.name


def test_refuses_wrong_output_length() -> None:
    data = (b"hello world, " * 100)[:1000]
    block = lz4.block.compress(data, store_size=False)
    assert _decode(block, len(data) - 1)[0] != 0  # output too small: would overflow
    assert _decode(block, len(data) + 1)[0] != 0  # output not filled exactly


def test_refuses_truncated_and_extended_blocks() -> None:
    data = bytes(random.Random(5).randrange(4) for _ in range(3000))
    block = lz4.block.compress(data, store_size=False)
    for cut in range(0, len(block)):
        assert _decode(block[:cut], len(data))[0] != 0, cut
    assert _decode(block + b"\x00", len(data))[0] != 0  # input must be consumed exactly


def test_refuses_bad_offsets() -> None:
    # token: 1 literal, match nibble 0 (4 bytes); literal 'a'; offset 0 -> invalid; then a final literal token.
    assert _decode(bytes([0x10, ord("a"), 0x00, 0x00, 0x00]), 5)[0] != 0
    # offset 2 reaching before the output start (only 1 byte written so far)
    assert _decode(bytes([0x10, ord("a"), 0x02, 0x00, 0x00]), 5)[0] != 0
    # the same block with offset 1 is valid: 'a' then 4 copies of it
    rc, got = _decode(bytes([0x10, ord("a"), 0x01, 0x00, 0x00]), 5)
    assert rc == 0 and got == b"aaaaa"


def test_refuses_a_block_that_ends_on_a_match() -> None:
    assert _decode(bytes([0x10, ord("a"), 0x01, 0x00]), 5)[0] != 0


def test_refuses_huge_length_extensions_without_overflow() -> None:
    # literal length 15 + 255 * 1000: far more than the output; must be refused, not wrap
    block = bytes([0xF0]) + b"\xff" * 1000 + b"\x00"
    assert _decode(block, 16)[0] != 0


def test_random_corruptions_never_succeed_with_wrong_bytes() -> None:
    """A corrupted block is either refused or decodes to exactly n bytes (LZ4 has no checksum, so a flip inside a
    literal is undetectable); the decoder never reports success with a different length."""
    rng = random.Random(99)
    data = bytes(rng.randrange(8) for _ in range(4000))
    block = bytearray(lz4.block.compress(data, store_size=False))
    for _ in range(500):
        b = bytearray(block)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        rc, got = _decode(bytes(b), len(data))
        assert rc != 0 or len(got) == len(data)
