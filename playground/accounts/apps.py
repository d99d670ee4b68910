from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "playground.accounts"

    def ready(self):
        from playground.accounts import signals  # noqa: F401
