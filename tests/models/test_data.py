from __future__ import annotations

from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import pytest

from models import data
from models.data import window_label
from models.errors import BadData

# frames 0-9 walk (0), 10-14 fall (1), 15-19 lying (2), 20-21 unlabelled (-1)
LABELS = (0,) * 10 + (1,) * 5 + (2,) * 5 + (-1,) * 2
FALL = frozenset({1})


@pytest.mark.parametrize(
    ("frames", "strategy", "expect"),
    [
        ([0, 1, 2], "video", 0),
        ([8, 9, 10], "video", 0),  # 2 of 3 walk
        ([9, 10, 11, 12], "video", 1),  # 3 of 4 fall
        ([8, 9, 10, 11], "video", -1),  # no majority
        ([2, 4, 6], "center", 0),
        ([7, 9, 11], "center", -1),  # centre 9 is walk, but 10 (inside the middle half) is fall
        ([11, 12, 13], "center", 1),
        ([0, 5, 10, 15, 20], "center", -1),  # centre 10, but the middle half 5..15 is not all fall
        ([4, 8, 12, 16], "center", -1),
        ([6, 7, 8], "window-any", 0),
        ([7, 9, 11], "window-any", 1),  # any fall frame makes it a fall
        ([14, 16, 18], "window-any", 1),
        ([16, 18, 20], "window-any", 2),  # centre lying
        ([19, 20, 21], "window-any", -1),  # centre unlabelled
    ],
)
def test_label_strategies(frames, strategy, expect):
    assert window_label(LABELS, frames, strategy, FALL) == expect


def test_clip_labels_ignore_the_strategy():
    assert {window_label(4, [0, 1, 2], s, FALL) for s in data.STRATEGIES} == {4}


def test_ucf101_layout_and_flip_map(tiny_actions: Path):
    ds = data.load(tiny_actions)
    assert ds.classes == ("walk_left", "walk_right", "wave", "hold", "fall", "lie_down")
    # the test list is the test split; validation is carved from the training list
    assert len(ds.test) == 6 * 2 and len(ds.train) + len(ds.val) == 6 * 2 and len(ds.val) == 3
    assert not {v.path for v in ds.val} & {v.path for v in ds.train}
    assert ds.flip == {"walk_left": "walk_right", "walk_right": "walk_left"} and ds.flip_declared
    assert all(v.path.is_file() for v in ds.train + ds.val + ds.test)


def test_groups_never_straddle_splits(tmp_path: Path):
    """UCF101-named clips of one group (same actor and scene) stay in one split."""
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for g in range(1, 11):
            for k in (1, 2):
                (tmp_path / c / f"v_{c}_g{g:02d}_c{k:02d}.avi").write_bytes(b"")
    ds = data.load(tmp_path, seed=4)
    groups = [{v.path.stem.split("_")[2] for v in part} for part in (ds.train, ds.val, ds.test)]
    assert all(groups) and not (
        groups[0] & groups[1] or groups[0] & groups[2] or groups[1] & groups[2]
    )
    assert (len(ds.train), len(ds.val), len(ds.test)) == (24, 8, 8)


def test_segments_layout(tiny_streams: Path):
    ds = data.load(tiny_streams, val_fraction=0.5, test_fraction=0)
    assert "fall" in ds.classes and "lie_down" in ds.classes
    assert len(ds.train) == len(ds.val) == 1 and ds.test == ()
    labels = ds.train[0].labels
    assert isinstance(labels, tuple) and -1 not in labels


