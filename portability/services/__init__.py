"""Every write of the portability app, in modules by concern; its views, admin, tasks and
commands call them from here.

* ``imports``: a site's history imported from a file (``import_file``), the batch job that stores
  the comments through the core's writer (``comments.services.comments_store``), on
  * ``staging``: the file streamed into staged rows, sifted and read back in time order;
  * ``threads``: threads made subjects;
  * ``authors``: authors made users of the site;
  * ``summary``: what an import did, and what its parts share;
* ``exports``: a site's export and the audit of a person's data handed out;
* ``erasure``: a person's data erased;
* ``retention``: old IP addresses and user agents scrubbed;
* ``audit``: the audit entry each of them writes.
"""

from .erasure import ErasureReport, erasure_mode, user_erase
from .exports import site_export, user_data_exported
from .imports import import_file
from .retention import ip_addresses_scrub
from .summary import ImportBusy, ImportSummary, Progress

__all__ = [
    "ErasureReport",
    "ImportBusy",
    "ImportSummary",
    "Progress",
    "erasure_mode",
    "import_file",
    "ip_addresses_scrub",
    "site_export",
    "user_data_exported",
    "user_erase",
]
