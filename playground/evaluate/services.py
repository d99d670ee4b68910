"""The evaluation page's work: its library prompt's versions, test cases, variants, the grid and its summary
(exports.py: the downloads)."""

import difflib
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from playground.catalog.models import CatalogModel
from playground.evaluate import graders, templating
from playground.evaluate.forms import chat_models, variant_params_form
from playground.evaluate.models import MAX_VARIANTS, Cell, Evaluation, Rating, Run, TestCase, Variant
from playground.prompts.drafts import Draft, save_version
from playground.prompts.models import NAME_LENGTH, Prompt, PromptVersion, owned_by

CHARS_PER_TOKEN = 4  # the same rough estimate as the chat's context check
EXAMPLE_USER = "{{question}}"


class EvaluationError(ValueError):
    """A request the evaluation cannot take; the message names the field and the limit."""


@transaction.atomic
def create(*, user, title: str, connection, team=None) -> Evaluation:
    evaluation = Evaluation.objects.create(
        owner=user, team=team, title=title, connection=connection, columns=["question"]
    )
    TestCase.objects.create(evaluation=evaluation, position=0, values={"question": ""})
    models = chat_models(connection)
    Variant.objects.create(evaluation=evaluation, position=0, model=models[0].model_id if models else "")
    new_version(evaluation, system="", user=EXAMPLE_USER, author=user)
    return evaluation


def sync_columns(evaluation: Evaluation, imported: list[str] = ()) -> None:
    """The table's columns follow the template: a column stays while the template uses it or a row fills it (or
    it was just imported), in the order it came. A column neither used nor filled (the starting `question`, say)
    goes, from the cases too."""
    prompts = [evaluation.latest_prompt(), *(v.prompt for v in evaluation.variants.select_related("prompt"))]
    used = templating.variables(*(text for p in prompts for text in version_texts(p)))
    cases = list(evaluation.cases.all())
    filled = {name for case in cases for name, value in case.values.items() if value != ""}
    columns: list[str] = []
    for name in [*evaluation.columns, *used, *imported]:
        if name not in columns and (name in used or name in filled or name in imported):
            columns.append(name)
    evaluation.columns = columns
    changed = []
    for case in cases:
        kept = {name: value for name, value in case.values.items() if name in columns or value != ""}
        if kept != case.values:
            case.values = kept
            changed.append(case)
    TestCase.objects.bulk_update(changed, ["values"], batch_size=500)


def unique_name(owner, title: str) -> str:
    """The evaluation's title as a name free among the owner's own prompts: "Title", "Title (2)", …"""
    base = (title or "").strip().replace("/", "-") or "Evaluation"
    taken = set(owned_by(owner, None).values_list("name", flat=True))
    name, n = base[:NAME_LENGTH], 1
    while name in taken:
        n += 1
        suffix = f" ({n})"
        name = base[: NAME_LENGTH - len(suffix)] + suffix
    return name


def library_prompt(evaluation: Evaluation) -> Prompt:
    """The evaluation's prompt in its owner's library, made (named after its title) if it has none."""
    if evaluation.prompt is None:
        evaluation.prompt = Prompt.objects.create(
            owner=evaluation.owner, name=unique_name(evaluation.owner, evaluation.title)
        )
        evaluation.save(update_fields=["prompt", "updated"])
    return evaluation.prompt


@transaction.atomic
def new_version(evaluation: Evaluation, *, system: str, user: str, author=None, draft=None) -> PromptVersion:
    """The template's next version in the library prompt (prompts' own version-making: never an update)."""
    first = evaluation.variants.exclude(model="").order_by("position").first()
    draft = draft or Draft(system=system, template=user, message=f"Evaluation “{evaluation.title}”"[:300])
    draft.model_id, draft.connection = (first.model if first else ""), evaluation.connection
    return save_version(library_prompt(evaluation), draft, author or evaluation.owner)


@transaction.atomic
def save_prompt(evaluation: Evaluation, *, system: str, user: str, author=None) -> PromptVersion:
    """A new version when the text changed; the latest one otherwise."""
    latest = evaluation.latest_prompt()
    if latest and latest.system == system and latest.template == user:
        return latest
    version = new_version(evaluation, system=system, user=user, author=author)
    sync_columns(evaluation)
    evaluation.save(update_fields=["columns", "updated"])
    return version


def version_texts(version: PromptVersion | None) -> list[str]:
    """The texts of a version that may hold {{variables}}: system, few-shot turns, the user template."""
    if version is None:
        return []
    return [version.system, *(shot["content"] for shot in version.shots), version.template]


def usable_versions(user, evaluation: Evaluation):
    """The library versions a variant of this evaluation may pick: its own prompt's, then any the user can use."""
    return PromptVersion.objects.for_user(user).select_related("prompt", "prompt__team")


def diff(a: PromptVersion, b: PromptVersion) -> list[tuple[str, str]]:
    """Line diff of two versions as (kind, line): kind is "same", "add" or "del"."""
    lines = []
    for title, old, new in (("System", a.system, b.system), ("User", a.template, b.template)):
        lines.append(("head", f"{title} prompt: v{a.number} → v{b.number}"))
        for line in difflib.ndiff(old.splitlines(), new.splitlines()):
            tag = {"+ ": "add", "- ": "del", "  ": "same"}.get(line[:2])
            if tag:
                lines.append((tag, line[2:]))
    return lines


