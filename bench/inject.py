"""Regressions the bench must catch, patched into the runtime when ``EDGE_HF_BENCH_INJECT`` names
them (see bench/gates.py). Nothing here runs unless that variable is set; ``.ci/run`` never sets it.

``python -m bench.inject ARGS`` is ``edge-hf ARGS`` with the named regressions applied, for the
subprocess figures (peak RSS).
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from bench.gates import INJECT
from edge_hf import capture, runtime
from edge_hf.sampler import StrideSampler, resize_into
from edge_hf.sources.opencv import CvSource

_KEPT: list[np.ndarray] = []  # the "leak" regression's victims
# The healthy sampler's answer, for the bench's references (apply() may patch the class).
ORIGINAL_IS_NEEDED = StrideSampler.is_needed


def apply(names: frozenset[str] = INJECT) -> None:
    """Patch the named regressions into edge_hf's classes (process-wide, for the bench only)."""
    if "hyperframe-copy" in names:
        slot = StrideSampler.slot

        def copying_slot(self: StrideSampler, i: int) -> np.ndarray:
            self.ring.copy()  # a per-frame copy of the frames a hyperframe is made of
            return slot(self, i)

        StrideSampler.slot = copying_slot
    if "decode-all" in names:
        StrideSampler.is_needed = lambda self, i: True
    if "leak" in names:
        take = capture.Mailbox.take

        def leaking_take(self: capture.Mailbox, inputs: list[np.ndarray], row: int = 0) -> None:
            _KEPT.append(self.buffers[0].copy())
            take(self, inputs, row)

        capture.Mailbox.take = leaking_take
    if "float-input" in names:
        take_ = capture.Mailbox.take

        def float_take(self: capture.Mailbox, inputs: list[np.ndarray], row: int = 0) -> None:
            take_(self, inputs, row)
            x = inputs[0].astype(np.float32)  # normalising on the CPU, as the seed's loop does
            x -= 114.0
            x *= 1 / 58.0

        capture.Mailbox.take = float_take
    if "frame-copy" in names:
        retrieve = CvSource.retrieve

        def copying_retrieve(self: CvSource):
            frame = retrieve(self)  # a fresh full-size frame per decode, like cap.read()
            return None if frame is None else frame.copy()

        CvSource.retrieve = copying_retrieve
    if "serial" in names:
        _serialise_decode_and_inference()
    if "dict-call" in names:
        init = runtime.Runtime.__init__

        def dict_init(self: runtime.Runtime, *a, **kw) -> None:
            init(self, *a, **kw)
            self.backend.infer = feed_dict_call(self.backend, self.inputs)

        runtime.Runtime.__init__ = dict_init
    if "poll" in names:
        init = runtime.Runtime.__init__

        def polling_init(self: runtime.Runtime, *a, **kw) -> None:
            init(self, *a, **kw)
            wait = self.cond.wait
            self.cond.wait = lambda timeout=None: wait(0.0002)

        runtime.Runtime.__init__ = polling_init
    if "area-resize" in names:
        # the seed's resize: INTER_AREA from the full frame, ~2 ms a frame at 576p (linear: 0.06)
        capture.resize_into = lambda frame, dst, interpolation="linear": resize_into(
            frame, dst, "area"
        )
    if "frame-float" in names:
        resize = capture.resize_into

        def float_first(frame: np.ndarray, dst: np.ndarray, interpolation: str = "linear"):
            x = frame.astype(np.float32)  # the whole frame normalised on the CPU, then resized
            x *= 1 / 255.0
            resize(frame, dst, interpolation)

        capture.resize_into = float_first
    if "http-poll" in names:
        _busy_http_server()
    if "train-contiguous" in names:
        _contiguous_trainer()


def _serialise_decode_and_inference() -> None:
    """One lock around the decoder and the engine (say, for "thread safety"): capture and
    inference no longer overlap, so every frame costs decode + inference."""
    lock = threading.Lock()

    def locked(f):
        def call(*a):
            with lock:
                return f(*a)

        return call

    CvSource.grab, CvSource.retrieve = locked(CvSource.grab), locked(CvSource.retrieve)
    init = runtime.Runtime.__init__

    def serial_init(self: runtime.Runtime, *a, **kw) -> None:
        init(self, *a, **kw)
        self.backend.infer = locked(self.backend.infer)

    runtime.Runtime.__init__ = serial_init


def _busy_http_server() -> None:
    """The HTTP sink's server wakes every 1 ms (say, to look for work) instead of sleeping until
    a connection comes."""
    import selectors
    import types

    from edge_hf.sinks import http_server

    class Polling(selectors.DefaultSelector):
        def select(self, timeout: float | None = None):
            return super().select(0.001 if timeout is None else min(timeout, 0.001))

    http_server.selectors = types.SimpleNamespace(
        DefaultSelector=Polling, EVENT_READ=selectors.EVENT_READ
    )


def feed_dict_call(backend, inputs: list[np.ndarray]):
    """The plain, slow way to call an engine: a feed dict in, fresh outputs out."""
    if backend.name == "onnxruntime":
        session = backend.session
        feed = {i.name: x for i, x in zip(session.get_inputs(), inputs, strict=True)}
        return lambda n=None: session.run(None, feed)
    request = backend.compiled.create_infer_request()
    feed = dict(enumerate(inputs))
    return lambda n=None: request.infer(feed)


def _contiguous_trainer() -> None:
    """Under ``train-contiguous``: ``models.train.network`` hands back its network in the default
    memory layout, as it did before it laid conv weights out channels-last."""
    import torch  # the trainer's side: the device's processes never name this regression

    from models import train

    built = train.network

    def contiguous(*a, **kw):
        return built(*a, **kw).to(memory_format=torch.contiguous_format)

    train.network = contiguous


def int8_backend(backend) -> None:
    """Under ``int8-no-lpt``: recompile the INT8 model without OpenVINO's low-precision
    transformations, so its FakeQuantize ops run in FP32 (an INT8 export the CPU plugin cannot
    lower: slower than the FP32 model it came from)."""
    if "int8-no-lpt" in INJECT:
        compiled = backend.compiled
        config = {"LP_TRANSFORMS_MODE": False, "INFERENCE_PRECISION_HINT": "f32"}
        config["INFERENCE_NUM_THREADS"] = int(compiled.get_property("INFERENCE_NUM_THREADS"))
        config["ENABLE_CPU_PINNING"] = False
        import openvino as ov

        backend.compiled = ov.Core().compile_model(str(backend.path), "CPU", config)
        backend.request = backend.compiled.create_infer_request()


if __name__ == "__main__":
    apply()
    from edge_hf.cli import main

    sys.exit(main(sys.argv[1:]))
