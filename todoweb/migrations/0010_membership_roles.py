"""Members get a role. The plain many-to-many's table becomes the Membership model's
(no data moves); every existing member becomes an editor, as they could all act
before, and staff among them admins."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def staff_members_administer(apps, schema_editor):
    Membership = apps.get_model("todoweb", "Membership")
    Membership.objects.filter(user__is_staff=True).update(role="admin")


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("todoweb", "0009_webhooks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Membership",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="memberships",
                                to="todoweb.project",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="todoweb_memberships",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "todoweb_project_members",
                        "ordering": ["project", "user"],
                        "unique_together": {("project", "user")},
                    },
                ),
                migrations.AlterField(
                    model_name="project",
                    name="members",
                    field=models.ManyToManyField(
                        blank=True,
                        related_name="todoweb_projects",
                        through="todoweb.Membership",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            database_operations=[],
        ),
        migrations.AddField(
            model_name="membership",
            name="role",
            field=models.CharField(
                choices=[
                    ("viewer", "viewer: watches"),
                    ("editor", "editor: watches and acts on sessions"),
                    ("admin", "admin: also runs the project"),
                ],
                default="editor",
                max_length=6,
            ),
        ),
        migrations.RunPython(staff_members_administer, migrations.RunPython.noop),
    ]
