"""The team on the board: a project's settings, for its admins (staff: every project).

`/team/` lists the projects the user runs; `/team/<slug>/…` has a page per area:
members and their roles, API tokens, share links, webhook endpoints, and the policy.
Plain server-rendered forms with Django's CSRF check: they work without JavaScript.
A change answers with a redirect to its page and a message (so a reload repeats
nothing); what is shown once (a new token, a webhook's secret) waits in the login's
server-side session for that one page, which takes it out. Destructive actions ask first, on a page of their own (GET), and act on
its POST. A member who is not an admin of the project gets 403, anyone else 404.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Case, Q, QuerySet, When
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from todoweb import plan
from todoweb.calls.errors import NotFound, TodowebError
from todoweb.models import ApiToken, Membership, Project, ShareLink, WebhookEndpoint
from todoweb.reads import administered_projects, visible_projects
from todoweb.webhooks import endpoints as webhook_endpoints
from todoweb.webhooks import events as webhook_events
from todoweb.webhooks.reads import deliveries_data, endpoints_data
from todoweb.writes import members as team_members
from todoweb.writes.sharing import share_revoke
from todoweb.writes.tokens import project_token_create, token_revoke

TABS = [
    ("members", "Members"),
    ("tokens", "Tokens"),
    ("links", "Share links"),
    ("webhooks", "Webhooks"),
    ("policy", "Policy"),
]
# Deliveries shown under each endpoint, and ended share links under the live ones.
DELIVERIES_SHOWN = 10
ENDED_LINKS_SHOWN = 20


def for_project_admin(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Runs `view(request, project, …)` for an admin of the project named in the URL (staff:
    any project); a member who is not its admin gets 403, anyone else 404."""

    @login_required
    @never_cache
    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
        project = administered_projects(request.user).filter(slug=slug).first()
        if project is None:
            if visible_projects(request.user).filter(slug=slug).exists():
                return render(request, "team/forbidden.html", {"slug": slug}, status=403)
            raise Http404("No such project")
        return view(request, project, *args, **kwargs)

    return wrapper


def team_page(
    request: HttpRequest, project: Project, tab: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    tabs = [
        {"name": name, "label": label, "href": reverse(f"team-{name}", args=[project.slug])} for name, label in TABS
    ]
    return render(
        request,
        f"team/{tab}.html",
        {
            "project": project,
            "tab": tab,
            "tabs": tabs,
            "projects": list(administered_projects(request.user).values_list("slug", flat=True)),
        }
        | context,
        status=status,
    )


def confirm_page(
    request: HttpRequest,
    project: Project,
    *,
    title: str,
    text: str,
    button: str,
    back: str,
) -> HttpResponse:
    """Asks before a destructive action: its form posts to this same URL."""
    return render(
        request,
        "team/confirm.html",
        {"project": project, "title": title, "text": text, "button": button, "back": back},
    )


def back_to(project: Project, tab: str) -> HttpResponse:
    return redirect(reverse(f"team-{tab}", args=[project.slug]))


REVEAL_KEY = "todoweb_team_reveal"


def reveal_next(request: HttpRequest, project: Project, kind: str, value: str) -> None:
    """Keep what is shown once for the next page of this project's `kind` (the login's
    session is stored on the server: the value never rides in a cookie)."""
    request.session[REVEAL_KEY] = {"project": project.pk, "kind": kind, "value": value}


def revealed(request: HttpRequest, project: Project, kind: str) -> str:
    """What is to be shown once on this page, taken out of the session ("": nothing)."""
    kept = request.session.get(REVEAL_KEY)
    if not isinstance(kept, dict) or kept.get("project") != project.pk or kept.get("kind") != kind:
        return ""
    del request.session[REVEAL_KEY]
    return str(kept.get("value", ""))


def when(iso: str | None) -> datetime | None:
    return plan.parse_iso(iso.replace("Z", "+00:00")) if iso else None


@login_required
@never_cache
def team_index(request: HttpRequest) -> HttpResponse:
    projects = list(administered_projects(request.user).order_by("slug"))
    # The project switcher of every settings page (a GET form, no script needed).
    chosen = request.GET.get("project", "")
    if chosen and any(project.slug == chosen for project in projects):
        return redirect(reverse("team-members", args=[chosen]))
    if not projects:
        return render(request, "team/forbidden.html", {"slug": ""}, status=403)
    return render(request, "team/index.html", {"projects": projects})


@for_project_admin
def team_home(request: HttpRequest, project: Project) -> HttpResponse:
    return back_to(project, "members")


# --- members -------------------------------------------------------------------------


class AddMemberForm(forms.Form):
    who = forms.CharField(label="Username or e-mail", max_length=254)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.EDITOR)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


