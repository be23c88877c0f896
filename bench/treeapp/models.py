"""The trees ``bench.trees`` compares with the comments' own: a thread as django-mptt keeps it
(its tutorial's model: a parent pointer and the nested-set columns mptt adds, ``lft``,
``rght``, ``tree_id``, ``level``; one tree per thread), and as a bare materialized path (the
comments' scheme, ``comments.paths``, without the product's other columns), to show what the path
alone costs a write. The tables have no migration: ``bench.trees`` creates them with ``migrate
--run-syncdb``."""

from django.db import models
from mptt.models import MPTTModel, TreeForeignKey

from comments import paths
from comments.models import PathField


class Node(MPTTModel):
    parent = TreeForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    subject_id = models.BigIntegerField()
    body = models.TextField()

    class Meta:
        app_label = "treeapp"

    def __str__(self) -> str:
        return f"node {self.pk}"


class PathNode(models.Model):
    id = models.BigIntegerField(primary_key=True)  # from comments.ids, known before the insert
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, db_index=False)
    subject_id = models.BigIntegerField()
    path = PathField(max_length=paths.max_path_length(paths.MAX_DEPTH_SUPPORTED))
    body = models.TextField()

    # Declared for the type checker, which knows only the apps of the test settings.
    objects: models.Manager["PathNode"] = models.Manager()

    class Meta:
        app_label = "treeapp"
        indexes = [models.Index(fields=["subject_id", "path"], name="treeapp_pathnode_by_path")]

    def __str__(self) -> str:
        return f"path node {self.pk}"
