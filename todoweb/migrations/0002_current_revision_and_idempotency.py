"""The current plan is the session's last revision (no Step rows), and a call's
idempotency key and first answer live on the revision it wrote (no IdempotencyRecord)."""

from django.db import migrations, models


def forwards(apps, schema_editor):
    Revision = apps.get_model("todoweb", "Revision")
    IdempotencyRecord = apps.get_model("todoweb", "IdempotencyRecord")
    for record in IdempotencyRecord.objects.iterator():
        number = (record.response.get("data") or {}).get("revision")
        Revision.objects.filter(session_id=record.session_id, number=number).update(
            idempotency_key=record.key,
            fingerprint=record.fingerprint,
            response={k: v for k, v in record.response.items() if k != "reply"},
        )


class Migration(migrations.Migration):
    dependencies = [
        ("todoweb", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="revision",
            name="fingerprint",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="revision",
            name="idempotency_key",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name="revision",
            name="response",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="revision",
            constraint=models.UniqueConstraint(fields=("session", "idempotency_key"), name="revision_idempotency_key_unique"),
        ),
        migrations.DeleteModel(name="IdempotencyRecord"),
        migrations.DeleteModel(name="Step"),
    ]
