"""Which label a horizontally flipped sample gets, so a flip can never silently corrupt labels.

A mirror image of ``walk_left`` is ``walk_right``. If nothing says so, a flip augmentation keeps
the label and teaches the model half of its walk_left samples as mirrored walks, i.e. right
walks. So ``--flip`` is one of:

- ``auto`` (default): the dataset's own ``flip.json`` when it has one; otherwise classes whose
  names differ only by left/right (``walk_left``/``walk_right``, ``turn-left``/``turn-right``,
  ``LeftWave``/``RightWave``, ``LEFT_TURN``/``RIGHT_TURN``) are swapped by a flip, and a class
  that names a direction but has no mirror class (``turn_left`` alone) is never flipped;
- ``none``: no sample is ever flipped;
- a JSON file: ``{"a": "b", ...}`` swaps (both directions must be listed), ``{}`` keeps every
  label, ``null`` forbids flips.

A direction is a whole word: ``bright`` or ``leftover`` are not directions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from models.data import Dataset
from models.errors import BadData

# left/right as a word in snake/kebab case, in CamelCase, or in upper case.
_WORD = re.compile(
    r"(?<![A-Za-z])(left|right)(?![a-z])|(?<![A-Z])(Left|Right)(?![a-z])|"
    r"(?<![A-Za-z])(LEFT|RIGHT)(?![A-Z])"
)
_SWAP = {"left": "right", "right": "left", "Left": "Right", "Right": "Left"}
_SWAP |= {"LEFT": "RIGHT", "RIGHT": "LEFT"}


def mirror_name(name: str) -> str | None:
    """``name`` with every left/right word swapped, or None if it names no direction."""
    swapped, n = _WORD.subn(lambda m: _SWAP[m.group(0)], name)
    return swapped if n else None


@dataclass(frozen=True)
class FlipPlan:
    """``swap``: class -> the class its mirror image shows (absent: the label is kept);
    ``never``: classes whose samples are never flipped; ``allowed`` False: no flips at all."""

    source: str  # where the plan came from, for the log and metrics.json
    allowed: bool
    swap: dict[str, str]
    never: tuple[str, ...] = ()

    def indices(self, classes: tuple[str, ...]) -> dict[int, int] | None:
        """The augmentation's map over class indices: a flip turns i into map[i]; -1 forbids
        flipping samples of class i; None forbids every flip."""
        if not self.allowed:
            return None
        out = {classes.index(a): classes.index(b) for a, b in self.swap.items()}
        out |= {classes.index(c): -1 for c in self.never}
        return out

    def describe(self) -> str:
        if not self.allowed:
            return f"flip: no horizontal flips ({self.source})"
        pairs = sorted({tuple(sorted(p)) for p in self.swap.items()})
        swaps = ", ".join(f"{a}<->{b}" for a, b in pairs) or "none (every label kept)"
        never = f"; never flipped: {', '.join(self.never)}" if self.never else ""
        return f"flip: swaps {swaps}{never} ({self.source})"

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "allowed": self.allowed,
            "swap": self.swap,
            "never": list(self.never),
        }


def plan(mode: str, ds: Dataset) -> FlipPlan:
    """Resolve ``--flip auto|none|FILE`` against a dataset's classes and its ``flip.json``."""
    if mode == "none":
        return FlipPlan("--flip none", False, {})
    if mode == "auto":
        if ds.flip_declared:
            return _checked(ds.flip, ds.classes, f"{ds.root / 'flip.json'}")
        return auto(ds.classes)
    path = Path(mode)
    if not path.is_file():
        raise BadData(f"--flip: expected auto, none or a JSON file, found {mode!r}")
    try:
        value = json.loads(path.read_text())
    except ValueError as e:
        raise BadData(f"--flip {path}: not valid JSON ({e})") from None
    return _checked(value, ds.classes, str(path))


def auto(classes: tuple[str, ...]) -> FlipPlan:
    swap, never = {}, []
    for c in classes:
        m = mirror_name(c)
        if m is None:
            continue
        if m in classes:
            swap[c] = m
        else:
            never.append(c)
    source = "auto: class names that differ by left/right"
    return FlipPlan(source, True, swap, tuple(never))


def _checked(value, classes: tuple[str, ...], where: str) -> FlipPlan:
    if value is None:
        return FlipPlan(f"{where}: null", False, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise BadData(
            f'{where}: expected a label map such as {{"walk_left": "walk_right", '
            f'"walk_right": "walk_left"}}, {{}} or null, found {json.dumps(value)[:80]}'
        )
    swap = {a: b for a, b in value.items() if a in classes and b in classes}
    for a, b in swap.items():
        if swap.get(b) != a:
            raise BadData(
                f"{where}: {a!r} flips to {b!r} but {b!r} does not flip back to {a!r}; "
                f"list both directions"
            )
    # a directional class the file forgot would be taught mirrored: never flip it
    never = tuple(c for c in classes if c not in swap and mirror_name(c) is not None)
    return FlipPlan(where, True, swap, never)
