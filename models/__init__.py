"""Workstation side: train hyperframe models (torch, timm) and evaluate them (models.evaluation).
Run from a checkout: ``python -m models.synthdata``, ``python -m models.train``,
``python -m models.evaluate``. Imports edge_hf only; never imported by edge_hf, never imports
export (tests/test_imports.py)."""
