from django.urls import path

from playground.chat import branch_views, panel_views, prompt_views, tool_views, views

app_name = "chat"

urlpatterns = [
    path("", views.index, name="index"),
    path("c/new/", views.create, name="create"),
    path("c/search/", views.search, name="search"),
    path("c/<int:pk>/", views.conversation, name="conversation"),
    path("c/<int:pk>/rename/", views.rename, name="rename"),
    path("c/<int:pk>/duplicate/", views.duplicate, name="duplicate"),
    path("c/<int:pk>/delete/", views.delete, name="delete"),
    path("c/<int:pk>/send/", views.send, name="send"),
    path("c/<int:pk>/settings/", panel_views.settings, name="settings"),
    path("c/<int:pk>/panel/", panel_views.panel, name="panel"),
    path("c/<int:pk>/request/", panel_views.request_preview, name="request_preview"),
    path("c/<int:pk>/messages/<int:mid>/stop/", views.stop, name="stop"),
    path("c/<int:pk>/messages/<int:mid>/retry/", views.retry, name="retry"),
    path("c/<int:pk>/messages/<int:mid>/tool-results/", tool_views.tool_results, name="tool_results"),
    path("c/<int:pk>/tools/copy/", tool_views.copy_tools, name="copy_tools"),
    path("c/start/picker/", tool_views.start_picker, name="start_picker"),
    path("c/<int:pk>/messages/<int:mid>/choose/<int:number>/", branch_views.choose, name="choose"),
    path("c/<int:pk>/messages/<int:mid>/edit/", branch_views.edit, name="edit"),
    path("c/<int:pk>/messages/<int:mid>/regenerate/", branch_views.regenerate, name="regenerate"),
    path("c/<int:pk>/messages/<int:mid>/switch/", branch_views.switch, name="switch"),
    path("c/<int:pk>/messages/<int:mid>/delete/", branch_views.delete_message, name="delete_message"),
    path("c/<int:pk>/messages/<int:mid>/pick/", branch_views.pick, name="pick"),
    path("c/<int:pk>/insert/", branch_views.insert, name="insert"),
    path("c/<int:pk>/compare/", branch_views.compare, name="compare"),
    path("c/from-prompt/<int:vid>/", prompt_views.from_prompt, name="from-prompt"),
    path("c/<int:pk>/save-prompt/", prompt_views.save_prompt, name="save-prompt"),
    path("attachments/<int:pk>/", views.attachment, name="attachment"),
]
