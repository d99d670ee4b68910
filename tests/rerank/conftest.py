import pytest
from django.core.management import call_command


@pytest.fixture
def catalog(db):
    call_command("seed_catalog", verbosity=0)
