"""Programs that talk to a todoweb board."""

__version__ = "0.1.0"
