import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """Team, Membership and UsageRecord are the connections app's now (connections 0007, the same tables): the
    invites and the audit log point at its Team, and the teams app's state lets the three go. No row moves."""

    dependencies = [
        ("teams", "0005_usage_kind_is_any_purpose"),
        ("connections", "0007_policy_tables_owned_by_the_gate"),
        ("sharing", "0009_share_team_in_connections"),
        ("prompts", "0002_prompt_team_in_connections"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="invite",
                    name="team",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="invites", to="connections.team"
                    ),
                ),
                migrations.AlterField(
                    model_name="auditevent",
                    name="team",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="audit", to="connections.team"
                    ),
                ),
                migrations.DeleteModel(name="UsageRecord"),
                migrations.DeleteModel(name="Membership"),
                migrations.DeleteModel(name="Team"),
            ]
        )
    ]
