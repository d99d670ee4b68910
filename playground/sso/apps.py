from django.apps import AppConfig


class SsoConfig(AppConfig):
    name = "playground.sso"
    verbose_name = "Single sign-on"

    def ready(self):
        from playground.sso import checks  # noqa: F401  (the settings are checked at startup)
