"""A revision's plan, its call's input and its kept first answer, zlib-compressed
(fields.py): each is copied into a compressed column, which then takes the old one's
name."""

from django.db import migrations

import todoweb.fields

FIELDS = ["todos", "raw_input", "response"]
BATCH = 500


def copy(apps, source: str, target: str) -> None:
    Revision = apps.get_model("todoweb", "Revision")
    rows = Revision.objects.order_by("pk").values_list("pk", *[name + source for name in FIELDS])
    pending = []
    for pk, *values in rows.iterator(chunk_size=BATCH):
        pending.append(Revision(pk=pk, **{name + target: value for name, value in zip(FIELDS, values, strict=True)}))
        if len(pending) == BATCH:
            Revision.objects.bulk_update(pending, [name + target for name in FIELDS])
            pending = []
    if pending:
        Revision.objects.bulk_update(pending, [name + target for name in FIELDS])


def compress(apps, schema_editor):
    copy(apps, "", "_z")


def expand(apps, schema_editor):
    copy(apps, "_z", "")


class Migration(migrations.Migration):
    dependencies = [
        ("todoweb", "0013_webhook_delivery_unqueued"),
    ]

    operations = [
        migrations.AddField(
            model_name="revision", name="todos_z", field=todoweb.fields.CompressedJSONField(default=list)
        ),
        migrations.AddField(
            model_name="revision", name="raw_input_z", field=todoweb.fields.CompressedJSONField(null=True)
        ),
        migrations.AddField(
            model_name="revision",
            name="response_z",
            field=todoweb.fields.CompressedJSONField(blank=True, null=True),
        ),
        migrations.RunPython(compress, expand),
        *[migrations.RemoveField(model_name="revision", name=name) for name in FIELDS],
        *[migrations.RenameField(model_name="revision", old_name=name + "_z", new_name=name) for name in FIELDS],
    ]
