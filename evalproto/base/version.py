"""The version of evalproto, which every signature carries."""

__version__ = "0.1.0"
