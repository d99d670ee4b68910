from django.apps import AppConfig


class KindAppConfig(AppConfig):
    name = "tests.sharing.kindapp"
    label = "kindapp"
