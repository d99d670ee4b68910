"""ConnectionLoss moves from teams to chat (teams knows no feature): the table is renamed, its rows kept."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0005_message_tree_links"),
        ("teams", "0003_team_monthly_token_budget"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE teams_connectionloss RENAME TO chat_connectionloss",
                    reverse_sql="ALTER TABLE chat_connectionloss RENAME TO teams_connectionloss",
                )
            ],
            state_operations=[
                migrations.CreateModel(
                    name="ConnectionLoss",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("connection_name", models.CharField(max_length=200)),
                        ("team_name", models.CharField(max_length=100)),
                        ("reason", models.CharField(default="deleted", max_length=16)),
                        ("created", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "conversation",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="chat.conversation"
                            ),
                        ),
                    ],
                )
            ],
        )
    ]
