"""ConnectionLoss now lives in chat (its table renamed by chat's 0006); teams forgets it."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0003_team_monthly_token_budget"),
        ("chat", "0006_connectionloss"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[], state_operations=[migrations.DeleteModel("ConnectionLoss")]
        )
    ]
