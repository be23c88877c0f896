"""A switch for the test provider's ``Cross-Origin-Opener-Policy``, as some providers send it
(it cuts a sign-in window off from the frame that opened it): ``POST /coop/on`` or ``/coop/off``
sets it for every page after. One process, so one switch."""

from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

sending = {"policy": ""}


@csrf_exempt
@require_POST
def switch(request, state):
    sending["policy"] = "same-origin" if state == "on" else ""
    return HttpResponse(state)


def middleware(get_response):
    def send_it(request):
        response = get_response(request)
        if sending["policy"]:
            response["Cross-Origin-Opener-Policy"] = sending["policy"]
        return response

    return send_it
