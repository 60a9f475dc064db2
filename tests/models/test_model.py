from __future__ import annotations

import json
from pathlib import Path

import pytest
import timm
import torch

from edge_hf.spec import HyperframeSpec
from models.factory import build
from models.model import inflate


def _three_channel(
    tmp_path: Path, arch: str = "mobilenetv3_small_100"
) -> tuple[torch.nn.Module, Path]:
    torch.manual_seed(0)
    m = timm.create_model(arch, in_chans=3, num_classes=4).eval()
    path = tmp_path / "w3.pt"
    torch.save(m.state_dict(), path)
    return m, path


def _as_rgb_input(x: torch.Tensor) -> torch.Tensor:
    """What a 3-channel model sees for one BGR uint8 frame: RGB scaled by 1/(255*std), no mean."""
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    return x.permute(0, 3, 1, 2).float()[:, [2, 1, 0]] / 255.0 / std


@pytest.mark.parametrize("frames", [1, 2, 3, 5])
def test_tile_scaled_inflation_gives_the_3_channel_logits_on_identical_frames(tmp_path, frames):
    m3, weights = _three_channel(tmp_path)
    net = build("mobilenetv3_small_100", frames, 4, pretrained=str(weights)).eval()
    frame = torch.randint(0, 256, (2, 64, 64, 3), dtype=torch.uint8)
    with torch.no_grad():
        got = net(frame[:, None].repeat(1, frames, 1, 1, 1))
        want = m3(_as_rgb_input(frame))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_inflation_modes():
    w = torch.randn(8, 3, 3, 3)
    bgr = w[:, [2, 1, 0]]
    torch.testing.assert_close(inflate(w, 3, "tile"), bgr.repeat(1, 3, 1, 1))
    torch.testing.assert_close(inflate(w, 3, "tile-scaled"), bgr.repeat(1, 3, 1, 1) / 3)
    torch.testing.assert_close(inflate(w, 2, "mean")[:, 0], w.mean(1) / 2)
    with pytest.raises(ValueError, match="inflation must be one of"):
        inflate(w, 3, "random")


def test_random_inflation_keeps_the_rest_of_the_weights(tmp_path):
    m3, weights = _three_channel(tmp_path)
    net = build("mobilenetv3_small_100", 3, 4, pretrained=str(weights), inflation="random")
    torch.testing.assert_close(
        net.backbone.blocks[0][0].conv_dw.weight, m3.blocks[0][0].conv_dw.weight
    )


@pytest.mark.parametrize("mode", ["frames", "diff"])
def test_folding_the_scale_into_conv1_is_exact(mode):
    net = build("mobilenetv3_small_100", 3, 4, input_mode=mode).eval()
    x = torch.randint(0, 256, (2, 3, 64, 64, 3), dtype=torch.uint8)
    with torch.no_grad():
        before = net(x)
        net.fold()
        after = net(x)
    assert net.adapter.folded
    torch.testing.assert_close(after, before, rtol=1e-4, atol=1e-4)


def test_diff_input_shows_motion_and_starts_as_the_3_channel_model(tmp_path):
    """input diff: a still hyperframe gives the 3-channel model's logits on its centre frame
    (pretrained weights see the centre frame only), and the difference channels carry motion."""
    m3, weights = _three_channel(tmp_path)
    net = build("mobilenetv3_small_100", 3, 4, pretrained=str(weights), input_mode="diff")
    net.eval()
    frame = torch.randint(0, 256, (2, 64, 64, 3), dtype=torch.uint8)
    with torch.no_grad():
        got = net(frame[:, None].repeat(1, 3, 1, 1, 1))
        want = m3(_as_rgb_input(frame))
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        moving = torch.stack([frame, frame.roll(4, 2), frame.roll(8, 2)], 1)
        seen = net.adapter(moving)
    assert (
        seen[:, 3:].abs().mean() > 0.5
        and net.adapter(moving[:, [1, 1, 1]])[:, 3:].abs().max() < 1e-5
    )


@pytest.mark.parametrize(
    ("arch", "size"),
    [("mobilenetv3_large_100", 64), ("resnet18", 64), ("vit_tiny_patch16_224", 64)],
)
def test_other_backbones_take_hyperframes(arch, size):
    net = build(arch, 3, 5, size=size, stem_bn=True).eval()
    with torch.no_grad():
        out = net(torch.zeros(1, 3, size, size, 3, dtype=torch.uint8))
    assert out.shape == (1, 5)
    assert isinstance(net.backbone.get_submodule(net.first_conv), torch.nn.Sequential)


