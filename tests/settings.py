"""The test suite's settings: the project's own, with a fast password hasher.

pytest-django exports DJANGO_SETTINGS_MODULE, so the daphne and manage.py processes that tests start use these
too. Django's default hasher spends about 0.3 s of CPU on each password by design; the suite creates a user or
two in nearly every test, which made hashing alone a large share of its run time.
"""

from playground.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
