"""The export formats, listed once: ``--formats`` and the format-specific options are checked
against this table, and the pipeline, report and model card read it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from models.errors import BadArguments


@dataclass(frozen=True)
class Format:
    name: str
    suffix: str  # the file is model{suffix} (an OpenVINO .xml has its .bin beside it)
    backend: str  # the edge_hf runtime backend that loads it
    precision: str  # what the weights and arithmetic are
    options: tuple[str, ...]  # command-line options that only this format uses
    builds_on: str  # the format whose model this one is made from ("" : the checkpoint)
    about: str

    @property
    def filename(self) -> str:
        return f"model{self.suffix}"

    def files(self) -> tuple[str, ...]:
        """Every file the format writes."""
        if self.suffix.endswith(".xml"):
            return (self.filename, self.filename.removesuffix(".xml") + ".bin")
        return (self.filename,)


FORMATS: tuple[Format, ...] = (
    Format("onnx", ".onnx", "onnxruntime", "fp32", (), "", "ONNX (opset 18) for onnxruntime"),
    Format(
        "openvino",
        ".xml",
        "openvino",
        "fp32",
        ("--fp16",),
        "onnx",
        "OpenVINO IR; --fp16 stores the weights as FP16 (half the size, computed in f32)",
    ),
    Format(
        "openvino-int8",
        "-int8.xml",
        "openvino",
        "int8",
        ("--max-drop", "--subset-size", "--keep-float"),
        "openvino",
        "OpenVINO IR quantized to INT8 by NNCF on real training hyperframes",
    ),
)
BY_NAME: Mapping[str, Format] = {f.name: f for f in FORMATS}
# each format as the reports and the model card name it, and the trained model they are checked on
LABELS: Mapping[str, str] = {
    "torch": "PyTorch (trained)",
    "onnx": "ONNX FP32 (onnxruntime)",
    "openvino": "OpenVINO FP32",
    "openvino-int8": "OpenVINO INT8",
}


def parse_formats(text: str) -> tuple[Format, ...]:
    """``"onnx,openvino"`` -> the table's rows, in table order; unknown names suggest the nearest."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names:
        raise BadArguments(f"--formats: expected a comma-separated list of {list(BY_NAME)}")
    for n in names:
        if n not in BY_NAME:
            near = difflib.get_close_matches(n, BY_NAME, 1, cutoff=0.4)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise BadArguments(
                f"--formats: unknown format {n!r}{hint} (known: {', '.join(BY_NAME)})"
            )
    return tuple(f for f in FORMATS if f.name in names)


def check_options(formats: tuple[Format, ...], given: Mapping[str, bool]) -> None:
    """Refuse an option (``given``: flag -> was it set) that no chosen format uses."""
    chosen = {f.name for f in formats}
    for f in FORMATS:
        for flag in f.options:
            if given.get(flag) and f.name not in chosen:
                raise BadArguments(
                    f"{flag} applies to the {f.name} format, which --formats does not list; "
                    f"add {f.name} to --formats or drop {flag}"
                )


def needed(formats: tuple[Format, ...]) -> tuple[Format, ...]:
    """The chosen formats and every format they are built from, in table order."""
    names = {f.name for f in formats}
    for f in reversed(FORMATS):
        if f.name in names and f.builds_on:
            names.add(f.builds_on)
    return tuple(f for f in FORMATS if f.name in names)
