"""Who is in a project and in which role: adding a member (by username or e-mail),
changing a role, removing a member. Adding and removing go through the members
relation, whose changes are announced to open sockets (todoweb.live.access): a removed
member's panels and dashboards close."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from todoweb.calls.errors import InvalidInput, NotFound
from todoweb.models import Membership, Project

ROLES = Membership.Role


def find_user(who: str):
    """The active account named by its username (exactly) or its e-mail (any case)."""
    who = who.strip()
    if not who:
        raise InvalidInput("Give a username or an e-mail address", details={"field": "who"})
    users = get_user_model().objects.filter(is_active=True)
    user = users.filter(username=who).first()
    if user is not None:
        return user
    if "@" in who:
        found = list(users.filter(email__iexact=who)[:2])
        if len(found) == 1:
            return found[0]
        if found:
            raise InvalidInput(
                f"Several accounts have the e-mail {who}: give the username instead", details={"field": "who"}
            )
    raise InvalidInput(
        f"No active account is called {who} or has that e-mail: staff make accounts in the admin",
        details={"field": "who"},
    )


def check_role(role: str) -> str:
    if role not in ROLES.values:
        raise InvalidInput(f"role: one of {', '.join(ROLES.values)}", details={"field": "role"})
    return role


def member_add(project: Project, who: str, role: str = ROLES.EDITOR) -> Membership:
    role = check_role(role)
    user = find_user(who)
    with transaction.atomic():
        if Membership.objects.filter(project=project, user=user).exists():
            raise InvalidInput(f"{user.get_username()} is a member already", details={"field": "who"})
        project.members.add(user, through_defaults={"role": role})
    return Membership.objects.select_related("user").get(project=project, user=user)


def membership(project: Project, user_id: int) -> Membership:
    found = Membership.objects.select_related("user").filter(project=project, user_id=user_id).first()
    if found is None:
        raise NotFound("No such member of this project")
    return found


def keeps_an_admin(project: Project, leaving: Membership, by) -> None:
    """A project's admins may not leave it without one (staff may: they run every project)."""
    if by.is_staff or leaving.role != ROLES.ADMIN:
        return
    others = Membership.objects.filter(project=project, role=ROLES.ADMIN).exclude(pk=leaving.pk)
    if not others.exists():
        raise InvalidInput(
            f"{leaving.user.get_username()} is the project's only admin: make another member admin first",
            details={"field": "role"},
        )


def member_role(project: Project, user_id: int, role: str, *, by) -> Membership:
    role = check_role(role)
    with transaction.atomic():
        found = membership(project, user_id)
        if role != ROLES.ADMIN:
            keeps_an_admin(project, found, by)
        found.role = role
        found.save(update_fields=["role"])
    return found


def member_remove(project: Project, user_id: int, *, by) -> Membership:
    with transaction.atomic():
        found = membership(project, user_id)
        keeps_an_admin(project, found, by)
        project.members.remove(found.user)
    return found
