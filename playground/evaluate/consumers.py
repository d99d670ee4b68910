"""The evaluation websocket: run and stop requests in, cell states and deltas out (the work is in runner)."""

from channels.db import database_sync_to_async

from playground.evaluate import runner, scopes
from playground.evaluate.forms import RunForm
from playground.evaluate.models import Evaluation
from playground.evaluate.services import EvaluationError
from playground.lib.frames import FrameConsumer, frame_id
from playground.lib.sockets import AccountSockets

SCOPES = ("all", "missing", "row", "column", "cell", "judge")


class EvaluateConsumer(AccountSockets, FrameConsumer):
    group = None

    async def connect(self):
        self.pk = self.scope["url_route"]["kwargs"]["pk"]
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.accept()
            await self.close(code=4403)
            return
        self.evaluation = await self._evaluation(user)
        if self.evaluation is None:
            await self.accept()
            await self.close(code=4404)
            return
        self.group = runner.group(self.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    @classmethod
    def frame_kinds(cls) -> list[str]:
        return ["run", "stop"]

    async def receive_json(self, content, **kwargs):
        if not self.group:
            return
        if content.get("type") in ("run", "stop") and not self.evaluation.may_edit(self.scope["user"]):
            echo = {"id": frame_id(content)} if frame_id(content) else {}
            message = "Only this evaluation's owner runs and stops it; team members watch and rate its runs."
            await self.send_json({"type": "error", "message": message, **echo})
            return
        if content.get("type") == "stop":
            await database_sync_to_async(runner.request_stop)(self.evaluation)
        elif content.get("type") == "run":
            try:
                await self._start(content)
            except EvaluationError as exc:
                echo = {"id": frame_id(content)} if frame_id(content) else {}
                await self.send_json({"type": "error", "message": str(exc), **echo})

    async def _start(self, content: dict) -> None:
        form = RunForm({"concurrency": content.get("concurrency", 4)})
        if not form.is_valid():
            raise EvaluationError(form.errors["concurrency"][0])
        scope = content.get("scope")
        if scope not in SCOPES:
            raise EvaluationError(f"scope: choose one of {', '.join(SCOPES)}.")
        try:
            target = int(content.get("target") or 0)
        except (TypeError, ValueError):
            raise EvaluationError("target: must be a row, column or cell id.") from None
        evaluation = await self._evaluation(self.scope["user"])
        if evaluation is None:
            raise EvaluationError("This evaluation no longer exists.")
        cells = await database_sync_to_async(scopes.select_cells)(evaluation, scope, target)
        if scope == "judge" and not cells:
            raise EvaluationError("judge: every done answer already has a verdict under the present rubric.")
        send_empty = content.get("send_empty") is True
        concurrency = form.cleaned_data["concurrency"]
        # Kept on the evaluation: the page starts on it after a reload.
        await Evaluation.objects.filter(pk=evaluation.pk).aupdate(concurrency=concurrency)
        await runner.start(
            evaluation,
            cells,
            concurrency,
            user=self.scope["user"],
            scope=scope,
            send_empty=send_empty,
            judge_only=scope == "judge",
        )

    # -- events from the channel layer

    async def run_start(self, event):
        await self.send_json({**event, "type": "start"})

    async def run_summary(self, event):
        await self.send_json({**event, "type": "summary"})

    async def run_end(self, event):
        await self.send_json({**event, "type": "end"})

    async def cell_delta(self, event):
        await self.send_json({**event, "type": "delta"})

    async def cell_state(self, event):
        await self.send_json({**event, "type": "cell"})

    @database_sync_to_async
    def _evaluation(self, user) -> Evaluation | None:
        return Evaluation.objects.for_user(user).filter(pk=self.pk).first()
