# The two commands in the README: `make demo` and `make test`. Each sets up what it needs.
.PHONY: setup setup-train demo test lint bench demo-model experiment

setup:
	@bash scripts/setup.sh openvino

setup-train:
	@bash scripts/setup.sh dev,openvino,train

# The embedded demo model on a synthetic camera: a figure walks, falls, lies down (60 s).
demo: setup
	.venv/bin/edge-hf run --camera 'synth://demo?frames=1500'

test: setup-train lint
	.venv/bin/python -m pytest -q

lint: setup-train
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

bench: setup-train
	.venv/bin/python -m pytest bench -q

# Rebuild the embedded demo model (hand-built until the export issue ships a trained one).
demo-model: setup-train
	.venv/bin/python -m export.demo_model --out edge_hf/assets/demo/demo.onnx

# The synthetic experiment of the trainer (issue 3): T=3 vs T=1 vs per-frame augmentation.
experiment: setup-train
	.venv/bin/python -m models.experiment --out runs/experiment
