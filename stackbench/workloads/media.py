"""Generated media: JPEG photographs of a given size, made here (never downloaded) from
a fixed seed, so every machine with the same Pillow serves the same bytes.

A real photo is big because of fine detail; a flat gradient compresses to almost
nothing. So: colour gradients blended with blurred noise, the noise share searched
until the file is within 3 % of the size asked for.

A server on another host serves the lab's bytes, not its own Pillow's: the lab puts the
ones it made into the code it ships (hosts/bundle.py), in SHIPPED, where they are read
first — that host needs no Pillow.
"""

from __future__ import annotations

import functools
import io
import random
from pathlib import Path

SHIPPED = Path(__file__).parent / "media_shipped"
made: dict[str, bytes] = {}  # every JPEG made here, by its file name in SHIPPED


def _name(target_bytes: int, seed: int, quality: int) -> str:
    return f"jpeg-{target_bytes}-{seed}-{quality}.jpg"


def _encode(width: int, height: int, seed: int, noise: float, quality: int) -> bytes:
    from PIL import Image, ImageFilter  # only where JPEGs are made: not on a server's host

    rng = random.Random(seed)
    r = Image.linear_gradient("L").resize((width, height))
    g = Image.radial_gradient("L").resize((width, height))
    b = r.transpose(Image.Transpose.ROTATE_180)
    grain = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    img = Image.blend(Image.merge("RGB", (r, g, b)), grain.filter(ImageFilter.GaussianBlur(0.6)), noise)
    out = io.BytesIO()
    img.save(out, "JPEG", quality=quality)
    return out.getvalue()


@functools.cache
def jpeg(target_bytes: int, seed: int = 1, quality: int = 85) -> bytes:
    """A JPEG of about `target_bytes` (±3 %), 4:3, sized so the noise share stays
    photo-like."""
    name = _name(target_bytes, seed, quality)
    if (SHIPPED / name).is_file():
        return (SHIPPED / name).read_bytes()
    made[name] = _jpeg(target_bytes, seed, quality)
    return made[name]


def _jpeg(target_bytes: int, seed: int, quality: int) -> bytes:
    width = max(64, int((target_bytes / 0.21) ** 0.5 * 1.15) // 8 * 8)  # ~0.21 bytes/pixel at 0.3 noise
    height = width * 3 // 4
    lo, hi = 0.02, 0.9
    best = _encode(width, height, seed, 0.3, quality)
    for _ in range(20):
        if abs(len(best) - target_bytes) <= target_bytes * 0.03:
            break
        mid = (lo + hi) / 2
        best = _encode(width, height, seed, mid, quality)
        if len(best) < target_bytes:
            lo = mid
        else:
            hi = mid
    return best