def test_pretrained_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="pretrained weights .* do not exist"):
        build("mobilenetv3_small_100", 3, 4, pretrained=str(tmp_path / "nope.pt"))
    _, weights = _three_channel(tmp_path, "resnet18")
    with pytest.raises(ValueError, match="same architecture"):
        build("mobilenetv3_small_100", 3, 4, pretrained=str(weights))


def test_an_edge_hf_checkpoint_is_a_start_for_another_class_list(tmp_path):
    """Curriculum: best.pt of a model trained on easy scenes starts a model with other classes;
    everything but the classifier carries over."""
    easy = build("mobilenetv3_small_100", 3, 6)
    torch.nn.init.normal_(easy.backbone.blocks[1][0].conv_pw.weight)
    torch.save({"model": easy.state_dict(), "spec": "{}", "config": "{}"}, tmp_path / "best.pt")
    net = build("mobilenetv3_small_100", 3, 7, pretrained=str(tmp_path / "best.pt"))
    torch.testing.assert_close(net.stem().weight, easy.stem().weight)
    torch.testing.assert_close(
        net.backbone.blocks[1][0].conv_pw.weight, easy.backbone.blocks[1][0].conv_pw.weight
    )
    assert net.backbone.classifier.weight.shape[0] == 7


def _checkpoint(tmp_path, frames: int, classes: tuple[str, ...]) -> tuple[Path, dict]:
    net = build("mobilenetv3_small_100", frames, len(classes))
    torch.nn.init.normal_(net.backbone.classifier.weight)
    torch.nn.init.normal_(net.backbone.classifier.bias)
    spec = HyperframeSpec(frames=frames, stride=1, size=(64, 64), classes=classes)
    torch.save({"model": net.state_dict(), "spec": spec.to_json()}, tmp_path / "best.pt")
    return tmp_path / "best.pt", net.backbone.classifier.state_dict()


@pytest.mark.parametrize(
    "mine",
    [
        ("Fall", "sit", "walk-left"),  # fewer classes, other case and separators, one new
        ("walk_left", "sit", "fall", "lying"),  # as many classes as the checkpoint, other names
    ],
)
def test_a_fall_model_starts_a_users_classes_with_the_rows_they_share(tmp_path, mine):
    """A model of another world's classes starts a user's: the head's rows of the classes both
    name alike start as the checkpoint's, the others afresh, whatever the class count."""
    path, head = _checkpoint(tmp_path, 3, ("walk_left", "fall", "lie_down", "other"))
    net = build("mobilenetv3_small_100", 3, len(mine), pretrained=str(path), classes=mine)
    got = net.backbone.classifier.state_dict()
    theirs = {"fall": 1, "sit": None, "walkleft": 0, "lying": None}
    for i, name in enumerate(mine):
        row = theirs[name.lower().replace("_", "").replace("-", "")]
        for k in ("weight", "bias"):
            if row is None:  # a fresh row is none of the checkpoint's
                assert not any(torch.equal(got[k][i], r) for r in head[k]), (name, k)
            else:
                torch.testing.assert_close(got[k][i], head[k][row])


@pytest.mark.parametrize("mine", [("lying", "hold", "x"), ("hold", "lying")])
def test_a_single_frame_checkpoint_keeps_no_head_rows(tmp_path, mine):
    """A T=1 posture model's head reads stills: a T=3 model of some of its class names starts
    its head afresh (the shipped posture weights start the realtime recipe so), and as many
    classes in another order do not keep its head either."""
    path, head = _checkpoint(tmp_path, 1, ("lying", "hold"))
    net = build("mobilenetv3_small_100", 3, len(mine), pretrained=str(path), classes=mine)
    got = net.backbone.classifier.weight
    assert not any(torch.equal(got[i], r) for i in range(len(mine)) for r in head["weight"])


