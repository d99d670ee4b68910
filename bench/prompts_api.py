"""Benchmark: GET /api/prompts/<name> (by label, by version, latest) with many prompt versions in the database.

Starts its own daphne on a free port with a temporary SQLite database (or the DATABASE_URL given, e.g. a
PostgreSQL database of your own), migrates it, seeds --versions versions spread over --prompts prompts of one user
(a label on one of them), sends --requests requests one after the other per mode and prints a markdown table of
p50/p95 latencies. Nothing else runs beside it: run it on a quiet machine for figures.

    .venv/bin/python bench/prompts_api.py [--versions 10000] [--prompts 10] [--requests 300]
"""

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playground import devserver


def seed(versions: int, prompts: int) -> tuple[str, str, int]:
    """(token, prompt name, a version number) after seeding; runs in this process against the same database."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")
    django.setup()
    from django.contrib.auth import get_user_model

    from playground.prompts.drafts import check_draft
    from playground.prompts.models import ApiToken, Label, Prompt, PromptVersion

    user = get_user_model().objects.create_user("bench", "bench@example.com", "bench-password-123")
    data = {"system": "You are terse.", "template": "Summarise {{topic}} in {{n}} words.", "model": "local/chat"}
    draft, errors = check_draft(user, data | {"params": {"temperature": 0.3, "top_k": 20, "max_tokens": 200}})
    assert not errors, errors
    per_prompt = max(1, versions // prompts)
    for index in range(prompts):
        prompt = Prompt.objects.create(owner=user, name=f"prompt-{index}")
        rows = [
            PromptVersion(
                prompt=prompt,
                number=number,
                author=user,
                system=draft.system,
                template=f"{draft.template} (v{number})",
                model_id=draft.model_id,
                params=draft.params,
                values=draft.values,
            )
            for number in range(1, per_prompt + 1)
        ]
        PromptVersion.objects.bulk_create(rows, batch_size=1000)
    target = Prompt.objects.get(name=f"prompt-{prompts // 2}")
    middle = target.versions.get(number=max(1, per_prompt // 2))
    Label.objects.create(prompt=target, name="production", version=middle)
    token = ApiToken.mint(user, "bench")[1]
    logging.getLogger("httpx").setLevel(logging.WARNING)  # Django's logging config made it chatty
    print(f"seeded {PromptVersion.objects.count():,} versions in {prompts} prompts", file=sys.stderr)
    return token, target.name, per_prompt


def measure(client: httpx.Client, url: str, params: dict, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        response = client.get(url, params=params)
        times.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
    return times


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = devserver.sqlite_env(tmp, LOG_LEVEL="WARNING") if "DATABASE_URL" not in os.environ else dict(os.environ)
        env.setdefault("PLAYGROUND_DATA_DIR", tmp)
        devserver.manage(env, "migrate", "-v0")
        devserver.manage(env, "seed_catalog", "-v0")
        os.environ.update({"DATABASE_URL": env["DATABASE_URL"], "PLAYGROUND_DATA_DIR": env["PLAYGROUND_DATA_DIR"]})
        token, name, latest = seed(args.versions, args.prompts)
        port = devserver.free_port()
        server = devserver.start_daphne(port, env, ready_path="/health/live")
        try:
            url = f"http://127.0.0.1:{port}/api/prompts/{name}"
            headers = {"Authorization": f"Bearer {token}"}
            variables = {"topic": "cats", "n": "5"}
            with httpx.Client(headers=headers, timeout=30) as client:
                measure(client, url, {"label": "production", **variables}, 20)  # warm up
                rows = []
                for mode, params in [
                    ("label=production", {"label": "production"}),
                    (f"version={latest}", {"version": str(latest)}),
                    ("latest", {}),
                ]:
                    times = measure(client, url, {**params, **variables}, args.requests)
                    rows.append((mode, statistics.median(times), percentile(times, 0.95), max(times)))
        finally:
            devserver.stop(server)
    print(f"\n{args.versions:,} versions in {args.prompts} prompts, {args.requests} sequential requests per mode\n")
    print("| mode | p50 ms | p95 ms | max ms |\n|---|---|---|---|")
    for mode, p50, p95, worst in rows:
        print(f"| {mode} | {p50:.1f} | {p95:.1f} | {worst:.1f} |")


if __name__ == "__main__":
    main()
