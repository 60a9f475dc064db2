"""Workstation side: train hyperframe models (torch, timm). Run from a checkout:
``python -m models.synthdata``, ``python -m models.train``. Never imported by edge_hf."""
