import os

from django.core.asgi import get_asgi_application

from . import local_files

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
local_files.prepare()
application = get_asgi_application()
