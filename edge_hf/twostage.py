"""Two-stage alerts: a cheap screening model scores every hop; a hyperframe whose screening score
for an alert class reaches a lower *screening* threshold goes to the confirming model (a temporal
pyramid, say) on the same anchor of the same ring, and only the confirming model's score reaches
the alert logic (with the screen's scores of the other classes: a pose an alert waits for is
the screen's). A hop the screen lets pass counts as a miss for k-of-n, so an event fires only
where the confirming model confirms; it carries both scores (``Event.score``, ``Event.screen``).

The confirming model's inputs are gathered by each camera's mailbox with the screen's (the ring
moves on while inference runs), except an input with the same frames as one of the screen's (a
pyramid's fast scale): that one is the screen's own. Taking a hyperframe swaps the mailbox's
buffers with a spare row of ``stage`` (no copy); only rows the screen passes are copied, packed
into the confirming model's bound inputs and scored in one call. Everything is allocated here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from edge_hf.backends import Backend
from edge_hf.camera import Camera
from edge_hf.capture import confirm_buffers
from edge_hf.errors import UsageError
from edge_hf.inference import InferenceStats, activate
from edge_hf.sampler import check_same_frames, input_buffers
from edge_hf.spec import HyperframeSpec

SCREEN_DEFAULT = 0.5  # a class's screening threshold unless set (never above its alert threshold)


@dataclass
class _Gate:
    """One camera's columns and thresholds, aligned with its alert logic's labels."""

    screen_cols: np.ndarray  # intp, in the screening model's classes
    confirm_cols: np.ndarray  # intp, in the confirming model's classes
    screen_thr: np.ndarray  # float32
    alert_thr: np.ndarray  # float32
    scores: np.ndarray  # float32 scratch
    hit: np.ndarray  # bool scratch


def screen_thresholds(
    labels: list[str], alert: dict[str, float], screen: dict[str, float]
) -> np.ndarray:
    return np.array([screen.get(c, min(SCREEN_DEFAULT, alert[c])) for c in labels], np.float32)


def check_confirm(screen: HyperframeSpec, confirm: Backend, cfg) -> None:
    """Refuse a confirming model that cannot confirm the screening model's alerts: other frames
    (size, interpolation), or without an alert class or a screening class (``cfg``: RunConfig)."""
    where = f"--confirm {confirm.path}"
    check_same_frames(screen, confirm.spec, where)
    alerts = [c for c, _ in cfg.thresholds] + list(screen.thresholds)
    for c in (*alerts, *(c for c, _ in cfg.screen_thresholds)):
        if c not in confirm.spec.classes:
            raise UsageError(
                f"{where}: the confirming model has no class {c!r} (an alert class); its "
                f"classes are {list(confirm.spec.classes)}"
            )


class TwoStage:
    def __init__(
        self,
        backend: Backend,
        screen_inputs: list[np.ndarray],
        screen_spec: HyperframeSpec,
        cameras: list[Camera],
        screen: dict[str, float],
    ) -> None:
        self.backend, self.spec = backend, backend.spec
        self.screen_inputs = screen_inputs  # the screening model's bound inputs
        batch = len(screen_inputs[0])
        self.inputs = input_buffers(self.spec, batch)
        # per confirming input: the screening input holding its frames, or None (gathered)
        self.shared = cameras[0].sampler.shared
        # per row: one hyperframe of the gathered inputs, swapped with a mailbox's in `take`
        self.stage = [confirm_buffers(cameras[0].sampler) for _ in range(batch)]
        self.logits = np.zeros((batch, len(self.spec.classes)), np.float32)
        self.probs = np.zeros_like(self.logits)
        self._rowmax = np.zeros((batch, 1), np.float32)
        backend.bind(self.inputs, self.logits)
        self.fed = np.zeros((batch, len(screen_spec.classes)), np.float32)  # to the alert logic
        self.rows = [0] * batch  # confirming row -> screening row
        self.gates = {c.name: self._gate(c, screen_spec, screen) for c in cameras}
        self.latency = InferenceStats()
        self.screens = self.confirms = self.rejections = 0

    def _gate(self, cam: Camera, screen_spec: HyperframeSpec, screen: dict[str, float]) -> _Gate:
        labels = list(cam.labels)
        for c in (*labels, *screen):
            if c not in self.spec.classes:
                raise UsageError(
                    f"--confirm {self.backend.path}: the confirming model has no class {c!r} "
                    f"(an alert class of camera {cam.name}); its classes are "
                    f"{list(self.spec.classes)}"
                )
        alert = dict(cam.logic.policy.thresholds)
        return _Gate(
            np.array([screen_spec.classes.index(c) for c in labels], np.intp),
            np.array([self.spec.classes.index(c) for c in labels], np.intp),
            screen_thresholds(labels, alert, screen),
            np.array([alert[c] for c in labels], np.float32),
            np.zeros(len(labels), np.float32),
            np.zeros(len(labels), np.bool_),
        )

    def run(self, n: int, cameras: list[Camera | None], probs: np.ndarray) -> np.ndarray:
        """Screen rows ``0..n-1`` (their screening scores in ``probs``), confirm those that
        pass. The scores for the alert logic: for its alert classes, the confirming model's of
        a row it scored and 0 elsewhere; for the other classes (a pose a fall waits for), the
        screen's."""
        np.copyto(self.fed[:n], probs[:n])
        m = 0
        for r in range(n):
            g = self.gates[cameras[r].name]
            np.take(probs[r], g.screen_cols, out=g.scores)
            np.put(self.fed[r], g.screen_cols, 0.0)
            np.greater_equal(g.scores, g.screen_thr, out=g.hit)
            if g.hit.any():
                self._copy(r, m)
                self.rows[m] = r
                m += 1
        if m == 0:
            return self.fed
        self.screens += m
        t0 = time.perf_counter()
        self.backend.infer(m)
        self.latency.add(time.perf_counter() - t0, m)
        activate(self.spec.activation, self.logits, self.probs, self._rowmax)
        for j in range(m):
            r = self.rows[j]
            g = self.gates[cameras[r].name]
            np.take(self.probs[j], g.confirm_cols, out=g.scores)
            np.put(self.fed[r], g.screen_cols, g.scores)
            np.greater_equal(g.scores, g.alert_thr, out=g.hit)
            if g.hit.any():
                self.confirms += 1
            else:
                self.rejections += 1
        return self.fed

    def _copy(self, r: int, m: int) -> None:
        """Row ``r``'s confirming inputs into row ``m`` of the bound inputs."""
        for k, buf in enumerate(self.inputs):
            j = self.shared[k]
            np.copyto(buf[m], self.screen_inputs[j][r] if j is not None else self.stage[r][k][0])

    def counts(self) -> tuple[tuple[str, int], ...]:
        return (
            ("screened", self.screens),
            ("confirmed", self.confirms),
            ("rejected", self.rejections),
        )