def test_folder_per_class_gets_a_seeded_split(tmp_path: Path, tiny_actions: Path):
    for c in ("fall", "lie_down"):
        (tmp_path / c).mkdir()
        for src in sorted((tiny_actions / c).glob("*.avi")):
            (tmp_path / c / src.name).write_bytes(src.read_bytes())
    a, b = data.load(tmp_path, seed=1), data.load(tmp_path, seed=1)
    # 2 groups: one is the test split; the other (4 clips) gives 1 validation clip
    assert a == b and (len(a.train), len(a.val), len(a.test)) == (3, 1, 4)
    assert a.flip is None and not a.flip_declared
    assert {data.load(tmp_path, seed=s).test for s in range(6)} != {a.test}
    streams = tmp_path / "streams"  # labelled streams beside the classes: not a class
    streams.mkdir()
    (streams / "story.avi").write_bytes(next((tiny_actions / "fall").glob("*.avi")).read_bytes())
    (streams / "segments.csv").write_text("video,start_frame,end_frame,label\nstory.avi,0,9,fall\n")
    assert data.load(tmp_path, seed=1) == a


def _csv(tmp: Path, rows: list[str], header: str = "video,start_frame,end_frame,label") -> Path:
    (tmp / "a.avi").write_bytes(b"")
    (tmp / "classes.txt").write_text("walk\nfall\n")
    (tmp / "segments.csv").write_text("\n".join([header, *rows]) + "\n")
    return tmp


@pytest.mark.parametrize(
    ("rows", "expect"),
    [
        (["a.avi,0,9,walk", "a.avi,10,20,fall"], nullcontext()),
        (
            ["b.avi,0,9,walk"],
            pytest.raises(BadData, match=r"segments.csv:2: video b.avi does not exist"),
        ),
        (
            ["a.avi,9,3,walk"],
            pytest.raises(BadData, match=r"segments.csv:2: bad frame range 9..3"),
        ),
        (["a.avi,x,3,walk"], pytest.raises(BadData, match=r"must be integers, found 'x'")),
        (["a.avi,0,3,"], pytest.raises(BadData, match=r"segments.csv:2: empty label")),
        ([], pytest.raises(BadData, match=r"segments.csv: no segments")),
        (
            ["a.avi,0,3,walk", "a.avi,4,5,jump"],
            pytest.raises(
                BadData,
                match=r"segments.csv:3: unknown label 'jump'; .*classes.txt lists \['walk', 'fall'\]",
            ),
        ),
    ],
)
def test_bad_segment_rows_name_the_line(tmp_path: Path, rows, expect):
    with expect:
        data.load(_csv(tmp_path, rows))


def test_bad_layouts(tmp_path: Path):
    with pytest.raises(BadData, match="does not exist"):
        data.load(tmp_path / "nope")
    with pytest.raises(BadData, match="has no class folders with videos"):
        data.load(tmp_path)
    with pytest.raises(BadData, match="expected the header"):
        data.load(_csv(tmp_path, ["a.avi,0,1,x"], header="file,from,to,what"))


def test_strategies_on_the_synthetic_csv_with_known_segments(tiny_streams: Path):
    ds = data.load(tiny_streams, val_fraction=0.5, test_fraction=0)
    video = ds.train[0]
    fall = ds.classes.index("fall")
    start, end = next((s, e) for s, e, label in _segments(tiny_streams, video) if label == "fall")
    mid = (start + end) // 2
    assert window_label(video.labels, [mid - 1, mid, mid + 1], "center", frozenset({fall})) == fall
    before = [start - 3, start - 2, start - 1]  # just before the fall: not a fall...
    assert window_label(video.labels, before, "center", frozenset({fall})) != fall
    reaching = [start - 2, start - 1, start]  # ...until one frame of it is in the window
    assert window_label(video.labels, reaching, "window-any", frozenset({fall})) == fall
    assert window_label(video.labels, reaching, "center", frozenset({fall})) in (
        -1,
        video.labels[start - 1],
    )


def _segments(root: Path, video) -> list[tuple[int, int, str]]:
    import csv

    with open(root / "segments.csv") as f:
        return [
            (int(r["start_frame"]), int(r["end_frame"]), r["label"])
            for r in csv.DictReader(f)
            if root / r["video"] == video.path
        ]


