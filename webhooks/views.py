"""The console's webhooks page (``/console/webhooks/?site=<key>``): a site's endpoints and its
latest deliveries, each with a redeliver button. Built as the console's other pages (server
rendered, plain forms with CSRF, the console's stylesheet and script), for the same people:
staff and the site's moderators, who see no secret here (the admin shows it to staff). What a
receiver answered (the excerpt of its body) is shown to staff only: staff choose the endpoints'
URLs, and an answer may be that of a service the URL was never meant to reach; moderators see
each attempt's status code or error."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from comments.exceptions import PermissionDenied
from moderation.console import ConsoleRequest, console_page, console_url, form_error, safe_next, site_page
from moderation.forms import SiteForm

from . import queries, tasks


def _moderated_site(request: ConsoleRequest, key: str | None):
    """The site asked for among the user's sites (the first without one); refused otherwise,
    so no one sees or redelivers another site's webhooks."""
    for site in request.console_sites:
        if key is None or site.key == key:
            return site
    raise PermissionDenied(_("You do not moderate this site."))


@require_GET
@console_page
def endpoints(request: ConsoleRequest) -> HttpResponse:
    form = SiteForm(request.GET)
    if not form.is_valid():
        return form_error(request, form)
    site = _moderated_site(request, form.cleaned_data["site"] or None)
    return site_page(
        request,
        "webhooks/endpoints.html",
        "webhooks",
        site.key,
        endpoints=queries.site_endpoints(site_id=site.pk),
        deliveries=queries.recent_deliveries(site_id=site.pk, with_answers=request.user.is_staff),
        show_answers=request.user.is_staff,
    )


@require_POST
@console_page
def delivery_redeliver(request: ConsoleRequest, delivery_id: int) -> HttpResponse:
    site = _moderated_site(request, request.POST.get("site") or None)
    delivery = queries.delivery_of_site(delivery_id=delivery_id, site_id=site.pk)
    tasks.redeliver([delivery])
    messages.success(request, _("The delivery is on its way again."))
    return redirect(
        safe_next(request, request.POST.get("next"), console_url("console-webhooks:endpoints", site=site.key))
    )
