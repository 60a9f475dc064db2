"""Training plots (matplotlib, Agg): loss/accuracy curves and the confusion matrix."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_curves(history: list[dict], path: Path) -> None:
    epochs = [r["epoch"] for r in history]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(epochs, [r["loss"] for r in history], label="train")
    a.plot(epochs, [r["val_loss"] for r in history], label="val")
    a.set(xlabel="epoch", ylabel="loss")
    a.legend()
    b.plot(epochs, [r["train_acc"] for r in history], label="train acc")
    b.plot(epochs, [r["top1"] for r in history], label="val top-1")
    b.plot(epochs, [r["macro_f1"] for r in history], label="val macro-F1")
    b.set(xlabel="epoch", ylim=(0, 1.02))
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_confusion(cm: list[list[int]], classes: tuple[str, ...], path: Path) -> None:
    m = np.array(cm)
    fig, ax = plt.subplots(figsize=(1 + 0.7 * len(classes), 1 + 0.6 * len(classes)))
    ax.imshow(m, cmap="Blues")
    ax.set_xticks(range(len(classes)), classes, rotation=45, ha="right")
    ax.set_yticks(range(len(classes)), classes)
    ax.set(xlabel="predicted", ylabel="true")
    for (i, j), v in np.ndenumerate(m):
        ax.text(
            j, i, str(v), ha="center", va="center", color="white" if v > m.max() / 2 else "black"
        )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
