"""The one place a hyperframe network is made: a timm backbone with ``in_chans = 3T`` behind the
input adapter, plain (``models.model.HyperframeNet``) or a temporal pyramid
(``models.pyramid.PyramidNet``), with its starting weights loaded.

Apart from the networks it makes: the pyramid's network subclasses the plain one, so a factory
inside models/model.py would import the module that imports it.
"""

from __future__ import annotations

import timm
from torch import nn

from models.model import HyperframeNet, load_pretrained
from models.pyramid import PyramidNet


def build(
    arch: str,
    frames: int,
    num_classes: int,
    *,
    inflation: str = "tile-scaled",
    pretrained: str | None = None,
    stem_bn: bool = False,
    size: int | tuple[int, int] | None = None,
    input_mode: str = "frames",
    scales: int = 1,
    classes: tuple[str, ...] | None = None,
) -> HyperframeNet:
    """A hyperframe model; with ``scales`` > 1 a temporal pyramid (models.pyramid) whose
    backbone is shared by the scales and whose head sees all their features."""
    extra = {"img_size": size} if size and arch.startswith(("vit", "deit")) else {}
    backbone = timm.create_model(
        arch,
        pretrained=False,
        in_chans=3 * frames,
        num_classes=num_classes if scales == 1 else 0,
        **extra,
    )
    if scales == 1:
        net = HyperframeNet(backbone, frames, input_mode)
    else:
        net = PyramidNet(backbone, frames, scales, num_classes, input_mode)
    if pretrained:
        load_pretrained(net, pretrained, inflation, classes)
    if stem_bn:  # seed 4.3: a fresh BatchNorm after the stem relearns the input's scale
        conv = net.stem()
        backbone.set_submodule(
            net.first_conv, nn.Sequential(conv, nn.BatchNorm2d(conv.out_channels))
        )
    return net
