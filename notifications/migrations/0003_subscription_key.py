"""Subscriptions are distributed by subject with the comment tables (infra.citus): on
PostgreSQL their primary key becomes (id, subject_id)."""

from django.db import migrations

from infra.citus import primary_key_with_subject


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0002_references_unchecked'),
    ]

    operations = [
        primary_key_with_subject('notifications_subscription'),
    ]
