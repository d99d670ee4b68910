"""Compare: one question answered by up to four models (or one model with different parameters) at once.

Each column is an answer of its own (its own generation, usage, time to first token and speed), all siblings under
the same question and tagged with one comparison id; the first is selected. "Continue with this one" (pick) selects
a column and closes the comparison: the others stay as siblings (‹ 2/4 ›).
"""

import asyncio
import uuid

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from playground import inputs
from playground.catalog.params import CHAT_PARAMS, params_form
from playground.chat import branches
from playground.chat.forms import MAX_ATTACHMENTS, apply_attachment_options, clean_attachments
from playground.chat.models import Conversation, Message
from playground.chat.services.branches import Refused, content_of, message_of
from playground.chat.services.request import build_request, chat_models, connection_for, pick_model
from playground.chat.services.turns import (
    Turn,
    launcher,
    open_turns,
    save_attachments,
    start_turn,
    store_uploads,
    undone_on_failure,
)
from playground.prompts.compiling import request_values
from playground.prompts.models import PromptVersion

MAX_COLUMNS = 4
# A column's parameters are the panel's own fields (catalog/params.py), less the two a column cannot change.
COLUMN_PARAMS = [param for param in CHAT_PARAMS if param.name not in ("stream", "n")]


def fields_of(get, index: int) -> dict:
    """The panel fields a form or a socket frame posted for column `index` (`c<index>-<name>`), set ones only."""
    fields = {}
    for param in COLUMN_PARAMS:
        value = get(f"c{index}-{param.name}")
        if isinstance(value, str) and value.strip():
            fields[param.name] = value
    return fields


def column_params(model, fields: dict, index: int) -> dict:
    """A column's fields checked against its model's bounds, as request values; Refused names the field."""
    form = params_form(model, COLUMN_PARAMS, fields, placeholders=True)
    if not form.is_valid():
        problems = " ".join(str(error) for errors in form.errors.values() for error in errors)
        raise Refused(f"columns[{index}]: {problems}")
    return form.request_values()


def columns_of(args: dict) -> list[dict]:
    """The columns as [{"model": id, "params": {...}, "fields": {...}}], 2 to 4 of them: `fields` are the panel's
    raw values (checked against the column's model when it is known); `params` may also come as JSON text."""
    columns = args.get("columns")
    if not isinstance(columns, list) or not 2 <= len(columns) <= MAX_COLUMNS:
        raise Refused(f"columns: choose 2 to {MAX_COLUMNS} models to compare.")
    cleaned = []
    for index, column in enumerate(columns, 1):
        column = column if isinstance(column, dict) else {}
        model = column.get("model") or ""
        version = column.get("version") or None
        if version is not None and not str(version).isdigit():
            raise Refused(f"columns[{index}].version: choose a version of a prompt you can use.")
        if not isinstance(model, str) or not (model.strip() or version):
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
        fields = column.get("fields") or {}
        if not isinstance(fields, dict):
            raise Refused(f"columns[{index}].fields: expected the panel's fields by name.")
        cleaned.append({"model": model.strip(), "params": params, "fields": fields, "version": version})
    return cleaned


def column_version(conversation: Conversation, column: dict, index: int):
    """The library prompt version a column runs as (one the conversation's owner can use), or None."""
    if not column.get("version"):
        return None
    found = PromptVersion.objects.for_user(conversation.owner).filter(pk=int(column["version"])).first()
    if found is None:
        raise Refused(f"columns[{index}].version: choose a version of a prompt you can use.")
    return found


def with_version(body: dict, version, chosen: dict) -> None:
    """The version in place of the conversation's system prompt and parameters: its system and few-shot turns
    before the thread, its parameters and tools (the column's own fields still win); the question stays."""
    turns = [m for m in body["messages"] if m["role"] != "system"]
    head = [{"role": "system", "content": version.system}] if version.system.strip() else []
    head += [{"role": shot["role"], "content": shot["content"]} for shot in version.shots]
    body["messages"] = head + turns
    kept = {k: v for k, v in body.items() if k in ("model", "messages", "stream", "stream_options")}
    values = {k: v for k, v in request_values(version).items() if k not in ("stream", "stream_options", "n")}
    body.clear()
    body.update({**kept, **values, **chosen})


def _parent(path: list[Message], content: str, uploads) -> int | None:
    """Where the comparison's answers go: after a new question, else under the thread's last question."""
    if content:
        return path[-1].pk if path else None
    if path and path[-1].role == "user":
        parent = path[-1].pk  # answer the question that ends the thread
    elif path and path[-1].role == "assistant" and path[-1].parent_id:
        parent = path[-1].parent_id  # answer the last answer's question again
    else:
        raise Refused("content: write the question to compare the models on.")
    if uploads:
        raise Refused("attachments: write the question they go with (asking the last question again sends its own).")
    return parent


