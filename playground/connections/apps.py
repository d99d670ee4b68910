from django.apps import AppConfig


class ConnectionsConfig(AppConfig):
    name = "playground.connections"

    def ready(self):
        from playground.connections import (
            checks,  # noqa: F401  (registers the encryption key check)
            gate,
        )
        from playground.lib import detached

        # Leases in flight are stamped by their process; a dead process's leases stop counting, then go.
        detached.register_kind(gate.KIND, beat=gate.beat, sweep=gate.sweep)
