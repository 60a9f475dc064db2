"""``report.json`` (everything measured) and ``MODEL_CARD.md`` (the same, for people)."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from importlib import metadata
from pathlib import Path

from export.formats import LABELS
from models.evaluation import clips

PACKAGES = ("edge-hf", "torch", "timm", "onnx", "onnxruntime", "openvino", "nncf")


def environment() -> dict:
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = None
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        # other work on the machine slows the latency figures down: judge them by this
        "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "packages": versions,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def cpu_name() -> str:
    """The CPU's model name (for reports and benchmark records)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_report(path: Path, report: dict) -> None:
    path.write_text(json.dumps(report, indent=1) + "\n")


def write_card(path: Path, report: dict) -> None:
    path.write_text("\n".join(card_lines(report)) + "\n")


def _pyramid_lines(spec: dict) -> list[str]:
    if not spec["scales"]:
        return []
    scales = "; ".join(
        f"input {k}: {s['frames']} frames every {s['stride']}, ending {s['offset']} before the newest"
        for k, s in enumerate(spec["scales"])
    )
    return ["", f"A temporal pyramid, one input per scale through one backbone ({scales})."]


def _alert(cls: str, threshold: float, then: dict | None) -> str:
    """``fall ≥ 0.8``, and what it waits for (the spec's alert_then)."""
    if then is None:
        return f"{cls} ≥ {threshold}"
    return (
        f"{cls} ≥ {threshold} once {then['pose']} ≥ {then['threshold']} follows within "
        f"{then['within']:g} s"
    )


def _wait_lines(w: dict | None, tune: dict | None) -> list[str]:
    """How the export chose the wait for lying (models.evaluation.wait), if it did."""
    if not w:
        return []
    on = f"videos of --tune `{tune['dataset']}`" if tune else "validation videos"
    return [
        "",
        f"The wait ({w['rule']}) was chosen on {w['videos']} {on}: "
        f"{w['threshold']:g} within {w['within']:g} s, {w['why']} (falls in time and "
        "false alerts at each threshold: report.json, export.wait.grid).",
    ]


def card_lines(r: dict) -> list[str]:
    spec, data, env = r["spec"], r["data"], r["environment"]
    then = spec.get("alert_then", {})
    alerts = (
        ", ".join(_alert(c, t, then.get(c)) for c, t in spec["alert_classes"].items()) or "none"
    )
    h, w = spec["size"]
    lines = [
        f"# Model card: {spec['arch']} on {spec['frames']}-frame hyperframes",
        "",
        f"Classifies a hyperframe — {spec['frames']} frames, every {spec['stride']} source "
        f"frame(s), squashed to {h}x{w} ({spec['interpolation']}) — into one of "
        f"{len(spec['classes'])} classes: {', '.join(spec['classes'])}. "
        f"Alerts by default: {alerts}.",
        *_wait_lines(r["export"].get("wait"), data.get("tune")),
        *clips.lines((r.get("clips") or {}).get("classes")),
        *_pyramid_lines(spec),
        "",
        "Input: uint8 `[N, T, H, W, 3]`, BGR as OpenCV delivers it, oldest frame first; the "
        "graph casts, reorders and scales itself. The spec travels inside each model file "
        "(`edge-hf info FILE` prints it).",
        "",
        "## Files",
        "",
        "| format | files | precision | size |",
        "|---|---|---|---|",
    ]
    for name in r["export"]["shipped"]:
        row = r["formats"][name]
        lines.append(
            f"| {name} | {', '.join(row['files'])} | {row['precision']} | "
            f"{row['bytes'] / 1e6:.2f} MB |"
        )
    lines += ["", *metrics_table(r), *_held_out_lines(r.get("held_out"))]
    lines += ["", *adapter_lines(r), "", *data_lines(r, data)]
    lines += [
        "",
        "## Machine",
        "",
        f"{env['cpu']}, {env['cores']} cores (load average {env['load_average_1min']} at the "
        f"end of the run), {env['platform']}, Python {env['python']}; "
        + ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v)
        + f". Measured {env['created']}.",
        "",
        "## Reproduce",
        "",
        "```sh",
        r["command"],
        "```",
        "",
        "The checkpoint came from `python -m models.train` with the training configuration "
        "recorded in report.json (`checkpoint.config`).",
    ]
    return lines


