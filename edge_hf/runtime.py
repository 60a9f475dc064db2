"""``edge-hf run``: capture threads feed one inference loop, whose scores become alert events."""

from __future__ import annotations

import bisect
import importlib.util
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from edge_hf.alerts import AlertLogic, AlertPolicy, Event
from edge_hf.backends import Backend, BackendOptions, load_backend
from edge_hf.capture import Capture, CapturePolicy, Mailbox
from edge_hf.errors import SourceError, UsageError
from edge_hf.health import LATENCY_BUCKETS, CameraCounters, Counters, Health
from edge_hf.notify import Notifier, Watchdog
from edge_hf.sampler import StrideSampler, hop_from_hz
from edge_hf.sinks import RunInfo, Sink
from edge_hf.sinks.base import statuses
from edge_hf.snapshots import SnapshotOptions, SnapshotStore
from edge_hf.sources import Source, SourceOptions, open_source
from edge_hf.spec import HyperframeSpec

log = logging.getLogger("edge_hf.run")
# The embedded demo model (see its MODEL_CARD.md): the OpenVINO INT8 IR when OpenVINO is
# installed, else the ONNX file. find_spec looks without importing.
_DEMO = Path(__file__).parent / "assets" / "demo"
DEMO_MODEL = _DEMO / ("model-int8.xml" if importlib.util.find_spec("openvino") else "model.onnx")


@dataclass(frozen=True)
class RunConfig:
    cameras: tuple[str, ...]
    camera_where: tuple[str, ...] = ()  # where each came from, for errors (default --camera)
    camera_passwords: tuple[str | None, ...] = field(default=(), repr=False)  # see credentials
    model: Path = DEMO_MODEL
    backend: str = "auto"
    backend_opts: BackendOptions = field(default_factory=BackendOptions)
    every: int = 1
    hz: float | None = None  # overrides `every` once the source's fps is known
    thresholds: tuple[tuple[str, float], ...] = ()  # overrides of the spec's defaults
    k: int = 2
    n: int = 3
    cooldown: float = 10.0
    source_opts: SourceOptions = field(default_factory=SourceOptions)
    stall_timeout: float = 10.0
    snapshots: SnapshotOptions | None = None  # None: no snapshots


@dataclass
class Camera:
    source: Source
    sampler: StrideSampler
    mailbox: Mailbox
    capture: Capture
    logic: AlertLogic
    processed: int = 0  # hyperframes this camera put through the model


class InferenceStats:
    """Latency of the last 1024 inferences, preallocated; and a histogram of all of them."""

    def __init__(self) -> None:
        self.ms = np.zeros(1024, np.float64)
        self.count = 0
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0  # seconds

    def add(self, seconds: float) -> None:
        self.ms[self.count % len(self.ms)] = seconds * 1000.0
        self.count += 1
        self.buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds

    def percentile(self, q: float) -> float:
        n = min(self.count, len(self.ms))
        return float(np.percentile(self.ms[:n], q)) if n else 0.0


def camera_args(cfg: RunConfig) -> list[tuple[str, str, str | None]]:
    """(camera, where it came from, its password) for each of ``cfg.cameras``."""
    n = len(cfg.cameras)
    where = cfg.camera_where or ("--camera",) * n
    passwords = cfg.camera_passwords or (None,) * n
    return list(zip(cfg.cameras, where, passwords, strict=True))


def alert_policy(spec: HyperframeSpec, cfg: RunConfig) -> AlertPolicy:
    thresholds = spec.thresholds
    for name, value in cfg.thresholds:
        if name not in spec.classes:
            raise UsageError(
                f"--threshold {name}={value}: the model has no class {name!r}; "
                f"its classes are {list(spec.classes)}"
            )
        thresholds[name] = value
    if not thresholds:
        raise UsageError(
            f"the model declares no alert classes; choose some with --threshold "
            f"CLASS=P (its classes are {list(spec.classes)})"
        )
    return AlertPolicy(tuple(thresholds.items()), cfg.k, cfg.n, cfg.cooldown)


def open_unless_stopped(source: Source, stop: threading.Event) -> bool:
    """``source.open()`` in a worker thread, so that SIGINT/SIGTERM (which set ``stop``) are
    heard while OpenCV blocks in a connect for up to --open-timeout. True once open; False if
    stopped first, leaving the worker to time out on its own (a daemon: it cannot hold up
    the exit). An open that fails raises its SourceError here."""
    if stop.is_set():
        return False
    failure: list[BaseException] = []

    def work() -> None:
        try:
            source.open()
        except BaseException as e:  # handed to the caller's thread
            failure.append(e)

    worker = threading.Thread(target=work, name=f"open-{source.name}", daemon=True)
    worker.start()
    while worker.is_alive():
        if stop.wait(0.05):
            return False
    if failure:
        raise failure[0]
    return True


