"""webhook_worker: deliver webhooks from a process of its own (the loop every server
process runs in a thread unless TODOWEB_WEBHOOK_WORKER=0)."""

from __future__ import annotations

import signal
from typing import Any

from django.core.management.base import BaseCommand

from todoweb.webhooks import worker


class Command(BaseCommand):
    help = (
        "Deliver webhooks until stopped (SIGINT or SIGTERM): queue each new delivery's task and run the "
        "webhooks queue. For deployments whose server processes run with TODOWEB_WEBHOOK_WORKER=0."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: worker.stop())
        self.stdout.write("Delivering webhooks; stop with Ctrl-C.")
        worker.run()
