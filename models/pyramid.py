"""The temporal pyramid: one backbone sees every scale's hyperframe (a fast one around the
newest frames, a slow one covering seconds), their pooled features are concatenated and one
linear head decides.

Every scale has the same T (conv1 has 3T channels, shared), so the scales run through the
backbone as one batch of ``S * N`` hyperframes: the cost is S single-scale inferences, and the
exported graph has the backbone once. Inputs: one tensor per scale (``[N, T, H, W, 3]`` each, as
exported), or one ``[N, S*T, H, W, 3]`` tensor holding every scale's frames in turn (what the
trainer's windows are, ``models.dataset.offsets_of``).
"""

from __future__ import annotations

import torch
from torch import nn

from models.model import HyperframeNet


def feature_width(backbone: nn.Module) -> int:
    """Width of the backbone's pooled output with its classifier removed (``num_classes=0``):
    after MobileNetV3's conv_head that is ``head_hidden_size``, not ``num_features``."""
    return int(getattr(backbone, "head_hidden_size", None) or backbone.num_features)


class PyramidNet(HyperframeNet):
    def __init__(
        self, backbone: nn.Module, frames: int, scales: int, num_classes: int, mode: str = "frames"
    ) -> None:
        super().__init__(backbone, frames, mode)
        self.scales = scales
        self.head = nn.Linear(scales * feature_width(backbone), num_classes)

    def split(self, xs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        if len(xs) == self.scales:
            return xs
        (x,) = xs
        if x.shape[1] != self.scales * self.frames:
            raise ValueError(
                f"a pyramid of {self.scales} scales of {self.frames} frames takes "
                f"[N, {self.scales * self.frames}, H, W, 3], found {list(x.shape)}"
            )
        return tuple(x.split(self.frames, dim=1))

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.classify(self.backbone(self.adapter(torch.cat(self.split(xs), 0))))

    def classify(self, features: torch.Tensor) -> torch.Tensor:
        """``[S*N, F]`` features, scale-major -> ``[N, classes]`` logits."""
        n = features.shape[0] // self.scales
        per_scale = features.reshape(self.scales, n, -1).permute(1, 0, 2)
        return self.head(per_scale.reshape(n, -1))
