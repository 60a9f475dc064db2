"""Evaluation: what a model does, counted. One home that the trainer, the export and the
evaluators import.

- the trainer's validation pass and what the epoch is chosen on (``choice``, ``metrics``);
- every model file through the device runtime on labelled videos, each hyperframe's scores
  recorded (``streams``), and the alert starts they cause counted against the labelled events
  (``events``: caught, how late, false alarms and why), how often a pose is seen as itself
  (``phases``), and their summary for people (``report``): ``python -m models.evaluate``;
- the export's choices and checks made the same way: the wait for lying chosen per model
  (``wait``) and what the alerts do on the validation clips labelled whole (``clips``);
  ``export.heldout`` and ``export.demo_check`` count with ``metrics`` and ``events`` too.

Why under models/: the packages import one way, ``edge_hf <- models <- export``. The trainer may
import only models/ (and edge_hf); the export and its commands may import models/ as well. This
code needs the device runtime and the trainer's datasets, never the export's converters, so
below the export is the one place all of them can reach. What compares the export's own files
with each other (parity and latency: ``export.measure``; INT8 against FP32 on videos never seen:
``export.heldout``) stays beside the formats it compares.

Importing this package loads nothing: ``choice`` needs torch and ``report`` matplotlib, the rest
numpy, OpenCV and ``edge_hf`` only.
"""
