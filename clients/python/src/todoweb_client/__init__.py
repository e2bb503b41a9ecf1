"""Programs that talk to a todoweb board: the `Todoweb` / `AsyncTodoweb` client, the
framework adapters, and the Claude Code channel (`todoweb-channel`)."""

__version__ = "0.2.0"

from todoweb_client.client import AsyncTodoweb, Todoweb  # noqa: E402

__all__ = ["AsyncTodoweb", "Todoweb", "__version__"]
