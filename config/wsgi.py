import os

from django.core.wsgi import get_wsgi_application

from . import local_files

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
local_files.prepare()
application = get_wsgi_application()
