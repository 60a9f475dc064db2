"""The config file: real TOML files, flags over file over defaults, unknown keys refused with
their path, and ``edge-hf check-config`` / ``run --config`` as real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edge_hf import config
from edge_hf.cli import build_parser
from edge_hf.errors import UsageError
from tests.conftest import ROOT, run_cli

EXAMPLE = ROOT / "systemd" / "config.example.toml"


def write(tmp: Path, text: str) -> Path:
    (tmp / "config.toml").write_text(text)
    return tmp / "config.toml"


def resolve(tmp: Path, text: str | None, *flags: str) -> dict:
    args = build_parser().parse_args(["run", *flags])
    return config.resolve(args, write(tmp, text) if text is not None else None)


FILE = """
log_level = "warning"
[cameras]
porch = "synth://fall"
[model]
hz = 3
[alerts]
thresholds = { fall = 0.7 }
cooldown = 4
[mqtt]
url = "mqtt://edge@broker.lan/site"
"""


def test_the_file_fills_in_and_flags_override(tmp_path: Path):
    v = resolve(tmp_path, FILE)
    assert v["cameras"] == ("porch=synth://fall",) and v["model.hz"] == 3.0
    assert v["alerts.thresholds"] == (("fall", 0.7),) and v["alerts.cooldown"] == 4.0
    assert v["alerts.k_of_n"] == (2, 3) and v["log_level"] == "warning"  # defaults fill the rest
    v = resolve(
        tmp_path,
        FILE,
        *("--camera", "door=synth://wave", "--every", "2", "--cooldown", "0"),
        *("--threshold", "fall=0.9", "--threshold", "normal=0.5"),
    )
    assert v["cameras"] == ("door=synth://wave",)  # cameras on the command line replace the file's
    assert v["model.every"] == 2 and v["model.hz"] is None  # --every beats hz = 3 in the file
    assert v["alerts.cooldown"] == 0.0
    # thresholds refine the file's; the later one wins when both name a class
    assert dict(v["alerts.thresholds"]) == {"fall": 0.9, "normal": 0.5}


def test_then_rules_from_flags_and_file(tmp_path: Path):
    from edge_hf.spec import Then

    assert resolve(tmp_path, None, "--camera", "x")["alerts.then"] is None  # the model's
    v = resolve(tmp_path, "[alerts]\nthen = ['fall=lying:0.6:1.5']", "--camera", "x")
    assert v["alerts.then"] == (Then("fall", "lying", 0.6, 1.5),)
    v = resolve(tmp_path, "[alerts]\nthen = ['fall=lying']", "--camera", "x", "--then", "none")
    assert v["alerts.then"] == ()


def test_defaults_without_a_file(tmp_path: Path):
    v = resolve(tmp_path, None, "--camera", "synth://fall")
    assert {k: v[k] for k in ("model.every", "capture.fast", "mqtt.url", "spool.max_rows")} == {
        "model.every": 1,
        "capture.fast": False,
        "mqtt.url": None,
        "spool.max_rows": 10_000,
    }


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("camras = {}", "unknown key 'camras'; did you mean 'cameras'?"),
        (
            "[mqtt]\npasword_file = 'x'",
            "unknown key 'mqtt.pasword_file'; did you mean 'mqtt.password_file'?",
        ),
        (
            "[spool]\nmax = 3",
            "unknown key 'spool.max'; did you mean 'spool.max_rows'? (known: spool.dir, spool.max_bytes, spool.max_rows)",
        ),
        ("[model.extra]\nx = 1", "unknown key 'model.extra'"),
        ("mqtt = 3", "mqtt must be a table: [mqtt]"),
        (
            "[model]\nevery = 'five'",
            "config.toml: model.every: expected a whole number >= 1 and <= 100000, found 'five'",
        ),
        (
            "[model]\nevery = 2.0",
            "model.every: expected a whole number >= 1 and <= 100000, found 2.0",
        ),
        ("[model]\nevery = 2\nhz = 3", "model.every and model.hz are alternatives; keep one"),
        ("[capture]\nfast = 'yes'", "capture.fast: expected true or false, found 'yes'"),
        (
            "[alerts]\nthresholds = { fall = 2 }",
            "alerts.thresholds: expected CLASS=P with 0 < P <= 1",
        ),
        (
            "[alerts]\nk_of_n = 2",
            "alerts.k_of_n: expected K/N with 1 <= K <= N <= 1000 (e.g. 2/3), found 2",
        ),
        (
            "[alerts]\nthen = 'fall=lying'",
            "alerts.then: expected a list of CLASS=POSE[:P[:SECONDS]]",
        ),
        (
            "[alerts]\nthen = ['fall=lying:2']",
            "alerts.then: expected CLASS=POSE[:P[:SECONDS]] (e.g. fall=lying:0.5:1) or none, found 'fall=lying:2'",
        ),
        (
            "[alerts]\nthen = ['fall:lying']",
            "alerts.then: expected CLASS=POSE[:P[:SECONDS]] (e.g. fall=lying:0.5:1) or none, found 'fall:lying'",
        ),
        (
            "[cameras]\n'front door' = 'x'",
            "cameras: a camera name is letters, digits, '_' and '-', found 'front door'",
        ),
        (
            "[cameras]\n\"cam\\n\" = 'x'",
            "cameras: a camera name is letters, digits, '_' and '-', found 'cam\\n'",
        ),
        ("cameras = 'x'", "cameras: expected a table of NAME = SOURCE"),
        ("log_level = 'loud'", "log_level: expected one of debug, info, warning, error"),
        ("[spool]\nmax_bytes = 10", "spool.max_bytes: expected a whole number of bytes >= 1024"),
        ("[mqtt\nurl = 1", "not valid TOML: "),
        ("[http]\nlisen = 9108", "unknown key 'http.lisen'; did you mean 'http.listen'?"),
        ("[http]\nlisten = 'x:y'", "http.listen: expected [HOST:]PORT with a port from 1 to 65535"),
        ("[mqtt]\ndiscovery = 'on'", "mqtt.discovery: expected true or false, found 'on'"),
        ("", "no camera: give --camera [NAME=]SRC or a [cameras] table in"),
    ],
)
def test_bad_files_name_the_key_and_the_fix(tmp_path: Path, text: str, needle: str):
    with pytest.raises(UsageError) as e:
        resolve(
            tmp_path,
            text
            + ("\n[cameras]\nporch = 'synth://fall'\n" if "camera" not in text and text else ""),
        )
    assert needle in str(e.value) and str(tmp_path / "config.toml") in str(e.value)


def test_a_missing_file_is_named(tmp_path: Path):
    args = build_parser().parse_args(["run"])
    with pytest.raises(UsageError, match=r"config file .*nope.toml does not exist"):
        config.resolve(args, tmp_path / "nope.toml")


def test_every_option_has_one_key_and_one_flag():
    keys = [o.key for o in config.OPTIONS]
    flags = [o.flag for o in config.OPTIONS if o.flag]
    assert len(keys) == len(set(keys)) and len(flags) == len(set(flags))


# --------------------------------------------------------------------------- as a user runs it


def test_check_config_accepts_the_shipped_example():
    r = run_cli("check-config", str(EXAMPLE), timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["run"]["cameras"] == ["porch=/dev/video0"]
    assert out["mqtt"]["url"] == "mqtt://edge-hf@192.168.1.10:1883/edge-hf"
    assert r.stderr.strip().endswith("config.example.toml: ok")
    if not Path("/dev/video0").exists():  # whether a camera is plugged in is not the file's fault
        assert "WARNING camera /dev/video0 does not exist" in r.stderr


def test_check_config_shows_no_password(tmp_path: Path):
    (tmp_path / "pw").write_text("s3cret-in-a-file\n")
    f = write(tmp_path, FILE + f"password_file = '{tmp_path / 'pw'}'\n")
    r = run_cli("check-config", str(f), timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["mqtt"]["password"] == "set"
    assert "s3cret" not in r.stdout + r.stderr


def test_check_config_masks_camera_passwords(tmp_path: Path):
    f = write(
        tmp_path,
        "[cameras]\ndoor = 'rtsp://admin:hunter2@10.0.0.7/s1'\n"
        "gate = 'rtsp://admin:p@ssw0rd@10.0.0.8/s1'\n"  # '@' in the password
        "yard = 'http://10.0.0.9/video.cgi?user=admin&password=s3cret&ch=1'\n",
    )
    r = run_cli("check-config", str(f), timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["run"]["cameras"] == [
        "door=rtsp://admin:***@10.0.0.7/s1",
        "gate=rtsp://admin:***@10.0.0.8/s1",
        "yard=http://10.0.0.9/video.cgi?user=admin&password=***&ch=1",
    ]
    for secret in ("hunter2", "ssw0rd", "s3cret"):
        assert secret not in r.stdout + r.stderr


@pytest.mark.parametrize(
    ("text", "code", "needle"),
    [
        (
            "[cameras]\nporch = 'synth://fall'\n[model]\npath = '/nope.onnx'",
            3,
            "model file /nope.onnx does not exist",
        ),
        ("[cameras]\nporch = 'ftp://x'", 2, "unknown scheme 'ftp'"),
        (
            "[cameras]\nporch = 'synth://fall'\n[alerts]\nthresholds = { smoke = 0.5 }",
            2,
            "no class 'smoke'",
        ),
        (
            "[cameras]\nporch = 'synth://fall'\n[mqtt]\nurl = 'mqtts://h'\nca = '/nope.pem'",
            5,
            "--mqtt-ca /nope.pem does not exist",
        ),
        (
            "[cameras]\nporch = 'synth://fall'\n[capture]\nfst = true",
            2,
            "unknown key 'capture.fst'; did you mean 'capture.fast'?",
        ),
    ],
)
def test_check_config_finds_what_run_would(tmp_path: Path, text: str, code: int, needle: str):
    r = run_cli("check-config", str(write(tmp_path, text)), timeout=60)
    assert r.returncode == code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edge-hf: error: ") and needle in lines[0]


def test_run_with_a_config_file(tmp_path: Path, fall_clip: Path):
    f = write(
        tmp_path, f"log_level = 'error'\n[cameras]\nporch = '{fall_clip}'\n[capture]\nfast = true\n"
    )
    r = run_cli("run", "--config", str(f), timeout=120)
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events and {e["camera"] for e in events} == {"porch"}
    assert r.stderr == ""  # log_level = "error"
    r = run_cli("--log-level", "info", "run", "--config", str(f), timeout=120)
    assert r.returncode == 0 and "inference:" in r.stderr  # the flag beats the file


# --------------------------------------------------------------------------- properties

import math  # noqa: E402
import tempfile  # noqa: E402

from hypothesis import event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from edge_hf.errors import EdgeHFError  # noqa: E402

NUMERIC = [o for o in config.OPTIONS if isinstance(o.check, config.Number)]
VALUE = st.one_of(
    st.text(max_size=30),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.sampled_from(["inf", "-inf", "nan", "1e12", "99999999999999999999", "1e-300", "0", " 5"]),
)


@settings(max_examples=400, deadline=None)
@given(option=st.sampled_from(NUMERIC), value=VALUE)
def test_a_numeric_option_is_in_its_bounds_or_a_one_line_error(option, value):
    try:
        x = option.check(value, option.flag)
    except UsageError as e:
        assert "\n" not in str(e) and str(e).startswith(f"{option.flag}: expected")
        return
    assert isinstance(x, option.check.kind) and math.isfinite(x)
    assert option.check.lo <= x <= option.check.hi


def test_the_limit_of_every_is_the_samplers():
    from edge_hf.sampler import MAX_EVERY

    assert config.MAX_EVERY == MAX_EVERY == config.every.hi


SCALAR = st.one_of(
    st.text(max_size=20),
    st.text(max_size=8).map(lambda t: "~" + t),  # ~user: a RuntimeError in pathlib
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.booleans(),
    st.sampled_from(["synth://fall", "rtsp://a:b@h/x", "/dev/video0", "2/3", "fall=0.5"]),
)
TOML_VALUE = st.one_of(SCALAR, st.lists(SCALAR, max_size=3)).map(lambda v: _toml(v))
# A plausible value per key (as TOML text), so that many documents get as far as settings.
GOOD = {
    "log_level": '"warning"',
    "model.backend": '"auto"',
    "model.providers": '"cpu"',
    "model.threads": "2",
    "model.every": "3",
    "model.hz": "2.5",
    "alerts.thresholds": "{ fall = 0.7 }",
    "alerts.k_of_n": '"2/3"',
    "alerts.cooldown": "4",
    "alerts.then": '["fall=lying:0.6:1.5"]',
    "capture.fast": "true",
    "capture.stall_timeout": "5",
    "capture.open_timeout": "3",
    "mqtt.url": '"mqtt://edge@broker.lan/site"',
    "mqtt.stats_interval": "30",
    "spool.max_rows": "100",
    "mqtt.discovery": "true",
    "mqtt.discovery_prefix": '"ha"',
    "http.listen": '"127.0.0.1:9108"',
}
KEY = st.one_of(st.sampled_from(sorted(GOOD)), st.sampled_from([o.key for o in config.OPTIONS]))
GOOD_ENTRY = st.sampled_from(sorted(GOOD.items()))
ENTRY = st.one_of(
    GOOD_ENTRY,
    GOOD_ENTRY,
    GOOD_ENTRY,
    st.tuples(KEY, TOML_VALUE),
    st.tuples(st.text("abcdefghijklmnop_.", max_size=12), TOML_VALUE),
)
CAMERAS = st.one_of(
    st.just({"porch": "synth://fall"}),
    st.dictionaries(
        st.one_of(st.sampled_from(["porch", "door"]), st.text(max_size=8)), SCALAR, max_size=2
    ),
)


def _toml(v) -> str:
    if isinstance(v, float):
        return (
            "nan" if v != v else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
        )
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return json.dumps(v)


def _document(entries: list, cameras: dict) -> str:
    lines, tables = [], {}
    for key, value in dict(entries).items():
        section, _, sub = key.rpartition(".")
        tables.setdefault(section, []).append(f"{json.dumps(sub)} = {value}")
    for section, items in tables.items():
        lines += ([f"[{json.dumps(section)}]"] if section else []) + items
    if cameras:
        lines += ["[cameras]"] + [f"{json.dumps(k)} = {_toml(v)}" for k, v in cameras.items()]
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(ENTRY, max_size=6),
    cameras=CAMERAS,
    junk=st.one_of(st.none(), st.none(), st.text(max_size=40)),
)
def test_any_config_file_is_valid_settings_or_a_one_line_error(entries, cameras, junk):
    text = junk if junk is not None else _document(entries, cameras)
    with tempfile.TemporaryDirectory() as tmp:
        file = write(Path(tmp), text)
        args = build_parser().parse_args(["run", "--config", str(file)])
        try:
            values = config.resolve(args, file)
            settings_ = config.build(values)
        except EdgeHFError as e:
            assert "\n" not in str(e).strip(), str(e)
            event(f"error {type(e).__name__}")
            return
    event("valid settings")
    run = settings_.run
    assert run.cameras and len(run.camera_where) == len(run.cameras)
    assert 1 <= run.every <= config.MAX_EVERY and 0 <= run.cooldown <= 86_400
