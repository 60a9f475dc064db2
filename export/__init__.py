"""Workstation side: turn trained checkpoints into model files the device runtime can load."""
