"""INT8 by NNCF post-training quantization on real training hyperframes.

MobileNetV3's hard-swish and squeeze-excite lose accuracy with NNCF's fast defaults, so the
defaults here are the accurate ones: the mixed preset (symmetric weights, asymmetric
activations) and the full bias correction (``fast_bias_correction=False``).

Activation ranges: ``minmax`` over the whole calibration set keeps the large
activations of fast motion, which is rare (a few calibration hyperframes in a hundred): averaged
ranges are set by the still ones and clip them, and on the synthetic demo that turns every fall
into a lie-down. But on a realistic model one outlier can take min/max's whole range. No
estimator suits every model, so the pipeline (``auto``, export.ranges) tries ``minmax``,
``quantile`` and ``nncf`` and keeps the one whose alerts follow the float model's.

``max_drop`` switches to ``quantize_with_accuracy_control``, which keeps the most harmful layers
in float until the report's top-1 is within ``max_drop`` (absolute, 0.01 = one point) of the
float model's.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import nncf
import numpy as np
import openvino as ov
from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, OverflowFix
from nncf.quantization.range_estimator import (
    AggregatorType,
    RangeEstimatorParameters,
    RangeEstimatorParametersSet,
    StatisticsCollectorParameters,
    StatisticsType,
)

from export.data import EvalData
from models.errors import BadArguments

OUTLIERS = 3e-3  # "quantile": the share of each hyperframe's activations left out of its range


def _quantile(side: AggregatorType) -> StatisticsCollectorParameters:
    return StatisticsCollectorParameters(
        StatisticsType.QUANTILE, side, quantile_outlier_prob=OUTLIERS
    )


RANGES = {
    "minmax": RangeEstimatorParametersSet.MINMAX,
    # NNCF's own choice per quantizer (mean of min/max for per-tensor activations, ...)
    "nncf": None,
    # each hyperframe's range without its most extreme OUTLIERS of values, widest over the set
    "quantile": RangeEstimatorParameters(
        min=_quantile(AggregatorType.MIN), max=_quantile(AggregatorType.MAX)
    ),
}
KEEP_FLOAT = ("stem", "se", "head")  # layer groups --keep-float can leave in float (below)
# All-INT8 lost 5-6 points of top-1 on realistic data; keeping the squeeze-excite and head
# layers in float brought it within 1 point at a small cost in speed (docs/results.md).
DEFAULT_KEEP_FLOAT = ("se", "head")
OVERFLOW_FIX = {f.value: f for f in OverflowFix}


@dataclass(frozen=True)
class QuantOptions:
    # Calibration hyperframes: 1000 rather than NNCF's 300 cut the INT8 drop per test video from
    # 1.1, 1.6, 1.1 points to 0.5, 0.0, 0.5 on three realistic models (docs/results.md).
    subset_size: int = 1000
    ranges: str = "auto"  # activation ranges: a key of RANGES, or auto (export.ranges)
    max_drop: float | None = None  # None: plain nncf.quantize
    keep_float: tuple[str, ...] = DEFAULT_KEEP_FLOAT  # groups of KEEP_FLOAT left unquantized
    # 7-bit weights everywhere: a CPU without VNNI saturates 8-bit products, and NNCF's default
    # (first_layer_only) moved the logits there (tests/export/test_isa.py)
    overflow_fix: str = "enable"  # a key of OVERFLOW_FIX

    def __post_init__(self) -> None:
        for group in self.keep_float:
            if group not in KEEP_FLOAT:
                raise BadArguments(
                    f"--keep-float: expected names from {list(KEEP_FLOAT)}, found {group!r}"
                )
        if self.overflow_fix not in OVERFLOW_FIX:  # set by code, not by a user
            raise ValueError(f"overflow_fix: expected one of {list(OVERFLOW_FIX)}")
        if self.ranges not in (*RANGES, "auto"):
            raise ValueError(f"ranges: expected one of {[*RANGES, 'auto']}, found {self.ranges!r}")
        if self.subset_size < 1:
            raise BadArguments(f"--subset-size: expected >= 1, found {self.subset_size}")
        if self.max_drop is not None and not 0 < self.max_drop < 1:
            raise BadArguments(
                f"--max-drop: expected an absolute top-1 drop in (0, 1), e.g. 0.01 for one "
                f"point, found {self.max_drop}"
            )


def quantize(model: ov.Model, data: EvalData, opts: QuantOptions) -> ov.Model:
    inputs = _inputs_of(model)
    calib = nncf.Dataset([x[None] for x in data.calib.x[: opts.subset_size]], inputs)
    common: dict[str, Any] = {
        # symmetric weights, asymmetric activations: "performance" lost accuracy here
        "preset": nncf.QuantizationPreset.MIXED,
        "subset_size": min(opts.subset_size, len(data.calib)),
        "fast_bias_correction": False,
    }
    advanced: dict[str, Any] = {"overflow_fix": OVERFLOW_FIX[opts.overflow_fix]}
    if RANGES[opts.ranges] is not None:
        advanced["activations_range_estimator_params"] = RANGES[opts.ranges]
    if opts.keep_float:
        common["ignored_scope"] = nncf.IgnoredScope(names=float_layers(model, opts.keep_float))
    with _nncf_on_stderr(logging.WARNING if opts.max_drop is None else logging.INFO):
        if opts.max_drop is None:
            return nncf.quantize(
                model,
                calib,
                advanced_parameters=AdvancedQuantizationParameters(**advanced),
                **common,
            )
        val = nncf.Dataset(_validation_items(data), lambda item: inputs(item[0]))
        return nncf.quantize_with_accuracy_control(
            model,
            calib,
            val,
            validation_fn=_top1,
            max_drop=opts.max_drop,
            drop_type=nncf.DropType.ABSOLUTE,
            advanced_quantization_parameters=AdvancedQuantizationParameters(**advanced),
            **common,
        )


def float_layers(model: ov.Model, groups: tuple[str, ...]) -> list[str]:
    """Names of the layers in ``groups``, found by the graph's structure (the exported names are
    opaque): ``stem`` the first convolution, which sees the raw stacked frames; ``se`` the
    squeeze-excite convolutions (1x1 spatial input, before the last one); ``head`` the last 1x1
    spatial convolution (timm's conv_head) and the classifier (the last MatMul: a transformer's
    other MatMuls stay quantized)."""
    convs = [op for op in model.get_ordered_ops() if op.get_type_name() == "Convolution"]
    pooled = [
        op
        for op in convs
        if [d.get_length() for d in op.input(0).get_partial_shape()[2:]] == [1, 1]
    ]
    found = {
        "stem": convs[:1],
        "se": pooled[:-1],
        "head": pooled[-1:]
        + [op for op in model.get_ordered_ops() if op.get_type_name() == "MatMul"][-1:],
    }
    return [op.get_friendly_name() for g in groups for op in found[g]]


@contextlib.contextmanager
def _nncf_on_stderr(level: int) -> Iterator[None]:
    """NNCF logs and draws progress bars on stdout, where this command prints its report: move
    them to stderr. INFO for accuracy control says which layers it kept in float."""
    log = logging.getLogger("nncf")
    saved = log.level, [(h, h.stream) for h in log.handlers if isinstance(h, logging.StreamHandler)]
    log.setLevel(level)
    for h, _ in saved[1]:
        h.setStream(sys.stderr)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        log.setLevel(saved[0])
        for h, stream in saved[1]:
            h.setStream(stream)


def _inputs_of(model: ov.Model | ov.CompiledModel) -> Callable[[np.ndarray], Any]:
    """A window's frames (every input's in turn) -> what the model takes: the array itself, or
    one array per input (a temporal pyramid)."""
    n = len(model.inputs)
    if n == 1:
        return lambda x: x
    t = model.inputs[0].get_partial_shape()[1].get_length()
    return lambda x: [np.ascontiguousarray(x[:, k * t : (k + 1) * t]) for k in range(n)]


def _validation_items(data: EvalData) -> list[tuple[np.ndarray, int]]:
    """What the report's top-1 counts, on the trainer's validation split or the --tune dataset
    (never the test split the report measures): a video (its windows as one batch) or a
    window."""
    val = data.tune
    if data.video_level:
        return [(val.x[val.clip == c], int(val.y[val.clip == c][0])) for c in np.unique(val.clip)]
    return [(x[None], int(y)) for x, y in zip(val.x, val.y, strict=True)]


def _top1(
    compiled: ov.CompiledModel, items: Iterable[tuple[np.ndarray, int]]
) -> tuple[float, list[float]]:
    """Top-1 (a video's windows' logits averaged, as the report does) and each item's hit, as
    quantize_with_accuracy_control expects."""
    feed = _inputs_of(compiled)
    hits = [float(np.argmax(compiled(feed(x))[0].mean(0)) == y) for x, y in items]
    return (sum(hits) / len(hits) if hits else 0.0), hits
