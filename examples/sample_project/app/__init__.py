"""stockroom: a tiny inventory service."""

__version__ = "0.3.1"
