"""Many cameras in one config file, each with its own every/hz, thresholds and motion settings:
checked with errors naming the key, and honoured by the runtime (16 cameras in one run)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from edge_hf import config
from edge_hf.cli import build_parser
from edge_hf.errors import UsageError
from edge_hf.runtime import Runtime
from tests.conftest import run_cli, save_model


def settings(tmp: Path, text: str, *flags: str) -> config.Settings:
    (tmp / "config.toml").write_text(text)
    args = build_parser().parse_args(["run", *flags])
    return config.build(config.resolve(args, tmp / "config.toml"))


def sixteen(model: Path) -> str:
    """16 finite synth cameras: four plain, the rest tables with settings of their own."""
    lines = [f"[model]\npath = '{model}'\nevery = 2\n[capture]\nfast = true\n[cameras]"]
    src = "synth://{scene}?frames=40&size=96x64&seed={i}"
    for i in range(4):
        lines.append(f"plain{i} = '{src.format(scene='walk_left', i=i)}'")
    for i in range(4, 16):
        own = [f"source = '{src.format(scene='fall', i=i)}'"]
        if i % 3 == 0:
            own.append(f"every = {i % 4 + 1}")
        elif i % 3 == 1:
            own.append("hz = 5")
        if i % 2:
            own.append("thresholds = { fall = 0.95 }")
        if i % 4 == 0:
            own.append("motion = { enabled = true, max_skip = 0.5 }")
        lines.append(f"cam{i} = {{ {', '.join(own)} }}")
    return "\n".join(lines) + "\n"


def test_sixteen_cameras_each_run_with_their_own_settings(tmp_path: Path):
    model = save_model(tmp_path / "m.onnx")
    s = settings(tmp_path, sixteen(model))
    run = s.run
    assert len(run.cameras) == 16 and len(run.camera_settings) == 16
    assert run.camera_where[5] == f"{tmp_path / 'config.toml'}: cameras.cam5"
    rt = Runtime(run, [], threading.Event())
    cams = {c.name: c for c in rt.cameras}
    assert cams["plain0"].sampler.every == 2  # the run's
    assert cams["cam6"].sampler.every == 3 and cams["cam9"].sampler.every == 2  # every = i%4+1
    assert cams["cam4"].sampler.every == 5  # hz = 5 of synth's 25 fps
    assert cams["cam5"].logic.policy.thresholds == (("fall", 0.95),)
    assert cams["cam4"].logic.policy.thresholds == (("fall", 0.8),)  # the model's
    gated = {n for n, c in cams.items() if c.capture.gate is not None}
    assert gated == {"cam4", "cam8", "cam12"}
    assert cams["cam8"].capture.gate.opts.max_skip == 0.5
    assert rt.run() == 0
    assert all(c.stats.grabbed == 40 for c in rt.cameras)
    assert not any(c.capture.is_alive() for c in rt.cameras)
    r = run_cli("check-config", str(tmp_path / "config.toml"), timeout=60)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        (
            "{ source = 'synth://a', evry = 2 }",
            "cameras.c: unknown key 'evry'; did you mean 'every'?",
        ),
        ("{ every = 2 }", 'cameras.c: a camera table needs source = "SRC"'),
        ("{ source = 'synth://a', every = 0 }", "cameras.c.every: expected a whole number >= 1"),
        ("{ source = 'synth://a', every = 2, hz = 3 }", "cameras.c: every and hz are alternatives"),
        ("{ source = 'synth://a', hz = -1 }", "cameras.c.hz: expected a number >= 0.01"),
        (
            "{ source = 'synth://a', thresholds = { fall = 1.5 } }",
            "cameras.c.thresholds: expected CLASS=P",
        ),
        ("{ source = 'synth://a', motion = true }", "cameras.c.motion: expected a table"),
        (
            "{ source = 'synth://a', motion = { treshold = 0.1 } }",
            "cameras.c.motion: unknown key 'treshold'; did you mean 'threshold'?",
        ),
        (
            "{ source = 'synth://a', motion = { threshold = 2 } }",
            "cameras.c.motion.threshold: expected a number >= 0 and <= 1",
        ),
        (
            "{ source = 'synth://a', motion = { max_skip = 0 } }",
            "cameras.c.motion.max_skip: expected a number of seconds > 0",
        ),
        ("{ source = 3 }", "cameras.c.source: expected"),
        ("{ source = 'synth://a', down_for = -1 }", "cameras.c.down_for: expected a number of"),
        (
            "{ source = 'synth://a', re_alarm = 5 }",
            "cameras.c.re_alarm: expected 0 (no re-alarm) or a number of seconds >= 10",
        ),
    ],
)
def test_a_bad_camera_table_names_the_key(tmp_path: Path, table: str, needle: str):
    with pytest.raises(UsageError) as e:
        settings(tmp_path, f"[cameras]\nc = {table}\n")
    assert needle in str(e.value) and str(tmp_path / "config.toml") in str(e.value)


def test_a_cameras_threshold_for_an_unknown_class_names_the_camera(tmp_path: Path):
    text = "[cameras]\nc = { source = 'synth://fall', thresholds = { smoke = 0.5 } }\n"
    (tmp_path / "config.toml").write_text(text)
    r = run_cli("check-config", str(tmp_path / "config.toml"), timeout=60)
    assert r.returncode == 2
    line = r.stderr.strip()
    assert "cameras.c.thresholds smoke=0.5: the model has no class 'smoke'" in line
    assert len(line.splitlines()) == 1


def test_cameras_on_the_command_line_have_only_the_runs_settings(tmp_path: Path):
    text = "[model]\nevery = 3\n[cameras]\nc = { source = 'synth://fall', every = 7 }\n"
    assert settings(tmp_path, text).run.camera_settings[0].every == 7
    assert settings(tmp_path, text, "--camera", "d=synth://fall").run.camera_settings == ()


def test_down_for_and_re_alarm_come_from_the_camera_then_the_run_then_the_default(tmp_path):
    from edge_hf.alerts import DEFAULT_DOWN_FOR
    from edge_hf.runtime import alert_policy
    from edge_hf.spec import HyperframeSpec

    spec = HyperframeSpec(3, 1, (32, 32), ("other", "fall", "lying"), (("fall", 0.5),))

    text = "[alerts]\nre_alarm = 60\n[cameras]\n"
    text += "a = { source = 'synth://fall', down_for = 0 }\n"
    text += "b = { source = 'synth://fall', down_for = 30, re_alarm = 0 }\n"
    text += "c = 'synth://fall'\n"
    run = settings(tmp_path, text).run
    got = [
        (p.down_for, p.realarm)
        for p in (alert_policy(spec, run, own, "c") for own in run.camera_settings)
    ]
    assert got == [(0.0, 60.0), (30.0, 0.0), (DEFAULT_DOWN_FOR, 60.0)]
    run = settings(tmp_path, text, "--down-for", "20", "--re-alarm", "15").run
    assert alert_policy(spec, run).down_for == 20.0 and alert_policy(spec, run).realarm == 15.0
    assert alert_policy(spec, run, run.camera_settings[0], "a").down_for == 0.0  # its own first
