from django.conf import settings
from django.db import migrations

from playground.connections import crypto
from playground.connections.models import local_key_label, local_key_minter


def give_local_connections_their_own_keys(apps, schema_editor):
    """Every Local connection made before per-user keys used one shared key: mint each its own.

    Minting goes through the local API's minter (the current ApiKey model), hence the dependency on the
    local API's migrations when it is installed. With the local API off there is nothing to mint.
    """
    mint = local_key_minter()
    if mint is None:
        return
    Connection = apps.get_model("connections", "Connection")
    for connection in Connection.objects.filter(is_local=True, encrypted_key=""):
        raw = mint(local_key_label(connection.owner_id))
        connection.encrypted_key = crypto.encrypt(raw)
        connection.key_hint = crypto.mask(raw)
        connection.save(update_fields=["encrypted_key", "key_hint"])


class Migration(migrations.Migration):
    dependencies = [("connections", "0001_initial")] + (
        [("localapi", "0002_hashed_keys")] if settings.LOCAL_API else []
    )

    operations = [migrations.RunPython(give_local_connections_their_own_keys, migrations.RunPython.noop)]
