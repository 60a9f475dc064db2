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

The ``train-varied`` pool (``models.synthdata --photos varied``, ``models.synthposes --photos
varied``) is the training photographs in more forms (:func:`varied`): colours swapped or tinted,
upside down, turned a quarter, as a negative, and the halves of two side by side;
``train-varied-poles`` (``--photos varied-poles``) adds two forms of each with thin poles, rails
and lattices painted over it (``_poles``: a lying figure across a mast looks like a standing one
holding an arm out), and ``train-poles`` (``--photos poles``) is each photograph and only those
two. None draws anything from the held-out photographs.

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
    "astronaut.png", "brick.png", "camera.png", "coffee.png", "coins.png", "grass.png",
    "hubble_deep_field.jpg", "ihc.png", "text.png",
)  # fmt: skip
HELD_OUT: tuple[str, ...] = ("chelsea.png", "clock_motion.png", "gravel.png", "rocket.jpg")
FORMS = {"train-varied": 7, "train-varied-poles": 9, "train-poles": 3}  # per training photo
POOLS = {"train": TRAIN, **dict.fromkeys(FORMS, TRAIN), "held-out": HELD_OUT}
PHOTOS = {"train": "train", **{p.removeprefix("train-"): p for p in FORMS}}  # --photos: pool
_TINTS = ((1.0, 0.8, 0.55), (0.6, 0.85, 1.0))  # BGR gains: a warm and a cool cast of grey photos


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
    if pool not in FORMS:
        return tuple(out)
    return varied(tuple(out), forms="varied" in pool, poles=pool.endswith("poles"))


def _colours(img: np.ndarray) -> list[np.ndarray]:
    """Two other colourings: channels rotated both ways, or (grey photos) a warm and a cool tint."""
    grey = np.array_equal(img[..., 0], img[..., 1]) and np.array_equal(img[..., 1], img[..., 2])
    if not grey:
        return [np.ascontiguousarray(img[..., order]) for order in ([1, 2, 0], [2, 0, 1])]
    return [np.clip(img * np.float32(g), 0, 255).astype(np.uint8) for g in _TINTS]


def _poles(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A copy of `img` with 2-6 thin upright poles (0.8-2 % of its width, from the top or part
    way down to the bottom), 0-2 thin rails across, and in half of them a lattice mast (two uprights
    and their cross braces), each in a colour of the photo or a plain grey."""
    out, (h, w) = img.copy(), img.shape[:2]

    def colour() -> tuple[int, ...]:
        if rng.random() < 0.5:
            return (int(rng.integers(40, 256)),) * 3
        return tuple(int(v) for v in img[rng.integers(h), rng.integers(w)])

    def width() -> int:
        return max(1, int(w * rng.uniform(0.008, 0.02)))

    for _ in range(int(rng.integers(2, 7))):
        x, top = int(rng.integers(w)), int(h * rng.choice([0.0, rng.uniform(0.1, 0.6)]))
        cv2.line(out, (x, top), (x, h - 1), colour(), width())
    for _ in range(int(rng.integers(0, 3))):
        y = int(rng.integers(h))
        cv2.line(out, (0, y), (w - 1, y), colour(), max(1, width() // 2))
    if rng.random() < 0.5:
        x0, span, c, t = int(rng.integers(w)), int(w * rng.uniform(0.04, 0.12)), colour(), width()
        for x in (x0, x0 + span):
            cv2.line(out, (x, 0), (x, h - 1), c, t)
        for y in range(0, h, max(4, span)):
            cv2.line(out, (x0, y), (x0 + span, y + span), c, max(1, t // 2))
            cv2.line(out, (x0 + span, y), (x0, y + span), c, max(1, t // 2))
    return out


def _forms(photos: tuple[np.ndarray, ...], i: int) -> list[np.ndarray]:
    """Photo i, two other colourings, upside down, turned a quarter, its negative, and its left
    half beside the right half of the next photo."""
    img, nxt = photos[i], photos[(i + 1) % len(photos)]
    half = img.shape[1] // 2
    right = cv2.resize(nxt, (img.shape[1] - half, img.shape[0]), interpolation=cv2.INTER_AREA)
    halves = np.concatenate([img[:, :half], right], axis=1)
    flipped, turned = np.ascontiguousarray(img[::-1]), np.ascontiguousarray(np.rot90(img))
    return [img, *_colours(img), flipped, turned, 255 - img, halves]


def varied(
    photos: tuple[np.ndarray, ...], *, forms: bool = True, poles: bool = False
) -> tuple[np.ndarray, ...]:
    """Each (h, w, 3) photograph as itself or, with ``forms``, in its 7 forms (:func:`_forms`);
    with ``poles``, then also the photo and its upside-down form with :func:`_poles` painted
    over (seeded by the photo's place: the same pool every time). All drawn as often as each
    other."""
    out = []
    for i, img in enumerate(photos):
        out += _forms(photos, i) if forms else [img]
        if poles:
            rng = np.random.default_rng([i, 29])
            out += [_poles(img, rng), _poles(np.ascontiguousarray(img[::-1]), rng)]
    return tuple(out)
