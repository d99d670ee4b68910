"""Benchmark: import 10,000 rows of CSV and of JSONL into a dataset through the import view (the same code path a
person's upload takes: the middleware, the multipart parsing, tabular.parse, the checks and one version row), then
read them back (the grid's first page, an export of each format).

Runs in this process with Django's test client against a fresh SQLite database in a temporary directory (or the
DATABASE_URL given, e.g. a PostgreSQL database of your own; the bench creates its user and datasets there). Prints
a markdown table of the median of --repeat runs. Run it niced on a busy machine and say so.

    .venv/bin/python bench/datasets_import.py [--rows 10000] [--repeat 3]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def rows(count: int) -> list[dict]:
    """Rows like a real eval set: three inputs (one with a comma, quotes and a newline) and an expected answer."""
    return [
        {
            "question": f"Question {i}: what is the capital of country number {i}, and why is it there?",
            "context": f'Country {i} ("Ünïcode land") has a coast,\nmountains and {i % 97} rivers. ' * 2,
            "language": ["en", "de", "ja", "fr"][i % 4],
            "expected": f"The capital of country {i} is City {i}; it sits by the river. 日本語 ✓",
        }
        for i in range(count)
    ]


def as_csv(data: list[dict]) -> bytes:
    import csv
    import io

    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(data[0]))
    writer.writeheader()
    writer.writerows(data)
    return out.getvalue().encode()


def as_jsonl(data: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in data).encode()


def timed(function) -> tuple[float, object]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    # Its own data directory (its SQLite database): never the one of a playground you use.
    os.environ["PLAYGROUND_DATA_DIR"] = tempfile.mkdtemp(prefix="bench-datasets-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")
    os.environ.setdefault("PLAYGROUND_BOOT_CHECKS", "off")
    import django

    django.setup()
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from playground.datasets import tabular
    from playground.datasets.models import Dataset

    setup_test_environment()
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username="bench-datasets")
    client = Client()
    client.force_login(user)
    data = rows(args.rows)
    files = {"csv": as_csv(data), "jsonl": as_jsonl(data)}
    results = []
    for kind, body in files.items():
        figures: dict[str, list[float]] = {"parse": [], "import": [], "page": [], "export": []}
        for attempt in range(args.repeat):
            seconds, parsed = timed(lambda body=body, kind=kind: tabular.parse(body, kind))
            assert not parsed.errors and len(parsed.rows) == args.rows, parsed.errors[:3]
            figures["parse"].append(seconds)
            name = f"bench-{kind}-{attempt}-{time.time_ns()}"
            upload = SimpleUploadedFile(f"{name}.{kind}", body)
            seconds, response = timed(
                lambda upload=upload, name=name: client.post("/datasets/import/", {"file": upload, "name": name})
            )
            assert response.status_code == 302, response.content[:2000]
            figures["import"].append(seconds)
            dataset = Dataset.objects.get(name=name)
            assert dataset.latest().row_count == args.rows
            seconds, response = timed(lambda pk=dataset.pk: client.get(f"/datasets/{pk}/"))
            assert response.status_code == 200
            figures["page"].append(seconds)
            seconds, response = timed(lambda pk=dataset.pk, kind=kind: client.get(f"/datasets/{pk}/v1/export.{kind}"))
            assert response.status_code == 200 and len(response.content) > len(body) * 0.9
            figures["export"].append(seconds)
        results.append((kind, len(body), figures))
    engine = connection.vendor
    print(f"{args.rows:,} rows, median of {args.repeat}, {engine}, Python {sys.version.split()[0]}\n")
    print("| file | size | parse | import (POST, parse + checks + save) | grid page (50 rows) | export |")
    print("|---|---|---|---|---|---|")
    for kind, size, figures in results:
        cells = [f"{statistics.median(figures[k]) * 1000:,.0f} ms" for k in ("parse", "import", "page", "export")]
        print(f"| {kind.upper()} | {size / 1024 / 1024:.1f} MB | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