def add_variant(evaluation: Evaluation) -> Variant:
    variants = list(evaluation.variants.all())
    if len(variants) >= MAX_VARIANTS:
        raise EvaluationError(f"variants: at most {MAX_VARIANTS} columns are allowed.")
    taken = {v.position for v in variants}
    position = min(p for p in range(MAX_VARIANTS) if p not in taken)
    copy = variants[-1] if variants else None
    models = chat_models(evaluation.connection)
    variant = Variant.objects.create(
        evaluation=evaluation,
        position=position,
        model=copy.model if copy else (models[0].model_id if models else ""),
        params=dict(copy.params) if copy else {},
        graders=dict(copy.graders) if copy else {},
    )
    return variant


def catalog_model(evaluation: Evaluation, model_id: str) -> CatalogModel | None:
    if evaluation.connection is None:
        return None
    return CatalogModel.objects.for_connection(evaluation.connection, kind="chat").filter(model_id=model_id).first()


def prompt_of(variant: Variant, latest: PromptVersion | None) -> PromptVersion | None:
    return variant.prompt or latest


def lost_version(evaluation: Evaluation, variant: Variant, row: int) -> str:
    """Why the variant's pinned version of another prompt cannot be sent (its owner left that prompt's team, say),
    or "": a run sends only what the evaluation's owner may still read."""
    pinned = variant.prompt
    if pinned is None or pinned.prompt_id == evaluation.prompt_id:
        return ""
    if Prompt.objects.for_user(evaluation.owner).filter(pk=pinned.prompt_id).exists():
        return ""
    return f"row {row}, variant {variant.label}: prompt: you can no longer use {pinned.ref}; choose another version."


def regrade(evaluation: Evaluation, variant: Variant | None = None) -> None:
    """The latest run's answers graded again by the present graders (and its snapshot says so); earlier runs keep
    the grades they had, and a run going on is left alone (its cells are graded as they end)."""
    run = evaluation.latest_run()
    if run is None or not run.finished:
        return
    cells = run.cells.filter(status=Cell.DONE).select_related("case", "variant")
    if variant is not None:
        cells = cells.filter(variant=variant)
    changed = []
    for cell in cells:
        cell.grades = graders.grade(cell.output, cell.case.expected, cell.variant.graders, cell.grades)
        changed.append(cell)
    Cell.objects.bulk_update(changed, ["grades"], batch_size=500)
    present = {v.pk: v.graders for v in evaluation.variants.all()}
    for shown in run.variants:
        if shown.get("variant") in present and (variant is None or shown["variant"] == variant.pk):
            shown["graders"] = present[shown["variant"]]
    run.save(update_fields=["variants"])


# ---------------------------------------------------------------- requests


@dataclass
class Request:
    body: dict
    error: str = ""
    skipped: bool = False  # a row with an empty value, not sent unless the run says so
    version: PromptVersion | None = None  # the prompt version the body was made from


def empty_values(case: TestCase, names: list[str]) -> list[str]:
    """The variables of `names` this row leaves empty (or has no value for)."""
    return [name for name in names if str(case.values.get(name, "")).strip() == ""]


def gaps(evaluation: Evaluation, names: list[str]) -> list[tuple[int, list[str]]]:
    """(row number, the empty variables) of every row that leaves one of `names` empty."""
    found = []
    for case in evaluation.cases.all():
        empty = empty_values(case, names)
        if empty:
            found.append((case.position + 1, empty))
    return found


def build_request(
    case: TestCase,
    variant: Variant,
    prompt: PromptVersion | None,
    model: CatalogModel | None,
    *,
    send_empty: bool = False,
) -> Request:
    """The chat request of one cell, or the reason it cannot be sent (naming the row, the field and the limit)."""
    where = f"row {case.position + 1}, variant {variant.label}"
    if prompt is None:
        return Request({}, f"{where}: the evaluation has no prompt yet.")
    if not variant.model:
        return Request({}, f"{where}: model: choose a model for this variant.")
    empty = empty_values(case, templating.variables(*version_texts(prompt)))
    if empty and not send_empty:
        names = ", ".join("{{" + name + "}}" for name in empty)
        return Request({}, f"Skipped: row {case.position + 1} has no value for {names}.", skipped=True)
    values = {**dict.fromkeys(empty, ""), **case.values}
    missing: list[str] = []
    turns = []
    for message in prompt.messages():
        text, unfilled = templating.render(message["content"], values)
        missing += [m for m in unfilled if m not in missing]
        turns.append({"role": message["role"], "content": text})
    if missing:
        return Request({}, f"{where}: no value for {', '.join('{{' + m + '}}' for m in missing)}.")
    form = variant_params_form(model, variant.params)
    if not form.is_valid():
        problems = "; ".join(str(e) for errors in form.errors.values() for e in errors)
        return Request({}, f"{where}: {problems}")
    values = form.request_values()
    if model is not None:
        estimate = sum(len(turn["content"]) for turn in turns) // CHARS_PER_TOKEN + 8
        wanted = values.get("max_tokens") or 0
        if estimate + wanted > model.context_window:
            return Request(
                {},
                f"{where}: the prompt is about {estimate} tokens"
                + (f" and max_tokens is {wanted}" if wanted else "")
                + f", over the context window of {model.context_window} tokens of {model.model_id}.",
            )
    return Request({"model": variant.model, "messages": turns, **values}, version=prompt)


