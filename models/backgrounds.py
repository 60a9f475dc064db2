"""Real photographs for the backgrounds of ``real`` synthetic scenes (workstation side only: the
``train`` extra's scikit-image; edge_hf never imports this module and takes plain arrays).

The photographs are files that ship inside the scikit-image wheel, in ``skimage/data/`` (checked
with ``ls $(python -c 'import skimage, os; print(os.path.dirname(skimage.__file__))')/data``):
they are read straight from there with OpenCV, with no call into scikit-image's fetchers, so
nothing is ever downloaded (:func:`load` fails naming the file if one is missing). Only images whose
docstrings in ``skimage/data/_fetchers.py`` (scikit-image 0.26) state that they are free of
copyright restrictions are used:

=========================  ===================================================  ==========
file                       licence (as scikit-image states it)                  pool
=========================  ===================================================  ==========
astronaut.png              public domain (NASA)                                 train
brick.png                  CC0 (cc0textures.com)                                train
camera.png                 CC0 (Lav Varshney)                                   train
coffee.png                 CC0 (Rachel Michetti)                                train
coins.png                  no known copyright restrictions (Brooklyn Museum)    train
grass.png                  CC0                                                  train
hubble_deep_field.jpg      public domain (NASA)                                 train
ihc.png                    no known copyright restrictions (CMMI)               train
text.png                   public domain                                        train
chelsea.png                CC0 (Stefan van der Walt)                            held-out
clock_motion.png           public domain (Stefan van der Walt)                  held-out
gravel.png                 CC0 (cc0textures.com)                                held-out
rocket.jpg                 public domain (SpaceX)                               held-out
=========================  ===================================================  ==========

The ``held-out`` pool is used only for validation/test clips and evaluation streams; training clips
never see those photographs. Left out: the stereo motorcycle pair (Middlebury 2014, no licence
stated), moon, page, logo and colour wheel (no licence stated) and the other microscopy images.
"""

from __future__ import annotations

import functools
from pathlib import Path

import cv2
import numpy as np

TRAIN: tuple[str, ...] = (
    "astronaut.png",
    "brick.png",
    "camera.png",
    "coffee.png",
    "coins.png",
    "grass.png",
    "hubble_deep_field.jpg",
    "ihc.png",
    "text.png",
)
HELD_OUT: tuple[str, ...] = ("chelsea.png", "clock_motion.png", "gravel.png", "rocket.jpg")
POOLS = {"train": TRAIN, "held-out": HELD_OUT}


class BackgroundError(RuntimeError):
    """The photographs cannot be read (scikit-image missing, or a file not in its wheel)."""


def data_dir() -> Path:
    """``skimage/data`` of the installed scikit-image, found without importing skimage."""
    from importlib.util import find_spec

    spec = find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        raise BackgroundError(
            "scikit-image is not installed: install the train extra (pip install -e '.[train]')"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


@functools.cache  # once per process: every scene a writer renders draws from them
def load(pool: str) -> tuple[np.ndarray, ...]:
    """The photographs of `pool` (a :data:`POOLS` name) as BGR uint8 arrays (grey ones as three
    equal channels)."""
    if pool not in POOLS:
        raise ValueError(f"unknown background pool {pool!r}; expected one of {list(POOLS)}")
    root = data_dir()
    out = []
    for name in POOLS[pool]:
        img = cv2.imread(str(root / name), cv2.IMREAD_UNCHANGED)
        if img is None:
            raise BackgroundError(
                f"{root / name}: missing or unreadable; reinstall scikit-image (it ships in the wheel)"
            )
        if img.ndim == 3 and img.shape[2] == 4:
            img = cv2.cvtColor(img, cv2.COLOR_BGRA2BGR)
        out.append(img if img.ndim == 3 else cv2.cvtColor(img, cv2.COLOR_GRAY2BGR))
    return tuple(out)
