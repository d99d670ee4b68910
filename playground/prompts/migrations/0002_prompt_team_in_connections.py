import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """A team prompt's team is the connections app's Team now (the same table, teams_team): the state alone changes."""

    dependencies = [
        ("prompts", "0001_prompts_versions_labels_tokens"),
        ("connections", "0007_policy_tables_owned_by_the_gate"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="prompt",
                    name="team",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="prompts",
                        to="connections.team",
                    ),
                ),
            ]
        )
    ]
