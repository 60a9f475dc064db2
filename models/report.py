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


def plot_sweep(report: dict, opts, path: Path) -> None:
    """False alarms per hour against events caught in time, one line per k-of-n, per class."""
    classes = list(report["classes"])
    fig, axes = plt.subplots(1, max(1, len(classes)), figsize=(6 * max(1, len(classes)), 4.5))
    for ax, cls in zip(np.atleast_1d(axes), classes, strict=False):
        r = report["classes"][cls]
        own = r["operating"]["wait"]  # the model's wait (None: the class waits for nothing)
        for k, n in sorted({(p["k"], p["n"]) for p in r["sweep"]}):
            pts = [p for p in r["sweep"] if (p["k"], p["n"]) == (k, n) and p["wait"] == own]
            ax.plot([p["false_per_hour"] for p in pts], [p["recall"] for p in pts], "o-",
                    ms=3, label=f"{k}-of-{n}")  # fmt: skip
        other = [p for p in r["sweep"] if p["wait"] != own]
        if other:
            kn = f"{other[0]['k']}-of-{other[0]['n']}"
            ax.plot([p["false_per_hour"] for p in other], [p["recall"] for p in other], ".",
                    color="grey", ms=2, label=f"other waits for the pose, {kn}")  # fmt: skip
        for title, marker in (("operating", "s"), ("recommended", "*")):
            p = r[title]
            ax.plot(p["false_per_hour"], p["recall"], marker, ms=12, mfc="none", mew=2,
                    label=f"{title}: {p['threshold']:.2f} at {p['k']}/{p['n']}")  # fmt: skip
        ax.axvline(opts.target, color="grey", ls="--", lw=1)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(left=0)
        ax.set(xlabel="false alarms per hour", ylim=(0, 1.02),
               ylabel=f"{cls}: events alerted within {opts.max_delay:g} s",
               title=f"{report['videos']} streams, {report['hours']:.2f} h")  # fmt: skip
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
