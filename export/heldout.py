"""How much INT8 loses on videos from a world the model never saw, with how sure that is.

The export's report measures its formats on the test split of the training dataset. In the
second world that is 72 videos, one video 1.4 points, and the same INT8 file of one model gained
2.8 points per video on its validation split and lost 4.2 on its test split: a drop "within one
point" cannot be told from noise there. This measures an export folder's files on every video of
another dataset (one generated with another seed or other backgrounds), through the runtime's
own backends, and says how far the drop could be from what it measured:

    python -m export.heldout runs/NAME/export DATASET [--by COLUMN ...] [--json FILE]

For each file top-1 per video and per window, and per class how many videos it called right and
what it took the others for; for INT8 against OpenVINO FP32 the drop per video
and per window with a 95 % interval (a paired bootstrap over videos: both formats see the same
resampled videos), the videos only one of the two gets right, and the alert agreement
(export.ranges) over every window. ``--by figure --by contrast``: top-1 per video for each
group of videos sharing those facts in DATASET/videos.csv (a ``video`` column of paths under
DATASET, one column per fact; ``models.synthdata`` writes one: far or near, low or high
contrast). Exit codes: 0 done, 2 bad usage (the dataset holds videos the
model was trained on), 3 not an export folder, 4 the dataset is missing or has other classes,
5 --json cannot be written there, 130 interrupted (nothing written).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from edge_hf.backends import load_backend
from edge_hf.errors import ModelError
from export import measure, ranges
from export.data import Hyperframes, every_video
from export.formats import BY_NAME, LABELS
from models import data as datasets
from models.cli import Parser, command
from models.errors import BadArguments, BadCheckpoint, BadData, OutputExists
from models.evaluation.metrics import confusion
from models.evaluation.streams import stream_facts

PROG = "python -m export.heldout"
NAMES = ("onnx", "openvino", "openvino-int8")
RESAMPLES = 2000  # bootstrap draws of the videos, from a fixed seed: the same interval each run
FIX = "pass the folder `python -m export` wrote (runs/NAME/export)"


def files_of(folder: Path) -> tuple[dict, dict[str, Path]]:
    """The export's report and its model files that are there, by format name."""
    report = folder / "report.json"
    try:
        r = json.loads(report.read_text())
        config = r["checkpoint"]["config"]
    except FileNotFoundError:
        raise BadCheckpoint(f"{folder}: not an export folder (no report.json); {FIX}") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BadCheckpoint(f"{report}: unreadable ({type(e).__name__}); {FIX}") from None
    found = {n: folder / BY_NAME[n].filename for n in NAMES}
    found = {n: p for n, p in found.items() if p.is_file()}
    if not found:
        raise BadCheckpoint(f"{folder}: holds no model file ({', '.join(NAMES)}); {FIX}")
    return config, found


def _videos(root: Path) -> list[Path]:
    try:
        ds = datasets.load(root)
    except BadData:
        return []  # every_video says what is wrong with the held-out one
    return [v.path for v in ds.train + ds.val + ds.test]


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seen(dataset: Path, trained_on: Path) -> int:
    """How many of ``dataset``'s videos are byte for byte videos of ``trained_on`` (a copy, or a
    dataset drawn again with the training seed); only files of equal size are read."""
    if not trained_on.is_dir():
        return 0
    if dataset.resolve() == trained_on.resolve():
        return len(_videos(dataset))
    by_size: dict[int, list[Path]] = {}
    for p in _videos(trained_on):
        by_size.setdefault(p.stat().st_size, []).append(p)
    digests: dict[int, set[str]] = {}  # per size, made once a held-out video has that size
    count = 0
    for p in _videos(dataset):
        size = p.stat().st_size
        if size in by_size:
            if size not in digests:
                digests[size] = {_digest(t) for t in by_size[size]}
            count += _digest(p) in digests[size]
    return count


def trained_on(config: dict[str, Any]) -> list[Path]:
    """The folders a model's training read: its dataset and its ``--more-data`` folders."""
    folders = [Path(config["data"])] if config.get("data") else []
    return folders + [datasets.more_data_folder(str(m))[0] for m in config.get("more_data") or ()]


