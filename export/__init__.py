"""Workstation side: turn trained checkpoints into model files the device runtime can load.
Imports models and edge_hf; neither imports it (tests/test_imports.py)."""
