"""Datasets: which videos, which labels, which hyperframe windows.

Layouts: UCF101 (``classInd.txt`` + ``trainlist01.txt``/``testlist01.txt``), a plain folder per
class (seeded split, each class in its share), or frame-level segments (``segments.csv``: video,start_frame,end_frame,label,
with an optional ``classes.txt`` listing the allowed labels in logit order).
A UCF101 or folder dataset may also say where in each clip its action is: ``annotations.csv``
(video,start_frame,end_frame,label; labels among the dataset's classes, frames not covered are
not trained on). A fall clip is mostly standing before and lying after; without annotations
every window of it is taught as ``fall``. The clip keeps its class for per-video accuracy,
which then averages the windows annotated with that class (the action itself).
Splits: ``train`` fits the weights, ``val`` (carved from the training videos) picks the epoch
and decides when to stop, ``test`` is reported and never looked at while training: UCF101's test
list, or a seeded part of the videos for the other layouts. Clips named as UCF101 names them
(``v_<class>_gNN_cMM``) are split by group, so clips of one group (same actor, same scene) never
straddle two splits.

Label strategies (how a window of frames gets one label):

- ``video``: the clip's label (folder datasets), or the label most frames of the window carry;
- ``center``: the centre frame's label, only where the label is stable around the centre;
- ``window-any``: an abnormal label if any frame of the window carries one, else the centre's.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from models.errors import BadData

VIDEO_SUFFIXES = (".avi", ".mp4", ".mkv", ".mov", ".webm", ".mpg", ".mpeg")
STRATEGIES = ("video", "center", "window-any")


@dataclass(frozen=True)
class Video:
    path: Path
    labels: tuple[int, ...] | int  # one class index for the clip, or one per frame (-1: none)
    cls: int = -1  # the clip's class when it has one and its labels are per frame
    draws: int = 0  # hyperframes drawn from it per training epoch; 0: --samples-per-clip

    @property
    def video_class(self) -> int:
        """The class of the whole clip (per-video accuracy), or -1 for a stream."""
        return self.labels if isinstance(self.labels, int) else self.cls


@dataclass(frozen=True)
class Dataset:
    root: Path
    classes: tuple[str, ...]
    train: tuple[Video, ...]
    val: tuple[Video, ...]  # carved from the training videos: picks the epoch
    test: tuple[Video, ...]  # held out: reported, never used to choose anything
    flip: dict[str, str] | None  # flip.json: label map; None (null): never flip
    flip_declared: bool = False  # the dataset has a flip.json (see models.flips)


@dataclass(frozen=True)
class Fractions:
    """Parts of the videos for the layouts without a test list: ``test`` of all videos, then
    ``val`` of the rest (UCF101: ``val`` of the training list)."""

    val: float = 0.25
    test: float = 0.2


def frame_rate(videos: tuple[Video, ...], most: int = 64) -> float:
    """The frame rate the videos were recorded at, as their files say: the median of up to
    ``most`` of them, spread over the list (opening a file reads its header only); 0.0 when
    none says. The spec records it: a model learns motion at this many frames a second."""
    import cv2
    import numpy as np

    rates = []
    for v in videos[:: max(1, len(videos) // most)][:most]:
        cap = cv2.VideoCapture(str(v.path))
        fps = cap.get(cv2.CAP_PROP_FPS) if cap.isOpened() else 0.0
        cap.release()
        if 0 < fps <= 1000:
            rates.append(fps)
    return round(float(np.median(rates)), 2) if rates else 0.0


def load(
    root: Path, seed: int = 0, val_fraction: float = 0.25, test_fraction: float = 0.2
) -> Dataset:
    root = Path(root)
    if not root.is_dir():
        raise BadData(f"dataset folder {root} does not exist")
    fr = Fractions(val_fraction, test_fraction)
    flip = _flip_map(root)
    if (root / "segments.csv").is_file():
        return _segments(root, seed, fr, flip)
    if (root / "classInd.txt").is_file():
        return _ucf101(root, seed, fr, flip)
    return _folders(root, seed, fr, flip)


def empty_folders(root: Path) -> list[str]:
    """Folders of ``root`` with no videos (nor ``segments.csv``; hidden ones aside): class
    folders left empty."""
    return sorted(
        d.name
        for d in Path(root).iterdir()
        if d.is_dir()
        and not d.name.startswith(".")
        and not _videos(d)
        and not (d / "segments.csv").is_file()
    )


def two_classes(ds: Dataset) -> None:
    """A classifier needs videos of two classes: refuse one, naming the empty folders."""
    if len(ds.classes) < 2:
        empty = ", ".join(empty_folders(ds.root))
        raise BadData(
            f"dataset {ds.root}: expected videos of at least 2 classes, found "
            f"{len(ds.classes)} ({', '.join(ds.classes)})"
            + (f"; these folders hold no videos: {empty}" if empty else "")
        )


def _flip_map(root: Path) -> dict[str, str] | None | bool:
    """``flip.json``: {} keeps labels, {"a": "b", ...} swaps, null forbids flips; False: absent
    (models.flips decides)."""
    f = root / "flip.json"
    if not f.is_file():
        return False
    try:
        return json.loads(f.read_text())
    except ValueError as e:
        raise BadData(
            f'{f}: not valid JSON ({e}); expected a label map such as {{"left": "right"}} or null'
        ) from None


def _make(root: Path, classes, splits, flip) -> Dataset:
    declared = flip is not False
    notes = root / "annotations.csv"
    if notes.is_file():
        splits = _annotate(notes, root, tuple(classes), splits)
    return Dataset(root, tuple(classes), *splits, flip if declared else None, declared)


def _annotate(path: Path, root: Path, classes: tuple[str, ...], splits):
    """Clips named in ``annotations.csv`` get per-frame labels (frames not covered: -1)."""
    rows = _per_video(path, read_segments(path), classes, "the classes are")
    per_video = {root / rel: labels for rel, labels in rows.items()}

    def label(v: Video) -> Video:
        if v.path not in per_video or not isinstance(v.labels, int):
            return v
        return Video(v.path, per_video[v.path], v.labels)

    return tuple(tuple(label(v) for v in part) for part in splits)


def _folders(root: Path, seed: int, fr: Fractions, flip) -> Dataset:
    """A folder per class; a subfolder with a ``segments.csv`` holds labelled streams (for
    ``--more-data`` or ``models.evaluate``), not a class."""
    classes = tuple(
        sorted(
            d.name
            for d in root.iterdir()
            if d.is_dir() and _videos(d) and not (d / "segments.csv").is_file()
        )
    )
    if not classes:
        raise BadData(
            f"dataset folder {root} has no class folders with videos ({', '.join(VIDEO_SUFFIXES)})"
        )
    videos = [Video(p, ci) for ci, c in enumerate(classes) for p in _videos(root / c)]
    return _make(root, classes, _by_class(videos, seed, fr), flip)


def _videos(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)


_GROUP = re.compile(r"_g(\d+)_c\d+$")


def _group(v: Video) -> str:
    """UCF101-style clips of one group share actor and scene (and in this project's synthetic
    data, the look of a look-alike pair): they stay together."""
    m = _GROUP.search(v.path.stem)
    return f"g{int(m.group(1))}" if m else str(v.path)


def _split(
    videos: list[Video] | tuple[Video, ...], seed: int, fraction: float
) -> tuple[tuple[Video, ...], tuple[Video, ...]]:
    """(rest, part): about ``fraction`` of the videos, whole groups, seeded; at least one group
    in the part when there are two groups or more, and 0 gives an empty part."""
    key = _group if len({_group(v) for v in videos}) > 1 else (lambda v: str(v.path))
    keys = sorted({key(v) for v in videos})
    random.Random(seed).shuffle(keys)
    n = round(len(keys) * fraction)
    n = max(1, n) if fraction > 0 and len(keys) > 1 else 0
    part = set(keys[:n])
    return (
        tuple(v for v in videos if key(v) not in part),
        tuple(v for v in videos if key(v) in part),
    )


def _three_way(videos, seed: int, fr: Fractions) -> tuple[tuple[Video, ...], ...]:
    rest, test = _split(videos, seed, fr.test)
    train, val = _split(rest, seed + 1, fr.val)
    return train, val, test


def _by_class(videos: list[Video], seed: int, fr: Fractions) -> tuple[tuple[Video, ...], ...]:
    """Each class split on its own, so validation and test hold every class in its share; clips
    named by group (UCF101 names) are split by group across the classes instead."""
    if any(_GROUP.search(v.path.stem) for v in videos):
        return _three_way(videos, seed, fr)
    parts = [
        _three_way([v for v in videos if v.labels == c], seed, fr)
        for c in sorted({v.labels for v in videos})
    ]
    return tuple(tuple(v for part in parts for v in part[i]) for i in range(3))


def _ucf101(root: Path, seed: int, fr: Fractions, flip) -> Dataset:
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
                raise BadData(
                    f"{root / name}:{n}: {rel} is in folder {cls!r}, which classInd.txt does not list"
                )
            out.append(Video(root / rel, index[cls]))
        return tuple(out)

    train, val = _split(read("trainlist01.txt"), seed, fr.val)
    return _make(root, classes, (train, val, read("testlist01.txt")), flip)


def add_training(ds: Dataset, folders, seed: int = 0) -> Dataset:
    """``ds`` with more videos added to its training split only (``--more-data``): long
    recordings with frame labels (a ``segments.csv`` folder) next to short clips, or the
    training part of another clip dataset (UCF101 or folder per class, with its
    ``annotations.csv``; never its test list or seeded test part). Their labels must be among
    ``ds.classes``. ``DIR:N`` draws N hyperframes per video of DIR per epoch (a folder of
    still-pose clips has one look each) instead of ``--samples-per-clip``."""
    train = list(ds.train)
    for item in folders:
        folder, draws = more_data_folder(str(item))
        path = folder / "segments.csv"
        if path.is_file():
            rows = read_segments(path)
            allowed = f"the dataset {ds.root} has the classes"
            per_video = sorted(_per_video(path, rows, ds.classes, allowed).items())
            train += [Video(folder / rel, lab, draws=draws) for rel, lab in per_video]
        elif folder.is_dir() and (
            (folder / "classInd.txt").is_file() or _has_class_folders(folder)
        ):
            train += _training_part(ds, folder, draws, seed)
        else:
            raise BadData(
                f"--more-data {folder}: expected a folder with segments.csv, classInd.txt or a "
                "folder per class of videos, found none"
            )
    return replace(ds, train=tuple(train))


def _has_class_folders(folder: Path) -> bool:
    return any(d.is_dir() and _videos(d) for d in folder.iterdir())


def _training_part(ds: Dataset, folder: Path, draws: int, seed: int) -> list[Video]:
    """The train and validation videos of the clip dataset ``folder``, labels renumbered to
    ``ds.classes`` (its test part stays out: it may share scenes with evaluation data)."""
    other = load(folder, seed)
    foreign = [c for c in other.classes if c not in ds.classes]
    if foreign:
        raise BadData(
            f"--more-data {folder}: classes {foreign} are not among the classes of {ds.root} "
            f"{list(ds.classes)}; expected the same names (rename the folders or classInd.txt)"
        )
    to = [ds.classes.index(c) for c in other.classes]

    def renumber(v: Video) -> Video:
        if isinstance(v.labels, int):
            return Video(v.path, to[v.labels], draws=draws)
        labels = tuple(to[x] if x >= 0 else -1 for x in v.labels)
        return Video(v.path, labels, to[v.cls] if v.cls >= 0 else -1, draws)

    return [renumber(v) for v in other.train + other.val]


def more_data_folder(item: str) -> tuple[Path, int]:
    """``DIR`` or ``DIR:N`` (N >= 1 hyperframes per video per epoch) -> (DIR, N or 0)."""
    folder, sep, n = item.rpartition(":")
    if not sep or not re.fullmatch(r"[-+]?\d+", n):
        return Path(item), 0
    if int(n) < 1:
        raise BadData(
            f"--more-data {item}: expected DIR or DIR:N with N >= 1 draws a video "
            f"per epoch, found N = {n}"
        )
    return Path(folder), int(n)


def _segments(root: Path, seed: int, fr: Fractions, flip) -> Dataset:
    rows = read_segments(root / "segments.csv")
    classes = tuple(sorted({label for *_, label in rows}))
    listed = root / "classes.txt"  # optional: the allowed labels, in logit order
    if listed.is_file():
        classes = tuple(c.strip() for c in listed.read_text().splitlines() if c.strip())
    per_video = _per_video(root / "segments.csv", rows, classes, f"{listed} lists")
    videos = [Video(root / rel, labels) for rel, labels in sorted(per_video.items())]
    return _make(root, classes, _three_way(videos, seed, fr), flip)


def _per_video(path: Path, rows, classes: tuple[str, ...], allowed: str) -> dict[str, tuple]:
    """video -> one label index per frame (-1 where no row says), from segment rows; a label
    outside ``classes`` is an error naming the line (``allowed`` says where they come from)."""
    segs: dict[str, list[tuple[int, int, int]]] = {}
    for n, (video, start, end, label) in enumerate(rows, 2):
        if label not in classes:
            raise BadData(f"{path}:{n}: unknown label {label!r}; {allowed} {list(classes)}")
        segs.setdefault(video, []).append((start, end, classes.index(label)))
    out = {}
    for video, parts in segs.items():
        labels = [-1] * (max(e for _, e, _ in parts) + 1)
        for start, end, ci in parts:
            labels[start : end + 1] = [ci] * (end - start + 1)
        out[video] = tuple(labels)
    return out


def read_segments(path: Path) -> list[tuple[str, int, int, str]]:
    if not path.is_file():
        raise BadData(
            f"{path}: not found; a folder of labelled videos needs a segments.csv "
            "(video,start_frame,end_frame,label)"
        )
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != ["video", "start_frame", "end_frame", "label"]:
            raise BadData(
                f"{path}: expected the header video,start_frame,end_frame,label, found {reader.fieldnames}"
            )
        for n, r in enumerate(reader, 2):
            if not (path.parent / r["video"]).is_file():
                raise BadData(f"{path}:{n}: video {r['video']} does not exist under {path.parent}")
            try:
                start, end = int(r["start_frame"]), int(r["end_frame"])
            except ValueError:
                raise BadData(
                    f"{path}:{n}: start_frame and end_frame must be integers, found {r['start_frame']!r}, {r['end_frame']!r}"
                ) from None
            if not 0 <= start <= end:
                raise BadData(
                    f"{path}:{n}: bad frame range {start}..{end}; expected 0 <= start_frame <= end_frame"
                )
            if not r["label"].strip():
                raise BadData(f"{path}:{n}: empty label")
            rows.append((r["video"], start, end, r["label"].strip()))
    if not rows:
        raise BadData(f"{path}: no segments")
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
