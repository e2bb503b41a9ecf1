# The step rows, filled from each session's last revision.

from datetime import datetime

import django.db.models.deletion
from django.db import migrations, models

BATCH = 500


def moment(text):
    return datetime.fromisoformat(text) if text else None


def rows_from_last_revisions(apps, schema_editor):
    """Each session's current plan as rows, from its last revision (a batch of sessions at a time)."""
    Session = apps.get_model("todoweb", "Session")
    Revision = apps.get_model("todoweb", "Revision")
    Step = apps.get_model("todoweb", "Step")
    last = 0
    while True:
        batch = list(
            Session.objects.filter(pk__gt=last, revision__gt=0).order_by("pk").values_list("pk", "revision")[:BATCH]
        )
        if not batch:
            return
        last = batch[-1][0]
        wanted = {pk: number for pk, number in batch}
        revisions = Revision.objects.filter(session_id__in=wanted, number__in=set(wanted.values()))
        rows = []
        for session_id, number, todos, created_at in revisions.values_list("session_id", "number", "todos", "created_at"):
            if wanted[session_id] != number:
                continue
            for step in todos or []:
                rows.append(
                    Step(
                        session_id=session_id,
                        step_id=step["id"],
                        position=step["position"],
                        content=step["content"],
                        active_form=step.get("active_form") or "",
                        notes=step.get("notes") or "",
                        status=step["status"],
                        priority=step.get("priority") or "",
                        owner=step.get("owner") or "",
                        blocked_by=step.get("blocked_by") or [],
                        first_seen_at=moment(step["first_seen_at"]),
                        started_at=moment(step.get("started_at")),
                        completed_at=moment(step.get("completed_at")),
                        duration_s=step.get("duration_s"),
                        reopened=step.get("reopened") or 0,
                        updated_at=created_at,
                    )
                )
        Step.objects.bulk_create(rows, batch_size=1000)


class Migration(migrations.Migration):

    dependencies = [
        ('todoweb', '0017_question_abandoned'),
    ]

    operations = [
        migrations.CreateModel(
            name='Step',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('step_id', models.CharField(max_length=500)),
                ('position', models.PositiveIntegerField()),
                ('content', models.TextField()),
                ('active_form', models.TextField(blank=True)),
                ('notes', models.TextField(blank=True)),
                ('status', models.CharField(max_length=11)),
                ('priority', models.TextField(blank=True)),
                ('owner', models.CharField(blank=True, max_length=200)),
                ('blocked_by', models.JSONField(blank=True, default=list)),
                ('first_seen_at', models.DateTimeField()),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('duration_s', models.FloatField(blank=True, null=True)),
                ('reopened', models.PositiveIntegerField(default=0)),
                ('updated_at', models.DateTimeField()),
                ('session', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='steps', to='todoweb.session')),
            ],
            options={
                'ordering': ['session', 'position'],
                'indexes': [models.Index(fields=['status', '-updated_at'], name='step_status_updated'), models.Index(fields=['-updated_at'], name='step_updated')],
                'constraints': [models.UniqueConstraint(fields=('session', 'step_id'), name='step_id_unique_in_session')],
            },
        ),
        migrations.RunPython(rows_from_last_revisions, migrations.RunPython.noop),
    ]
