"""django-mptt's tree of comments, for ``bench.trees`` only (installed by
``bench/trees_settings.py``, never by the application's settings)."""
