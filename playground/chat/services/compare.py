"""Compare: one question answered by up to four models (or one model with different parameters) at once.

Each column is an answer of its own (its own generation, usage, time to first token and speed), all siblings under
the same question and tagged with one comparison id; the first is selected. "Continue with this one" (pick) selects
a column and closes the comparison: the others stay as siblings (‹ 2/4 ›).
"""

import asyncio
import uuid

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from playground import inputs
from playground.chat import branches
from playground.chat.models import Conversation, Message
from playground.chat.services.branches import Refused, content_of, message_of, own
from playground.chat.services.limits import check_capacity, limits_of
from playground.chat.services.request import build_request, chat_models, connection_for, pick_model
from playground.chat.services.turns import Turn, launcher, start_turn

MAX_COLUMNS = 4


def columns_of(args: dict) -> list[dict]:
    """The columns as [{"model": id, "params": {...}}], 2 to 4 of them; params may come as JSON text."""
    columns = args.get("columns")
    if not isinstance(columns, list) or not 2 <= len(columns) <= MAX_COLUMNS:
        raise Refused(f"columns: choose 2 to {MAX_COLUMNS} models to compare.")
    cleaned = []
    for index, column in enumerate(columns, 1):
        column = column if isinstance(column, dict) else {}
        model = column.get("model")
        if not isinstance(model, str) or not model.strip():
            raise Refused(f"columns[{index}].model: choose a model.")
        params = column.get("params") or {}
        if isinstance(params, str):
            try:
                params = inputs.loads(params, field=f"columns[{index}].params") if params.strip() else {}
            except inputs.InputError as exc:
                raise Refused(f"{exc}.") from None
            except ValueError as exc:
                raise Refused(f"columns[{index}].params: not valid JSON ({exc}).") from None
        if not isinstance(params, dict):
            raise Refused(f'columns[{index}].params: expected a JSON object such as {{"temperature": 0.2}}.')
        cleaned.append({"model": model.strip(), "params": params})
    return cleaned


def _prepare(conversation: Conversation, content: str, columns: list[dict], launch) -> list[Turn]:
    connection = connection_for(conversation)
    if connection is None:
        raise Refused("connection: add a connection (a provider's base URL and API key) first.")
    models = chat_models(connection)
    rows = list(conversation.messages.prefetch_related("attachments"))
    path = branches.path_of(rows, annotated=False)
    if content:
        parent = path[-1].pk if path else None
    elif path and path[-1].role == "user":
        parent = path[-1].pk  # answer the question that ends the thread
    elif path and path[-1].role == "assistant" and path[-1].parent_id:
        parent = path[-1].parent_id  # answer the last answer's question again
    else:
        raise Refused("content: write the question to compare the models on.")
    history = [m for m in branches.ancestors(rows, parent) if m.status != Message.STREAMING]

    requests = []
    for index, column in enumerate(columns, 1):
        model = pick_model(models, column["model"])
        if model is None:
            raise Refused(f"columns[{index}].model: {column['model']} is not a chat model of this connection.")
        params = {**conversation.params, **column["params"]}
        request = build_request(
            conversation, model, history, next_user=content or None, params=params, connection=connection
        )
        if request.errors:
            raise Refused(f"columns[{index}]: {' '.join(request.errors)}")
        requests.append(request)

    endpoint, limits = connection.endpoint(), limits_of(connection)
    generations = [launch(endpoint, request.body, limits) for request in requests]
    group = uuid.uuid4().hex
    try:
        with transaction.atomic():
            user_message = None
            if content:
                user_message = branches.add(conversation, parent, role="user", content=content)
                conversation.title_from(content)
                parent = user_message.pk
            conversation.save()
            answers = [
                branches.add(
                    conversation,
                    parent,
                    selected=index == 0,
                    role="assistant",
                    status=Message.STREAMING,
                    model_id=request.body["model"],
                    params={k: v for k, v in request.body.items() if k not in ("model", "messages")},
                    heartbeat=timezone.now(),
                    compare=group,
                )
                for index, request in enumerate(requests)
            ]
    except BaseException:
        for generation in generations:
            generation.abort_threadsafe()
        raise
    for generation, answer in zip(generations, answers, strict=True):
        generation.bind_threadsafe(answer)
    return [
        Turn(conversation, user_message, answer, endpoint, request, generation=generation, limits=limits)
        for answer, request, generation in zip(answers, requests, generations, strict=True)
    ]


async def start(conversation: Conversation, user, args: dict) -> list[Turn]:
    """Start a comparison: `content` (a new question; empty: the thread's last question again) and `columns`."""
    own(conversation, user)
    content = content_of(args, required=False).strip()
    columns = columns_of(args)
    await sync_to_async(check_capacity)(user, len(columns))
    launch = launcher(asyncio.get_running_loop())
    turns = await sync_to_async(_prepare)(conversation, content, columns, launch)
    await asyncio.gather(*(start_turn(turn) for turn in turns))
    return turns


def _pick(conversation: Conversation, args: dict) -> Message:
    message = message_of(conversation, args)
    if not message.compare:
        raise Refused("message_id: this answer is not a column of an open comparison.")
    with transaction.atomic():
        branches.select(conversation, message.pk)
        branches.siblings(conversation, message.parent_id).filter(compare=message.compare).update(compare="")
    message.selected, message.compare = True, ""
    return message


async def pick(conversation: Conversation, user, args: dict) -> Message:
    """Continue with this column: it becomes the thread's answer; the other columns stay as its siblings."""
    own(conversation, user)
    return await sync_to_async(_pick)(conversation, args)
