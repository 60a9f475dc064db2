"""One export run: checkpoint -> ONNX -> OpenVINO FP32 -> INT8, each checked against the trained
model and measured, written to a temporary folder and moved into place only when all is done."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edge_hf.spec import HyperframeSpec, Then
from export import floatops, heldout, measure, ranges
from export.alert_spec import with_then, with_thresholds
from export.card import environment, write_card, write_report
from export.data import EvalData, load_data, tuned_on
from export.formats import BY_NAME, Format, needed
from export.quantize import QuantOptions, float_layers, quantize
from export.to_openvino import convert, save
from models.checkpoint import Checkpoint, load_checkpoint
from models.errors import BadArguments, BadData, OutputExists
from models.evaluation import clips
from models.evaluation.wait import choose_wait
from models.to_onnx import OPSET, backbone_of, save_onnx, trace_model

REPORT_FILES = ("report.json", "MODEL_CARD.md")


@dataclass(frozen=True)
class ExportOptions:
    checkpoint: Path
    formats: tuple[Format, ...]
    out: Path
    calib: Path | None = None  # default: the dataset the checkpoint was trained on
    force: bool = False
    fp16: bool = False
    quant: QuantOptions = field(default_factory=QuantOptions)
    thresholds: tuple[tuple[str, float], ...] = ()
    then: tuple[Then, ...] | None = None  # None: auto (export.alert_spec.with_then)
    repeats: int = 100  # timed runs per latency figure
    held_out: Path | None = None  # also measured on every video of this unseen dataset
    tune: Path | None = None  # INT8 and the wait chosen on this unseen dataset (export.data)
    command: str = ""


def run(opts: ExportOptions) -> dict:
    """Export, check, measure, write; returns the report. The output folder appears whole or
    not at all."""
    out = check_out(opts.out, opts.force)
    ckpt = load_checkpoint(opts.checkpoint)
    spec = with_then(with_thresholds(ckpt.spec, list(opts.thresholds)), opts.then)
    _check_unseen(opts, ckpt.config)  # before the work
    data = load_data(_dataset(ckpt, opts.calib), ckpt.spec, ckpt.config, opts.quant.subset_size)
    if opts.tune is not None:
        data = tuned_on(data, opts.tune, ckpt.spec, ckpt.config)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        graph = trace_model(ckpt.net, spec)  # once: the wait's choice and the files share it
        spec, waited = _wait(ckpt, spec, data, opts, staging, graph)
        report = build(ckpt, spec, data, opts, staging, graph)
        report["export"]["wait"] = waited
        if opts.held_out is not None:  # every file built, the FP32 one even when not shipped
            names = [n for n in heldout.NAMES if n in report["formats"]]
            files = {n: staging / BY_NAME[n].filename for n in names}
            report["held_out"] = heldout.measure_files(files, ckpt.config, opts.held_out)
        write_report(staging / "report.json", report)
        write_card(staging / "MODEL_CARD.md", report)
        keep = {f for fmt in opts.formats for f in fmt.files()} | set(REPORT_FILES)
        for p in staging.iterdir():
            if p.name not in keep:
                p.unlink()
        publish(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report


def _wait(
    ckpt: Checkpoint,
    spec: HyperframeSpec,
    data: EvalData,
    opts: ExportOptions,
    folder: Path,
    graph: onnx.ModelProto,
) -> tuple[HyperframeSpec, dict | None]:
    """The spec with the wait for lying chosen for this model (models.evaluation.wait) when the
    export added that rule itself (no ``--then``); else as it is, and None for the report."""
    if opts.then is not None or ckpt.spec.alert_then or len(spec.alert_then) != 1:
        return spec, None
    path = folder / "wait.onnx"  # staging only: dropped by run()
    save_onnx(graph, spec, path)
    return choose_wait(path, spec, data.tune_videos, data.classes)


def _check_unseen(opts: ExportOptions, config: dict) -> None:
    """Refuse --held-out or --tune data holding training videos, and a --held-out dataset
    holding --tune videos (what INT8 was chosen on cannot measure it)."""
    for given in (opts.held_out, opts.tune):
        if given is not None:
            heldout.check_unseen(given, config)
    both = opts.held_out is not None and opts.tune is not None
    if both and (n := heldout.seen(opts.held_out, opts.tune)):
        raise BadArguments(
            f"{n} videos of --held-out {opts.held_out} are videos of --tune {opts.tune}, "
            "which INT8 and the wait are chosen on; pass two datasets drawn apart (other "
            "seeds)"
        )


@dataclass
class Built:
    """The model files written so far, their logits on the validation hyperframes, and the
    parity of each float format with the trained model."""

    files: dict[str, Path] = field(default_factory=dict)
    logits: dict[str, np.ndarray] = field(default_factory=dict)
    parity: dict[str, dict] = field(default_factory=dict)
    ranges: dict | None = None  # each candidate's judgement and the choice (export.ranges)
    in_float: dict | None = None  # INT8: the layers left in float (export.floatops)
    all_int8: Path | None = None  # INT8 with no layer left in float: their cost in latency


def build(
    ckpt: Checkpoint,
    spec: HyperframeSpec,
    data: EvalData,
    opts: ExportOptions,
    folder: Path,
    graph: onnx.ModelProto,
) -> dict:
    """Write every needed format of the traced ``graph`` into ``folder`` and measure it (the
    report's content)."""
    built = write_formats(ckpt, spec, data, opts, folder, graph)
    rows = {name: _row(name, built, ckpt, data, opts) for name in built.logits}
    _latency(rows, built, ckpt, data, opts.repeats)
    if "openvino-int8" in rows:
        rows["openvino-int8"]["drop"] = _drop(rows["openvino"], rows["openvino-int8"])
        if spec.alert_classes:  # where INT8 alerts against where FP32 does (export.ranges)
            logits = built.logits["openvino"], built.logits["openvino-int8"]
            rows["openvino-int8"]["alert_agreement"] = ranges.judge(spec, *logits)[
                "alert_agreement"
            ]
    checked = next(n for n in ("openvino-int8", "openvino", "onnx") if n in built.files)
    on_clips = clips.check(built.files[checked], spec, data.tune_videos, data.classes)
    adapter = None  # a pyramid's first conv sees every scale at once: nothing to compare alone
    if len(spec.inputs) == 1:
        backbone = folder / "backbone.onnx"
        backbone_of(ckpt.net, spec, backbone)
        adapter = measure.adapter_cost(built.files["onnx"], backbone, data.val.x[:1], opts.repeats)
    return {
        "checkpoint": {"path": str(ckpt.path), "epoch": ckpt.epoch, "config": ckpt.config},
        "spec": spec.to_dict(),
        "formats": rows,
        "adapter": adapter,
        "clips": on_clips and {"format": checked, "classes": on_clips},
        "data": _data_facts(data, ckpt),
        "export": {
            "opset": OPSET,
            "fp16": opts.fp16,
            "quantization": {
                "preset": "mixed",
                "subset_size": min(opts.quant.subset_size, len(data.calib)),
                "fast_bias_correction": False,
                "activation_ranges": built.ranges["chosen"] if built.ranges else opts.quant.ranges,
                "range_choice": built.ranges,
                "max_drop": opts.quant.max_drop,
                "keep_float": list(opts.quant.keep_float),
                "overflow_fix": opts.quant.overflow_fix,
                "in_float": built.in_float,
            },
            "parity_tolerance": measure.PARITY_TOL,
            "shipped": [f.name for f in opts.formats],
        },
        "environment": environment(),
        "command": opts.command,
    }


def write_formats(
    ckpt: Checkpoint,
    spec: HyperframeSpec,
    data: EvalData,
    opts: ExportOptions,
    folder: Path,
    graph: onnx.ModelProto,
) -> Built:
    """torch -> ONNX -> OpenVINO FP32 -> INT8, as far as the chosen formats need; each float
    format is checked against the trained model before the next is built from it."""
    b = Built(logits={"torch": measure.torch_logits(ckpt.net, data.val.x)})
    chosen = needed(opts.formats)

    def written(name: str, tol: float | None, label: str, fix: str = measure.FIX) -> None:
        b.logits[name] = measure.backend_logits(b.files[name], data.val.x, len(spec.classes))
        if tol is not None:
            b.parity[name] = measure.check_parity(
                b.logits["torch"], b.logits[name], label, tol, fix
            )

    b.files["onnx"] = folder / BY_NAME["onnx"].filename
    save_onnx(graph, spec, b.files["onnx"])
    written("onnx", measure.PARITY_TOL, "onnx (onnxruntime)")
    if BY_NAME["openvino"] in chosen:
        ov_model = convert(b.files["onnx"])
        b.files["openvino"] = folder / BY_NAME["openvino"].filename
        save(ov_model, spec, b.files["openvino"], fp16=opts.fp16)
        if opts.fp16:
            fix = "FP16 weights move this model's logits too far: drop --fp16"
            written("openvino", measure.PARITY_TOL_FP16, "openvino (FP16 weights)", fix)
        else:
            written("openvino", measure.PARITY_TOL, "openvino (OpenVINO FP32)")
    if BY_NAME["openvino-int8"] in chosen:
        b.files["openvino-int8"] = folder / BY_NAME["openvino-int8"].filename
        int8, b.ranges = quantized(ov_model, spec, data, opts.quant, b.files["onnx"])
        save(int8, spec, b.files["openvino-int8"])
        written("openvino-int8", None, "")  # judged by its accuracy, not by parity
        _in_float(b, ckpt, spec, data, opts.quant, ov_model, int8)
    return b


def _in_float(
    b: Built,
    ckpt: Checkpoint,
    spec: HyperframeSpec,
    data: EvalData,
    quant: QuantOptions,
    ov_model: Any,
    int8: Any,
) -> None:
    """Name the INT8 model's float layers and, if there are any, build the same model with
    every layer quantized (same ranges, no accuracy control) for the latency comparison."""
    b.in_float = floatops.summary(int8, ckpt.net, float_layers(ov_model, quant.keep_float))
    if not b.in_float["layers"]:
        return
    chosen = b.ranges["chosen"] if b.ranges else quant.ranges
    every = replace(quant, ranges=chosen, max_drop=None, keep_float=())
    b.all_int8 = b.files["openvino-int8"].with_name("int8-all.xml")  # staging only
    save(quantize(ov_model.clone(), data, every), spec, b.all_int8)


def quantized(
    ov_model: Any, spec: HyperframeSpec, data: EvalData, quant: QuantOptions, fp32: Path
) -> tuple[Any, dict | None]:
    """The INT8 model; with ranges ``auto`` each candidate's, judged on the validation split
    against ``fp32`` (export.ranges), and the judgement for the report."""
    if quant.ranges != "auto":
        return quantize(ov_model.clone(), data, quant), None
    n, x = len(spec.classes), data.tune.x
    ref = measure.backend_logits(fp32, x, n)
    models, judged = {}, {}
    for name in ranges.CANDIDATES:
        models[name] = quantize(ov_model.clone(), data, replace(quant, ranges=name, max_drop=None))
        path = fp32.with_name(f"int8-{name}.xml")  # staging only: dropped by run()
        save(models[name], spec, path)  # scored by the runtime's own backend, as deployed
        judged[name] = ranges.judge(spec, ref, measure.backend_logits(path, x, n))
    chosen = ranges.best(judged)
    if quant.max_drop is not None:  # accuracy control, on the chosen ranges
        models[chosen] = quantize(ov_model.clone(), data, replace(quant, ranges=chosen))
    on = (
        f"--tune {data.tune_root}"
        if data.tune_root is not None
        else "validation split"
        if data.tune is not data.val
        else "test split (no validation split)"
    )
    return models[chosen], {
        "chosen": chosen,
        "on": f"{on}, {len(x)} hyperframes",
        "candidates": judged,
    }


def _row(name: str, b: Built, ckpt: Checkpoint, data: EvalData, opts: ExportOptions) -> dict:
    """Accuracy, agreement with the trained model, and size of one format."""
    row = measure.accuracy(b.logits[name], data.val, data.video_level, ckpt.spec.classes)
    row["agree_with_torch"] = float(
        (b.logits[name].argmax(1) == b.logits["torch"].argmax(1)).mean()
    )
    if name in b.parity:
        row["parity"] = b.parity[name]
    if name == "torch":
        row.update(engine={"backend": "torch", "threads": _torch_threads()}, files=[], bytes=0)
        return row
    fmt = BY_NAME[name]
    paths = [b.files[name].with_name(f) for f in fmt.files()]
    row.update(
        files=[p.name for p in paths],
        bytes=sum(p.stat().st_size for p in paths),
        precision="fp16 weights" if name == "openvino" and opts.fp16 else fmt.precision,
    )
    return row


def _latency(rows: dict, b: Built, ckpt: Checkpoint, data: EvalData, repeats: int) -> None:
    """Batch-1 and batch-8 latency of every format, timed in interleaved rounds."""
    x = data.val.x
    batches = {"batch1": x[:1], "batch8": np.resize(x, (measure.BATCH, *x.shape[1:]))}
    steps = {}
    for name in rows:
        for batch, xb in batches.items():
            if name == "torch":
                steps[name, batch] = measure.torch_step(ckpt.net, xb)
                continue
            steps[name, batch], engine = measure.backend_step(
                b.files[name], xb, len(ckpt.spec.classes)
            )
            rows[name]["engine"] = {
                k: v for k, v in engine.items() if k not in ("inputs", "outputs")
            }
            if name == "openvino-int8" and b.all_int8 is not None:
                steps["all-int8", batch], _ = measure.backend_step(
                    b.all_int8, xb, len(ckpt.spec.classes)
                )
    ms = measure.interleaved_ms(steps, repeats)
    for name, row in rows.items():
        row["latency_ms"] = {batch: ms[name, batch] for batch in batches}
    if b.all_int8 is not None:  # what the float layers cost: the shipped INT8 against all-INT8
        b.in_float["latency_ms"] = {
            batch: {"shipped": ms["openvino-int8", batch], "all_int8": ms["all-int8", batch]}
            for batch in batches
        }


def _drop(fp32: dict, int8: dict) -> dict:
    return {k: fp32[k] - int8[k] for k in ("top1", "macro_f1", "window_top1")}


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _data_facts(data: EvalData, ckpt: Checkpoint) -> dict:
    return {
        "dataset": str(data.root),
        "train_videos": data.videos[0],
        "test_videos": data.videos[1],
        "test_windows": len(data.val),
        "calib_windows": len(data.calib),
        "accuracy_over": "videos (their windows' logits averaged)"
        if data.video_level
        else "windows",
        "label_strategy": ckpt.config.get("label_strategy", "video"),
        "eval_clips": ckpt.config.get("eval_clips"),
        "tune": None
        if data.tune_root is None
        else {"dataset": str(data.tune_root), "videos": len(data.tune_videos)},
    }


def _dataset(ckpt: Checkpoint, calib: Path | None) -> Path:
    if calib is not None:
        return calib
    trained_on = ckpt.config.get("data", "")
    if not trained_on or not Path(trained_on).is_dir():
        raise BadData(
            f"{ckpt.path} was trained on {trained_on or 'an unrecorded dataset'!r}, which is not "
            "here; pass --calib DATASET (a dataset with the same classes)"
        )
    return Path(trained_on)


# ---- the output folder -------------------------------------------------------------------------
def check_out(out: Path, force: bool) -> Path:
    out = out.absolute()
    if out.exists() and not out.is_dir():
        raise OutputExists(f"--out {out} is a file; choose a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise OutputExists(
            f"--out {out} already holds files; choose another folder or pass --force to replace it"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def publish(staging: Path, out: Path) -> None:
    """Swap the finished ``staging`` folder in for ``out`` (renames on one file system)."""
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp made it private
    if not out.exists():
        staging.rename(out)
        return
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    out.rename(old)
    staging.rename(out)
    shutil.rmtree(old)
