"""The stream evaluation for people (``python -m models.evaluate``): its sweep plot
(matplotlib, Agg) and its printed summary."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from models.evaluation import phases  # noqa: E402
from models.evaluation.events import called_instead  # noqa: E402


def plot_sweep(report: dict, opts, path: Path) -> None:
    """False alarms per hour against events caught in time, one line per k-of-n, per class;
    below, for a class with a down level, the same for it."""
    classes = list(report["classes"])
    downs = [
        c
        for c in classes
        if report["classes"][c]["operating"].get("down")
        and all(p.get("down") for p in report["classes"][c]["sweep"])
    ]
    cols, rows = max(1, len(classes)), 2 if downs else 1
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.5 * rows), squeeze=False)
    for ax, cls in zip(axes[0], classes, strict=False):
        r = report["classes"][cls]
        own = r["operating"]["wait"]  # the model's wait (None: the class waits for nothing)
        _lines(ax, r["sweep"], own, lambda p: p)
        other = [p for p in r["sweep"] if p["wait"] != own]
        if other:
            kn = f"{other[0]['k']}-of-{other[0]['n']}"
            ax.plot(
                [p["false_per_hour"] for p in other],
                [p["recall"] for p in other],
                ".",
                color="grey",
                ms=2,
                label=f"other waits for the pose, {kn}",
            )
        for title, marker in (("operating", "s"), ("recommended", "*")):
            _mark(ax, title, marker, r[title], r[title])
        ax.axvline(opts.target, color="grey", ls="--", lw=1)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(left=0)
        ax.set(
            xlabel="false alarms per hour",
            ylim=(0, 1.02),
            ylabel=f"{cls}: events alerted within {opts.max_delay:g} s",
            title=f"{report['videos']} streams, {report['hours']:.2f} h",
        )
        ax.legend(fontsize=8, loc="lower right")
    for ax, cls in zip(axes[-1] if downs else (), downs, strict=False):
        _plot_down(ax, report, cls, opts)
    for ax in axes[-1][len(downs) :] if downs else ():
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _lines(ax, sweep: list[dict], wait, counts) -> None:
    """One line per k-of-n over the sweep's rows at ``wait``: ``counts(row)``'s false alarms per
    hour against its recall."""
    for k, n in sorted({(p["k"], p["n"]) for p in sweep}):
        pts = [counts(p) for p in sweep if (p["k"], p["n"]) == (k, n) and p["wait"] == wait]
        ax.plot(
            [p["false_per_hour"] for p in pts],
            [p["recall"] for p in pts],
            "o-",
            ms=3,
            label=f"{k}-of-{n}",
        )


def _mark(ax, title: str, marker: str, point: dict, counts: dict) -> None:
    """A point (its threshold and k of n) at its ``counts``' false alarms and recall."""
    ax.plot(
        counts["false_per_hour"],
        counts["recall"],
        marker,
        ms=12,
        mfc="none",
        mew=2,
        label=f"{title}: {point['threshold']:g} at {point['k']}/{point['n']}",
    )


def _plot_down(ax, report: dict, cls: str, opts) -> None:
    """The down level's sweep: its false alarms per hour against the falls whose person stayed
    down that it reached in time, at the model's wait, one line per k-of-n."""
    r = report["classes"][cls]
    own, d = r["operating"]["wait"], r["operating"]["down"]
    _lines(ax, r["sweep"], own, lambda p: p["down"])
    for title, marker in (("operating", "s"), ("recommended", "*")):
        if r[title].get("down"):
            _mark(ax, title, marker, r[title], r[title]["down"])
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlim(left=0)
    ax.set(
        xlabel="down-level false alarms per hour",
        ylim=(0, 1.02),
        ylabel=f"{cls}: down {d['down_for']:g} s, alerted within {d['down_for'] + opts.max_delay:g} s",
        title=f"down level: {d['stayed_down']} falls whose person stayed down {d['down_for']:g} s",
    )
    ax.legend(fontsize=8, loc="lower right")