class Runtime:
    def __init__(
        self,
        cfg: RunConfig,
        sinks: list[Sink],
        stop: threading.Event,
        sources: list[Source] | None = None,
        notify: Notifier | None = None,
    ) -> None:
        """``sources`` defaults to those named by ``cfg.cameras``; tests pass their own.
        ``notify``: systemd's notification socket (READY, STATUS, WATCHDOG, STOPPING)."""
        self.cfg, self.sinks, self.stop, self.notify = cfg, sinks, stop, notify
        self.watchdog: Watchdog | None = None
        self.health = Health()
        self._beat = self.health.loop("inference")
        self.backend: Backend = load_backend(cfg.model, cfg.backend, cfg.backend_opts)
        self.spec = self.backend.spec
        policy = alert_policy(self.spec, cfg)
        self.cond = threading.Condition()
        if sources is None:
            sources = [open_source(c, cfg.source_opts, *more) for c, *more in camera_args(cfg)]
        names = [s.name for s in sources]
        if len(set(names)) != len(names):
            where = (cfg.camera_where or ("--camera",))[0].rsplit("[", 1)[0]  # or FILE: cameras
            raise UsageError(
                f"{where}: camera names must be unique, found {names}; name them as NAME=SOURCE"
            )
        self.cameras = [self._camera(s, policy) for s in sources]
        self.inputs = self.cameras[0].sampler.input_buffers()
        self.logits = np.zeros((1, len(self.spec.classes)), np.float32)
        self.probs = np.zeros_like(self.logits)
        self.backend.bind(self.inputs, self.logits)
        self.latency = InferenceStats()
        self.snapshots = SnapshotStore(cfg.snapshots) if cfg.snapshots else None

    def _camera(self, source: Source, policy: AlertPolicy) -> Camera:
        # Open once here so a bad file fails before anything starts, and --hz knows the fps.
        opened = False
        try:
            opened = open_unless_stopped(source, self.stop)
        except SourceError as e:
            if not source.live:
                raise
            log.warning("%s; retrying", e)  # the capture thread retries with backoff
        every = hop_from_hz(self.cfg.hz, source.fps) if self.cfg.hz else self.cfg.every
        sampler = StrideSampler(self.spec, every)
        mailbox = Mailbox(sampler, self.cond)
        policy_c = CapturePolicy(
            stall_timeout=self.cfg.stall_timeout,
            block=not source.live and self.cfg.source_opts.fast,
        )
        beat = self.health.loop(f"capture {source.name}")
        capture = Capture(source, sampler, mailbox, policy_c, self.stop, opened, beat)
        logic = AlertLogic(source.name, self.spec.classes, policy, source.fps)
        return Camera(source, sampler, mailbox, capture, logic)

    def run(self) -> int:
        """Run until every source has ended or ``stop`` is set; return the exit code."""
        if self.stop.is_set():  # stopped while the cameras were being opened
            for cam in self.cameras:
                cam.source.release()
            log.info("stopped before the first frame")
            return 0
        self._start_sinks()
        for cam in self.cameras:
            log.info(
                "camera %s: %s, every %d frame(s), model %s (%s)",
                cam.source.name,
                cam.source.display,
                cam.sampler.every,
                self.cfg.model.name,
                self.backend.name,
            )
            cam.capture.start()
        if self.notify is not None:
            self.watchdog = Watchdog(
                self.notify, self.health, self.counters, self._first_frame_in, self.stop
            )
            self.watchdog.start()
        try:
            self._loop()
        finally:
            self.stop.set()
            self._shutdown()
            if self.watchdog is not None:
                self.watchdog.join(1.0)
        errors = [c.capture.error for c in self.cameras if c.capture.error]
        for e in errors:
            log.error("%s", e)
        return SourceError.exit_code if errors else 0

    def _start_sinks(self) -> None:
        info = RunInfo(
            cameras=tuple(c.source.name for c in self.cameras),
            labels=tuple(self.cameras[0].logic.labels),
            counters=self.counters,
            health=self.health,
            statuses=lambda: statuses(self.sinks),
            snapshots=self.snapshots,
            latest_frame=self.latest_frame,
        )
        started: list[Sink] = []
        try:
            for sink in self.sinks:
                sink.start(info)
                started.append(sink)
        except BaseException:
            for sink in started:
                sink.close()
            for c in self.cameras:
                c.source.release()
            raise

    def latest_frame(self, camera: str) -> np.ndarray | None:
        """A copy of camera ``camera``'s newest decoded frame (None: no such camera or no frame
        yet); any thread. For the status page: made only when someone asks."""
        for c in self.cameras:
            if c.source.name == camera:
                return c.capture.snapshot()
        return None

    def _first_frame_in(self) -> bool:
        return any(c.capture.stats.grabbed for c in self.cameras)

    def counters(self) -> Counters:
        """A snapshot for stats and status lines; safe to call from any thread."""
        now = time.monotonic()
        cams = tuple(
            CameraCounters(
                name=c.source.name,
                grabbed=c.capture.stats.grabbed,
                processed=c.processed,
                dropped=c.capture.stats.dropped,
                reconnects=c.capture.stats.reconnects,
                connected=c.capture.stats.connected and now - c.capture.stats.last_frame < 5.0,
            )
            for c in self.cameras
        )
        lat = self.latency
        return Counters(
            now,
            cams,
            lat.count,
            lat.percentile(50),
            lat.percentile(95),
            tuple(lat.buckets),
            lat.total,
        )

    def _loop(self) -> None:
        while not self.stop.is_set():
            self._beat.beat()
            with self.cond:
                cam = self._next_fresh()
                if cam is None:
                    if all(c.capture.done.is_set() for c in self.cameras):
                        return
                    self.cond.wait(0.1)
                    continue
                cam.mailbox.take(self.inputs)
                frame, t = cam.mailbox.frame, cam.mailbox.time
            t0 = time.perf_counter()
            self.backend.infer()
            self.latency.add(time.perf_counter() - t0)
            cam.processed += 1
            self._activate()
            for ev in cam.logic.update(self.probs[0], frame, t):
                if ev.kind == "start" and self.snapshots is not None:
                    ev = self._snapshot(cam, ev)
                for sink in self.sinks:
                    sink.emit(ev)

    def _snapshot(self, cam: Camera, ev: Event) -> Event:
        """The event with its snapshot, or as it was when there is no frame or no disk."""
        image = cam.capture.snapshot()
        if image is None:
            return ev
        try:
            snap = self.snapshots.save(ev.camera, ev.label, ev.id, ev.time, image)
        except OSError as e:
            self.snapshots.failures += 1
            if self.snapshots.failures in (1, 10, 100, 1000):
                log.warning("snapshots: cannot write one (%s); the alert goes out without", e)
            return ev
        return replace(ev, snapshot=snap.file, small=snap.small)

    def _next_fresh(self) -> Camera | None:
        """The camera whose waiting hyperframe is oldest, so no camera starves another."""
        best = None
        for c in self.cameras:
            if c.mailbox.fresh and (best is None or c.mailbox.time < best.mailbox.time):
                best = c
        return best

    def _activate(self) -> None:
        p = self.probs
        if self.spec.activation == "sigmoid":
            np.negative(self.logits, out=p)
            np.exp(p, out=p)
            np.add(p, 1.0, out=p)
            np.reciprocal(p, out=p)
        else:
            np.subtract(self.logits, self.logits.max(), out=p)
            np.exp(p, out=p)
            np.divide(p, p.sum(), out=p)

    def _shutdown(self) -> None:
        deadline = time.monotonic() + 1.5
        for c in self.cameras:
            c.capture.join(max(0.0, deadline - time.monotonic()))
        now = time.time()
        for c in self.cameras:
            for ev in c.logic.close(c.capture.stats.grabbed - 1, now):
                for sink in self.sinks:
                    sink.emit(ev)
        for sink in self.sinks:
            sink.close()
        self._summary()

    def _summary(self) -> None:
        for c in self.cameras:
            s = c.capture.stats
            log.info(
                "camera %s: %d frames, %d decoded, %d hyperframes, %d dropped, %d reconnects",
                c.source.name,
                s.grabbed,
                s.decoded,
                s.published,
                s.dropped,
                s.reconnects,
            )
        log.info(
            "inference: %d runs, p50 %.2f ms, p95 %.2f ms",
            self.latency.count,
            self.latency.percentile(50),
            self.latency.percentile(95),
        )
