"""The temporal pyramid model: one backbone for every scale, features concatenated, one head."""

from __future__ import annotations

from pathlib import Path

import pytest
import timm
import torch

from models.factory import build
from models.pyramid import PyramidNet


def _x(n: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    shape = (n, 3, 64, 64, 3)
    return (
        torch.randint(0, 256, shape, dtype=torch.uint8),
        torch.randint(0, 256, shape, dtype=torch.uint8),
    )


def test_the_head_sees_each_scale_through_the_one_backbone():
    net = build("mobilenetv3_small_100", 3, 4, scales=2).eval()
    assert isinstance(net, PyramidNet) and net.head.in_features == 2 * 1024
    fast, slow = _x()
    with torch.no_grad():
        got = net(fast, slow)
        # by hand: the backbone on each scale alone, features side by side, the head
        f = [net.backbone(net.adapter(s)) for s in (fast, slow)]
        want = net.head(torch.cat(f, 1))
        together = net(torch.cat([fast, slow], 1))  # the trainer's windows: scales in turn
        swapped = net(slow, fast)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(together, got)
    assert (swapped - got).abs().max() > 100 * (together - got).abs().max() + 1e-6  # ordered


def test_folding_is_exact_for_a_pyramid():
    net = build("mobilenetv3_small_100", 3, 4, scales=2, input_mode="diff").eval()
    fast, slow = _x()
    with torch.no_grad():
        before = net(fast, slow)
        net.fold()
        after = net(fast, slow)
    torch.testing.assert_close(after, before, rtol=1e-4, atol=1e-4)


def test_a_wrong_input_is_refused_saying_the_shape():
    net = build("mobilenetv3_small_100", 3, 4, scales=2)
    with pytest.raises(ValueError, match=r"takes \[N, 6, H, W, 3\], found \[1, 3, 64, 64, 3\]"):
        net(torch.zeros(1, 3, 64, 64, 3, dtype=torch.uint8))


def test_pretrained_3_channel_weights_start_the_shared_backbone(tmp_path: Path):
    torch.manual_seed(0)
    m3 = timm.create_model("mobilenetv3_small_100", in_chans=3, num_classes=4)
    torch.save(m3.state_dict(), tmp_path / "w3.pt")
    net = build("mobilenetv3_small_100", 3, 6, scales=2, pretrained=str(tmp_path / "w3.pt"))
    torch.testing.assert_close(
        net.backbone.blocks[0][0].conv_dw.weight, m3.blocks[0][0].conv_dw.weight
    )