def summary(report: dict) -> str:
    lines = [
        f"{report['videos']} streams, {report['hours']:.2f} h of video; model time "
        f"{report['cost']['model_ms_per_frame']:.3f} ms per frame"
        + "".join(f", {k} {v}" for k, v in report["cost"].get("two_stage", {}).items()),
        "| class | point | threshold | k/n | events | caught | in time | missed | false/h "
        "| delay median | delay p95 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cls, r in report["classes"].items():
        for title in ("operating", "recommended"):
            p = r[title]
            med = "-" if p["delay_median"] is None else f"{p['delay_median']:.2f} s"
            p95 = "-" if p["delay_p95"] is None else f"{p['delay_p95']:.2f} s"
            lines.append(
                f"| {cls} | {title} | {p['threshold']:g} | {p['k']}/{p['n']} | {p['events']} "
                f"| {p['caught']} | {p['in_time']} | {p['missed']} | {p['false_per_hour']:.2f} "
                f"| {med} | {p95} |"
            )
        for t in report["options"]["then"]:
            if t["cls"] == cls:
                lines.append(
                    f"({cls}: each alert waits for {t['pose']} >= {t['threshold']:g} "
                    f"within {t['within']:g} s after it)"
                )
                w = r["recommended"]["wait"]
                if w != {"threshold": t["threshold"], "within": t["within"]}:
                    lines.append(
                        f"({cls}, recommended: waits for {t['pose']} >= {w['threshold']:g} within "
                        f"{w['within']:g} s; python -m export ... --threshold "
                        f"{cls}={r['recommended']['threshold']:g} --then "
                        f"{cls}={t['pose']}:{w['threshold']:g}:{w['within']:g})"
                    )
        if (h := r["recommended"].get("held_out")) is not None:
            lines.append(
                f"({cls}, recommended, chosen on {', '.join(report['choose_on'])} and counted on "
                f"the other streams: {h['in_time']} of {h['events']} in time, "
                f"{h['false_per_hour']:.2f} false/h)"
            )
        if not r["recommended"]["meets_target"]:
            lines.append(f"({cls}: no threshold meets the false-alarm target)")
        lines += none_in_time(cls, r, report["options"]["target"])
        if r["events"]:
            top = [e["peak"] for e in r["events"]]
            lines.append(
                f"({cls}: peak score from an event's start to {report['options']['max_delay']:g} s "
                f"after its impact: median {np.median(top):.2f}; "
                f"{sum(p < 0.5 for p in top)} of {len(top)} events never reach 0.5)"
            )
        if r["pose_seen"]:
            lines.append(phases.line(cls, r["pose_seen"]))
        for title in ("operating", "recommended"):
            if (d := r[title].get("down")) is not None:
                lines.append(down_line(cls, title, d))
            why = {k: v for k, v in r[title].get("missed_because", {}).items() if v}
            if why:
                shown = ", ".join(f"{reason} {n}" for reason, n in why.items())
                lines.append(f"({cls}, {title}: not caught in time: {shown})")
            lines += pose_called(cls, title, r[title])
            by = r[title]["false_by_label"]
            if by:
                shown = ", ".join(f"{label} {n}" for label, n in by.items())
                lines.append(f"({cls}, {title}: false alarms started on {shown})")
            for column, groups in r[title]["by"].items():
                shown = "; ".join(
                    f"{v} {g['in_time']} of {g['events']} in time, "
                    f"{g['false_per_hour']:.2f} false/h"
                    for v, g in groups.items()
                )
                lines.append(f"({cls}, {title}, by {column}: {shown})")
    return "\n".join(lines)


def pose_called(cls: str, title: str, point: dict) -> list[str]:
    """A line when events at this point were missed for want of the pose: what the model called
    the second after their impacts (a lying figure called lying below the wait's threshold, or
    taken for someone standing)."""
    instead = called_instead(point["outcomes"])
    if not instead:
        return []
    shown = ", ".join(f"{c} {n}" for c, n in instead.items())
    return [f"({cls}, {title}: the pose not in time, called after the impact: {shown})"]


def none_in_time(cls: str, r: dict, target: float) -> list[str]:
    """A line when the recommended point catches no event in time: a threshold that quiet is no
    detector, and what the most in time costs instead."""
    rec = r["recommended"]
    if not rec["events"] or rec["in_time"]:
        return []
    best = max(r["sweep"], key=lambda p: (p["in_time"], -p["false_per_hour"]))
    if not best["in_time"]:
        return [f"({cls}: no point of the sweep catches any of the {rec['events']} in time)"]
    return [
        f"({cls}: the recommended point catches none of the {rec['events']} in time: within "
        f"{target:g} false alarms an hour this model misses every one; the most in time, "
        f"{best['in_time']}, cost {best['false_per_hour']:.2f} false/h (threshold "
        f"{best['threshold']:g}, {best['k']}/{best['n']}))"
    ]


def down_line(cls: str, title: str, d: dict) -> str:
    """The down level at a point, in one line."""
    w = d["down_for"]
    delays = (
        ""
        if d["delay_median"] is None
        else f", delay from the impact median {d['delay_median']:.1f} s, p95 {d['delay_p95']:.1f} s"
    )
    label = ", ".join(f"{k} {n}" for k, n in d["false_by_label"].items())
    return (
        f"({cls}, {title}, down level at {w:g} s: {d['in_time']} of {d['stayed_down']} falls "
        f"whose person stayed down {w:g} s alerted within {w + 1:g} s{delays}; raised for "
        f"{d['got_up_alerted']} of {d['got_up_sooner']} who got up sooner; "
        f"{d['false_alarms']} false alarms, {d['false_per_hour']:.3f}/h"
        + (f" (on {label})" if label else "")
        + ")"
    )
