"""Routes of the local inference API, mounted at /local/v1 (see ../shared/spec/inference-api.md)."""

from django.urls import path, re_path

from playground.localapi.views import batches, chat, meta, rerank, speech

app_name = "localapi"

urlpatterns = [
    path("models", meta.models, name="models"),
    path("openapi.json", meta.openapi, name="openapi"),
    path("debug/streams", meta.streams, name="streams"),
    path("chat/completions", chat.completions, name="chat-completions"),
    path("rerank", rerank.rerank, name="rerank"),
    path("audio/speech", speech.speech, name="speech"),
    path("audio/voice/list", speech.voice_list, name="voice-list"),
    path("uploads/audio/voice", speech.voice_upload, name="voice-upload"),
    path("audio/voice/deletions", speech.voice_delete, name="voice-delete"),
    path("files", batches.files, name="files"),
    path("files/<str:file_id>", batches.file_detail, name="file"),
    path("files/<str:file_id>/content", batches.file_content, name="file-content"),
    path("batches", batches.batches, name="batches"),
    path("batches/<str:batch_id>", batches.batch_detail, name="batch"),
    path("batches/<str:batch_id>/cancel", batches.batch_cancel, name="batch-cancel"),
    re_path(r"^.*$", meta.not_found, name="not-found"),
]
