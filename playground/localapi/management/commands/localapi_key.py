from django.core.management.base import BaseCommand

from playground.localapi.keys import default_key


class Command(BaseCommand):
    help = "Print a valid key for the local API (generated and stored on first use when LOCAL_API_KEYS is unset)."

    def handle(self, *args, **options):
        self.stdout.write(default_key())