def members_page(request: HttpRequest, project: Project, form: AddMemberForm, *, status: int = 200) -> HttpResponse:
    rows = Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    return team_page(
        request,
        project,
        "members",
        {"memberships": rows, "form": form, "roles": Membership.Role.choices},
        status=status,
    )


@for_project_admin
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest, project: Project) -> HttpResponse:
    """The members and their roles; a POST adds one."""
    if request.method == "GET":
        return members_page(request, project, AddMemberForm())
    form = AddMemberForm(request.POST)
    if form.is_valid():
        try:
            added = team_members.member_add(project, form.cleaned_data["who"], form.cleaned_data["role"])
        except TodowebError as error:
            form.add_error("who", error.message)
        else:
            messages.success(request, f"{added.user.get_username()} is now a member ({added.role}).")
            return back_to(project, "members")
    return members_page(request, project, form, status=400)


@for_project_admin
@require_POST
def member_role(request: HttpRequest, project: Project, user_id: int) -> HttpResponse:
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role: viewer, editor or admin.")
        return back_to(project, "members")
    try:
        changed = team_members.member_role(project, user_id, form.cleaned_data["role"], by=request.user)
    except NotFound as error:
        raise Http404(error.message) from None
    except TodowebError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"{changed.user.get_username()} is now {changed.role}.")
    return back_to(project, "members")


@for_project_admin
@require_http_methods(["GET", "POST"])
def member_remove(request: HttpRequest, project: Project, user_id: int) -> HttpResponse:
    try:
        found = team_members.membership(project, user_id)
    except TodowebError as error:
        raise Http404(error.message) from None
    name = found.user.get_username()
    if request.method == "GET":
        yourself = found.user_id == request.user.pk
        return confirm_page(
            request,
            project,
            title=f"Remove {name} from {project.slug}?",
            text=(
                "You will no longer see this project's sessions."
                if yourself and not request.user.is_staff
                else f"{name} will no longer see this project's sessions; their open pages close at once."
            ),
            button=f"Remove {name}",
            back=reverse("team-members", args=[project.slug]),
        )
    try:
        team_members.member_remove(project, user_id, by=request.user)
    except TodowebError as error:
        messages.error(request, error.message)
        return back_to(project, "members")
    messages.success(request, f"{name} is no longer a member of {project.slug}.")
    if not administered_projects(request.user).filter(pk=project.pk).exists():
        return redirect("dashboard")
    return back_to(project, "members")


# --- tokens --------------------------------------------------------------------------


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What uses it: an agent, a machine, a CI job.")
    scope = forms.ChoiceField(choices=ApiToken.Scope.choices, initial=ApiToken.Scope.WRITE)


def tokens_page(request: HttpRequest, project: Project, form: TokenForm, *, status: int = 200) -> HttpResponse:
    tokens = ApiToken.objects.filter(project=project).order_by("revoked_at", "-created_at")
    shown = revealed(request, project, "token") if request.method == "GET" else ""
    return team_page(request, project, "tokens", {"tokens": tokens, "form": form, "revealed": shown}, status=status)


@for_project_admin
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest, project: Project) -> HttpResponse:
    """The project's tokens; a POST makes one, whose raw value this answer shows, once."""
    if request.method == "GET":
        return tokens_page(request, project, TokenForm())
    form = TokenForm(request.POST)
    if not form.is_valid():
        return tokens_page(request, project, form, status=400)
    token, raw = project_token_create(project, name=form.cleaned_data["name"], scope=form.cleaned_data["scope"])
    reveal_next(request, project, "token", raw)
    messages.success(request, f"Created the {token.scope} token {token.name}.")
    return back_to(project, "tokens")


@for_project_admin
@require_http_methods(["GET", "POST"])
def token_revoke_view(request: HttpRequest, project: Project, token_id: int) -> HttpResponse:
    token = ApiToken.objects.filter(project=project, pk=token_id).first()
    if token is None:
        raise Http404("No such token")
    label = f"{token.name or 'unnamed'} ({token.prefix}…)"
    if request.method == "GET":
        if token.revoked_at is not None:
            messages.info(request, f"The token {label} is revoked already.")
            return back_to(project, "tokens")
        return confirm_page(
            request,
            project,
            title=f"Revoke the token {label}?",
            text="Every agent or program using it is refused from now on. This cannot be undone.",
            button="Revoke the token",
            back=reverse("team-tokens", args=[project.slug]),
        )
    revoked = token_revoke(ApiToken.objects.filter(pk=token.pk))
    messages.success(request, f"Revoked the token {label}." if revoked else f"The token {label} was revoked already.")
    return back_to(project, "tokens")


