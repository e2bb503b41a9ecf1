"""A question knows who waits on it (the hook that asked, `?wait` polls), in the
database so that every server process sees it, and when the last of them hung up."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('todoweb', '0016_revision_session_index_in_the_unique_one'),
    ]

    operations = [
        migrations.AddField(
            model_name='question',
            name='abandoned_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='question',
            name='waiters',
            field=models.PositiveIntegerField(default=0),
        ),
    ]