def test_annotations_give_clips_per_frame_labels(tmp_path: Path):
    """A folder dataset with annotations.csv: listed clips get per-frame labels and keep their
    class for per-video accuracy; unlisted clips keep their clip label."""
    for c in ("fall", "other"):
        (tmp_path / c).mkdir()
        for g in range(1, 6):
            (tmp_path / c / f"v_{c}_g{g:02d}_c01.avi").write_bytes(b"")
    _annotations(
        tmp_path, ["fall/v_fall_g01_c01.avi,3,5,fall", "fall/v_fall_g01_c01.avi,6,9,other"]
    )
    ds = data.load(tmp_path, val_fraction=0, test_fraction=0)
    by_name = {v.path.name: v for v in ds.train}
    clip = by_name["v_fall_g01_c01.avi"]
    assert clip.labels == (-1, -1, -1, 0, 0, 0, 1, 1, 1, 1) and clip.video_class == 0
    assert by_name["v_other_g02_c01.avi"].labels == 1 == by_name["v_other_g02_c01.avi"].video_class


def test_annotations_with_an_unknown_label_name_the_line(tmp_path: Path):
    (tmp_path / "fall").mkdir()
    (tmp_path / "fall" / "a.avi").write_bytes(b"")
    _annotations(tmp_path, ["fall/a.avi,0,4,fall", "fall/a.avi,5,9,lying"])
    with pytest.raises(BadData, match=r"annotations.csv:3: unknown label 'lying'"):
        data.load(tmp_path)


def _annotations(root: Path, rows: list[str]) -> None:
    lines = ["video,start_frame,end_frame,label", *rows]
    (root / "annotations.csv").write_text("\n".join(lines) + "\n")


def test_more_data_joins_the_training_split_only(tmp_path: Path):
    """--more-data: long labelled videos train; validation and test stay the clips."""
    for c in ("fall", "other"):
        (tmp_path / "clips" / c).mkdir(parents=True)
        for g in range(1, 9):
            (tmp_path / "clips" / c / f"v_{c}_g{g:02d}_c01.avi").write_bytes(b"")
    ds = data.load(tmp_path / "clips", seed=1)
    (tmp_path / "long").mkdir()
    for name in ("s0.mp4", "s1.mp4"):
        (tmp_path / "long" / name).write_bytes(b"")
    _csv(tmp_path / "long", ["s0.mp4,0,3,other", "s0.mp4,4,5,fall", "s1.mp4,2,4,other"])
    more = data.add_training(ds, [tmp_path / "long"])
    assert (more.val, more.test, more.classes) == (ds.val, ds.test, ds.classes)
    added = more.train[len(ds.train) :]
    assert more.train[: len(ds.train)] == ds.train and len(added) == 2
    assert added[0].labels == (1, 1, 1, 1, 0, 0) and added[1].labels == (-1, -1, 1, 1, 1)
    assert added[0].video_class == -1  # a stream: no class of its own
    assert {v.draws for v in more.train} == {0}  # --samples-per-clip each
    still = data.add_training(ds, [f"{tmp_path / 'long'}:1"]).train[len(ds.train) :]
    assert [v.path for v in still] == [v.path for v in added] and {v.draws for v in still} == {1}


def _ucf(root: Path, classes: list[str], groups: int) -> None:
    """A UCF101 layout: ``groups`` groups of one clip per class, the last one the test list."""
    root.mkdir(parents=True)
    (root / "classInd.txt").write_text("".join(f"{i} {c}\n" for i, c in enumerate(classes, 1)))
    lists = {"trainlist01.txt": range(1, groups), "testlist01.txt": [groups]}
    for name, gs in lists.items():
        rels = [f"{c}/v_{c}_g{g:02d}_c01.avi" for c in classes for g in gs]
        (root / name).write_text("".join(f"{r}\n" for r in rels))
        for r in rels:
            (root / r).parent.mkdir(exist_ok=True)
            (root / r).write_bytes(b"")


