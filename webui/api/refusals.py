"""The API's answer to refused lines (RefusedLinesError): the error body every error gets
(webui.api.errors.translate and error_response: code ``invalid``, the message, the field), and in it
``lines``: every refused line as ``{"line", "text", "reason"}``, and ``refused``: how many there were.

It is a handler of the API's blueprint for that one error, so the pages, which list the same refusals
under their forms (webui/definitions/refused.py), are not affected.
"""

from __future__ import annotations

import json
from typing import Any

from harvestdef.errors import RefusedLinesError
from webui.api.core import blueprint
from webui.api.errors import error_response, translate


def refused_lines_response(error: RefusedLinesError) -> Any:
    translated = translate(error)
    response = error_response(translated.code, translated.message, translated.field)
    body = json.loads(response.get_data())
    body["error"]["lines"] = [{"line": refusal.line, "text": refusal.text, "reason": refusal.reason}
                              for refusal in error.refusals]
    body["error"]["refused"] = error.total
    response.set_data(json.dumps(body))
    return response


blueprint.register_error_handler(RefusedLinesError, refused_lines_response)
