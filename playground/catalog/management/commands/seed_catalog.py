import json
from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction

from playground.catalog.models import CatalogModel

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "catalog.json"


class Command(BaseCommand):
    help = "Add the seeded models (local API and well-known hosted ids); entries edited in admin are kept."

    def add_arguments(self, parser):
        parser.add_argument("--update", action="store_true", help="Overwrite existing seeded entries too.")

    def handle(self, *args, update=False, **options):
        entries = json.loads(FIXTURE.read_text())
        with transaction.atomic():
            if update:
                created = 0
                for entry in entries:
                    keys = {"connection": None, "scope": entry.pop("scope"), "model_id": entry.pop("model_id")}
                    created += CatalogModel.objects.update_or_create(**keys, defaults=entry)[1]
            else:
                # One read of what is there and one insert of what is missing (not a query pair per entry).
                seeded = set(CatalogModel.objects.filter(connection=None).values_list("scope", "model_id"))
                missing = [entry for entry in entries if (entry["scope"], entry["model_id"]) not in seeded]
                CatalogModel.objects.bulk_create([CatalogModel(**entry) for entry in missing], ignore_conflicts=True)
                created = len(missing)
        if options["verbosity"]:
            self.stdout.write(f"Catalog seeded: {created} new models.")
