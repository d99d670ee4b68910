from django.apps import AppConfig


class SpeechConfig(AppConfig):
    name = "playground.speech"
