"""``edge-hf run``: capture threads feed one inference loop, whose scores become alert events."""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from edge_hf.alerts import DEFAULT_COOLDOWN, DEFAULT_DOWN_FOR, AlertPolicy, Event, down_key
from edge_hf.backends import Backend, BackendOptions, load_backend
from edge_hf.camera import Camera, CameraPlan, CameraSettings
from edge_hf.capture import CapturePolicy
from edge_hf.errors import SourceError, SpecError, UsageError
from edge_hf.health import Counters, Health
from edge_hf.inference import Batcher, InferenceStats, activate
from edge_hf.motion import MotionOptions
from edge_hf.notify import Notifier, Watchdog
from edge_hf.sampler import input_buffers
from edge_hf.sinks import RunInfo, Sink
from edge_hf.sinks.base import statuses
from edge_hf.snapshots import SnapshotOptions, SnapshotStore
from edge_hf.sources import Source, SourceOptions, open_source
from edge_hf.spec import HyperframeSpec, Then, layer_thresholds, unknown_in_then
from edge_hf.twostage import TwoStage, check_confirm

log = logging.getLogger("edge_hf.run")
# seconds a stop waits for the capture threads: one reading a camera that works lets go within
# a frame; one inside an open or a read of a camera that hangs is left behind. With the sinks'
# own budgets (MQTT 1 s, HTTP 0.5 s) a stop stays within its 2 s.
JOIN_WITHIN = 0.5
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
    cooldown: float = DEFAULT_COOLDOWN
    down_for: float | None = None  # seconds down before the down level; None: the default
    realarm: float = 0.0  # seconds between the down level's re-alarms; 0: none
    then: tuple[Then, ...] | None = None  # classes that wait for a pose; None: the model's
    source_opts: SourceOptions = field(default_factory=SourceOptions)
    stall_timeout: float = 10.0
    snapshots: SnapshotOptions | None = None  # None: no snapshots
    camera_settings: tuple[CameraSettings, ...] = ()  # per camera, as ``cameras``; () none
    motion: MotionOptions = field(default_factory=MotionOptions)  # every camera's default
    batch: int = 8  # hyperframes per model call at most (across cameras)
    batch_wait: float = 0.004  # seconds a ready hyperframe may wait for others to join it
    max_age: float = 2.0  # seconds: an older waiting hyperframe is discarded (stale)
    confirm: Path | None = None  # two-stage mode: the confirming model (edge_hf.twostage)
    screen_thresholds: tuple[tuple[str, float], ...] = ()  # its screening thresholds


def camera_args(cfg: RunConfig) -> list[tuple[str, str, str | None]]:
    """(camera, where it came from, its password) for each of ``cfg.cameras``."""
    n = len(cfg.cameras)
    where = cfg.camera_where or ("--camera",) * n
    passwords = cfg.camera_passwords or (None,) * n
    return list(zip(cfg.cameras, where, passwords, strict=True))


def alert_policy(
    spec: HyperframeSpec, cfg: RunConfig, own: CameraSettings | None = None, where: str = ""
) -> AlertPolicy:
    """The run's settings over the model's defaults, and a camera's ``own`` over those
    (``where`` names the camera's table in errors)."""
    own = own or CameraSettings()
    layers = [("--threshold", cfg.thresholds), (f"{where}.thresholds", own.thresholds)]
    try:
        thresholds = layer_thresholds(spec, layers)
    except SpecError as e:
        raise UsageError(str(e)) from None
    if not thresholds:
        raise UsageError(
            f"the model declares no alert classes; choose some with --threshold "
            f"CLASS=P (its classes are {list(spec.classes)})"
        )
    then = spec.alert_then if cfg.then is None else cfg.then
    if (problem := unknown_in_then(spec, then, "--then")) is not None:
        raise UsageError(f"{problem} (--then none: no class waits)")
    down_for = first_set(own.down_for, cfg.down_for, DEFAULT_DOWN_FOR)
    realarm = first_set(own.realarm, cfg.realarm)
    return AlertPolicy(
        tuple(thresholds.items()), cfg.k, cfg.n, cfg.cooldown, then, down_for, realarm
    )


def first_set(*values):
    """The first of ``values`` that is not None."""
    return next(v for v in values if v is not None)