# --- share links ---------------------------------------------------------------------


def project_links(project: Project) -> QuerySet[ShareLink]:
    return ShareLink.objects.filter(session__project=project).select_related("session")


def live_links(project: Project, now: datetime) -> QuerySet[ShareLink]:
    return project_links(project).filter(revoked_at__isnull=True, expires_at__gt=now)


@for_project_admin
def links(request: HttpRequest, project: Project) -> HttpResponse:
    now = timezone.now()
    live = live_links(project, now).order_by("expires_at")
    ended = (
        project_links(project)
        .filter(Q(revoked_at__isnull=False) | Q(expires_at__lte=now))
        .annotate(ended=Case(When(revoked_at__isnull=False, then="revoked_at"), default="expires_at"))
        .order_by("-ended")[:ENDED_LINKS_SHOWN]
    )
    return team_page(request, project, "links", {"live": live, "ended": ended, "now": now})


@for_project_admin
@require_http_methods(["GET", "POST"])
def link_revoke(request: HttpRequest, project: Project, link_id: int) -> HttpResponse:
    link = project_links(project).filter(pk=link_id).first()
    if link is None:
        raise Http404("No such share link")
    session = link.session.title or link.session.key
    if request.method == "GET":
        if not link.is_valid_at(timezone.now()):
            messages.info(request, "That link no longer works already.")
            return back_to(project, "links")
        return confirm_page(
            request,
            project,
            title="Revoke this share link?",
            text=f"The link to “{session}” stops working; pages open with it close at once.",
            button="Revoke the link",
            back=reverse("team-links", args=[project.slug]),
        )
    count = share_revoke(ShareLink.objects.filter(pk=link.pk))
    messages.success(request, f"Revoked the link to “{session}”." if count else "That link was revoked already.")
    return back_to(project, "links")


@for_project_admin
@require_http_methods(["GET", "POST"])
def links_revoke_all(request: HttpRequest, project: Project) -> HttpResponse:
    if request.method == "GET":
        count = live_links(project, timezone.now()).count()
        if not count:
            messages.info(request, "No link of this project works: nothing to revoke.")
            return back_to(project, "links")
        return confirm_page(
            request,
            project,
            title=f"Revoke every share link of {project.slug}?",
            text=f"{count} link{'s' if count != 1 else ''} stop working; pages open with them close at once.",
            button="Revoke all links",
            back=reverse("team-links", args=[project.slug]),
        )
    count = share_revoke(project_links(project))
    messages.success(request, f"Revoked {count} link{'s' if count != 1 else ''}.")
    return back_to(project, "links")


# --- webhooks ------------------------------------------------------------------------


class WebhookForm(forms.Form):
    url = forms.CharField(label="URL", max_length=webhook_endpoints.URL_MAX_CHARS)
    events = forms.MultipleChoiceField(
        choices=[(event, event) for event in webhook_events.EVENTS],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one event."},
    )
    format = forms.ChoiceField(choices=WebhookEndpoint.Format.choices, initial=WebhookEndpoint.Format.STANDARD)


def webhooks_page(request: HttpRequest, project: Project, form: WebhookForm, *, status: int = 200) -> HttpResponse:
    shown = []
    rows = {endpoint.pk: endpoint for endpoint in WebhookEndpoint.objects.filter(project=project)}
    for data in endpoints_data(project):
        deliveries, _ = deliveries_data(rows[data["id"]], limit=DELIVERIES_SHOWN)
        times = ("created_at", "last_attempt_at", "next_attempt_at", "delivered_at")
        shown.append(
            data
            | {
                "created": when(data["created_at"]),
                "disabled": when(data["disabled_at"]),
                "failing": when(data["failing_since"]),
                "deliveries": [d | {f"{k}_dt": when(d[k]) for k in times} for d in deliveries],
            }
        )
    return team_page(
        request,
        project,
        "webhooks",
        {
            "endpoints": shown,
            "form": form,
            "revealed": revealed(request, project, "webhook") if request.method == "GET" else "",
            "max_endpoints": webhook_endpoints.MAX_ENDPOINTS,
        },
        status=status,
    )


