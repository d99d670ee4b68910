from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from playground.lib.markdown.highlighting import stylesheet

STYLESHEET = Path(settings.BASE_DIR) / "static" / "css" / "highlight.css"


class Command(BaseCommand):
    help = "Write static/css/highlight.css, the colours of highlighted code, from the Pygments styles."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="Only fail when the committed file is stale.")

    def handle(self, *args, check=False, **options):
        css = stylesheet()
        if check:
            if not STYLESHEET.exists() or STYLESHEET.read_text() != css:
                raise SystemExit(f"{STYLESHEET} is stale: run python manage.py highlight_css")
            return
        STYLESHEET.write_text(css)
        if options["verbosity"]:
            self.stdout.write(f"Wrote {STYLESHEET}")
