"""An evaluation: a library prompt (its template kept in the prompt's versions) run over test cases by up to four
variants, each a prompt version × model × parameters."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.shortcuts import get_object_or_404
from django.utils import timezone

from playground.connections.models import Team
from playground.lib.errors import Refused
from playground.prompts.models import Prompt, PromptVersion
from playground.sharing.models import share_links

MAX_VARIANTS = 4
MAX_CASES = 1000
VARIANT_LABELS = "ABCD"
DEFAULT_CONCURRENCY = 4  # live cells at a time, until a run chooses another


class EvaluationQuerySet(models.QuerySet):
    def for_user(self, user):
        """The evaluations the user may see: their own, and those of the teams they are in."""
        if not user or not user.is_authenticated:
            return self.none()
        mine = Q(owner=user) | Q(team__in=Team.objects.for_user(user))
        return self.filter(mine).select_related("connection", "team", "owner")

    def editable_by(self, user):
        """The evaluations the user may edit, run and delete: their own (a run spends its owner's connection)."""
        if not user or not user.is_authenticated:
            return self.none()
        return self.filter(owner=user).select_related("connection", "team")


class Evaluation(models.Model):
    shares = share_links()  # its share links: deleting it deletes them
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="evaluations")
    # A team's evaluation: every member of the team sees it, its runs and their comparisons, exports them and
    # rates their cells (each person's rating kept); its owner alone edits, runs and deletes it, as a run spends
    # the owner's connection. A deleted team leaves it its owner's alone.
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations")
    title = models.CharField(max_length=100)
    # Its template: a library prompt of the owner's (created with the evaluation); each edit is a new version.
    prompt = models.ForeignKey(Prompt, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations")
    connection = models.ForeignKey(
        "connections.Connection", null=True, on_delete=models.SET_NULL, related_name="evaluations"
    )
    # Variable names in the order the test-case table shows them (the template's, then any imported extra).
    columns = models.JSONField(default=list, blank=True)
    batch = models.ForeignKey("batches.Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # custom_id -> [case pk, variant pk, prompt version pk] of the submitted batch; joined back when it ends.
    batch_map = models.JSONField(default=dict, blank=True)
    batch_joined = models.BooleanField(default=False)
    stop_requested = models.BooleanField(default=False)
    # The last run's size and wall time: the grid's summary says them after a reload too.
    last_run_cells = models.PositiveIntegerField(default=0)
    last_run_ms = models.PositiveIntegerField(null=True, blank=True)
    last_run_ended = models.DateTimeField(null=True, blank=True)
    # The concurrency the last live run was started with: the Run bar starts on it after a reload.
    concurrency = models.PositiveSmallIntegerField(default=DEFAULT_CONCURRENCY)
    # The dataset version the test cases were taken from ("Use dataset…"), until they are edited; a run records it.
    dataset_version = models.ForeignKey(
        "datasets.DatasetVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations"
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = EvaluationQuerySet.as_manager()

    class Meta:
        ordering = ["-updated", "-pk"]

    def __str__(self) -> str:
        return self.title

    @property
    def owner_label(self) -> str:
        return self.team.name if self.team_id else "You"

    def may_edit(self, user) -> bool:
        """Its owner edits, runs and deletes it (a run spends the owner's connection)."""
        return bool(user and user.is_authenticated and user.pk == self.owner_id)

    def may_rate(self, user) -> bool:
        """Who may rate its runs' cells: its owner, and every member of its team."""
        if self.may_edit(user):
            return True
        return bool(self.team_id and user and user.is_authenticated and self.team.membership_of(user) is not None)

    def latest_run(self) -> "Run | None":
        return self.runs.order_by("-number").first()

    def latest_prompt(self) -> PromptVersion | None:
        return self.versions().order_by("-number").first()

    def versions(self):
        """The versions of the evaluation's own prompt, v1 first."""
        if self.prompt_id is None:
            return PromptVersion.objects.none()
        return PromptVersion.objects.filter(prompt_id=self.prompt_id).select_related("prompt").order_by("number")


class CurrentCases(models.Manager):
    """The rows of the evaluation's table: a case removed after a run answered it is kept (retired) for that run."""

    def get_queryset(self):
        return super().get_queryset().filter(retired=False)


class TestCase(models.Model):
    __test__ = False  # not a pytest class

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="cases")
    position = models.PositiveIntegerField()
    values = models.JSONField(default=dict, blank=True)
    expected = models.TextField(blank=True)
    # Removed from the table, kept because a run answered it: runs are immutable records (testcases.remove).
    retired = models.BooleanField(default=False)

    objects = CurrentCases()  # the default manager, so also `evaluation.cases`
    everything = models.Manager()  # a cell's own case, retired or not (the base manager)  # noqa: DJ012

    class Meta:
        ordering = ["position", "pk"]
        base_manager_name = "everything"

    def __str__(self) -> str:
        return f"row {self.position + 1}"


class Variant(models.Model):
    """One column of the grid: a prompt version (none: the latest of the evaluation's prompt; or any version of a
    library prompt its owner can use), a model, parameters and graders."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="variants")
    position = models.PositiveIntegerField()
    model = models.CharField(max_length=200)
    prompt = models.ForeignKey(
        PromptVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_variants"
    )
    params = models.JSONField(default=dict, blank=True)  # the panel's posted values, as strings
    graders = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["position", "pk"]

    def __str__(self) -> str:
        return f"variant {self.label}: {self.model}"

    @property
    def label(self) -> str:
        return VARIANT_LABELS[self.position] if self.position < len(VARIANT_LABELS) else str(self.position + 1)


class Run(models.Model):
    """One run of the grid, kept: who started it and when, live or batch, what its variants were (prompt version,
    model, parameters, graders: a snapshot, so later edits of the variants do not rewrite it) and how long it took.
    Its cells are its results; a later run makes its own, so nothing of this one changes when the grid runs again
    (the latest run's grades follow edits of the graders until a newer run exists: see services.regrade)."""

    LIVE, BATCH = "live", "batch"
    RUNNING, DONE, STOPPED, INTERRUPTED = "running", "done", "stopped", "interrupted"
    # A live run a draining process let go of with cells not yet sent: the next process to look takes it up
    # (evaluate/resume.py). Not finished: it goes on as RUNNING wherever it is taken up.
    RESUMABLE = "resumable"
    GOING = (RUNNING, RESUMABLE)

    shares = share_links()  # its share links: deleting it deletes them

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="runs")
    number = models.PositiveIntegerField()  # 1, 2, … per evaluation
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started = models.DateTimeField(default=timezone.now)
    ended = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=8, default=LIVE)
    status = models.CharField(max_length=16, default=RUNNING)
    # What was sent again ("all", "missing", "row", "column", "cell"); the other cells are the run before's, kept.
    scope = models.CharField(max_length=8, default="all")
    cells_run = models.PositiveIntegerField(default=0)
    wall_ms = models.PositiveIntegerField(null=True, blank=True)
    # [{"label", "variant", "model", "params", "prompt_version", "prompt_ref", "graders"}] as the run began.
    variants = models.JSONField(default=list, blank=True)
    batch = models.ForeignKey("batches.Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The dataset version its test cases were (None: typed, imported or edited since).
    dataset_version = models.ForeignKey(
        "datasets.DatasetVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    # A live run's claim (evaluate/resume.py): the process that runs it (lib/detached.WORKER_ID; "" when nobody
    # does) and when it last said so. A claim whose heartbeat is stale is taken over by another process.
    worker = models.CharField(max_length=100, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    # How it was started, so that a process taking it up sends the rest the same way.
    concurrency = models.PositiveSmallIntegerField(default=DEFAULT_CONCURRENCY)
    send_empty = models.BooleanField(default=False)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["evaluation", "number"], name="unique_run_number")]
        indexes = [models.Index(fields=["status"], name="run_status")]  # the resume scan looks for going runs

    def __str__(self) -> str:
        return f"run {self.number}"

    @property
    def finished(self) -> bool:
        return self.status not in self.GOING

    def prompt_versions(self) -> list[int]:
        return [v["prompt_version"] for v in self.variants if v.get("prompt_version")]


class Cell(models.Model):
    EMPTY, QUEUED, RUNNING, DONE, ERROR, STOPPED = "empty", "queued", "running", "done", "error", "stopped"
    SKIPPED = "skipped"  # its row leaves a variable empty; run only when the user says so
    ACTIVE = (QUEUED, RUNNING)

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="cells")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="cells")
    case = models.ForeignKey(TestCase, on_delete=models.CASCADE, related_name="cells")
    variant = models.ForeignKey(Variant, on_delete=models.CASCADE, related_name="cells")
    status = models.CharField(max_length=16, default=EMPTY)
    source = models.CharField(max_length=8, blank=True)  # "live" or "batch"
    output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True)
    completion_tokens = models.PositiveIntegerField(null=True)
    ttft_ms = models.PositiveIntegerField(null=True)
    latency_ms = models.PositiveIntegerField(null=True)
    grades = models.JSONField(default=dict, blank=True)
    heartbeat = models.DateTimeField(null=True)
    runs = models.PositiveIntegerField(default=0)  # how many times a run filled this cell
    # The prompt version the cell's last run sent (null: never run, or the version's prompt was deleted).
    version = models.ForeignKey(PromptVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["case__position", "variant__position"]
        constraints = [models.UniqueConstraint(fields=["run", "case", "variant"], name="unique_run_cell")]

    def __str__(self) -> str:
        return f"cell {self.case_id}x{self.variant_id}"

    @property
    def tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    @property
    def passed(self) -> bool | None:
        """All automatic graders passed (None: nothing graded)."""
        if not self.grades:
            return None
        return all(grade["pass"] for grade in self.grades.values())


MAX_COMMENT = 1000


class Rating(models.Model):
    """One person's judgement of one cell of a run: pass or fail, a score from 1 to 5, a comment (any of them).
    One per person per cell, edited in place; kept with the run's cell, so a later run does not touch it."""

    cell = models.ForeignKey(Cell, on_delete=models.CASCADE, related_name="ratings")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    passed = models.BooleanField(null=True, blank=True)
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    comment = models.CharField(max_length=MAX_COMMENT, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["cell", "rater"], name="one_rating_per_person"),
            models.CheckConstraint(
                condition=models.Q(score__isnull=True) | models.Q(score__gte=1, score__lte=5), name="rating_score_1_5"
            ),
        ]

    def __str__(self) -> str:
        return f"rating of {self.cell_id} by {self.rater_id}"

    @property
    def verdict(self) -> bool | None:
        """The person's pass or fail: as given, else read from the score (4 and 5 pass, as the judge's do)."""
        if self.passed is not None:
            return self.passed
        if self.score is not None:
            return self.score >= 4
        return None


def get_evaluation(request, pk) -> Evaluation:
    """An evaluation the user may see (their own, or their team's), or 404 for anyone else's."""
    return get_object_or_404(Evaluation.objects.for_user(request.user), pk=pk)


def get_editable(request, pk) -> Evaluation:
    """The user's own evaluation to edit or run; 404 for one they may not see, 403 (saying so) for a team's
    evaluation of another member's."""
    evaluation = get_evaluation(request, pk)
    if not evaluation.may_edit(request.user):
        raise Refused(
            f"Only its owner, {evaluation.owner.get_username()}, edits and runs this evaluation; "
            "team members see, compare, export and rate its runs."
        )
    return evaluation


class Comparison(models.Model):
    """Two runs of one evaluation compared (run B against run A), kept so that the comparison can be shared: its
    share links point here and are frozen as they are made (sharing.ComparisonKind)."""

    shares = share_links()  # its share links: deleting it (or either run) deletes them

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="comparisons")
    a = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    b = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["a", "b"], name="one_comparison_per_pair")]

    def __str__(self) -> str:
        return f"run {self.b.number} vs run {self.a.number}"
