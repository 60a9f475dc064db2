"""Datasets: which videos, which labels, which hyperframe windows.

Layouts: UCF101 (``classInd.txt`` + ``trainlist01.txt``/``testlist01.txt``), a plain folder per
class (seeded split), or frame-level segments (``segments.csv``: video,start_frame,end_frame,label,
with an optional ``classes.txt`` listing the allowed labels in logit order).
Label strategies (how a window of frames gets one label):

- ``video``: the clip's label (folder datasets), or the label most frames of the window carry;
- ``center``: the centre frame's label, only where the label is stable around the centre;
- ``window-any``: an abnormal label if any frame of the window carries one, else the centre's.
"""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

VIDEO_SUFFIXES = (".avi", ".mp4", ".mkv", ".mov", ".webm", ".mpg", ".mpeg")
STRATEGIES = ("video", "center", "window-any")


class DataError(Exception):
    """A dataset problem the user can fix; the message says which file and how."""


@dataclass(frozen=True)
class Video:
    path: Path
    labels: tuple[int, ...] | int  # one class index for the clip, or one per frame (-1: none)


@dataclass(frozen=True)
class Dataset:
    root: Path
    classes: tuple[str, ...]
    train: tuple[Video, ...]
    val: tuple[Video, ...]
    flip: dict[str, str] | None  # horizontal-flip label map; None: never flip


def load(root: Path, seed: int = 0, val_fraction: float = 0.25) -> Dataset:
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"dataset folder {root} does not exist")
    flip = _flip_map(root)
    if (root / "segments.csv").is_file():
        return _segments(root, seed, val_fraction, flip)
    if (root / "classInd.txt").is_file():
        return _ucf101(root, flip)
    return _folders(root, seed, val_fraction, flip)


def _flip_map(root: Path) -> dict[str, str] | None:
    """``flip.json``: {} or absent = flipping keeps labels; {"a": "b", ...} swaps; null = no flip."""
    f = root / "flip.json"
    if not f.is_file():
        return {}
    try:
        return json.loads(f.read_text())
    except ValueError as e:
        raise DataError(
            f'{f}: not valid JSON ({e}); expected a label map such as {{"left": "right"}} or null'
        ) from None


def _folders(root: Path, seed: int, val_fraction: float, flip) -> Dataset:
    classes = tuple(sorted(d.name for d in root.iterdir() if d.is_dir() and _videos(d)))
    if not classes:
        raise DataError(
            f"dataset folder {root} has no class folders with videos ({', '.join(VIDEO_SUFFIXES)})"
        )
    videos = [Video(p, ci) for ci, c in enumerate(classes) for p in _videos(root / c)]
    train, val = _split(videos, seed, val_fraction)
    return Dataset(root, classes, train, val, flip)


def _videos(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)


def _split(
    videos: list[Video], seed: int, val_fraction: float
) -> tuple[tuple[Video, ...], tuple[Video, ...]]:
    shuffled = list(videos)
    random.Random(seed).shuffle(shuffled)
    n_val = max(1, round(len(shuffled) * val_fraction)) if len(shuffled) > 1 else 0
    return tuple(shuffled[n_val:]), tuple(shuffled[:n_val])


def _ucf101(root: Path, flip) -> Dataset:
    classes = []
    for line in (root / "classInd.txt").read_text().split("\n"):
        if line.strip():
            classes.append(line.split()[1])
    index = {c: i for i, c in enumerate(classes)}

    def read(name: str) -> tuple[Video, ...]:
        out = []
        for n, line in enumerate((root / name).read_text().split("\n"), 1):
            if not line.strip():
                continue
            rel = line.split()[0]
            cls = rel.split("/")[0]
            if cls not in index:
                raise DataError(
                    f"{root / name}:{n}: {rel} is in folder {cls!r}, which classInd.txt does not list"
                )
            out.append(Video(root / rel, index[cls]))
        return tuple(out)

    return Dataset(root, tuple(classes), read("trainlist01.txt"), read("testlist01.txt"), flip)


def _segments(root: Path, seed: int, val_fraction: float, flip) -> Dataset:
    rows = _read_segments(root / "segments.csv")
    classes = tuple(sorted({label for *_, label in rows}))
    listed = root / "classes.txt"  # optional: the allowed labels, in logit order
    if listed.is_file():
        allowed = tuple(c.strip() for c in listed.read_text().splitlines() if c.strip())
        for n, (_, _, _, label) in enumerate(rows, 2):
            if label not in allowed:
                raise DataError(
                    f"{root / 'segments.csv'}:{n}: unknown label {label!r}; {listed} lists {list(allowed)}"
                )
        classes = allowed
    per_video: dict[str, list[tuple[int, int, int]]] = {}
    for video, start, end, label in rows:
        per_video.setdefault(video, []).append((start, end, classes.index(label)))
    videos = []
    for rel, segs in sorted(per_video.items()):
        labels = [-1] * (max(e for _, e, _ in segs) + 1)
        for start, end, ci in segs:
            labels[start : end + 1] = [ci] * (end - start + 1)
        videos.append(Video(root / rel, tuple(labels)))
    train, val = _split(videos, seed, val_fraction)
    return Dataset(root, classes, train, val, flip)


def _read_segments(path: Path) -> list[tuple[str, int, int, str]]:
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != ["video", "start_frame", "end_frame", "label"]:
            raise DataError(
                f"{path}: expected the header video,start_frame,end_frame,label, found {reader.fieldnames}"
            )
        for n, r in enumerate(reader, 2):
            if not (path.parent / r["video"]).is_file():
                raise DataError(
                    f"{path}:{n}: video {r['video']} does not exist under {path.parent}"
                )
            try:
                start, end = int(r["start_frame"]), int(r["end_frame"])
            except ValueError:
                raise DataError(
                    f"{path}:{n}: start_frame and end_frame must be integers, found {r['start_frame']!r}, {r['end_frame']!r}"
                ) from None
            if not 0 <= start <= end:
                raise DataError(
                    f"{path}:{n}: bad frame range {start}..{end}; expected 0 <= start_frame <= end_frame"
                )
            if not r["label"].strip():
                raise DataError(f"{path}:{n}: empty label")
            rows.append((r["video"], start, end, r["label"].strip()))
    if not rows:
        raise DataError(f"{path}: no segments")
    return rows


def window_label(
    labels: tuple[int, ...] | int, frames: list[int], strategy: str, abnormal: frozenset[int]
) -> int:
    """The label of the window made of ``frames`` (oldest first), or -1 to skip the window."""
    if isinstance(labels, int):
        return labels
    seen = [labels[i] if i < len(labels) else -1 for i in frames]
    centre = seen[len(seen) // 2]
    if strategy == "video":
        top, n = Counter(seen).most_common(1)[0]
        return top if n * 2 > len(seen) else -1
    if strategy == "window-any":
        hits = Counter(x for x in seen if x in abnormal)
        return hits.most_common(1)[0][0] if hits else centre
    # center: the centre's label must hold for the middle half of the window
    lo, hi = (
        frames[len(frames) // 2] - (frames[-1] - frames[0]) // 4,
        frames[len(frames) // 2] + (frames[-1] - frames[0]) // 4,
    )
    around = {labels[i] if 0 <= i < len(labels) else -1 for i in range(lo, hi + 1)}
    return centre if around == {centre} else -1
