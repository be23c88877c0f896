"""Issue 33, F12: display names are kept as one line of visible text (``comments.names``), at
every way in from now on; this cleans the names written before. A name with a line break in it
failed every notification email about its author, and bidi overrides made names read as others.
Only the names that change are written, in batches; a name with nothing visible left
becomes blank, which shows as the username, as every blank name does. Backwards it changes
nothing (the old names are not kept)."""

from django.db import migrations

from comments.names import clean_display_name

BATCH = 1000


def display_names_clean(apps, schema_editor):
    User = apps.get_model("comments", "User")
    names = User.objects.exclude(display_name="").order_by("pk").values_list("pk", "display_name")
    # Read to the end before writing (SQLite leaves rows changed under an open read undefined);
    # only the few names that change are held.
    changed = [
        User(pk=pk, display_name=clean_display_name(name))
        for pk, name in names.iterator(chunk_size=BATCH)
        if clean_display_name(name) != name
    ]
    User.objects.bulk_update(changed, ["display_name"], batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [("comments", "0008_subject_keys")]

    operations = [migrations.RunPython(display_names_clean, migrations.RunPython.noop, elidable=True)]
