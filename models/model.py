"""Hyperframe models: a timm backbone with ``in_chans = 3T`` behind an input adapter that takes
the contract's uint8 ``[N, T, H, W, 3]`` BGR input (``models.factory.build`` makes one), and the
starting weights it can load.

The adapter only casts, transposes and reshapes. Colour order is a permutation of conv1's input
channels, applied to the weights when they are loaded; the 1/(255*std) scaling is a multiply
while training (so the optimiser sees normalised inputs) and is folded into conv1's weights by
``fold()`` before export, where it then costs nothing. No mean is subtracted: the stem's
BatchNorm absorbs it, and a per-pixel subtraction would cost more than the backbone's first layer.

Input ``diff``: the adapter shows the backbone the centre frame and the differences of successive
frames (times ``DIFF_GAIN``) instead of the T frames. A mix of input channels is linear too, so
``fold()`` bakes it into conv1 and the exported model still takes plain hyperframes at the same
cost. From scratch on busy backgrounds, motion is a small difference of two large, nearly equal
images; shown as its own channels it is there from the first step.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
from torch import nn

from models.alerts import bare
from models.config import INFLATIONS, INPUTS

DIFF_GAIN = 4.0  # frame differences are small next to the frames; BN after conv1 sees both
_BGR = [2, 1, 0]  # RGB weights -> BGR input order
log = logging.getLogger("models")


def diff_mix(frames: int) -> torch.Tensor:
    """[3T, 3T] channel mix: block 0 the centre frame, block k (frame k - frame k-1) * gain."""
    mix = torch.zeros(3 * frames, 3 * frames)
    eye = torch.eye(3)
    mix[0:3, 3 * (frames // 2) : 3 * (frames // 2) + 3] = eye
    for k in range(1, frames):
        mix[3 * k : 3 * k + 3, 3 * k : 3 * k + 3] = DIFF_GAIN * eye
        mix[3 * k : 3 * k + 3, 3 * k - 3 : 3 * k] = -DIFF_GAIN * eye
    return mix


class InputAdapter(nn.Module):
    def __init__(self, frames: int, std_rgb: tuple[float, float, float], mode: str) -> None:
        super().__init__()
        if mode not in INPUTS:
            raise ValueError(f"input must be one of {INPUTS}, found {mode!r}")
        std_bgr = torch.tensor(std_rgb, dtype=torch.float32)[_BGR]
        scale = (1.0 / (255.0 * std_bgr)).repeat(frames)
        self.register_buffer("scale", scale.view(1, 3 * frames, 1, 1))
        mix = diff_mix(frames) * scale if mode == "diff" else torch.diag(scale)
        self.register_buffer("mix", mix)  # what fold() bakes into conv1
        self.mode, self.folded = mode, False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, h, w, c = x.shape
        x = x.permute(0, 1, 4, 2, 3).reshape(n, t * c, h, w).float()
        if self.folded:
            return x
        if self.mode == "frames":
            return x * self.scale
        return torch.einsum("ij,njhw->nihw", self.mix, x)


class HyperframeNet(nn.Module):
    def __init__(self, backbone: nn.Module, frames: int, mode: str = "frames") -> None:
        super().__init__()
        cfg = backbone.pretrained_cfg
        self.frames = frames
        self.first_conv = cfg["first_conv"]
        std = tuple(cfg.get("std", (0.229, 0.224, 0.225)))
        self.adapter = InputAdapter(frames, std, mode)
        self.backbone = backbone

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(self.adapter(x))

    def stem(self) -> nn.Conv2d:
        m = self.backbone.get_submodule(self.first_conv)
        return m[0] if isinstance(m, nn.Sequential) else m

    @torch.no_grad()
    def fold(self) -> None:
        """Bake the adapter's scaling and mix into conv1 (exact: conv is linear in its input,
        and zero padding stays zero)."""
        if not self.adapter.folded:
            w = self.stem().weight
            w.copy_(torch.einsum("oihw,ij->ojhw", w, self.adapter.mix))
            self.adapter.folded = True


def inflate(weight: torch.Tensor, frames: int, mode: str) -> torch.Tensor:
    """A 3-channel RGB stem weight [O, 3, k, k] -> [O, 3T, k, k] for frame-major BGR input.

    tile-scaled (timm's): T copies scaled by 3/(3T), so T identical frames give the 3-channel
    model's response; tile: T unscaled copies (the seed's); mean: the RGB mean everywhere, /T.
    """
    if mode not in INFLATIONS or mode == "random":
        raise ValueError(f"inflation must be one of {INFLATIONS[:-1]} here, found {mode!r}")
    w = weight[:, _BGR]
    if mode == "mean":
        w = w.mean(dim=1, keepdim=True).expand_as(w)
    w = w.repeat(1, frames, 1, 1)
    return w if mode == "tile" else w * (3.0 / (3.0 * frames))


def load_pretrained(
    net: HyperframeNet, source: str, inflation: str, classes: tuple[str, ...] | None = None
) -> None:
    """3-channel weights from a local file (or a URL, for online machines) into a 3T model; or
    an edge-hf ``best.pt`` of the same backbone and T (a curriculum: a model trained on easy
    scenes is the start on hard ones; a fall model of another world, on a user's folders). When
    the classes differ, the head's rows of the classes both name alike (``classes``; any case or
    separators) are kept from a checkpoint of the same T and the others start afresh."""
    if "://" in source:
        state = torch.hub.load_state_dict_from_url(source, map_location="cpu", weights_only=True)
    else:
        if not Path(source).is_file():
            raise FileNotFoundError(f"pretrained weights {source} do not exist")
        state = torch.load(source, map_location="cpu", weights_only=True)
    theirs, their_frames, their_mode = _spec_of(state)
    state = state.get("state_dict", state.get("model", state)) if isinstance(state, dict) else state
    own = net.backbone.state_dict()
    key = f"{net.first_conv}.weight"
    edge = any(k.startswith("backbone.") for k in state)  # an edge-hf checkpoint (best.pt)
    if edge:
        state = {k[len("backbone.") :]: v for k, v in state.items() if k.startswith("backbone.")}
    if edge and their_frames > 1 and their_mode in INPUTS and key in state:  # a hyperframe model's
        state[key] = restem(state[key], their_mode, net.frames, net.adapter.mode)
    if key in state and state[key].shape[1] == 3:
        _inflate_stem(net, state, key, edge, inflation)
    # a different head (class count) is expected; anything else mismatched is an error
    dropped = [k for k, v in state.items() if k in own and v.shape != own[k].shape]
    head = net.backbone.default_cfg.get("classifier", "classifier")
    bad = [k for k in dropped if not k.startswith(head)]
    if bad:
        raise ValueError(
            f"pretrained weights {source} do not fit {bad[:3]}: is it the same architecture? "
            "(--pretrained '' starts from scratch)"
        )
    carried = {}
    if classes and theirs and _bare(theirs) != _bare(classes):  # other names: not their head
        if their_frames == net.frames:  # a T=1 posture head reads stills, not actions
            carried = _carry_head(net, state, head, theirs, classes)
        dropped = [k for k in state if k.startswith(head)]
    for k in dropped:
        del state[k]
    state.update(carried)
    missing, unexpected = net.backbone.load_state_dict(state, strict=False)
    unexpected = [k for k in unexpected if not k.startswith(head)]
    if unexpected:
        raise ValueError(
            f"pretrained weights {source} have keys this model lacks: {unexpected[:3]}"
        )


def _inflate_stem(net: HyperframeNet, state: dict, key: str, edge: bool, inflation: str) -> None:
    """A 3-channel stem (RGB, or an edge-hf T=1 model's BGR) as this model's."""
    rgb = state[key][:, _BGR] if edge else state[key]  # edge-hf stems are BGR already
    if net.frames == 1:
        state[key] = rgb[:, _BGR]
    elif inflation == "random":
        del state[key]
    elif net.adapter.mode == "diff":  # the 3-channel model on the centre frame, at first
        w = rgb[:, _BGR]
        state[key] = torch.cat([w, torch.zeros_like(w).repeat(1, net.frames - 1, 1, 1)], 1)
    else:
        state[key] = inflate(rgb, net.frames, inflation)


def _spec_of(ckpt: object) -> tuple[tuple[str, ...], int, str]:
    """The classes, frames and input mode of an edge-hf checkpoint; none, 0 and "" for others."""
    spec = ckpt.get("spec") if isinstance(ckpt, dict) else None
    spec = json.loads(spec) if isinstance(spec, str) else None
    if not isinstance(spec, dict):
        return (), 0, ""
    cfg = ckpt.get("config")
    cfg = json.loads(cfg) if isinstance(cfg, str) else {}
    mode = cfg.get("input_mode", "") if isinstance(cfg, dict) else ""
    return tuple(spec.get("classes", ())), spec.get("frames", 0), mode


def restem(stem: torch.Tensor, mode: str, frames: int, to: str) -> torch.Tensor:
    """A hyperframe model's stem (input ``mode``) as the stem of ``frames`` frames and input
    ``to``: at first the new model sees what the old one saw around the centre frame (its centre
    frame as it was, each frame difference at the same place from the centre, any further ones
    zero). A 3-frame fall model starts a model of 1, 5 or 7 frames, of either input."""
    t = stem.shape[1] // 3
    if (t, mode) == (frames, to):
        return stem
    if mode == "frames":  # the same stem on the centre frame and the differences
        stem = torch.einsum("oihw,ij->ojhw", stem, torch.linalg.inv(diff_mix(t)))
    out = stem.new_zeros(stem.shape[0], 3 * frames, *stem.shape[2:])
    out[:, :3] = stem[:, :3]
    shift = frames // 2 - t // 2
    for k in range(1, t):
        if 1 <= k + shift < frames:
            out[:, 3 * (k + shift) : 3 * (k + shift) + 3] = stem[:, 3 * k : 3 * k + 3]
    return torch.einsum("oihw,ij->ojhw", out, diff_mix(frames)) if to == "frames" else out


def _bare(classes) -> list[str]:
    """Class names as they are matched: any case or separators (models.alerts.bare)."""
    return [bare(c) for c in classes]


def _carry_head(net, state: dict, head: str, theirs: tuple[str, ...], classes) -> dict:
    """This model's fresh head with the rows of the classes it shares by name with ``theirs``
    (any case or separators) copied from ``state``'s head."""
    own = net.backbone.state_dict()
    keys = (f"{head}.weight", f"{head}.bias")
    if not all(k in own and k in state for k in keys):
        return {}
    where = {name: i for i, name in enumerate(_bare(theirs))}
    pairs = [(i, where[name]) for i, name in enumerate(_bare(classes)) if name in where]
    if len(theirs) != len(state[keys[1]]) or not pairs:
        return {}
    new = {k: own[k].clone() for k in keys}
    for k in keys:
        for mine, its in pairs:
            new[k][mine] = state[k][its]
    log.info(
        "head rows kept from the starting weights: %s", ", ".join(classes[i] for i, _ in pairs)
    )
    return new