def test_more_data_takes_another_datasets_training_part(tmp_path: Path):
    """--more-data of a clip dataset: its train list joins the training split with labels
    renumbered by class name; its test list (held-out scenes) never does."""
    _ucf(tmp_path / "main", ["walk", "fall", "lying"], groups=5)
    _ucf(tmp_path / "extra", ["lying", "fall"], groups=4)  # another order, a subset
    _annotations(
        tmp_path / "extra",
        ["fall/v_fall_g01_c01.avi,0,3,fall", "fall/v_fall_g01_c01.avi,4,5,lying"],
    )
    ds = data.load(tmp_path / "main", seed=0)
    more = data.add_training(ds, [f"{tmp_path / 'extra'}:2"], seed=0)
    added = more.train[len(ds.train) :]
    assert (more.val, more.test) == (ds.val, ds.test)
    assert sorted(v.path.name for v in added) == sorted(
        f"v_{c}_g{g:02d}_c01.avi" for c in ("fall", "lying") for g in (1, 2, 3)
    )
    by_name = {v.path.name: v for v in added}
    assert by_name["v_lying_g02_c01.avi"].labels == 2  # extra's class 0 is main's 2
    annotated = by_name["v_fall_g01_c01.avi"]
    assert (annotated.labels, annotated.cls) == ((1, 1, 1, 1, 2, 2), 1)
    assert {v.draws for v in added} == {2}
    _ucf(tmp_path / "foreign", ["fall", "sit"], groups=3)
    with pytest.raises(BadData, match=r"--more-data .*foreign: classes \['sit'\] are not among"):
        data.add_training(ds, [tmp_path / "foreign"])


def test_more_data_errors_name_the_folder_and_the_classes(tmp_path: Path):
    (tmp_path / "clips" / "fall").mkdir(parents=True)
    (tmp_path / "clips" / "fall" / "a.avi").write_bytes(b"")
    ds = data.load(tmp_path / "clips", val_fraction=0, test_fraction=0)
    with pytest.raises(BadData, match=r"--more-data .*nowhere: expected a folder with segments"):
        data.add_training(ds, [tmp_path / "nowhere"])
    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "s.mp4").write_bytes(b"")
    _csv(tmp_path / "long", ["s.mp4,0,3,lying"])
    with pytest.raises(BadData, match=r"segments.csv:2: unknown label 'lying'; the dataset "):
        data.add_training(ds, [tmp_path / "long"])
    with pytest.raises(BadData, match=r"--more-data .*long:0: expected DIR or DIR:N with N >= 1"):
        data.add_training(ds, [f"{tmp_path / 'long'}:0"])


def test_a_folder_per_class_splits_each_class_in_its_share(tmp_path: Path, tiny_actions: Path):
    """Unequal classes, files not named by group: each class gives validation and test its
    share (before: one seeded split of all clips, which could leave a class 8 test clips and
    another 16)."""
    src = next((tiny_actions / "fall").glob("*.avi")).read_bytes()
    sizes = {"fall": 10, "wave": 30, "hold": 20}
    for c, n in sizes.items():
        (tmp_path / c).mkdir()
        for k in range(n):
            (tmp_path / c / f"{c}_{k:03d}.avi").write_bytes(src)
    for seed in range(4):
        ds = data.load(tmp_path, seed=seed, val_fraction=0.25, test_fraction=0.2)
        test = {c: round(n * 0.2) for c, n in sizes.items()}  # fall 2, wave 6, hold 4
        val = {c: round((n - test[c]) * 0.25) for c, n in sizes.items()}
        assert Counter(ds.classes[v.labels] for v in ds.test) == test
        assert Counter(ds.classes[v.labels] for v in ds.val) == val
        assert len(ds.train) + sum(val.values()) + sum(test.values()) == 60


def test_empty_folders_are_the_class_folders_with_no_videos(tmp_path: Path):
    for d in ("fall", "walk", "streams", "notes", ".ipynb_checkpoints"):
        (tmp_path / d).mkdir()
    (tmp_path / "walk" / "a.avi").write_bytes(b"")
    (tmp_path / "streams" / "segments.csv").write_text("video,start_frame,end_frame,label\n")
    (tmp_path / "notes" / "readme.txt").write_text("not a video\n")
    assert data.empty_folders(tmp_path) == ["fall", "notes"]
