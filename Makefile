# The two commands in the README: `make demo` and `make test`. Each sets up what it needs.
.PHONY: setup demo test lint bench demo-model

setup:
	@bash scripts/setup.sh

# The embedded demo model on a synthetic camera: a figure walks, falls, lies down (60 s).
demo: setup
	.venv/bin/edge-hf run --camera 'synth://demo?frames=1500'

test: setup lint
	.venv/bin/python -m pytest -q

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

bench: setup
	.venv/bin/python -m pytest bench -q

# Rebuild the embedded demo model (hand-built until the export issue ships a trained one).
demo-model: setup
	.venv/bin/python -m export.demo_model --out edge_hf/assets/demo/demo.onnx
