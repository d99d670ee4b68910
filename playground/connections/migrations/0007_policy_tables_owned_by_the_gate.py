import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """The tables the gate reads and writes (team, membership, ledger) become the connections app's: the models
    move here and keep their tables (teams_team, teams_membership, teams_usagerecord), so no row is copied and
    nothing is lost; the teams app keeps its invites and audit log, which point down at them."""

    dependencies = [
        ("connections", "0006_gate_leases_and_key_origin"),
        ("teams", "0005_usage_kind_is_any_purpose"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    state_operations = [
        migrations.CreateModel(
            name="Team",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100)),
                (
                    "monthly_token_budget",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Tokens (prompt + completion) all members together may use per calendar month.",
                        null=True,
                    ),
                ),
                ("created", models.DateTimeField(auto_now_add=True)),
            ],
            options={"db_table": "teams_team", "ordering": ["name", "pk"]},
        ),
        migrations.CreateModel(
            name="Membership",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "role",
                    models.CharField(
                        choices=[("owner", "Owner"), ("admin", "Admin"), ("member", "Member")],
                        default="member",
                        max_length=8,
                    ),
                ),
                (
                    "monthly_token_budget",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Tokens (prompt + completion) this member may use per calendar month.",
                        null=True,
                    ),
                ),
                ("joined", models.DateTimeField(auto_now_add=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="team_memberships",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="memberships", to="connections.team"
                    ),
                ),
            ],
            options={
                "db_table": "teams_membership",
                "ordering": ["joined", "pk"],
                "constraints": [models.UniqueConstraint(fields=("team", "user"), name="one_membership_per_team")],
            },
        ),
        migrations.CreateModel(
            name="UsageRecord",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("username", models.CharField(max_length=150)),
                (
                    "kind",
                    models.CharField(
                        help_text="The purpose the gate was opened for (chat, rerank, ...).", max_length=16
                    ),
                ),
                ("model", models.CharField(blank=True, max_length=200)),
                ("prompt_tokens", models.PositiveIntegerField(default=0)),
                ("completion_tokens", models.PositiveIntegerField(default=0)),
                ("reasoning_tokens", models.PositiveIntegerField(default=0)),
                ("audio_characters", models.PositiveIntegerField(default=0)),
                ("documents", models.PositiveIntegerField(default=0)),
                ("status", models.CharField(max_length=16)),
                ("created", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                (
                    "connection",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="connections.connection",
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="usage", to="connections.team"
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "db_table": "teams_usagerecord",
                "ordering": ["-created", "-pk"],
                "indexes": [models.Index(fields=["team", "user", "created"], name="teams_usage_team_id_11cd61_idx")],
            },
        ),
        migrations.AlterField(
            model_name="connection",
            name="team",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="connections",
                to="connections.team",
            ),
        ),
        migrations.AlterField(
            model_name="lease",
            name="team",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="connections.team",
            ),
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
