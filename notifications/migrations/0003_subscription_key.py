"""Subscriptions are distributed by subject with the comment tables (comments.citus): on
PostgreSQL their primary key becomes (id, subject_id)."""

from django.db import migrations

from comments.citus import postgresql_only


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0002_references_unchecked'),
    ]

    operations = [
        postgresql_only(
            "ALTER TABLE notifications_subscription DROP CONSTRAINT notifications_subscription_pkey, "
            "ADD CONSTRAINT notifications_subscription_pkey PRIMARY KEY (id, subject_id)",
            "ALTER TABLE notifications_subscription DROP CONSTRAINT notifications_subscription_pkey, "
            "ADD CONSTRAINT notifications_subscription_pkey PRIMARY KEY (id)",
        ),
    ]
