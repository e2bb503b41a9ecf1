"""The HTTP API under /api/v1/: one NinjaAPI, its error answers, and its routers."""

from __future__ import annotations

import re
from typing import Any

from ninja import NinjaAPI

from todoweb import dialects
from todoweb.web.api.body import StrictJson
from todoweb.web.api.errors import ErrorAnswer, error_response
from todoweb.web.api.lookups import SESSION_KEY
from todoweb.web.auth import TokenAuth


def parameter_schemas() -> dict[str, dict[str, Any]]:
    """What the views check by hand, written into the schema: the session key's
    alphabet, the dialect names, the cursor's encoding."""
    names = "|".join(re.escape(name) for name in dialects.dialects())
    return {
        "session_key": {"pattern": f"^{SESSION_KEY.pattern}$", "minLength": 1, "maxLength": 200},
        "dialects": {
            "description": "Comma-separated dialect names (none: each tool name once). Two dialects "
            "that share a tool name (e.g. gemini and langchain) cannot be asked for together",
            "pattern": f"^(({names})(,({names}))*)?$",
        },
        "dialect": {
            "description": "Force this dialect where several share the tool's name",
            "enum": list(dialects.dialects()),
        },
        "cursor": {"description": "The next_cursor of the previous page (opaque)", "pattern": "^[A-Za-z0-9_=-]*$"},
    }


class TodowebAPI(NinjaAPI):
    def set_default_exception_handlers(self) -> None:
        # Every error, whatever raised it, in the one shape (web.api.errors).
        self.add_exception_handler(Exception, error_response)

    def get_openapi_schema(self, **kwargs: Any) -> dict[str, Any]:
        """Every operation answers errors in one documented shape."""
        schema = super().get_openapi_schema(**kwargs)
        schema["components"].setdefault("schemas", {})["ErrorAnswer"] = ErrorAnswer.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        schema["components"]["schemas"] |= schema["components"]["schemas"]["ErrorAnswer"].pop("$defs", {})
        error = {
            "description": 'Any error: `{"ok": false, "error": {"code", "message", "details"}}`',
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorAnswer"}}},
        }
        parameters = parameter_schemas()
        for operations in schema["paths"].values():
            for operation in operations.values():
                operation["responses"].setdefault("default", error)
                for parameter in operation.get("parameters", []):
                    parameter["schema"] |= parameters.get(parameter["name"], {})
        return schema


api = TodowebAPI(
    title="todoweb",
    version="1",
    description="Live board for AI agents' todo lists: post each todo tool call, get the reply for the model.",
    auth=TokenAuth(),
    parser=StrictJson(),
    urls_namespace="api",
)


from todoweb.web.api import (  # noqa: E402
    agent,
    export,
    hooks,
    live,
    people,
    questions,
    search,
    sessions,
    share,
    steps,
    tools,
    webhooks,
)

api.add_router("", tools.router)
api.add_router("", hooks.router)
api.add_router("", sessions.router)
api.add_router("", steps.router)
api.add_router("", search.router)
api.add_router("", export.router)
api.add_router("", agent.router)
api.add_router("", share.router)
api.add_router("", people.router)
api.add_router("", questions.router)
api.add_router("", live.router)
api.add_router("", webhooks.router)