def check_unseen(dataset: Path, config: dict[str, Any]) -> None:
    """Refuse a dataset holding videos of any folder the model was trained on."""
    for folder in trained_on(config):
        if n := seen(dataset, folder):
            raise BadArguments(
                f"{n} videos of {dataset} are videos of {folder}, which this model was trained "
                "on; pass a dataset it never saw (another seed or other backgrounds); its test "
                "split is in the export's report"
            )


def measure_all(folder: Path, dataset: Path, by: tuple[str, ...] = ()) -> dict[str, Any]:
    """An export folder's files on ``dataset`` (checked unseen first)."""
    config, files = files_of(folder)
    check_unseen(dataset, config)
    return {"export": str(folder), **measure_files(files, config, dataset, by)}


def measure_files(
    files: dict[str, Path], config: dict[str, Any], dataset: Path, by: tuple[str, ...] = ()
) -> dict:
    """Each model file (by format name) on every video of ``dataset``; INT8 against FP32; with
    ``by``, top-1 per video for each group of videos alike in those facts (``groups``)."""
    try:
        specs = {n: load_backend(p).spec for n, p in files.items()}
    except ModelError as e:
        raise BadCheckpoint(f"{e}; {FIX}") from None
    spec = specs.get("openvino-int8") or next(iter(specs.values()))
    u = every_video(dataset, spec, config)
    hf, video_level, left_out = u.hf, u.video_level, u.left_out
    if by and not video_level:
        raise BadArguments(
            f"--by counts top-1 per video, but the labels of {dataset} are per frame "
            "(segments.csv); drop --by, or pass clips labelled one per video"
        )
    keys = facts_of(dataset, by, [u.videos[i].path for i in np.unique(hf.clip)]) if by else []
    logits = {n: measure.backend_logits(p, hf.x, len(spec.classes)) for n, p in files.items()}
    rows = {n: _accuracy(lg, hf, video_level, spec.classes) for n, lg in logits.items()}
    out: dict[str, Any] = {
        "dataset": str(dataset),
        "videos": len(np.unique(hf.clip)),
        "windows": len(hf),
        "per_video": video_level,
        "left_out": left_out,  # videos of classes the model does not know, by class
        "formats": rows,
    }
    if keys:
        out["by"] = {"columns": list(by), "groups": groups(keys, logits, hf, spec.classes)}
    ref = "openvino" if "openvino" in logits else "onnx"
    if "openvino-int8" in logits and ref in logits:
        out["int8"] = compare(hf, logits[ref], logits["openvino-int8"], video_level)
        out["int8"]["against"] = ref
        out["int8"]["alert_agreement"] = ranges.judge(spec, logits[ref], logits["openvino-int8"])[
            "alert_agreement"
        ]
    return out


def facts_of(dataset: Path, by: tuple[str, ...], paths: list[Path]) -> list[tuple[str, ...]]:
    """Each video's values of the columns ``by`` of DATASET/videos.csv (rows by path under
    DATASET), checked before any model file runs."""
    names = [p.relative_to(dataset).as_posix() for p in paths]
    try:
        known = stream_facts(dataset, by, set(names), of=f"{dataset} (by path under it)")
    except BadData as e:
        raise BadData(f"--by: {e}") from None
    return [tuple(known[n][c] for c in by) for n in names]


def groups(
    keys: list[tuple[str, ...]],
    logits: dict[str, np.ndarray],
    hf: Hyperframes,
    classes: tuple[str, ...],
) -> list[dict]:
    """Per group of videos with the same ``keys`` (one per video, in video order): how many, how
    many each file calls right, each video by its windows' logits averaged, and what the first
    file (FP32 before INT8) took its misses for (most first)."""
    hits = {n: _video_hits(lg, hf) for n, lg in logits.items()}
    truth, called = _video_calls(logits[next(n for n in NAMES if n in logits)], hf)
    members: dict[tuple[str, ...], list[int]] = {}
    for i, key in enumerate(keys):
        members.setdefault(key, []).append(i)
    out = []
    for k, ix in sorted(members.items()):
        wrong = np.bincount(called[ix][truth[ix] != called[ix]], minlength=len(classes))
        taken = {classes[c]: int(wrong[c]) for c in np.argsort(-wrong, kind="stable") if wrong[c]}
        right = {n: int(h[ix].sum()) for n, h in hits.items()}
        out.append({"values": list(k), "videos": len(ix), "right": right, "taken_for": taken})
    return out


