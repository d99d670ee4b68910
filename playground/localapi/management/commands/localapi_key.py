from django.core.management.base import BaseCommand

from playground.localapi.keys import mint


class Command(BaseCommand):
    help = "Create a new operator key for the local API and print it (once: only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("--label", default="operator", help="a name to recognise the key by (default: operator)")

    def handle(self, *args, **options):
        self.stdout.write(mint(options["label"]))