def open_unless_stopped(source: Source, stop: threading.Event) -> bool:
    """``source.open()`` in a worker thread, so that SIGINT/SIGTERM (which set ``stop``) are
    heard while OpenCV blocks in it. True once open; False if stopped first, leaving the
    worker to end on its own (a daemon: it cannot hold up the exit). An open that fails
    raises its SourceError here."""
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
        self.confirm: Backend | None = None
        if cfg.confirm is not None:
            self.confirm = load_backend(cfg.confirm, "auto", cfg.backend_opts)
            check_confirm(self.spec, self.confirm, cfg)
        # before any camera is opened (a network camera may take --open-timeout to answer)
        self.snapshots = SnapshotStore(cfg.snapshots) if cfg.snapshots else None
        self.cond = threading.Condition()
        # cameras whose capture was still inside an open or a read when the run ended
        self.abandoned: list[str] = []
        if sources is None:
            sources = [open_source(c, cfg.source_opts, *more) for c, *more in camera_args(cfg)]
        names = [s.name for s in sources]
        if len(set(names)) != len(names):
            where = (cfg.camera_where or ("--camera",))[0].rsplit("[", 1)[0]  # or FILE: cameras
            raise UsageError(
                f"{where}: camera names must be unique, found {names}; name them as NAME=SOURCE"
            )
        plans = [self._plan(k, s) for k, s in enumerate(sources)]  # refuse bad values first
        self.cameras = [self._camera(s, plan) for s, plan in zip(sources, plans, strict=True)]
        if not 1 <= cfg.batch <= 64:
            raise UsageError(f"--batch must be 1 to 64 hyperframes, found {cfg.batch}")
        self.inputs = input_buffers(self.spec, min(cfg.batch, len(self.cameras)))
        self.logits = np.zeros((len(self.inputs[0]), len(self.spec.classes)), np.float32)
        self.probs = np.zeros_like(self.logits)
        self._rowmax = np.zeros((len(self.logits), 1), np.float32)  # softmax, per row
        self.backend.bind(self.inputs, self.logits)
        self.two: TwoStage | None = None
        if self.confirm is not None:
            screen = _screen(self.spec, cfg.screen_thresholds)
            self.two = TwoStage(self.confirm, self.inputs, self.spec, self.cameras, screen)
        self.batcher = Batcher(
            self.cameras,
            self.cond,
            self.inputs,
            cfg.batch_wait,
            cfg.max_age,
            self.two.stage if self.two else None,
        )
        self.latency = InferenceStats()

    def _plan(self, k: int, source: Source) -> CameraPlan:
        """Camera ``k``'s settings: its own where it has them, else the run's."""
        cfg = self.cfg
        own = cfg.camera_settings[k] if cfg.camera_settings else CameraSettings()
        where = cfg.camera_where[k] if cfg.camera_where else "--camera"
        hz, every = (own.hz, own.every) if own.hz or own.every else (cfg.hz, cfg.every)
        return CameraPlan(
            every=every or 1,
            hz=hz,
            policy=alert_policy(self.spec, cfg, own, where),
            motion=replace(cfg.motion, **dict(own.motion)),
            capture=CapturePolicy(stall_timeout=cfg.stall_timeout),
            block=not source.live and cfg.source_opts.fast,
            snapshots=cfg.snapshots is not None,
        )

    def _camera(self, source: Source, plan: CameraPlan) -> Camera:
        # A file (or a finite source) is opened here, so that a bad one fails before anything
        # starts. A camera is opened by its own capture thread, side by side with the others:
        # one that hangs holds up neither the start (sinks, READY) nor any other camera; its
        # frame rate re-times the camera when it opens (Camera._retime).
        opened = False
        if not source.live:
            opened = open_unless_stopped(source, self.stop)
        beat = self.health.loop(f"capture {source.name}", group="cameras")
        confirm = self.confirm.spec if self.confirm else None
        return Camera(source, self.spec, plan, self.cond, self.stop, beat, opened, confirm)

    def run(self) -> int:
        """Run until every source has ended or ``stop`` is set; return the exit code."""
        if self.stop.is_set():  # stopped while the cameras were being opened
            for cam in self.cameras:
                cam.source.release()
            log.info("stopped before the first frame")
            return 0
        self._start_sinks()
        try:
            for cam in self.cameras:
                log.info(
                    "camera %s: %s, every %d frame(s)%s, model %s (%s)",
                    cam.name,
                    cam.source.display,
                    cam.sampler.every,
                    ", motion-gated" if cam.capture.gate else "",
                    self.cfg.model.name,
                    self.backend.name,
                )
                cam.capture.start()
            if self.notify is not None:
                self.watchdog = Watchdog(
                    self.notify, self.health, self.counters, self._ready, self.stop
                )
                self.watchdog.start()
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
        per_camera = {c.name: c.keys for c in self.cameras}
        everyone = {key for keys in per_camera.values() for key in keys}
        order = [key for c in self.spec.classes for key in (c, down_key(c))]  # the model's
        info = RunInfo(
            cameras=tuple(per_camera),
            labels=tuple(key for key in order if key in everyone),
            counters=self.counters,
            health=self.health,
            camera_labels=per_camera,
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
            if c.name == camera:
                return c.latest_frame()
        return None

    def _ready(self) -> bool:
        """READY=1 (edge_hf.notify): a first frame from any camera, or every camera's first
        open over (at most --open-timeout), whichever comes first."""
        cams = self.cameras
        return any(c.stats.grabbed for c in cams) or all(c.capture.tried.is_set() for c in cams)

    def counters(self) -> Counters:
        """A snapshot for stats and status lines; safe to call from any thread."""
        now = time.monotonic()
        lat = self.latency
        return Counters(
            now,
            tuple(c.counters(now) for c in self.cameras),
            lat.count,
            lat.percentile(50),
            lat.percentile(95),
            tuple(lat.buckets),
            lat.total,
            self.two.counts() if self.two else (),
        )

    def _loop(self) -> None:
        while not self.stop.is_set():
            self._beat.beat()
            if not self._step():
                return

    def _step(self) -> bool:
        """One model call on the hyperframes ready now (a batch across cameras), each row's
        scores to its own camera's alert logic; False once every capture has ended."""
        b = self.batcher
        n = b.collect()
        if n <= 0:
            return n == 0
        t0 = time.perf_counter()
        self.backend.infer(n)
        self.latency.add(time.perf_counter() - t0, n)
        self._activate()
        fed = self.probs if self.two is None else self.two.run(n, b.rows, self.probs)
        for r in range(n):
            cam = b.rows[r]
            cam.processed += 1
            if self.two is None:
                events = cam.logic.update(fed[r], b.frames[r], b.times[r])
            else:  # the events carry the screening model's scores too
                events = cam.logic.update(fed[r], b.frames[r], b.times[r], self.probs[r])
            for ev in events:
                if ev.kind in ("start", "realarm") and self.snapshots is not None:
                    ev = self._snapshot(cam, ev)
                for sink in self.sinks:
                    sink.emit(ev)
            if self.snapshots is not None:
                cam.hold_armed()
        return True

    def _snapshot(self, cam: Camera, ev: Event) -> Event:
        """The event with its snapshot (the centre frame of its first hyperframe), or as it was
        when there is no frame or no disk: an alert never waits for, or dies with, its
        snapshot (the store has already made room on a full disk)."""
        try:
            image = cam.snapshot(ev.first)
            if image is None:
                return ev
            snap = self.snapshots.save(ev.camera, ev.key, ev.id, ev.time, image)
        except Exception as e:  # a bug (a traceback) must not cost the alert either
            self.snapshots.failures += 1
            if self.snapshots.failures in (1, 10, 100, 1000):
                if isinstance(e, OSError):
                    log.warning("snapshots: cannot write one (%s); the alert goes out without", e)
                else:
                    log.exception("snapshots: failed (a bug); the alert goes out without")
            return ev
        return replace(ev, snapshot=snap.file, small=snap.small)

    def _activate(self) -> None:
        """Logits to scores, row by row, in place (all rows: cheaper than slicing views)."""
        activate(self.spec.activation, self.logits, self.probs, self._rowmax)

    def _shutdown(self) -> None:
        self.abandoned = join_captures(self.cameras)
        now = time.time()
        for c in self.cameras:
            for ev in c.logic.close(c.stats.grabbed - 1, now):
                for sink in self.sinks:
                    sink.emit(ev)
        for sink in self.sinks:
            sink.close()
        self._summary()

    def _summary(self) -> None:
        for c in self.cameras:
            for line in c.summary():
                log.info("%s", line)
        log.info(
            "inference: %d hyperframes in %d calls, p50 %.2f ms, p95 %.2f ms per call",
            self.latency.count,
            self.latency.calls,
            self.latency.percentile(50),
            self.latency.percentile(95),
        )
        if self.two is not None:
            log.info(
                "two-stage: %d screened, %d confirmed, %d rejected; confirming model p50 %.2f ms",
                self.two.screens,
                self.two.confirms,
                self.two.rejections,
                self.two.latency.percentile(50),
            )


def _screen(spec: HyperframeSpec, pairs) -> dict[str, float]:
    """The screening thresholds set (classes of the screening model, checked values)."""
    try:
        return layer_thresholds(replace(spec, alert_classes=()), [("--screen-threshold", pairs)])
    except SpecError as e:
        raise UsageError(str(e)) from None


def join_captures(cameras: list[Camera], within: float = JOIN_WITHIN) -> list[str]:
    """Join the capture threads for at most ``within`` seconds in all; return the names of the
    cameras whose thread is still inside an open or a read (they end on their own within
    --open-timeout or --stall-timeout). OpenCV aborts the process ("terminate called without
    an active exception") if the interpreter shuts down while a capture blocks in a read: a
    process with such cameras left must end with ``os._exit`` (the CLI does)."""
    deadline = time.monotonic() + within
    for c in cameras:
        if c.capture.ident is None:  # never started (a failure while starting the others)
            c.source.release()
            continue
        c.capture.join(max(0.0, deadline - time.monotonic()))
    left = [c.name for c in cameras if c.capture.is_alive()]
    if left:
        log.info(
            "not waiting for %d camera(s) still opening or reading (%s)", len(left), ", ".join(left)
        )
    return left