def _accuracy(
    logits: np.ndarray, hf: Hyperframes, video_level: bool, classes: tuple[str, ...]
) -> dict[str, Any]:
    hits = _hits(logits, hf)
    row: dict[str, Any] = {"window_top1": float(hits.sum() / len(hits))}
    if video_level:
        row["top1"] = float(_video_hits(logits, hf).mean())
        row["per_class"] = per_class(logits, hf, classes)
    return row


def per_class(logits: np.ndarray, hf: Hyperframes, classes: tuple[str, ...]) -> dict[str, dict]:
    """Per class of the videos: how many, how many called right, and what the others were called
    (most first), each video by its windows' logits averaged."""
    cm = confusion(*_video_calls(logits, hf), len(classes))
    out = {}
    for k in np.flatnonzero(cm.sum(1)):
        wrong = cm[k].copy()
        wrong[k] = 0
        taken = {classes[c]: int(wrong[c]) for c in np.argsort(-wrong, kind="stable") if wrong[c]}
        out[classes[k]] = {"videos": int(cm[k].sum()), "right": int(cm[k, k]), "taken_for": taken}
    return out


def _hits(logits: np.ndarray, hf: Hyperframes) -> np.ndarray:
    return (logits.argmax(1) == hf.y).astype(np.float64)


def _video_calls(logits: np.ndarray, hf: Hyperframes) -> tuple[np.ndarray, np.ndarray]:
    """Per video: its class and the class its windows' logits averaged pick, as the trainer and
    the report count it."""
    ids = np.unique(hf.clip)
    truth = np.array([hf.y[hf.clip == i][0] for i in ids])
    return truth, np.array([logits[hf.clip == i].mean(0).argmax() for i in ids])


def _video_hits(logits: np.ndarray, hf: Hyperframes) -> np.ndarray:
    truth, called = _video_calls(logits, hf)
    return (truth == called).astype(np.float64)


def compare(hf: Hyperframes, ref: np.ndarray, int8: np.ndarray, video_level: bool) -> dict:
    """INT8's drop against ``ref`` (points; positive: INT8 is worse) per window and per video,
    each with a 95 % interval from resampling the videos."""
    ids, where = np.unique(hf.clip, return_inverse=True)
    count = np.bincount(where, minlength=len(ids)).astype(np.float64)
    per_video = {
        "window": (
            np.bincount(where, _hits(ref, hf), len(ids)),
            np.bincount(where, _hits(int8, hf), len(ids)),
            count,
        )
    }
    if video_level:
        per_video["video"] = (_video_hits(ref, hf), _video_hits(int8, hf), np.ones(len(ids)))
    draws = np.random.default_rng(0).integers(0, len(ids), (RESAMPLES, len(ids)))
    out = {}
    for unit, (a, b, n) in per_video.items():
        drop = 100 * (a.sum() - b.sum()) / n.sum()
        boot = 100 * (a[draws].sum(1) - b[draws].sum(1)) / n[draws].sum(1)
        out[unit] = {
            "drop": round(float(drop), 2),
            "interval": [round(float(v), 2) for v in np.percentile(boot, [2.5, 97.5])],
        }
    if video_level:
        a, b, _ = per_video["video"]
        out["video"]["only_fp32"] = int(((a == 1) & (b == 0)).sum())
        out["video"]["only_int8"] = int(((a == 0) & (b == 1)).sum())
    return out


def gain(drop: float) -> str:
    """A drop as the change it is, signed: -1.2 for 1.2 points lost (and +0.0, not -0.0)."""
    return f"{0.0 - drop:+.1f}"


