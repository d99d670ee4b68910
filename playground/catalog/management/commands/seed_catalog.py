import json
from pathlib import Path

from django.core.management.base import BaseCommand

from playground.catalog.models import CatalogModel

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "catalog.json"


class Command(BaseCommand):
    help = "Add the seeded models (local API and well-known hosted ids); entries edited in admin are kept."

    def add_arguments(self, parser):
        parser.add_argument("--update", action="store_true", help="Overwrite existing seeded entries too.")

    def handle(self, *args, update=False, **options):
        created = 0
        for entry in json.loads(FIXTURE.read_text()):
            keys = {"connection": None, "scope": entry.pop("scope"), "model_id": entry.pop("model_id")}
            if update:
                _, new = CatalogModel.objects.update_or_create(**keys, defaults=entry)
            else:
                _, new = CatalogModel.objects.get_or_create(**keys, defaults=entry)
            created += new
        if options["verbosity"]:
            self.stdout.write(f"Catalog seeded: {created} new models.")
