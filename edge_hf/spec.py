"""The hyperframe contract: the one place where training, export and the runtime agree.

A model's input is uint8 ``[N, T, H, W, 3]``, BGR as OpenCV delivers it, frame-major with frame 0
the oldest. Frames are squashed (whole frame, no crop) to ``size`` with ``interpolation``. The
exported graph does casting, colour order and scaling itself, so the runtime never touches floats.

The spec travels inside the model file as JSON: ONNX ``metadata_props[METADATA_KEY]`` and
OpenVINO ``rt_info[RT_INFO_PATH]``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from edge_hf.errors import SpecError

SPEC_VERSION = 1
METADATA_KEY = "edge_hf.spec"
RT_INFO_PATH = ("edge_hf", "spec")
# OpenVINO's ONNX frontend keeps ONNX metadata_props under this rt_info prefix.
OV_ONNX_METADATA_PATH = ("framework", METADATA_KEY)

INTERPOLATIONS = ("nearest", "linear", "area", "cubic")
LAYOUTS = ("frame-major",)
ACTIVATIONS = ("softmax", "sigmoid")


@dataclass(frozen=True)
class Scale:
    """One input of a temporal pyramid: ``frames`` frames every ``stride``, ending ``offset``
    frames before the newest one."""

    frames: int
    stride: int
    offset: int = 0

    def lags(self) -> tuple[int, ...]:
        """How many frames before the newest frame each input frame is, oldest first."""
        return tuple(self.offset + (self.frames - 1 - j) * self.stride for j in range(self.frames))


@dataclass(frozen=True)
class Then:
    """An alert of ``cls`` starts only when ``pose`` follows it (a fall, by lying on the floor):
    after the class's own k of n, the pose's score must reach ``threshold`` on k of the next n
    hyperframes within ``within`` seconds (edge_hf.alerts)."""

    cls: str
    pose: str
    # low: a model trained from scratch scores lying about 0.25 after a fall (docs/runtime.md:
    # alerts that wait for a pose); the export chooses it and ``within`` per model
    # (models.evaluation.wait)
    threshold: float = 0.2
    within: float = 1.0  # seconds after the last hyperframe where the class's k of n held

    def problem(self) -> str | None:
        """What is wrong with it, if anything (the one check of its values)."""
        ok = all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in (self.threshold, self.within)
        )
        if not (ok and 0 < self.threshold <= 1 and 0 < self.within <= 60):
            return (
                f"{self.cls} then {self.pose}: expected a threshold in (0, 1] and 0 to 60 "
                f"seconds, found {self.threshold!r} and {self.within!r}"
            )
        if self.cls == self.pose:
            return f"{self.cls} then {self.pose}: the pose must be another class"
        return None


@dataclass(frozen=True)
class HyperframeSpec:
    frames: int
    stride: int
    size: tuple[int, int]  # (H, W)
    classes: tuple[str, ...]
    alert_classes: tuple[tuple[str, float], ...] = ()  # (class, default threshold)
    interpolation: str = "linear"
    layout: str = "frame-major"
    activation: str = "softmax"
    scales: tuple[Scale, ...] = ()  # empty: one input of (frames, stride, 0)
    alert_then: tuple[Then, ...] = ()  # alert classes that wait for a pose after them
    fps: float = 0.0  # the frame rate of the videos it was trained on; 0: not recorded
    arch: str = ""
    version: int = SPEC_VERSION
    provenance: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        _validate(self)

    # ---- derived facts -------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[Scale, ...]:
        """One Scale per model input, in input order."""
        return self.scales or (Scale(self.frames, self.stride, 0),)

    @property
    def window(self) -> int:
        """Frames the runtime must keep to build any input: max lag + 1."""
        return max(max(s.lags()) for s in self.inputs) + 1

    @property
    def centre_lag(self) -> int:
        """The centre frame of a hyperframe, as a lag: of the frames its inputs take, the one
        nearest the middle of their span (the newer of two; ``frames[T // 2]`` oldest first, as
        the trainer's ``center`` label): 3 for 3 frames every 3, 8 for a (3x3, 3x8) pyramid."""
        lags = sorted({lag for s in self.inputs for lag in s.lags()})
        middle = lags[0] + lags[-1]  # twice the middle, to stay in integers
        return min(lags, key=lambda lag: abs(2 * lag - middle))

    @property
    def thresholds(self) -> dict[str, float]:
        return dict(self.alert_classes)

    def input_shape(self, index: int = 0, batch: int = 1) -> tuple[int, int, int, int, int]:
        h, w = self.size
        return (batch, self.inputs[index].frames, h, w, 3)

    # ---- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["size"] = list(self.size)
        d["classes"] = list(self.classes)
        d["alert_classes"] = dict(self.alert_classes)
        d["scales"] = [asdict(s) for s in self.scales]
        d["alert_then"] = {
            t.cls: {"pose": t.pose, "threshold": t.threshold, "within": t.within}
            for t in self.alert_then
        }
        if not self.alert_then:  # absent: an edge-hf without it still reads the model
            del d["alert_then"]
        if not self.fps:  # the same
            del d["fps"]
        d["provenance"] = dict(self.provenance)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "spec") -> HyperframeSpec:
        if not isinstance(d, Mapping):
            raise SpecError(f"{where}: expected a JSON object, found {type(d).__name__}")
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(d) - known)
        if unknown:
            raise SpecError(
                f"{where}: unknown field(s) {unknown}; expected some of {sorted(known)}"
            )
        missing = sorted({"frames", "stride", "size", "classes"} - set(d))
        if missing:
            raise SpecError(f"{where}: missing field(s) {missing}")
        try:
            return cls(
                frames=d["frames"],
                stride=d["stride"],
                size=_pair(d["size"], f"{where}.size"),
                classes=tuple(_list(d["classes"], f"{where}.classes")),
                alert_classes=tuple(_mapping(d.get("alert_classes", {}), "alert_classes").items()),
                interpolation=d.get("interpolation", "linear"),
                layout=d.get("layout", "frame-major"),
                activation=d.get("activation", "softmax"),
                scales=tuple(
                    _scale(s, f"{where}.scales") for s in _list(d.get("scales", []), "scales")
                ),
                alert_then=tuple(
                    _then(c, v, f"{where}.alert_then")
                    for c, v in _mapping(d.get("alert_then", {}), "alert_then").items()
                ),
                fps=d.get("fps", 0.0),
                arch=d.get("arch", ""),
                version=d.get("version", SPEC_VERSION),
                provenance=tuple(  # sorted, as to_json writes it: a spec reads back the same
                    sorted(
                        (str(k), str(v))
                        for k, v in _mapping(d.get("provenance", {}), "provenance").items()
                    )
                ),
            )
        except SpecError as e:
            raise SpecError(f"{where}: {e}") from None

    @classmethod
    def from_json(cls, text: str, where: str = "spec") -> HyperframeSpec:
        try:
            d = json.loads(text)
        except (TypeError, ValueError) as e:
            raise SpecError(f"{where}: spec is not valid JSON ({e})") from None
        return cls.from_dict(d, where)


