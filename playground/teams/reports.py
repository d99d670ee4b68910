"""What a team's owners and admins read: usage per member, day and model (table, bars, CSV), and the audit log."""

import csv
from datetime import datetime

from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from playground.teams.models import get_managed_team
from playground.teams.usage import month_start, next_month

SUMS = {
    "requests": Count("pk"),
    "prompt": Sum("prompt_tokens"),
    "completion": Sum("completion_tokens"),
    "reasoning": Sum("reasoning_tokens"),
    "characters": Sum("audio_characters"),
    "documents": Sum("documents"),
}
CSV_COLUMNS = ["day", "member", "kind", "model", "status", *SUMS]


def month_of(value: str | None):
    """The start of the month named YYYY-MM, or of this month."""
    try:
        start = datetime.strptime(value or "", "%Y-%m").replace(tzinfo=timezone.get_current_timezone())
    except ValueError:
        return month_start()
    return start


def _rows(team, start):
    return team.usage.filter(created__gte=start, created__lt=next_month(start))


def _totals(rows, *group):
    out = []
    for row in rows.values(*group).annotate(**SUMS).order_by(*group):
        row = {key: value or 0 if key in SUMS else value for key, value in row.items()}
        row["tokens"] = row["prompt"] + row["completion"]
        out.append(row)
    return out


def _with_bars(rows: list[dict]) -> list[dict]:
    top = max((row["tokens"] for row in rows), default=0) or 1
    for row in rows:
        row["bar"] = round(100 * row["tokens"] / top)
    return rows


def summary(team, start) -> dict:
    rows = _rows(team, start).annotate(day=TruncDate("created"))
    return {
        "by_member_day": _with_bars(_totals(rows, "day", "username")),
        "by_model": _with_bars(_totals(rows, "model", "kind")),
        "by_member": _with_bars(_totals(rows, "username")),
    }


@require_GET
def usage(request, pk):
    team, me = get_managed_team(request, pk)
    start = month_of(request.GET.get("month"))
    previous = (start - timezone.timedelta(days=1)).strftime("%Y-%m")
    context = {
        "team": team,
        "me": me,
        "month": start,
        "month_key": start.strftime("%Y-%m"),
        "previous": previous,
        "next": next_month(start).strftime("%Y-%m"),
        **summary(team, start),
    }
    return render(request, "teams/usage.html", context)


@require_GET
def usage_csv(request, pk):
    team, _ = get_managed_team(request, pk)
    start = month_of(request.GET.get("month"))
    rows = _rows(team, start).annotate(day=TruncDate("created"))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="team-{team.pk}-usage-{start:%Y-%m}.csv"'
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for row in _totals(rows, "day", "username", "kind", "model", "status"):
        # A member name or model id starting with = + - @ is not a formula in a spreadsheet.
        cells = [row["day"], row["username"], row["kind"], row["model"], row["status"], *(row[k] for k in SUMS)]
        writer.writerow([_safe(cell) for cell in cells])
    return response


def _safe(cell):
    text = str(cell)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


@require_GET
def audit_log(request, pk):
    team, me = get_managed_team(request, pk)
    events = team.audit.select_related("actor")[:500]
    return render(request, "teams/audit.html", {"team": team, "me": me, "events": events})
