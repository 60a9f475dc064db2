"""The export's calibration and accuracy windows are the trainer's: the same alert classes
(whatever their case) and the same still windows left out (``--action-motion``)."""

from __future__ import annotations

from pathlib import Path

from edge_hf.spec import HyperframeSpec
from export.data import load_data
from tests.conftest import moving_square


def test_calibration_leaves_out_the_still_windows_the_trainer_left_out(tmp_path: Path):
    for name in ("a", "b"):  # a fall spelt Fall; lying down (not an alert) moves the same way
        moving_square(tmp_path / "data" / "Fall" / f"{name}.avi", 40)
        moving_square(tmp_path / "data" / "lie_down" / f"{name}.avi", 40)
    spec = HyperframeSpec(3, 1, (32, 32), ("Fall", "lie_down"))
    counts = {}
    for motion in (0.0, 0.15):
        config = {
            "abnormal": ["fall"],
            "action_motion": motion,
            "val_fraction": 0,
            "test_fraction": 0.5,
            "cache": str(tmp_path / "cache"),
        }
        calib = load_data(tmp_path / "data", spec, config, subset=1000).calib
        counts[motion] = [int((calib.y == k).sum()) for k in range(2)]
    # one training clip a class: 38 windows, of which the 6 that see the square move
    assert counts == {0.0: [38, 38], 0.15: [6, 38]}