def _requests(conversation: Conversation, connection, history, content: str, columns: list[dict], uploads) -> tuple:
    """One request per column, each checked against its model, and the prompt version each runs as (or None);
    Refused names the column."""
    models = chat_models(connection)
    requests, versions = [], []
    for index, column in enumerate(columns, 1):
        version = column_version(conversation, column, index)
        versions.append(version)
        model = pick_model(models, column["model"] or (version.model_id if version else ""))
        if model is None:
            raise Refused(f"columns[{index}].model: {column['model']} is not a chat model of this connection.")
        chosen = column_params(model, column.get("fields") or {}, index)
        params = {**conversation.params, **column["params"], **chosen}
        # Each column gets the composer's attachments its model takes; build_request leaves the others out.
        request = build_request(
            conversation,
            model,
            history,
            next_user=content or None,
            next_attachments=list(uploads),
            params=params,
            connection=connection,
        )
        if request.errors:
            raise Refused(f"columns[{index}]: {' '.join(request.errors)}")
        if version is not None:
            with_version(request.body, version, chosen)
        requests.append(request)
    return requests, versions


def _write(conversation: Conversation, parent, content: str, uploads, stored, requests, versions) -> tuple:
    """The question (when new) and one answer placeholder per column, siblings tagged with one comparison id."""
    group = uuid.uuid4().hex
    user_message = None
    if content:
        user_message = branches.add(conversation, parent, role="user", content=content)
        save_attachments(user_message, list(uploads), stored)
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
            prompt_version=versions[index],
        )
        for index, request in enumerate(requests)
    ]
    return user_message, answers


def _prepare(conversation: Conversation, content: str, columns: list[dict], launch, uploads=()) -> list[Turn]:
    connection = connection_for(conversation)
    if connection is None:
        raise Refused("connection: add a connection (a provider's base URL and API key) first.")
    rows = list(conversation.messages.prefetch_related("attachments"))
    parent = _parent(branches.path_of(rows, annotated=False), content, uploads)
    history = [m for m in branches.ancestors(rows, parent) if m.status != Message.STREAMING]
    requests, versions = _requests(conversation, connection, history, content, columns, uploads)
    # One pass per column, through the turns' one door: each is a request of its own (its reservation, its slot
    # or its wait for one, its usage), and together they count against the user's answers at once.
    launched = open_turns(conversation, connection, requests, launch)
    with undone_on_failure(launched) as stored:
        if content:
            stored += store_uploads(conversation, list(uploads))
        with transaction.atomic():
            user_message, answers = _write(conversation, parent, content, uploads, stored, requests, versions)
    turns = []
    for one, answer, request in zip(launched, answers, requests, strict=True):
        if one.generation is not None:
            one.generation.bind_threadsafe(answer)
        turns.append(
            Turn(
                conversation, user_message, answer, one.endpoint, request, generation=one.generation, limits=one.limits
            )
        )
    return turns


async def start(conversation: Conversation, args: dict) -> list[Turn]:
    """Start a comparison: `content` (a new question; empty: the thread's last question again), `columns`, and
    `attachments` (the composer's files, cleaned: chat.forms.clean_attachments) sent to each column that takes them."""
    content = content_of(args, required=False).strip()
    columns = columns_of(args)
    launch = launcher(asyncio.get_running_loop())
    uploads = args.get("attachments") or []
    turns = await sync_to_async(_prepare)(conversation, content, columns, launch, uploads)
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


async def pick(conversation: Conversation, args: dict) -> Message:
    """Continue with this column: it becomes the thread's answer; the other columns stay as its siblings."""
    return await sync_to_async(_pick)(conversation, args)


def left_out(turns: list[Turn]) -> str:
    """In words, which columns do not get (some of) the attachments, and why."""
    notes = []
    for index, turn in enumerate(turns, 1):
        for note in turn.request.notes:
            if "attachment" in note:
                notes.append(f"Column {index}: {note}")
    return " ".join(notes)


def clean_uploads(conversation: Conversation, columns: list[dict], files: list, options: str = "") -> list:
    """The composer's files for a comparison: each must suit at least one column's model (the others are told it
    is left out); a file no column takes, or over the limits, is refused naming it."""
    if not files:
        return []
    if len(files) > MAX_ATTACHMENTS:
        raise Refused(f"attachments: at most {MAX_ATTACHMENTS} files per message (got {len(files)}).")
    connection = connection_for(conversation)
    models = chat_models(connection) if connection else []
    chosen = [pick_model(models, column.get("model", "")) for column in columns]
    chosen = [model for model in dict.fromkeys(chosen) if model is not None]
    uploads, errors = [], []
    for upload in files:
        problem = None
        for model in chosen or [None]:
            upload.seek(0)
            try:
                uploads.extend(clean_attachments([upload], model))
                problem = None
                break
            except ValidationError as exc:
                problem = problem or exc.messages[0]
        if problem:
            errors.append(problem)
    if errors:
        raise Refused(" ".join(errors))
    try:
        return apply_attachment_options(uploads, options)
    except ValidationError as exc:
        raise Refused(" ".join(exc.messages)) from None
