from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "playground.chat"
