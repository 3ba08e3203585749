"""Stage 7 step 3: weight grouping, de-duplication and LZ4 compression.

A *weight group* is the set of constant blobs that live together: the whole plan with ``--xip`` (read in place from
flash), otherwise one exec unit (copied or LZ4-decoded into the unit's reserved fast prefix before it runs). Inside a
group every blob starts at a multiple of 16 and identical blobs are stored once, in first-use order, so the layout is
a pure function of the ops' constants.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import lz4.block
import numpy as np

from tigris.ops import kind
from tigris.ops.base import Lowered
from tigris.plan.types import ALIGN, align_up


def const_bytes(arr: np.ndarray) -> bytes:
    """The bytes a constant is stored as: C order, little-endian, the lowering's dtype unchanged."""
    a = np.ascontiguousarray(arr)
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and not np.little_endian):
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes()


def weight_bytes_per_op(graph, lowered: list[Lowered], xip: bool) -> list[int]:
    """Fast-prefix bytes each op's constants need when its unit is not XIP (every blob rounded up to 16), 0 with XIP.

    The planner sums these per unit to size the reserved prefix; the writer then lays the unit's constants out within
    that many bytes (de-duplication can only make the real image smaller). ``graph`` is accepted for symmetry with the
    planner's callbacks and not needed.
    """
    del graph
    if xip:
        return [0 for _ in lowered]
    return [kind(low.kind).weight_bytes(low) for low in lowered]


@dataclass
class WeightGroup:
    """Constant blobs laid out at 16-byte boundaries, identical blobs shared."""

    data: bytearray = field(default_factory=bytearray)
    _seen: dict[bytes, int] = field(default_factory=dict)

    def add(self, blob: bytes) -> int:
        """Offset of ``blob`` in the group (appending it unless an identical blob is already there)."""
        if blob in self._seen:
            return self._seen[blob]
        off = align_up(len(self.data), ALIGN)
        self.data.extend(b"\0" * (off - len(self.data)))
        self.data.extend(blob)
        self._seen[blob] = off
        return off

    def image(self) -> bytes:
        """The group's bytes, padded to a multiple of 16."""
        return bytes(self.data) + b"\0" * (align_up(len(self.data), ALIGN) - len(self.data))


# LZ4 "high compression" at its top level: the same block format (any LZ4 block decoder reads it), a slower but
# deterministic encoder, and 5-10% smaller int8 weight blocks than the fast mode on the shared models.
LZ4_HC_LEVEL = 12


def compress_block(raw: bytes) -> bytes:
    """One LZ4 block (raw block format: no frame, no size prefix)."""
    if not raw:
        return b""
    return lz4.block.compress(raw, mode="high_compression", compression=LZ4_HC_LEVEL, store_size=False)


def lz4_bound(n: int) -> int:
    """The LZ4 worst case: a block of ``n`` incompressible bytes is at most this long (LZ4_COMPRESSBOUND)."""
    return n + n // 255 + 16


def _ext_len(block: bytes, i: int, n: int, limit: int) -> tuple[int, int]:
    """An LZ4 length extension at block[i:]: (i after it, the added length); ValueError past the block or limit."""
    add = 0
    while True:
        if i >= len(block):
            raise ValueError("malformed LZ4 block: truncated length")
        b = block[i]
        i += 1
        add += b
        if n + add > limit:
            raise ValueError("malformed LZ4 block: output overrun")
        if b != 255:
            return i, add


