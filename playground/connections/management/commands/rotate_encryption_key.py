from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from playground.connections.models import Connection


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored API key with a new encryption key. Afterwards set "
        "PLAYGROUND_ENCRYPTION_KEYS=<new> (or keep the old one after it for a while: new,old)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--old",
            required=True,
            action="append",
            help="a key the secrets are encrypted with now (write --old=<key>: a key may begin with -)",
        )
        parser.add_argument("--new", required=True, help="the key to encrypt them with from now on")

    def handle(self, *args, old, new, **options):
        try:
            new_key = Fernet(new.encode())
            old_keys = MultiFernet([Fernet(key.encode()) for key in old] + [new_key])
        except ValueError:
            raise CommandError("--old and --new must be Fernet keys (32 url-safe base64-encoded bytes).") from None
        rows = Connection.objects.exclude(encrypted_key="").select_for_update()
        changed = 0
        with transaction.atomic():
            for connection in rows:
                try:
                    secret = old_keys.decrypt(connection.encrypted_key.encode())
                except InvalidToken:
                    raise CommandError(
                        f"Connection {connection.pk} ({connection.name!r}) cannot be decrypted with the --old keys; "
                        "nothing was changed."
                    ) from None
                connection.encrypted_key = new_key.encrypt(secret).decode()
                connection.save(update_fields=["encrypted_key"])
                changed += 1
        self.stdout.write(
            f"Re-encrypted {changed} stored API keys. Now set PLAYGROUND_ENCRYPTION_KEYS={new} and restart the server."
        )