@pytest.mark.parametrize("frames", [1, 3, 5, 7])
@pytest.mark.parametrize(
    ("theirs", "mine"), [("diff", "diff"), ("diff", "frames"), ("frames", "diff")]
)
def test_a_three_frame_model_starts_one_of_other_frames_and_input(tmp_path, frames, theirs, mine):
    """The realtime recipe's fall model (T=3, diff input) starts a model of 1, 3, 5 or 7 frames
    and either input: at first it sees what the 3-frame model saw around the centre frame."""
    three = build("mobilenetv3_small_100", 3, 4, input_mode=theirs).eval()
    torch.nn.init.normal_(three.stem().weight)
    spec = HyperframeSpec(frames=3, stride=1, size=(64, 64), classes=("a", "b", "c", "d"))
    config = json.dumps({"input_mode": theirs})
    torch.save(
        {"model": three.state_dict(), "spec": spec.to_json(), "config": config},
        tmp_path / "best.pt",
    )
    net = build(
        "mobilenetv3_small_100",
        frames,
        4,
        pretrained=str(tmp_path / "best.pt"),
        input_mode=mine,
        classes=spec.classes,
    ).eval()
    clip = torch.randint(0, 256, (2, frames + 2, 64, 64, 3), dtype=torch.uint8)
    c = frames // 2 + 1  # the centre frame of both windows
    with torch.no_grad():
        got = net(clip[:, c - frames // 2 : c + frames // 2 + 1])
        want = three(clip[:, c - 1 : c + 2] if frames > 1 else clip[:, [c, c, c]])
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("frames", [1, 3])
@pytest.mark.parametrize("mode", ["frames", "diff"])
def test_a_single_frame_edge_hf_checkpoint_starts_a_hyperframe_model(tmp_path, mode, frames):
    """Pretraining on stills (T=1, BGR like every edge-hf model) then T frames (1 too: the
    --baseline): a still hyperframe gives the T=1 model's logits, colour order kept."""
    still = build("mobilenetv3_small_100", 1, 4, input_mode=mode).eval()
    torch.nn.init.normal_(still.stem().weight)
    torch.save({"model": still.state_dict()}, tmp_path / "best.pt")
    start = str(tmp_path / "best.pt")
    net = build("mobilenetv3_small_100", frames, 4, pretrained=start, input_mode=mode)
    frame = torch.randint(0, 256, (2, 64, 64, 3), dtype=torch.uint8)
    frame[..., 0] = 0  # no blue: a swapped colour order would show
    with torch.no_grad():
        got = net.eval()(frame[:, None].repeat(1, frames, 1, 1, 1))
        want = still(frame[:, None])
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_the_shipped_posture_weights_start_the_realtime_model():
    """models/weights/posture-ft8.pt (still postures on rendered scenes; the demo recipe's
    start) starts the realtime recipe's model, T=3 with diff input and any classes: its stem
    sees the centre frame only."""
    path = Path(__file__).parents[2] / "models" / "weights" / "posture-ft8.pt"
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    stem = ckpt["model"]["backbone.conv_stem.weight"]
    assert stem.shape[1] == 3 and '"frames": 1' in ckpt["spec"]
    net = build("mobilenetv3_small_100", 3, 8, pretrained=str(path), input_mode="diff")
    torch.testing.assert_close(net.stem().weight[:, :3], stem)
    assert not net.stem().weight[:, 3:].any()
    torch.testing.assert_close(
        net.backbone.blocks[3][0].conv_pw.weight,
        ckpt["model"]["backbone.blocks.3.0.conv_pw.weight"],
    )


@pytest.mark.parametrize("frames", [1, 3, 5])
def test_the_shipped_fall_model_starts_a_users_classes(frames: int):
    """models/weights/falls-t3.pt (the realtime-cpu recipe's start: a fall model of the
    realistic world) starts a user's folder of other classes in any order and T: the stem sees what the
    fall model saw around the centre frame, and at T=3 `fall` starts as its fall."""
    path = Path(__file__).parents[2] / "models" / "weights" / "falls-t3.pt"
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    spec = json.loads(ckpt["spec"])
    assert spec["frames"] == 3 and "fall" in spec["classes"]
    mine = ("wave", "Fall", "sit")
    net = build(
        "mobilenetv3_small_100", frames, 3, pretrained=str(path), input_mode="diff", classes=mine
    )
    stem = ckpt["model"]["backbone.conv_stem.weight"]
    torch.testing.assert_close(net.stem().weight[:, :3], stem[:, :3])
    fall = ckpt["model"]["backbone.classifier.weight"][spec["classes"].index("fall")]
    assert torch.equal(net.backbone.classifier.weight[1], fall) == (frames == 3)
