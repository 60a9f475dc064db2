"""edge-hf device runtime: hyperframe video alerts on cheap hardware. Never imports torch."""

__version__ = "0.2.0"  # the wheel's version too (pyproject.toml reads it)
