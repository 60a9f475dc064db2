"""``--http``: /metrics read by Prometheus' own parser, /healthz flipping to 503 when a camera
stalls or a loop stops, /api/events; in-process against a real server on 127.0.0.1, and once
as a user runs it (a real ``edge-hf run`` subprocess)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

import edge_hf
from edge_hf.alerts import DOWN, Event
from edge_hf.errors import SinkError
from edge_hf.health import LATENCY_BUCKETS, CameraCounters, Counters, Health
from edge_hf.sinks import RunInfo
from edge_hf.sinks.http import HttpOptions, HttpSink
from tests.conftest import EdgeHF, run_cli
from tests.live import HttpTsServer, free_port, have_ffmpeg, wait_until, write_h264_clip


class FakeRuntime:
    """Counters a test can change: one camera, 'porch'."""

    def __init__(self) -> None:
        self.connected = True
        self.frames = 100
        self.health = Health()
        self.beat = self.health.loop("inference")
        self.mqtt: dict = {}

    def counters(self) -> Counters:
        skipped = (("still", 7), ("busy", 1))
        cam = CameraCounters("porch", self.frames, 90, 10, 2, self.connected, skipped, 1)
        buckets = (0, 5, 3) + (0,) * (len(LATENCY_BUCKETS) - 2)
        return Counters(time.monotonic(), (cam,), 8, 2.0, 4.0, buckets, 0.02)

    def info(self) -> RunInfo:
        statuses = lambda: {"mqtt": self.mqtt} if self.mqtt else {}  # noqa: E731
        frame = np.full((720, 1280, 3), 200, np.uint8)
        latest = lambda camera: frame.copy() if camera == "porch" else None  # noqa: E731
        return RunInfo(
            ("porch",),
            ("fall",),
            self.counters,
            self.health,
            statuses=statuses,
            latest_frame=latest,
        )


def get(port: int, path: str) -> tuple[int, str]:
    code, body = get_bytes(port, path)
    return code, body.decode()


def get_bytes(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.fixture
def served():
    rt, port = FakeRuntime(), free_port()
    sink = HttpSink(HttpOptions("127.0.0.1", port))
    sink.start(rt.info())
    try:
        yield rt, sink, port
    finally:
        sink.close()


def event(kind: str) -> Event:
    return Event(kind, str(uuid.uuid4()), "porch", "fall", 0.9, 0.9, 1, time.time())


def test_metrics_parse_and_count_what_happened(served):
    rt, sink, port = served
    sink.emit(event("start"))
    sink.emit(event("end"))
    sink.emit(event("start"))
    code, text = get(port, "/metrics")
    assert code == 200
    m = samples(text)
    cam = (("camera", "porch"),)
    assert m[("edge_hf_camera_frames_total", cam)] == 100
    assert m[("edge_hf_camera_hyperframes_processed_total", cam)] == 90
    assert m[("edge_hf_camera_hyperframes_dropped_total", cam)] == 10
    assert m[("edge_hf_camera_reconnects_total", cam)] == 2
    assert m[("edge_hf_camera_snapshots_late_total", cam)] == 1
    assert m[("edge_hf_camera_connected", cam)] == 1
    skipped = "edge_hf_camera_hyperframes_skipped_total"
    assert m[(skipped, (("camera", "porch"), ("reason", "still")))] == 7
    assert m[(skipped, (("camera", "porch"), ("reason", "busy")))] == 1
    assert m[("edge_hf_alerts_total", (("camera", "porch"), ("label", "fall")))] == 2
    assert m[("edge_hf_inference_seconds_count", ())] == 8
    assert m[("edge_hf_inference_seconds_bucket", (("le", "0.002"),))] == 5  # cumulative
    assert m[("edge_hf_inference_seconds_bucket", (("le", "+Inf"),))] == 8
    assert ("edge_hf_mqtt_connected", ()) not in m  # no MQTT sink, no MQTT metrics
    rt.frames, rt.mqtt = (
        300,
        {
            "spool": {"depth": 3, "dropped": 1},
            "mqtt": {"connected": False},
        },
    )
    time.sleep(0.2)
    m = samples(get(port, "/metrics")[1])
    assert m[("edge_hf_camera_fps", cam)] > 100  # 200 frames in about 0.2 s
    assert m[("edge_hf_spool_depth", ())] == 3 and m[("edge_hf_spool_dropped_total", ())] == 1
    assert m[("edge_hf_mqtt_connected", ())] == 0


def test_healthz_turns_503_when_a_camera_stalls_or_a_loop_stops(served):
    rt, _, port = served
    assert get(port, "/healthz") == (
        200,
        json.dumps({"ok": True, "stalled_cameras": [], "stopped_loops": []}),
    )
    rt.connected = False
    code, body = get(port, "/healthz")
    assert code == 503 and json.loads(body)["stalled_cameras"] == ["porch"]
    rt.connected = True
    assert get(port, "/healthz")[0] == 200
    rt.beat.last -= 60  # the inference loop has not gone round for a minute
    code, body = get(port, "/healthz")
    assert code == 503 and json.loads(body)["stopped_loops"] == ["inference"]


def test_api_events_lists_recent_events_newest_first_and_404_names_the_pages(served):
    _, sink, port = served
    first, second = event("start"), event("end")
    sink.emit(first)
    sink.emit(second)
    code, body = get(port, "/api/events")
    assert code == 200 and [e["id"] for e in json.loads(body)] == [second.id, first.id]
    code, body = get(port, "/nope")
    assert code == 404 and "/metrics" in body


def test_a_port_in_use_is_a_sink_error_naming_the_flag(served):
    _, _, port = served
    other = HttpSink(HttpOptions("127.0.0.1", port))
    with pytest.raises(SinkError, match=rf"--http 127.0.0.1:{port}: cannot listen .*another port"):
        other.start(FakeRuntime().info())
    other.close()


@pytest.mark.parametrize("value", ["99999", "host:", "localhost:x", ":9108x"])
def test_a_bad_http_address_is_one_line_and_exit_2(value: str):
    r = run_cli("run", "--camera", "synth://demo", "--http", value, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("edge-hf: error: --http: expected [HOST:]PORT")
    assert len(r.stderr.strip().splitlines()) == 1


def test_edge_hf_run_with_http_serves_metrics_and_health(tmp_path: Path):
    port = free_port()
    run = ("run", "--camera", "synth://demo", "--fast", "--http", str(port))
    with EdgeHF(tmp_path, *run) as proc:
        frames = lambda: samples(get(port, "/metrics")[1]).get(  # noqa: E731
            ("edge_hf_camera_frames_total", (("camera", "demo"),)), 0
        )
        assert wait_until(lambda: frames() > 0, 30), proc.stderr()
        assert get(port, "/healthz")[0] == 200
        assert proc.signal(15) == 0
    assert "http: status page http://" in proc.stderr() and "Traceback" not in proc.stderr()


def test_api_status_shows_open_alerts_and_the_page_is_served(served):
    rt, sink, port = served
    start = event("start")
    sink.emit(start)
    status = json.loads(get(port, "/api/status")[1])
    (cam,) = status["cameras"]
    assert cam["name"] == "porch" and cam["open_alerts"] == ["fall"] and cam["connected"]
    assert status["version"] == edge_hf.__version__
    assert status["health"]["ok"] and set(status["inference"]) == {"runs", "p50_ms", "p95_ms"}
    sink.emit(Event("end", start.id, "porch", "fall", 0.9, 0.9, 5, time.time()))
    assert json.loads(get(port, "/api/status")[1])["cameras"][0]["open_alerts"] == []
    code, page = get(port, "/")
    assert code == 200 and '<tbody id="cameras">' in page and "/api/status" in page
    assert "http://" not in page and "https://" not in page  # no external assets


def test_api_status_shows_how_long_each_alert_has_been_open_and_its_person_down(served):
    rt, sink, port = served
    began = time.time() - 12.0  # the grab time of the start's frame, 12 s ago
    fall = replace(event("start"), time=began, down_for=0.4)
    down = replace(fall, id=str(uuid.uuid4()), level=DOWN, down_for=10.0, time=time.time() - 2)
    for ev in (fall, replace(fall, kind="update", time=time.time(), down_for=6.0), down):
        sink.emit(ev)
    (cam,) = json.loads(get(port, "/api/status")[1])["cameras"]
    assert cam["open_alerts"] == ["fall", "fall_down"]
    opened = {e["alert"]: e for e in cam["open_events"]}
    assert opened["fall"]["id"] == fall.id and opened["fall"]["down_for"] == 6.0  # the update's
    assert 12.0 <= opened["fall"]["open_for"] < 14.0  # from the start, not from the update
    assert opened["fall"]["since"] == fall.to_dict()["time"]
    assert opened["fall_down"]["id"] == down.id and 2.0 <= opened["fall_down"]["open_for"] < 4.0
    sink.emit(replace(down, kind="end"))
    (cam,) = json.loads(get(port, "/api/status")[1])["cameras"]
    assert [e["alert"] for e in cam["open_events"]] == ["fall"]
    kinds = [(e["event"], e["level"]) for e in json.loads(get(port, "/api/events")[1])]
    # the updates show as durations, not in the recent events
    assert kinds == [("end", "down"), ("start", "down"), ("start", "fast")]
    m = samples(get(port, "/metrics")[1])
    for key in ("fall", "fall_down"):
        assert m[("edge_hf_alerts_total", (("camera", "porch"), ("label", key)))] == 1


@pytest.mark.skipif(not have_ffmpeg(), reason="ffmpeg is needed to serve a live test stream")
def test_healthz_flips_when_a_real_network_camera_freezes_and_back(tmp_path: Path):
    """A real HTTP MPEG-TS camera that hangs (socket open, no bytes): /healthz says 503 and
    names it within the 5 s of 'no frame recently', and 200 again once it is back."""
    clip = write_h264_clip(tmp_path / "cam.mp4", seconds=2, size=(320, 180))
    port = free_port()
    with HttpTsServer(clip) as cam:
        args = ("run", "--camera", f"door={cam.url}", "--http", str(port), "--stall-timeout", "2")
        with EdgeHF(tmp_path, *args) as proc:
            assert wait_until(lambda: get(port, "/healthz")[0] == 200, 30), proc.stderr()
            cam.hang()
            assert wait_until(lambda: get(port, "/healthz")[0] == 503, 15), proc.stderr()
            assert json.loads(get(port, "/healthz")[1])["stalled_cameras"] == ["door"]
            cam.start()
            assert wait_until(lambda: get(port, "/healthz")[0] == 200, 30), proc.stderr()
            assert proc.signal(15) == 0


def test_api_frame_is_the_newest_frame_as_a_small_jpeg_made_on_request(served):
    _, _, port = served
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/frame/porch", timeout=5) as r:
        assert r.headers["Content-Type"] == "image/jpeg"
        image = cv2.imdecode(np.frombuffer(r.read(), np.uint8), cv2.IMREAD_COLOR)
    assert image.shape == (360, 640, 3) and abs(float(image.mean()) - 200) < 2
    assert get(port, "/api/frame/yard")[0] == 404


def test_snapshots_are_files_of_their_folder_never_symlinks(tmp_path: Path):
    """A name of the store's pattern may still be a symbolic link (put there by anyone who can
    write the folder): to a file outside, or to one inside; both are 404, a real one is 200."""
    from edge_hf.snapshots import SnapshotOptions, SnapshotStore

    outside = tmp_path / "secret.jpg"
    outside.write_bytes(b"not for the web")
    store = SnapshotStore(SnapshotOptions(tmp_path / "snaps"))
    real = store.save(
        "porch", "fall", str(uuid.uuid4()), time.time(), np.zeros((8, 8, 3), np.uint8)
    )
    (store.dir / "porch-fall-out.jpg").symlink_to(outside)
    (store.dir / "porch-fall-in.jpg").symlink_to(store.dir / real.file)
    rt, port = FakeRuntime(), free_port()
    sink = HttpSink(HttpOptions("127.0.0.1", port))
    sink.start(replace(rt.info(), snapshots=store))
    try:
        assert get_bytes(port, f"/snapshots/{real.file}") == (
            200,
            (store.dir / real.file).read_bytes(),
        )
        for name in ("porch-fall-out.jpg", "porch-fall-in.jpg", "secret.jpg", "..%2Fsecret.jpg"):
            code, body = get_bytes(port, f"/snapshots/{name}")
            assert code == 404 and b"not for the web" not in body, name
    finally:
        sink.close()