def _held_out_lines(h: dict | None) -> list[str]:
    """--held-out: every file on a dataset the model never saw (export.heldout)."""
    if not h:
        return []
    from export.heldout import lines  # when there is one: it runs models (torch)

    return ["", "## On videos it never saw", "", *lines(h)]


LOSS_LIMIT = 0.01  # one point of top-1, per video or per window


def _choice(c: dict | None) -> str:
    """Why these ranges (export.ranges): each candidate's alert agreement with FP32."""
    if not c:
        return ""
    each = ", ".join(
        f"{name} {v['alert_agreement']:.2f} ({v['top1_agreement']:.1%} top-1)"
        for name, v in c["candidates"].items()
    )
    return (
        f" (chosen by alert agreement with FP32 on the {c['on']}: the F1 of the hyperframes "
        f"where each reaches an alert class's threshold; {each})"
    )


def int8_advice(shipped: list[str]) -> str:
    """What to do when INT8 loses more than a point: deploy the FP32 file this export wrote."""
    fp32 = next(
        (
            f"{f} (FP32)"
            for fmt, f in (("openvino", "model.xml"), ("onnx", "model.onnx"))
            if fmt in shipped
        ),
        "an FP32 file (export again with --formats openvino)",
    )
    return (
        f"More than 1 point lost: deploy {fp32} instead, or export again with --max-drop "
        "0.01 (or --keep-float stem,se,head) and check that the falls are still caught (python -m "
        "models.evaluate MODEL STREAMS, python -m export.demo_check MODEL)."
    )


