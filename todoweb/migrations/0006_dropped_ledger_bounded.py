from django.db import migrations, models

# plan.DROPPED_KEPT when this migration was written.
DROPPED_KEPT = 20


def bound_the_ledgers(apps, schema_editor):
    """Each revision keeps the steps it dropped itself, the newest few of the ledger and
    its length (it used to carry the whole ledger)."""
    Revision = apps.get_model("todoweb", "Revision")
    changed = []
    rows = Revision.objects.exclude(dropped=[]).only("pk", "number", "dropped").order_by("pk")
    for revision in rows.iterator(chunk_size=500):
        ledger = revision.dropped
        revision.dropped_here = [step for step in ledger if step.get("dropped_in") == revision.number]
        revision.dropped_count = len(ledger)
        revision.dropped = ledger[-DROPPED_KEPT:]
        changed.append(revision)
        if len(changed) == 500:
            Revision.objects.bulk_update(changed, ["dropped", "dropped_count", "dropped_here"])
            changed = []
    Revision.objects.bulk_update(changed, ["dropped", "dropped_count", "dropped_here"])


class Migration(migrations.Migration):
    dependencies = [
        ("todoweb", "0005_revoke_share_links_of_archived_sessions"),
    ]

    operations = [
        migrations.AddField(
            model_name="revision",
            name="dropped_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="revision",
            name="dropped_here",
            field=models.JSONField(default=list),
        ),
        migrations.RunPython(bound_the_ledgers, migrations.RunPython.noop),
    ]