def lines(r: dict) -> list[str]:
    unit = f"{r['videos']} videos, {r['windows']} windows"
    left = ", ".join(f"{n} {c}" for c, n in r["left_out"].items())
    unit += f"; left out, of classes the model does not know: {left}" if left else ""
    out = [f"held out: {r['dataset']} ({unit})", "", "| model | top-1 | window top-1 |"]
    out.append("|---|---|---|")
    for name, row in r["formats"].items():
        top1 = f"{row['top1']:.3f}" if "top1" in row else "—"
        out.append(f"| {LABELS[name]} | {top1} | {row['window_top1']:.3f} |")
    out += _class_lines(r["formats"])
    if "by" in r:
        out += _group_lines(r["by"])
    if "int8" in r:
        c = r["int8"]
        parts = []
        for unit in ("video", "window"):
            if unit in c:
                lo, hi = c[unit]["interval"]
                parts.append(
                    f"per {unit} {gain(c[unit]['drop'])} points (95 %: {gain(hi)} to {gain(lo)})"
                )
        extra = ""
        if "video" in c:
            extra = f"; videos right in FP32 only {c['video']['only_fp32']}, in INT8 only {c['video']['only_int8']}"
        out += [
            "",
            f"INT8 against {LABELS[c['against']]}: {', '.join(parts)}{extra}; "
            f"alert agreement {c['alert_agreement']:.3f}",
        ]
    return out


def _class_lines(formats: dict[str, dict]) -> list[str]:
    """Per class, for the first file there is (FP32 before INT8): right of how many, the worst
    confusions; nothing when the labels are per frame."""
    name = next((n for n in NAMES if "per_class" in formats.get(n, {})), None)
    if name is None:
        return []
    out = ["", f"per class ({LABELS[name]}, per video):"]
    for cls, c in formats[name]["per_class"].items():
        taken = ", ".join(f"{n} as {t}" for t, n in list(c["taken_for"].items())[:3])
        out.append(f"- {cls}: {c['right']} / {c['videos']}" + (f" ({taken})" if taken else ""))
    return out


def _group_lines(by: dict) -> list[str]:
    """Per group of videos: right of how many for each file; what the first took the rest for."""
    names = list(by["groups"][0]["right"])
    out = [
        "",
        f"per video by {', '.join(by['columns'])}:",
        "",
        f"| {', '.join(by['columns'])} | "
        + " | ".join(LABELS[n] for n in names)
        + f" | {LABELS[names[0]]} took the rest for |",
    ]
    out.append("|---" * (len(names) + 2) + "|")
    for g in by["groups"]:
        cells = [
            f"{g['right'][n]} / {g['videos']} ({g['right'][n] / g['videos']:.3f})" for n in names
        ]
        cells.append(", ".join(f"{n} as {t}" for t, n in list(g["taken_for"].items())[:3]))
        out.append(f"| {', '.join(g['values'])} | " + " | ".join(cells) + " |")
    return out


def check_json(path: Path) -> Path:
    """Where --json can write, checked before the measurement, not after."""
    path = path.absolute()
    if path.is_dir():
        raise OutputExists(f"--json {path} is a folder; name a file")
    if not path.parent.is_dir():
        raise OutputExists(f"--json {path}: folder {path.parent} does not exist; create it first")
    return path


def write_json(path: Path, r: dict) -> None:
    """All or nothing: a temporary file beside ``path``, renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(r, f, indent=2)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("export", type=Path, help="the folder python -m export wrote")
    p.add_argument("dataset", type=Path, help="a dataset of the same classes the model never saw")
    p.add_argument("--json", type=Path, help="also write the numbers to this file")
    p.add_argument(
        "--by",
        action="append",
        default=[],
        metavar="COLUMN",
        help="top-1 per video for each group of videos alike in this column of "
        "DATASET/videos.csv (video,COLUMN,...: a fact about each video, by its path "
        "under DATASET; models.synthdata writes figure and contrast); repeat it for "
        "groups alike in all",
    )
    return command(PROG.removeprefix("python -m "), lambda: _heldout(p, argv))


def _heldout(p: Parser, argv: list[str] | None) -> str:
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    out = check_json(args.json) if args.json else None
    r = measure_all(args.export, args.dataset, tuple(args.by))
    if out:
        write_json(out, r)
    return "\n".join(lines(r))


if __name__ == "__main__":
    sys.exit(main())
