"""A real video file whose every frame says which it is: a 12-bit barcode of its index across
the top eighth (white block: bit set), read back from a decoded frame or a JPEG by
``frame_number``. The background is dark before frame ``bright_from`` and bright from it on, so
tests.motion_model.brightness_model alerts exactly on hyperframes whose frames are all bright."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

BITS = 12
DARK, BRIGHT = 20, 200


def numbered_frame(index: int, size: tuple[int, int], bright: bool) -> np.ndarray:
    h, w = size
    frame = np.full((h, w, 3), BRIGHT if bright else DARK, np.uint8)
    frame[: h // 8] = 0
    for b in range(BITS):
        if index >> b & 1:
            frame[: h // 8, b * w // BITS : (b + 1) * w // BITS] = 255
    return frame


def frame_number(image: np.ndarray) -> int:
    """The index a frame (or its JPEG, decoded) carries; block centres only, so JPEG's ringing
    at the edges does not matter."""
    h, w = image.shape[:2]
    strip = image[h // 32 : h // 8 - h // 32]
    bits = [
        strip[:, b * w // BITS + w // 48 : (b + 1) * w // BITS - w // 48].mean() > 128
        for b in range(BITS)
    ]
    return sum(1 << b for b, on in enumerate(bits) if on)


def write_numbered(
    path: Path, frames: int, bright_from: int, size: tuple[int, int] = (360, 640)
) -> Path:
    """An MJPG file of ``frames`` frames at 25 fps, ``size`` (H, W)."""
    h, w = size
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25.0, (w, h))
    assert out.isOpened(), f"cannot write {path}"
    for i in range(frames):
        out.write(numbered_frame(i, size, i >= bright_from))
    out.release()
    return path