# ---------------------------------------------------------------- grid, summary, export


@dataclass
class Summary:
    variant: Variant
    done: int = 0
    errors: int = 0
    graded: int = 0
    passed: int = 0
    up: int = 0  # people's ratings that pass
    down: int = 0  # and that fail
    latency: float | None = None
    ttft: float | None = None
    tokens: float | None = None
    judge_tokens: int = 0  # what the model grader used, over every cell

    @property
    def score(self) -> str:
        return f"{round(100 * self.passed / self.graded)}%" if self.graded else "—"


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _judge_tokens(cell: Cell) -> int:
    judge = (cell.grades or {}).get("judge") or {}
    return (judge.get("prompt_tokens") or 0) + (judge.get("completion_tokens") or 0)


def summaries(variants: list[Variant], cells: list[Cell], verdicts: dict | None = None) -> list[Summary]:
    """Each variant's figures over `cells`; people's verdicts from the cells' ratings, or given per variant."""
    by_variant: dict[int, list[Cell]] = {v.pk: [] for v in variants}
    for cell in cells:
        by_variant.setdefault(cell.variant_id, []).append(cell)
    result = []
    for variant in variants:
        own = by_variant[variant.pk]
        done = [c for c in own if c.status == Cell.DONE]
        graded = [c for c in done if c.grades]
        if verdicts is None:
            people = [r.verdict for c in own if c.pk for r in c.ratings.all()]
        else:
            people = verdicts.get(variant.pk, [])
        result.append(
            Summary(
                variant=variant,
                done=len(done),
                errors=sum(1 for c in own if c.status == Cell.ERROR),
                graded=len(graded),
                passed=sum(1 for c in graded if c.passed),
                up=people.count(True),
                down=people.count(False),
                latency=_mean([c.latency_ms for c in done]),
                ttft=_mean([c.ttft_ms for c in done]),
                tokens=_mean([c.tokens for c in done]),
                judge_tokens=sum(_judge_tokens(c) for c in own),
            )
        )
    return result


SUMMED = ("variant", "status", "grades", "latency_ms", "ttft_ms", "prompt_tokens", "completion_tokens")


def run_summaries(evaluation: Evaluation, run: Run | None) -> list[Summary]:
    """summaries() of a run read lean (only the columns summed, the ratings in one query): a live run sums its
    grid every second, and a grid of 4,000 cells read whole took seconds."""
    variants = list(evaluation.variants.all())
    if run is None:
        return summaries(variants, [], {})
    verdicts: dict[int, list] = {}
    for variant_id, passed, score in Rating.objects.filter(cell__run=run).values_list(
        "cell__variant_id", "passed", "score"
    ):
        verdicts.setdefault(variant_id, []).append(Rating(passed=passed, score=score).verdict)
    return summaries(variants, list(run.cells.order_by().only("pk", "run", *SUMMED)), verdicts)


def _placeholder(evaluation: Evaluation, case: TestCase, variant: Variant) -> Cell:
    return Cell(evaluation=evaluation, case=case, variant=variant, status=Cell.EMPTY)


def run_cases(evaluation: Evaluation, run: Run | None):
    """The rows of a whole run: the table's, and the rows taken out of it after the run had answered them (retired,
    testcases.remove), so an export or a share of the run is the record it was."""
    rows = TestCase.everything.filter(evaluation=evaluation)
    if run is None:
        return rows.filter(retired=False)
    return rows.filter(Q(retired=False) | Q(cells__run=run)).distinct()


def grid(
    evaluation: Evaluation, cases=None, run=None
) -> tuple[list[Variant], list[tuple[TestCase, list[Cell]]], list[Cell]]:
    """The variants, the rows of `cases` (default: the whole run's, run_cases) with the cells of `run` (default:
    the latest) in variant order, and every cell of the run."""
    variants = list(evaluation.variants.select_related("prompt__prompt"))
    latest = evaluation.latest_prompt()
    for variant in variants:
        variant.shown = prompt_of(variant, latest)  # the grid header's name@vN
    run = run or evaluation.latest_run()
    cells = []
    if run is not None:
        cells = list(run.cells.select_related("version__prompt").prefetch_related("ratings__rater"))
    index = {(c.case_id, c.variant_id): c for c in cells}
    rows = []
    for case in run_cases(evaluation, run) if cases is None else cases:
        # A place the run has no cell for (it ran before the row or variant existed): an empty one, not saved.
        rows.append((case, [index.get((case.pk, v.pk)) or _placeholder(evaluation, case, v) for v in variants]))
    return variants, rows, cells