def metrics_table(r: dict) -> list[str]:
    over = r["data"]["accuracy_over"].split(" ")[0]
    lines = [
        "## Accuracy and latency",
        "",
        f"Test split (never used to choose the epoch); top-1 and macro-F1 over {over}, window top-1 over single "
        "hyperframes; latency is the median of one inference through the edge-hf runtime's "
        "backend (PyTorch: a forward pass) at batch 1 and batch 8.",
        "",
        "| model | top-1 | macro-F1 | window top-1 | batch-1 ms | batch-8 ms | size MB | "
        "parity (max \\|Δ\\| / logit range) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in r["formats"].items():
        lat = row["latency_ms"]
        parity = row.get("parity")
        p = f"{parity['relative']:.1e}" if parity else ("reference" if name == "torch" else "—")
        size = f"{row['bytes'] / 1e6:.2f}" if row["bytes"] else "—"
        label = "OpenVINO, FP16 weights" if row.get("precision") == "fp16 weights" else LABELS[name]
        lines.append(
            f"| {label} | {row['top1']:.3f} | {row['macro_f1']:.3f} | "
            f"{row['window_top1']:.3f} | {lat['batch1']:.2f} | {lat['batch8']:.2f} | {size} | "
            f"{p} |"
        )
    int8 = r["formats"].get("openvino-int8")
    if int8:
        d = int8["drop"]
        lines += [
            "",
            f"INT8 against OpenVINO FP32: top-1 {-d['top1'] * 100:+.1f} points, window top-1 "
            f"{-d['window_top1'] * 100:+.1f} points; it picks the trained model's class on "
            f"{int8['agree_with_torch'] * 100:.1f} % of test hyperframes"
            + (
                f"; its alerts agree with FP32's at {int8['alert_agreement']:.2f} (F1 of the test "
                "hyperframes where each reaches 0.5, the alert threshold or halfway to 1)."
                if "alert_agreement" in int8
                else "."
            ),
        ]
        if max(d["top1"], d["window_top1"]) > LOSS_LIMIT:
            lines.append(_within_held_out(r) or int8_advice(r["export"]["shipped"]))
    return lines


def _within_held_out(r: dict) -> str | None:
    """Said instead of the advice when INT8 loses more than a point on the test split but not
    on the many more videos of --held-out, where the drop is known more closely."""
    from export.heldout import gain

    c = (r.get("held_out") or {}).get("int8")
    if not c or max(c[u]["drop"] for u in ("video", "window") if u in c) > LOSS_LIMIT * 100:
        return None
    per = ", ".join(f"{gain(c[u]['drop'])} per {u}" for u in ("video", "window") if u in c)
    return (
        f"More than 1 point lost on the {r['data']['test_videos']} test videos, but {per} on "
        f"the {r['held_out']['videos']} videos it never saw (On videos it never saw, with 95 % "
        "intervals), which tell the drop more closely."
    )


def adapter_lines(r: dict) -> list[str]:
    if r["adapter"] is None:
        return [
            "## The input adapter's cost",
            "",
            "Not measured for a temporal pyramid: its first convolution takes every scale at once.",
        ]
    lines = [
        "## The input adapter's cost",
        "",
        "Batch-1 median latency of the exported model (uint8 frames in: cast, transpose and "
        "reshape inside the graph, scaling folded into conv1) against its backbone alone on an "
        "already-prepared float `[1, 3T, H, W]` input, run identically (onnxruntime: one thread).",
        "",
        "| engine | model ms | backbone ms | adapter ms |",
        "|---|---|---|---|",
    ]
    for engine, a in r["adapter"].items():
        lines.append(
            f"| {engine} | {a['model_ms']:.3f} | {a['backbone_ms']:.3f} | {a['adapter_ms']:+.3f} |"
        )
    return lines


def data_lines(r: dict, data: dict) -> list[str]:
    q = r["export"]["quantization"]
    ckpt = r["checkpoint"]
    prov = ", ".join(f"{k}: {v}" for k, v in r["spec"]["provenance"].items())
    return [
        "## Data",
        "",
        f"Trained from `{ckpt['path']}` (epoch {ckpt['epoch']}; {prov}). Measured on "
        f"`{data['dataset']}`: {data['test_videos']} test videos (never used to choose the "
        f"epoch), {data['test_windows']} hyperframes ({data['eval_clips']} evenly spaced windows per video, label strategy "
        f"`{data['label_strategy']}`), exactly as the runtime preprocesses frames.",
        "",
        f"INT8 calibration: {data['calib_windows']} hyperframes from the {data['train_videos']} "
        f"training videos, as many per class and spread from still to fast within a class; NNCF preset {q['preset']}, subset_size {q['subset_size']}, "
        f"fast_bias_correction={q['fast_bias_correction']}, activation ranges "
        f"{q['activation_ranges']}{_choice(q.get('range_choice'))}"
        + (f", accuracy control with max drop {q['max_drop']}" if q["max_drop"] else "")
        + (f", kept in float: {', '.join(q['keep_float'])}" if q.get("keep_float") else "")
        + (f", overflow fix: {q['overflow_fix']}" if q.get("overflow_fix") else "")
        + "."
        + _in_float(q)
        + _tune(data.get("tune")),
    ]


def _tune(t: dict | None) -> str:
    if not t:
        return ""
    return (
        f" INT8 and the wait for lying were chosen on `{t['dataset']}` (--tune: {t['videos']} "
        "videos the model never trained on) instead of the validation split."
    )


def _in_float(q: dict) -> str:
    """The float layers by name and what they cost in latency (export.floatops)."""
    f = q.get("in_float")
    if not f or not f["layers"]:
        return ""
    text = f" In float: {len(f['layers'])} of {f['of']} layers ({', '.join(f['layers'])})"
    if q["max_drop"]:
        reverted = f["by_accuracy_control"]
        text += "; accuracy control added " + (", ".join(reverted) if reverted else "none")
    ms = f.get("latency_ms", {}).get("batch1")
    if ms:
        text += (
            f". OpenVINO batch-1 latency {ms['shipped']:.3f} ms against {ms['all_int8']:.3f} ms "
            f"with every layer in INT8 (x{ms['shipped'] / ms['all_int8']:.2f})"
        )
    return text + "."
