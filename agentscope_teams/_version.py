"""The package version (one home: the top level, the CLI and the control plane read it here)."""

__version__ = "0.1.0"
