"""Groups to teams: joining, role changes and removal follow the provider's groups at every sign-in."""

import pytest

from playground.connections import gate
from playground.sso import groups
from playground.sso.groups import Rule
from playground.teams.models import ADMIN, MEMBER, OWNER, AuditEvent, Membership, Team
from tests.sso.conftest import sign_in, signed_in_user

pytestmark = pytest.mark.django_db


def roles(user) -> dict[str, str]:
    return dict(Membership.objects.filter(user=user).values_list("team__name", "role"))


def test_the_mapping_is_read_with_member_as_the_default_role():
    assert groups.parse("ml-demo=Demos:member; ml-leads = Demos : admin\nml-ops=Operations") == [
        Rule("ml-demo", "Demos", MEMBER),
        Rule("ml-leads", "Demos", ADMIN),
        Rule("ml-ops", "Operations", MEMBER),
    ]


@pytest.mark.parametrize(
    "text, words",
    [("ml-demo", "is not group=Team:role"), ("ml-demo=Demos:owner", "must be member or admin"), ("=Demos", "is not")],
)
def test_a_bad_mapping_says_which_entry_and_why(text, words):
    with pytest.raises(ValueError, match=words):
        groups.parse(text)


def test_the_highest_role_of_a_persons_groups_wins():
    rules = groups.parse("a=T:member; b=T:admin; c=U")
    assert groups.roles_for({"a", "b"}, rules) == {"T": ADMIN, "U": None}
    assert groups.roles_for({"c"}, rules) == {"T": None, "U": MEMBER}


@pytest.fixture(autouse=True)
def teams(alice):
    """The mapped teams, made by alice (who owns them), as an operator would before mapping groups to them."""
    for name in ("Demos", "Operations"):
        Membership.objects.create(team=Team.objects.create(name=name), user=alice, role=OWNER)


def test_sign_in_lands_in_the_teams_the_groups_name(client, idp):
    idp.person.groups = ["ml-demo", "ml-ops", "unmapped"]
    sign_in(client)
    user = signed_in_user(client)
    assert roles(user) == {"Demos": MEMBER, "Operations": MEMBER}
    assert AuditEvent.objects.filter(team__name="Demos", action="joined", detail__contains="single sign-on").exists()


def test_a_mapped_team_nobody_made_is_not_made(client, idp, settings):
    settings.OIDC_GROUP_TEAMS = "ml-demo=Nowhere"
    sign_in(client)
    assert roles(signed_in_user(client)) == {}
    assert not Team.objects.filter(name="Nowhere").exists()


def test_roles_and_removal_follow_the_provider_at_the_next_sign_in(client, idp):
    idp.person.groups = ["ml-demo", "ml-leads"]
    sign_in(client)
    user = signed_in_user(client)
    assert roles(user) == {"Demos": ADMIN}

    client.logout()
    idp.person.groups = ["ml-demo"]
    sign_in(client)
    assert roles(user) == {"Demos": MEMBER}

    client.logout()
    idp.person.groups = []
    sign_in(client)
    assert roles(user) == {}
    demos = Team.objects.get(name="Demos")
    assert AuditEvent.objects.filter(team=demos, action="removed", detail__contains="by single sign-on").exists()
    assert AuditEvent.objects.filter(team=demos, action="role", detail__contains="is now member").exists()


def test_a_removal_by_the_provider_refuses_the_next_team_request_as_a_removal_does(client, idp, alice):
    from tests.teams.conftest import make_team_connection

    sign_in(client)
    user = signed_in_user(client)
    demos = Team.objects.get(name="Demos")
    connection = make_team_connection(demos, alice)
    assert gate.why_not(connection, user) is None
    client.logout()
    idp.person.groups = []
    sign_in(client)
    assert "You are no longer a member of Demos" in gate.why_not(connection, user)


def test_teams_outside_the_mapping_and_owners_are_left_alone(client, idp, alice):
    sign_in(client)
    user = signed_in_user(client)
    own = Team.objects.create(name="Side project")
    Membership.objects.create(team=own, user=user, role=OWNER)
    Membership.objects.filter(team__name="Demos", user=user).update(role=OWNER)
    client.logout()
    idp.person.groups = []
    sign_in(client)
    assert roles(user) == {"Side project": OWNER, "Demos": OWNER}


def test_a_refused_sign_in_changes_no_team(client, idp, settings):
    sign_in(client)
    user = signed_in_user(client)
    client.logout()
    settings.OIDC_REQUIRED_GROUP = "playground-users"
    idp.person.groups = []
    assert sign_in(client).status_code == 403
    assert roles(user) == {"Demos": MEMBER}
