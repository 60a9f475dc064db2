"""Alert classes found by name, and what a run is told about them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from models import data as datasets
from models.alerts import alert_names, spec_for, warn_about
from models.config import parse


def test_the_alert_class_is_found_whatever_its_case_or_separators():
    cfg = parse(["--data", "d"])
    classes = ("Walk-Left", "Fall", "Lie-Down", "LYING")
    assert alert_names(cfg, classes) == ("Fall",)
    assert spec_for(cfg, classes).thresholds == {"Fall": 0.8}
    cfg = parse(["--data", "d", "--abnormal", "lie_down", "fall"])
    assert alert_names(cfg, classes) == ("Fall", "Lie-Down")


def test_alert_clips_labelled_whole_are_said_with_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    """Fall clips with no annotations teach the walking before and the lying after as fall: a
    run without --action-motion warns with both fixes; annotated fall clips are not reported."""
    for c in ("fall", "other"):
        (tmp_path / c).mkdir()
        for g in range(1, 6):
            (tmp_path / c / f"v_{c}_g{g:02d}_c01.avi").write_bytes(b"")
    rows = [f"fall/v_fall_g{g:02d}_c01.avi,3,5,fall" for g in range(1, 6)]
    notes = tmp_path / "annotations.csv"
    cfg = parse(["--data", str(tmp_path)])
    for annotated in (True, False):
        if annotated:
            notes.write_text("\n".join(["video,start_frame,end_frame,label", *rows]) + "\n")
        else:
            notes.unlink()
        ds = datasets.load(tmp_path, 0, 0.0, 0.0)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="models"):
            warn_about("mine", cfg, ds, spec_for(cfg, ds.classes))
        whole = "mine: 5 fall training clips are labelled whole (no annotations.csv)" in caplog.text
        assert whole is not annotated, caplog.text
    assert "annotations.csv (video,start_frame,end_frame,label) says where" in caplog.text
    assert "or --action-motion 0.15 leaves out their still windows" in caplog.text
