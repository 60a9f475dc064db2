"""edge-hf device runtime: hyperframe video alerts on cheap hardware. Never imports torch."""

__version__ = "0.1.0"