@for_project_admin
@require_http_methods(["GET", "POST"])
def webhooks(request: HttpRequest, project: Project) -> HttpResponse:
    """The endpoints and their newest deliveries; a POST adds one, whose secret this
    answer shows, once."""
    if request.method == "GET":
        return webhooks_page(request, project, WebhookForm())
    form = WebhookForm(request.POST)
    if form.is_valid():
        try:
            endpoint = webhook_endpoints.create(
                project,
                url=form.cleaned_data["url"],
                wanted=form.cleaned_data["events"],
                fmt=form.cleaned_data["format"],
                site_url=request.build_absolute_uri("/").rstrip("/"),
            )
        except TodowebError as error:
            field = (error.details or {}).get("field")
            form.add_error(field if field in form.fields else None, error.message)
        else:
            reveal_next(request, project, "webhook", endpoint.secret)
            messages.success(request, f"Added the endpoint {endpoint.url}.")
            return back_to(project, "webhooks")
    return webhooks_page(request, project, form, status=400)


def project_endpoint(project: Project, endpoint_id: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.select_related("project").filter(project=project, pk=endpoint_id).first()
    if endpoint is None:
        raise Http404("No such webhook endpoint")
    return endpoint


@for_project_admin
@require_POST
def webhook_test(request: HttpRequest, project: Project, endpoint_id: int) -> HttpResponse:
    endpoint = project_endpoint(project, endpoint_id)
    webhook_endpoints.send_test(endpoint)
    messages.success(request, f"A test event is on its way to {endpoint.url}: its answer shows below.")
    return back_to(project, "webhooks")


@for_project_admin
@require_POST
def webhook_enable(request: HttpRequest, project: Project, endpoint_id: int) -> HttpResponse:
    endpoint = project_endpoint(project, endpoint_id)
    webhook_endpoints.enable(endpoint)
    messages.success(request, f"{endpoint.url} is enabled again: it gets new events.")
    return back_to(project, "webhooks")


@for_project_admin
@require_http_methods(["GET", "POST"])
def webhook_delete(request: HttpRequest, project: Project, endpoint_id: int) -> HttpResponse:
    endpoint = project_endpoint(project, endpoint_id)
    if request.method == "GET":
        return confirm_page(
            request,
            project,
            title="Delete this webhook endpoint?",
            text=f"{endpoint.url} gets no more events, and its delivery log is deleted with it.",
            button="Delete the endpoint",
            back=reverse("team-webhooks", args=[project.slug]),
        )
    webhook_endpoints.delete(endpoint)
    messages.success(request, f"Deleted the endpoint {endpoint.url}.")
    return back_to(project, "webhooks")


# --- policy --------------------------------------------------------------------------


class PolicyForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ["name", "single_in_progress", "max_items", "max_content_chars", "reply_style"]
        labels = {
            "single_in_progress": "More than one step in progress",
            "max_items": "Most steps in a plan",
            "max_content_chars": "Longest step text (characters)",
            "reply_style": "Answer agents with",
        }


@for_project_admin
@require_http_methods(["GET", "POST"])
def policy(request: HttpRequest, project: Project) -> HttpResponse:
    if request.method == "GET":
        return team_page(request, project, "policy", {"form": PolicyForm(instance=project)})
    form = PolicyForm(request.POST, instance=project)
    if not form.is_valid():
        # The form changed the instance it checked: show the page with the saved project.
        saved = Project.objects.get(pk=project.pk)
        return team_page(request, saved, "policy", {"form": form}, status=400)
    form.save()
    messages.success(request, "Policy saved: it applies to the next write.")
    return back_to(project, "policy")


urlpatterns = [
    path("", team_index, name="team"),
    path("<slug:slug>/", team_home, name="team-project"),
    path("<slug:slug>/members/", members, name="team-members"),
    path("<slug:slug>/members/<int:user_id>/role", member_role, name="team-member-role"),
    path("<slug:slug>/members/<int:user_id>/remove", member_remove, name="team-member-remove"),
    path("<slug:slug>/tokens/", tokens, name="team-tokens"),
    path("<slug:slug>/tokens/<int:token_id>/revoke", token_revoke_view, name="team-token-revoke"),
    path("<slug:slug>/links/", links, name="team-links"),
    path("<slug:slug>/links/<int:link_id>/revoke", link_revoke, name="team-link-revoke"),
    path("<slug:slug>/links/revoke-all", links_revoke_all, name="team-links-revoke-all"),
    path("<slug:slug>/webhooks/", webhooks, name="team-webhooks"),
    path("<slug:slug>/webhooks/<int:endpoint_id>/test", webhook_test, name="team-webhook-test"),
    path("<slug:slug>/webhooks/<int:endpoint_id>/enable", webhook_enable, name="team-webhook-enable"),
    path("<slug:slug>/webhooks/<int:endpoint_id>/delete", webhook_delete, name="team-webhook-delete"),
    path("<slug:slug>/policy/", policy, name="team-policy"),
]
