"""Home Assistant MQTT discovery, in the per-entity form every Home Assistant version reads:
``<discovery>/<component>/<node_id>/<object_id>/config``, retained.

Per camera one device, with a ``binary_sensor`` per alert (``device_class: safety``; its state
is the retained ``<prefix>/<camera>/<key>`` topic, ``ON`` while the alert is open, so it clears
by itself; a class that waits for a pose has a second one, ``<class>_down``, its person still
down after ``--down-for`` seconds) and two diagnostic sensors read from ``<prefix>/stats``:
the camera's fps and the inference p50 in ms; with snapshots, an ``image`` entity per alert
alert showing its latest snapshot (Home Assistant 2023.7 and later). Every entity is available while
``<prefix>/available`` says ``online``; ``stopped`` (a clean stop) and ``offline`` (the last
will) both read as unavailable, through the availability ``value_template``.

``node_id`` comes from the topic prefix, which already has to be unique per edge-hf on a broker,
so unique ids are the same on every restart and differ between two edge-hf boxes.
``edge-hf mqtt-cleanup`` (``cleanup.py``) empties every retained config under this node.
"""

from __future__ import annotations

import json
import logging
import re

from edge_hf import __version__
from edge_hf.errors import UsageError

log = logging.getLogger("edge_hf.mqtt")
STATUS = "status"  # Home Assistant says "online" on <discovery>/status when it (re)starts
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")


def slug(text: str) -> str:
    """What Home Assistant accepts in node and object ids: letters, digits, '_' and '-'."""
    return _SLUG.sub("_", text).strip("_") or "x"


def node_id(prefix: str) -> str:
    return slug(prefix)


def _availability(prefix: str) -> list[dict]:
    return [
        {
            "topic": f"{prefix}/available",
            "payload_available": "online",
            "payload_not_available": "offline",
            # three states: a clean stop ("stopped") is unavailable too
            "value_template": "{{ 'online' if value == 'online' else 'offline' }}",
        }
    ]


def _device(node: str, camera: str) -> dict:
    return {
        "identifiers": [f"{node}_{slug(camera)}"],
        "name": camera,
        "manufacturer": "edge-hf",
        "model": "hyperframe video alerts",
        "sw_version": __version__,
    }


def configs(
    discovery: str, prefix: str, cameras, labels_of, snapshots: bool = False
) -> list[tuple[str, str]]:
    """(topic, JSON payload) of every entity: ``labels_of(camera)`` gives its alerts' keys
    (classes and down levels); with ``snapshots`` an ``image`` entity per key shows its latest
    snapshot."""
    node = node_id(prefix)
    _check_distinct(cameras)
    out = []
    for cam in cameras:
        common = {"availability": _availability(prefix), "device": _device(node, cam)}
        cam_q = json.dumps(cam)  # a Jinja string literal
        for label in labels_of(cam):
            obj = f"{slug(cam)}_{slug(label)}"
            entity = {
                "name": label,
                "unique_id": f"{node}_{obj}",
                "object_id": obj,
                "state_topic": f"{prefix}/{cam}/{label}",
                "payload_on": "ON",
                "payload_off": "OFF",
                "device_class": "safety",
                **common,
            }
            out.append((f"{discovery}/binary_sensor/{node}/{obj}/config", entity))
            if snapshots:
                image = {
                    "name": f"{label} snapshot",
                    "unique_id": f"{node}_{obj}_snapshot",
                    "object_id": f"{obj}_snapshot",
                    "image_topic": f"{prefix}/{cam}/{label}/snapshot",
                    "content_type": "image/jpeg",
                    **common,
                }
                out.append((f"{discovery}/image/{node}/{obj}_snapshot/config", image))
        stats = {
            "fps": ("camera fps", f"value_json.cameras[{cam_q}].fps", "fps"),
            "inference_ms": ("inference ms (p50)", "value_json.inference.p50_ms", "ms"),
        }
        for key, (name, expr, unit) in stats.items():
            obj = f"{slug(cam)}_{key}"
            entity = {
                "name": name,
                "unique_id": f"{node}_{obj}",
                "object_id": obj,
                "state_topic": f"{prefix}/stats",
                "value_template": "{{ " + expr + " }}",
                "unit_of_measurement": unit,
                "state_class": "measurement",
                "entity_category": "diagnostic",
                **common,
            }
            out.append((f"{discovery}/sensor/{node}/{obj}/config", entity))
    return [(t, json.dumps(e, separators=(",", ":"))) for t, e in out]


def _check_distinct(cameras) -> None:
    """Two camera names with one slug would share their entities' unique ids."""
    seen: dict[str, str] = {}
    for cam in cameras:
        other = seen.setdefault(slug(cam), cam)
        if other != cam:
            raise UsageError(
                f"cameras {other!r} and {cam!r} would be the same Home Assistant device "
                f"({slug(cam)!r}); rename one (letters, digits, '_' and '-' are kept as they are)"
            )