# ---- model-file metadata ---------------------------------------------------------------------
def spec_from_onnx_metadata(metadata: Mapping[str, str], where: str) -> HyperframeSpec:
    """Read the spec from an ONNX ``metadata_props`` mapping (as onnxruntime returns it)."""
    if METADATA_KEY not in metadata:
        raise SpecError(
            f"{where} has no edge-hf spec (ONNX metadata key {METADATA_KEY!r}); "
            "export the model with `python -m export` so the runtime knows its frames, size and classes"
        )
    return HyperframeSpec.from_json(metadata[METADATA_KEY], where)


def write_onnx_spec(model: Any, spec: HyperframeSpec) -> None:
    """Store the spec in an ``onnx.ModelProto``'s metadata_props, replacing any earlier one."""
    props = [p for p in model.metadata_props if p.key != METADATA_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(props)
    entry = model.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, spec.to_json()


def spec_from_openvino(model: Any, where: str) -> HyperframeSpec:
    """Read the spec from an ``openvino.Model``: our rt_info, else ONNX metadata it kept."""
    for path in (RT_INFO_PATH, OV_ONNX_METADATA_PATH):
        if model.has_rt_info(list(path)):
            return HyperframeSpec.from_json(model.get_rt_info(list(path)).astype(str), where)
    raise SpecError(
        f"{where} has no edge-hf spec (OpenVINO rt_info {'/'.join(RT_INFO_PATH)}); "
        "export the model with `python -m export` so the runtime knows its frames, size and classes"
    )


def write_openvino_spec(model: Any, spec: HyperframeSpec) -> None:
    model.set_rt_info(spec.to_json(), list(RT_INFO_PATH))


# ---- validation --------------------------------------------------------------------------------
def _validate(s: HyperframeSpec) -> None:
    _positive_int(s.frames, "frames")
    _positive_int(s.stride, "stride")
    if len(s.size) != 2:
        raise SpecError(f"size must be (H, W), found {s.size!r}")
    for name, v in zip(("size[0] (H)", "size[1] (W)"), s.size, strict=True):
        _positive_int(v, name)
    if not s.classes or not all(isinstance(c, str) and c.strip() for c in s.classes):
        raise SpecError(f"classes must be a non-empty list of names, found {list(s.classes)!r}")
    dupes = sorted({c for c in s.classes if s.classes.count(c) > 1})
    if dupes:
        raise SpecError(f"classes must be unique, found duplicates {dupes}")
    for name, thr in s.alert_classes:
        if name not in s.classes:
            raise SpecError(
                f"alert_classes names {name!r}, which is not one of classes {list(s.classes)}"
            )
        check_threshold(thr, f"alert_classes[{name!r}]")
    for t in s.alert_then:
        if not isinstance(t, Then) or t.cls not in s.classes or t.pose not in s.classes:
            raise SpecError(
                f"alert_then: expected rules between classes {list(s.classes)}, found {t!r}"
            )
        if (problem := t.problem()) is not None:
            raise SpecError(f"alert_then: {problem}")
    if isinstance(s.fps, bool) or not isinstance(s.fps, (int, float)) or not 0 <= s.fps <= 1000:
        raise SpecError(f"fps must be a frame rate 0 to 1000 (0: not recorded), found {s.fps!r}")
    _choice(s.interpolation, INTERPOLATIONS, "interpolation")
    _choice(s.layout, LAYOUTS, "layout")
    _choice(s.activation, ACTIVATIONS, "activation")
    for i, sc in enumerate(s.scales):
        if not isinstance(sc, Scale):
            raise SpecError(f"scales[{i}] must be a Scale, found {sc!r}")
        _positive_int(sc.frames, f"scales[{i}].frames")
        _positive_int(sc.stride, f"scales[{i}].stride")
        _nonneg_int(sc.offset, f"scales[{i}].offset")
    _check_scales(s)
    _positive_int(s.version, "version")
    if s.version > SPEC_VERSION:
        raise SpecError(
            f"spec version {s.version} is newer than this edge-hf understands ({SPEC_VERSION}); "
            "upgrade edge-hf"
        )
    if not isinstance(s.arch, str):
        raise SpecError(f"arch must be a string, found {s.arch!r}")


def _check_scales(s: HyperframeSpec) -> None:
    """``frames``/``stride`` describe every input: one backbone (conv1 has 3T channels) takes
    every scale, so each has ``frames`` frames; the first input is (frames, stride); some input
    ends at the newest frame (the frame an event is reported at)."""
    if not s.scales:
        return
    for i, sc in enumerate(s.scales):
        if sc.frames != s.frames:
            raise SpecError(
                f"scales[{i}].frames: expected {s.frames} (the spec's frames: one backbone takes "
                f"every scale), found {sc.frames}"
            )
    first = s.scales[0]
    if first.stride != s.stride:
        raise SpecError(
            f"scales[0].stride: expected {s.stride} (the spec's stride: the first input is "
            f"frames x stride), found {first.stride}"
        )
    if len(set(s.scales)) != len(s.scales):
        raise SpecError(f"scales must differ, found {[asdict(sc) for sc in s.scales]}")
    if min(min(sc.lags()) for sc in s.scales) != 0:
        raise SpecError(
            f"some scale must end at the newest frame (offset 0), found offsets "
            f"{[sc.offset for sc in s.scales]}"
        )


# ---- alert thresholds: the one place they are parsed, checked and layered -------------------
def check_threshold(v: Any, name: str) -> float:
    """A score threshold is a number in (0, 1]."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if not ok or not 0 < v <= 1:
        raise SpecError(f"{name} must be a threshold in (0, 1], found {v!r}")
    return float(v)


def parse_threshold(text: str, where: str = "--threshold") -> tuple[str, float]:
    """``CLASS=P`` (a flag's text) -> (class, P), P a threshold in (0, 1]."""
    name, sep, value = str(text).partition("=")
    try:
        p = float(value)
    except ValueError:
        p = math.nan
    if not sep or not name.strip() or not (math.isfinite(p) and 0 < p <= 1):
        raise SpecError(
            f"{where}: expected CLASS=P with 0 < P <= 1 (e.g. fall=0.8), found {text!r}"
        )
    return name.strip(), p


def layer_thresholds(
    spec: HyperframeSpec, layers: list[tuple[str, tuple[tuple[str, float], ...]]]
) -> dict[str, float]:
    """The model's default thresholds, then each ``(where, pairs)`` layer over them (a run's
    ``--threshold``, a camera's own table, an export's ``--threshold``). Every value is checked
    and every class must be the model's; errors name ``where``."""
    out = spec.thresholds
    for where, pairs in layers:
        for name, value in pairs:
            if name not in spec.classes:
                raise SpecError(
                    f"{where} {name}={value}: the model has no class {name!r}; "
                    f"its classes are {list(spec.classes)}"
                )
            out[name] = check_threshold(value, f"{where} {name}")
    return out


def unknown_in_then(spec: HyperframeSpec, then: tuple[Then, ...], where: str) -> str | None:
    """The error for the first rule (``--then``) that names a class the model lacks, if any."""
    for t in then:
        missing = [c for c in (t.cls, t.pose) if c not in spec.classes]
        if missing:
            return (
                f"{where} {t.cls}={t.pose}: the model has no class {missing[0]!r}; "
                f"its classes are {list(spec.classes)}"
            )
    return None


def _positive_int(v: Any, name: str) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise SpecError(f"{name} must be a positive integer, found {v!r}")


def _nonneg_int(v: Any, name: str) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise SpecError(f"{name} must be an integer >= 0, found {v!r}")


def _choice(v: Any, allowed: tuple[str, ...], name: str) -> None:
    if v not in allowed:
        raise SpecError(f"{name} must be one of {list(allowed)}, found {v!r}")


def _pair(v: Any, name: str) -> tuple[int, int]:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise SpecError(f"{name} must be [H, W], found {v!r}")
    return (v[0], v[1])


def _list(v: Any, name: str) -> list[Any]:
    if not isinstance(v, (list, tuple)):
        raise SpecError(f"{name} must be a list, found {type(v).__name__}")
    return list(v)


def _mapping(v: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise SpecError(f"{name} must be an object, found {type(v).__name__}")
    return v


def _scale(v: Any, name: str) -> Scale:
    if (
        isinstance(v, Mapping)
        and set(v) <= {"frames", "stride", "offset"}
        and {"frames", "stride"} <= set(v)
    ):
        return Scale(v["frames"], v["stride"], v.get("offset", 0))
    raise SpecError(f"each of {name} must be {{frames, stride, offset}}, found {v!r}")


def _then(cls: str, v: Any, name: str) -> Then:
    keys = {"pose", "threshold", "within"}
    if isinstance(v, Mapping) and set(v) <= keys and "pose" in v:
        return Then(cls, v["pose"], **{k: v[k] for k in ("threshold", "within") if k in v})
    raise SpecError(f"{name}[{cls!r}] must be {{pose, threshold, within}}, found {v!r}")
