"""models/bnstats.py: BatchNorm statistics measured again on balanced training windows."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from models.bnstats import balanced, reestimate
from tests.windows import FakeWindows


class _Net(nn.Module):
    """uint8 windows [N, T, H, W, 3] -> a 1x1 convolution, BatchNorm, dropout, mean."""

    def __init__(self, norm: bool = True) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(9, 4, 1)
        self.bn = nn.BatchNorm2d(4, momentum=0.1) if norm else nn.Identity()
        self.drop = nn.Dropout(0.5)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        n, t, h, w, c = x.shape
        return self.conv(x.permute(0, 1, 4, 2, 3).reshape(n, t * c, h, w).float() / 255)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.bn(self.features(x))).mean((2, 3))


def _clips() -> FakeWindows:
    rng = np.random.default_rng(0)
    return FakeWindows([rng.integers(0, 256, (12, 8, 8, 3), dtype=np.uint8) for _ in range(2)])


def test_statistics_are_those_of_the_chosen_windows():
    w, net = _clips(), _Net()
    net.bn.running_mean.fill_(5.0)  # as if trained elsewhere
    assert reestimate(net, w, 10, torch.device("cpu")) == 10
    items = balanced(w, 10)
    x = torch.from_numpy(np.stack([w.window(c, s) for c, s, _ in items]))
    with torch.no_grad():
        f = net.features(x).transpose(0, 1).reshape(4, -1)
    torch.testing.assert_close(net.bn.running_mean, f.mean(1))
    torch.testing.assert_close(net.bn.running_var, f.var(1))  # unbiased, as BatchNorm keeps it
    assert net.bn.momentum == 0.1 and not net.training and not net.bn.training
    with torch.no_grad():  # evaluation mode afterwards: the same windows give the same output
        assert torch.equal(net(x), net(x))


def test_a_model_without_batchnorm_is_left_as_it_was():
    net = _Net(norm=False)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    assert reestimate(net, _clips(), 10, torch.device("cpu")) == 0
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
