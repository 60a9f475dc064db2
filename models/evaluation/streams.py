"""Labelled streams in: their facts (``videos.csv``) and their scores, every video through the
runtime itself (its file source, sampler, backend, activation and, in two-stage mode, both
models), with each hyperframe's scores recorded on the way to the alert logic. Used by
``models.evaluate`` and by the export (``models.evaluation.wait``, ``models.evaluation.clips``)."""

from __future__ import annotations

import csv
import logging
import threading
from pathlib import Path

import numpy as np

from edge_hf.alerts import AlertLogic
from edge_hf.runtime import RunConfig, Runtime, alert_policy
from edge_hf.sources import SourceOptions
from models.errors import BadData
from models.evaluation.events import Options, Stream, events_of

log = logging.getLogger("models")


class Tap:
    """Stands in for a camera's AlertLogic: records each hyperframe's scores, then delegates."""

    def __init__(self, logic: AlertLogic) -> None:
        self.logic, self.labels = logic, logic.labels
        self.anchors: list[int] = []
        self.probs: list[np.ndarray] = []

    def update(self, probs: np.ndarray, frame: int, t: float, *screen: np.ndarray):
        """Two-stage mode (``screen``): ``probs`` are the confirming model's scores of the alert
        classes and the screen's of the others (edge_hf.twostage), as the alert logic reads them."""
        self.anchors.append(frame)
        self.probs.append(probs.copy())
        return self.logic.update(probs, frame, t, *screen)

    def close(self, frame: int, t: float):
        return self.logic.close(frame, t)


def score(model: Path, video: Path, opts: Options) -> tuple[Runtime, Tap, int]:
    """Run the runtime over ``video``: (the runtime, the tap on its alert logic, frames read)."""
    cfg = RunConfig(
        cameras=(str(video),),
        model=model,
        every=opts.every,
        thresholds=opts.thresholds,
        source_opts=SourceOptions(fast=True),
        confirm=opts.confirm,
        screen_thresholds=opts.screen,
        then=opts.then,
    )
    rt = Runtime(cfg, [], threading.Event())
    tap = Tap(rt.cameras[0].logic)
    rt.cameras[0].logic = tap
    if rt.run() != 0:
        raise BadData(f"{video}: the runtime could not read it to the end (see the log above)")
    return rt, tap, rt.cameras[0].capture.stats.grabbed


def load_streams(
    model: Path, root: Path, rows: list, opts: Options, prefix: str = ""
) -> tuple[list[Stream], tuple, tuple]:
    """Every stream of ``rows`` (root/segments.csv, read) through the runtime, named ``prefix``
    + its path in ``root``: (streams, the model's classes, (alert thresholds, the classes that
    wait for a pose: the model's unless ``opts.then``))."""
    per_video: dict[str, list[tuple[int, int, str]]] = {}
    for video, start, end, label in rows:
        per_video.setdefault(video, []).append((start, end, label))
    streams, classes, thresholds = [], (), {}
    for i, (rel, labels) in enumerate(sorted(per_video.items())):
        s, rt = scored(model, root / rel, prefix + rel, labels, opts)
        policy = alert_policy(rt.spec, rt.cfg)
        classes, thresholds, then = rt.spec.classes, dict(policy.thresholds), policy.then
        streams.append(s)
        log.info(
            "%d/%d %s: %d frames, %d hyperframes",
            i + 1,
            len(per_video),
            rel,
            s.length,
            len(s.anchors),
        )
    return streams, classes, (thresholds, then)


def scored(model: Path, video: Path, name: str, labels, opts: Options) -> tuple[Stream, Runtime]:
    """``video`` through the runtime as a Stream, its events from ``labels`` (start, end, label),
    and the runtime that scored it."""
    rt, tap, length = score(model, video, opts)
    events = {c: events_of(labels, c) for c in tap.labels}
    classes = rt.spec.classes
    probs = np.stack(tap.probs) if tap.probs else np.zeros((0, len(classes)), np.float32)
    cost = rt.latency.total + (rt.two.latency.total if rt.two else 0.0)
    stages = rt.two.counts() if rt.two else ()
    return Stream(
        name,
        rt.cameras[0].source.fps,
        length,
        np.array(tap.anchors),
        probs,
        events,
        tuple(sorted(labels)),
        cost,
        stages,
        classes,
    ), rt


def read_facts(path: Path, columns: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``videos.csv`` beside a streams folder's segments.csv: a ``video`` column and one column per
    fact about each video (camera, distance, light ...) -> {video: {column: value}} for
    ``columns``."""
    if not path.is_file():
        raise BadData(
            f"{path}: not found; --by needs a CSV there with a video column and one "
            "column per fact (e.g. video,camera,distance)"
        )
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        have = reader.fieldnames or []
        lost = [c for c in ("video", *columns) if c not in have]
        if lost:
            raise BadData(f"{path}: expected the columns video and {list(columns)}, found {have}")
        out: dict[str, dict[str, str]] = {}
        for n, r in enumerate(reader, 2):
            if r["video"] in out:
                raise BadData(f"{path}:{n}: video {r['video']} is listed twice")
            out[r["video"]] = {c: (r[c] or "").strip() or "(empty)" for c in columns}
    return out


def stream_facts(
    root: Path, by: tuple[str, ...], videos: set[str], of: str = "segments.csv"
) -> dict[str, dict[str, str]]:
    """``root/videos.csv``'s facts ``by`` about each of ``videos`` (those of root/segments.csv,
    or what ``of`` names; checked before any video is scored)."""
    if not by:
        return {}
    known = read_facts(root / "videos.csv", by)
    lost = sorted(videos - set(known))
    if lost:
        raise BadData(
            f"{root / 'videos.csv'}: no row for {len(lost)} video(s) of {of}, "
            f"e.g. {lost[0]}; add one per video"
        )
    return known
