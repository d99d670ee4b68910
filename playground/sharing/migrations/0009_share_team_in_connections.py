import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """A team share's team is the connections app's Team now (the same table, teams_team): the state alone changes."""

    dependencies = [
        ("sharing", "0008_share_source_only"),
        ("connections", "0007_policy_tables_owned_by_the_gate"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="share",
                    name="team",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="shares",
                        to="connections.team",
                    ),
                ),
            ]
        )
    ]
