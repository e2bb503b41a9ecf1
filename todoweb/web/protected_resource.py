"""What a 401 says, and the metadata it points at (RFC 6750, RFC 9728).

MCP clients read a 401 as "start OAuth": they look for the resource's metadata and
its authorization server. todoweb has no authorization server (its tokens are made
by `createtoken` or in the admin), so the challenge says what was wrong with the
token (`error="invalid_token"`, `error_description`), and the metadata it points at
names no authorization server: a client that reads either has nothing to log in to
and can show the reason instead.
"""

from __future__ import annotations

import re

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

WELL_KNOWN = "/.well-known/oauth-protected-resource"
# What an error_description may hold (RFC 6750 §3): printable ASCII but '"' and '\'.
NOT_IN_DESCRIPTION = re.compile(r"[^\x20-\x21\x23-\x5b\x5d-\x7e]")


def challenge(request: HttpRequest, reason: str, resource_path: str = "") -> str:
    """The `WWW-Authenticate` value of a 401 for the resource at `resource_path`
    ("" for the API, "/mcp" for the MCP server)."""
    value = f'Bearer realm="todoweb", error="invalid_token", error_description="{description(reason)}"'
    url = absolute(request, WELL_KNOWN + resource_path)
    return value + (f', resource_metadata="{url}"' if url else "")


def description(reason: str) -> str:
    return NOT_IN_DESCRIPTION.sub("'", reason.replace("\\", "/"))


def absolute(request: HttpRequest, path: str) -> str | None:
    try:
        return request.build_absolute_uri(path)
    except DisallowedHost:
        # A Host this deployment does not serve: no address to point at.
        return None


@require_GET
def metadata(request: HttpRequest, resource_path: str = "") -> JsonResponse:
    """The protected-resource metadata: bearer tokens in a header, no authorization
    server (the field is left out: there is none to name)."""
    resource = request.build_absolute_uri(resource_path or "/")
    return JsonResponse(
        {
            "resource": resource.rstrip("/") if not resource_path else resource,
            "resource_name": "todoweb",
            "bearer_methods_supported": ["header"],
        }
    )