def check_block(block: bytes, raw_size: int) -> None:
    """The block rules runtime_c's decoder enforces (tgrs_lz4_validate), without decoding: every sequence inside the
    block, no match offset of 0 or reaching before the output start, no output beyond ``raw_size``, exactly
    ``raw_size`` bytes in all, and a last sequence of literals only. The lz4 package tolerates some of these (an
    offset of 0), so the reader applies these rules itself to give the C loader's verdict. ValueError otherwise."""
    n_in = len(block)
    if n_in == 0:
        raise ValueError("malformed LZ4 block: empty")
    i = o = 0
    while True:
        token = block[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            i, add = _ext_len(block, i, lit, raw_size - o)
            lit += add
        if lit > n_in - i:
            raise ValueError("malformed LZ4 block: literals past the block")
        if lit > raw_size - o:
            raise ValueError("malformed LZ4 block: output overrun")
        i += lit
        o += lit
        if i == n_in:
            if o != raw_size:
                raise ValueError(f"LZ4 block decodes to {o} bytes, expected {raw_size}")
            return
        if n_in - i < 2:
            raise ValueError("malformed LZ4 block: truncated offset")
        offset = block[i] | (block[i + 1] << 8)
        i += 2
        if offset == 0 or offset > o:
            raise ValueError(f"malformed LZ4 block: match offset {offset} at output {o}")
        mlen = token & 15
        if mlen == 15:
            i, add = _ext_len(block, i, mlen, raw_size - o)
            mlen += add
        mlen += 4
        if mlen > raw_size - o:
            raise ValueError("malformed LZ4 block: output overrun")
        o += mlen
        if i == n_in:
            raise ValueError("malformed LZ4 block: ends on a match")


def decompress_block(block: bytes, raw_size: int) -> bytes:
    """Decode one LZ4 block that must expand to exactly ``raw_size`` bytes; raises ValueError otherwise (on every
    block runtime_c's decoder refuses: :func:`check_block`)."""
    if raw_size == 0:
        if block:
            raise ValueError("non-empty LZ4 block for an empty blob")
        return b""
    check_block(block, raw_size)
    try:
        out = lz4.block.decompress(block, uncompressed_size=raw_size)
    except lz4.block.LZ4BlockError as e:
        raise ValueError(f"malformed LZ4 block: {e}") from None
    if len(out) != raw_size:
        raise ValueError(f"LZ4 block decodes to {len(out)} bytes, expected {raw_size}")
    return out


def shuffle_planes(raw: bytes, chunk: int = 256) -> bytes:
    """Byte-plane shuffle (UnitFlag.SHUFFLE): every whole ``chunk``-byte chunk is stored as its four byte planes, byte
    ``4*i + p`` of the chunk going to ``p * chunk/4 + i``; a shorter tail stays as it is.

    Why: float32 weights of similar magnitude share their exponent byte and the top mantissa bits, but in the
    interleaved layout those equal bytes are 4 apart and LZ4 needs runs of 4 equal bytes to match. Grouping the
    planes puts the compressible bytes next to each other. 256 bytes keeps the runtime's in-place inverse to a
    256-byte stack buffer.
    """
    whole = len(raw) // chunk * chunk
    head = np.frombuffer(raw, dtype=np.uint8, count=whole).reshape(-1, chunk // 4, 4)
    return head.transpose(0, 2, 1).tobytes() + bytes(raw[whole:])


def unshuffle_planes(data: bytes, chunk: int = 256) -> bytes:
    """The inverse of :func:`shuffle_planes` (what runtime_c's ``tgrs_unshuffle`` does in place)."""
    whole = len(data) // chunk * chunk
    head = np.frombuffer(data, dtype=np.uint8, count=whole).reshape(-1, 4, chunk // 4)
    return head.transpose(0, 2, 1).tobytes() + bytes(data[whole:])


def compress_unit_blob(raw: bytes, chunk: int = 256) -> tuple[bytes, bool]:
    """(LZ4 block, shuffled?) for one unit's prefix image: the byte-plane shuffled block when it is strictly smaller,
    else the plain one. Int8 weights usually compress better unshuffled (their repeats are whole bytes already),
    float32 weights better shuffled, so the writer measures both per unit rather than guessing from dtypes."""
    plain = compress_block(raw)
    if len(raw) < chunk:
        return plain, False
    shuffled = compress_block(shuffle_planes(raw, chunk))
    return (shuffled, True) if len(shuffled) < len(plain) else (plain, False)
