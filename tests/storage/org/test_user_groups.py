"""User groups: GET /user_groups, POST /user_groups/create, group-setting values, is_member."""

from __future__ import annotations

import itertools

import pytest

from storage.org import groups
from tests.support.helpers import assert_error, assert_success

SYSTEM_GROUPS = [
    ("role:nobody", "Nobody"),
    ("role:owners", "Owners of this organization"),
    ("role:administrators", "Administrators of this organization, including owners"),
    ("role:moderators", "Moderators of this organization, including administrators"),
    ("role:fullmembers", "Members of this organization, not including new accounts and guests"),
    ("role:members", "Members of this organization, not including guests"),
    ("role:everyone", "Everyone in this organization, including guests"),
    ("role:internet", "Everyone on the Internet"),
]
SETTINGS = list(groups.GROUP_SETTINGS)
# Settings that reject role:everyone (api-notes §5.3; spec 4.9 for can_manage_group).
NO_EVERYONE = ["can_add_members_group", "can_join_group", "can_manage_group", "can_remove_members_group"]


def list_groups(client, **params):
    return assert_success(client.get("/user_groups", params))["user_groups"]


def by_name(live):
    return {group["name"]: group for group in list_groups(live.owner)}


def system_id(live, name):
    return by_name(live)[name]["id"]


def create(client, name="Support", members=(), **params):
    """POST /user_groups/create with the required parameters filled in."""
    params.setdefault("description", "Helps")
    return client.post("/user_groups/create", {"name": name, "members": list(members), **params})


def create_ok(client, name="Support", members=(), **params):
    return assert_success(create(client, name, members, **params))["group_id"]


def group(live, group_id):
    return next(g for g in list_groups(live.owner, include_deactivated_groups=True) if g["id"] == group_id)


def count_groups(live):
    return live.read(lambda tx: tx.value("SELECT count(*) FROM user_groups"))


def events_since(live, start):
    return live.events()[start:]


# -- GET /user_groups: the system groups ---------------------------------------------------------


def test_system_groups_in_order_with_consecutive_ids(live):
    listed = list_groups(live.owner)
    assert [(g["name"], g["description"]) for g in listed] == SYSTEM_GROUPS
    ids = [g["id"] for g in listed]
    assert ids == list(range(ids[0], ids[0] + 8))


def test_system_groups_nest_each_in_the_next(live):
    found = by_name(live)
    names = [name for name, _ in SYSTEM_GROUPS]
    assert found["role:nobody"]["direct_subgroup_ids"] == []
    assert found["role:owners"]["direct_subgroup_ids"] == []
    for inner, outer in itertools.pairwise(names[1:]):
        assert found[outer]["direct_subgroup_ids"] == [found[inner]["id"]], outer


def test_system_group_fields(live):
    found = by_name(live)
    nobody = found["role:nobody"]["id"]
    for group_object in found.values():
        assert group_object["is_system_group"] is True
        assert group_object["creator_id"] is None
        assert group_object["date_created"] is None
        assert group_object["deactivated"] is False
        assert {s: group_object[s] for s in SETTINGS} == {s: nobody for s in SETTINGS}
    assert set(found["role:nobody"]) == {
        "id",
        "name",
        "creator_id",
        "date_created",
        "description",
        "members",
        "direct_subgroup_ids",
        "is_system_group",
        "deactivated",
        *SETTINGS,
    }


def test_system_group_members_follow_roles(live):
    admin = live.make_user("admin")
    moderator = live.make_user("moderator")
    member = live.make_user("member")
    guest = live.make_user("guest")
    members = {name: g["members"] for name, g in by_name(live).items()}
    assert members == {
        "role:nobody": [],
        "role:owners": [live.owner.id],
        "role:administrators": [admin.id],
        "role:moderators": [moderator.id],
        "role:fullmembers": [member.id],
        "role:members": [member.id],
        "role:everyone": [guest.id],
        "role:internet": [],
    }


def test_deactivated_users_are_not_listed_as_members(live):
    alice, bob = live.make_user(), live.make_user()
    team = create_ok(live.owner, "Team", [alice.id, bob.id])
    value = {"direct_members": [alice.id, bob.id], "direct_subgroups": []}
    other = create_ok(live.owner, "Other", can_join_group=value)
    assert_success(live.owner.delete(f"/users/{bob.id}"))
    assert group(live, team)["members"] == [alice.id]
    assert group(live, other)["can_join_group"] == {"direct_members": [alice.id], "direct_subgroups": []}
    assert bob.id not in by_name(live)["role:members"]["members"]
    # Reactivation brings the memberships back.
    assert_success(live.owner.post(f"/users/{bob.id}/reactivate"))
    assert group(live, team)["members"] == sorted([alice.id, bob.id])


def test_members_and_moderators_may_list_groups(live):
    assert len(list_groups(live.make_user("member"))) == 8
    assert len(list_groups(live.make_user("moderator"))) == 8


def test_guests_may_not_list_groups(live):
    guest = live.make_user("guest")
    assert_error(guest.get("/user_groups"), "Not allowed for guest users")


def test_list_checks_guests_before_parameters(live):
    guest = live.make_user("guest")
    assert_error(guest.get("/user_groups", {"include_deactivated_groups": "yes"}), "Not allowed for guest users")


def test_include_deactivated_groups(live):
    kept = create_ok(live.owner, "Kept")
    gone = create_ok(live.owner, "Gone")
    live.write(lambda tx: tx.execute("UPDATE user_groups SET deactivated = 1 WHERE id = ?", (gone,)))
    assert [g["id"] for g in list_groups(live.owner)][-1:] == [kept]
    listed = list_groups(live.owner, include_deactivated_groups=True)
    assert [(g["id"], g["deactivated"]) for g in listed][-2:] == [(kept, False), (gone, True)]
    assert [g["id"] for g in list_groups(live.owner, include_deactivated_groups=False)][-1:] == [kept]


def test_include_deactivated_groups_must_be_a_boolean(live):
    assert_error(
        live.owner.get("/user_groups", {"include_deactivated_groups": "1"}),
        "include_deactivated_groups is not a boolean",
    )


def test_list_reports_ignored_parameters(live):
    body = assert_success(live.owner.get("/user_groups", {"bogus": "1"}))
    assert body["ignored_parameters_unsupported"] == ["bogus"]


# -- POST /user_groups/create: success -----------------------------------------------------------


def test_create_returns_group_id_and_stores_the_group(live):
    creator = live.make_user("member")
    alice, bob = live.make_user(), live.make_user()
    live.clock.advance(3600)
    group_id = create_ok(creator, "Support", [bob.id, alice.id, bob.id], description="Helps users")
    found = group(live, group_id)
    assert found == {
        "id": group_id,
        "name": "Support",
        "creator_id": creator.id,
        "date_created": int(live.clock.now),
        "description": "Helps users",
        "members": sorted([alice.id, bob.id]),
        "direct_subgroup_ids": [],
        "is_system_group": False,
        "deactivated": False,
        "can_add_members_group": {"direct_members": [creator.id], "direct_subgroups": []},
        "can_join_group": system_id(live, "role:nobody"),
        "can_leave_group": system_id(live, "role:everyone"),
        "can_manage_group": {"direct_members": [creator.id], "direct_subgroups": []},
        "can_mention_group": system_id(live, "role:everyone"),
        "can_remove_members_group": system_id(live, "role:nobody"),
    }


def test_create_with_subgroups_and_empty_members(live):
    inner = create_ok(live.owner, "Inner")
    admins = system_id(live, "role:administrators")
    group_id = create_ok(live.owner, "Outer", [], subgroups=[inner, admins, inner])
    assert group(live, group_id)["direct_subgroup_ids"] == sorted([inner, admins])
    assert group(live, group_id)["members"] == []


def test_create_accepts_an_empty_description(live):
    group_id = create_ok(live.owner, "Quiet", description="")
    assert group(live, group_id)["description"] == ""


def test_group_name_of_100_characters_is_accepted(live):
    group_id = create_ok(live.owner, "x" * 100)
    assert group(live, group_id)["name"] == "x" * 100


def test_moderator_and_admin_may_create_groups(live):
    create_ok(live.make_user("moderator"), "Mods")
    create_ok(live.make_user("admin"), "Admins")


def test_setting_groups_are_not_listed(live):
    before = count_groups(live)
    create_ok(live.owner, "Support")
    # The named group and the two anonymous groups of its creator-only defaults.
    assert count_groups(live) == before + 3
    assert [g["name"] for g in list_groups(live.owner)][-1] == "Support"
    assert len(list_groups(live.owner)) == 9


def test_create_reports_ignored_parameters(live):
    body = assert_success(create(live.owner, "Support", bogus="1"))
    assert body["ignored_parameters_unsupported"] == ["bogus"]


# -- POST /user_groups/create: errors ------------------------------------------------------------


def test_guests_may_not_create_groups(live):
    guest = live.make_user("guest")
    assert_error(create(guest, "Support", [guest.id]), "Insufficient permission")


def test_create_checks_permission_before_parameters(live):
    guest = live.make_user("guest")
    assert_error(guest.post("/user_groups/create", {}), "Insufficient permission")


def test_bots_may_create_groups(live):
    # Spec 5.4: bots may call user-group creation.
    bot = live.make_user()
    live.write(
        lambda tx: tx.execute(
            "UPDATE users SET is_bot = 1, bot_type = 1, bot_owner_id = ? WHERE id = ?", (live.owner.id, bot.id)
        )
    )
    group_id = create_ok(bot, "Bots")
    assert group(live, group_id)["creator_id"] == bot.id


def test_realm_setting_limits_who_may_create(live):
    member = live.make_user("member")
    admins = system_id(live, "role:administrators")
    live.write(lambda tx: tx.execute("UPDATE realm SET can_create_groups = ?", (admins,)))
    assert_error(create(member, "Support"), "Insufficient permission")
    create_ok(live.make_user("admin"), "Support")


@pytest.mark.parametrize("missing", ["name", "description", "members"])
def test_required_parameters(live, missing):
    params = {"name": "Support", "description": "Helps", "members": []}
    del params[missing]
    body = assert_error(
        live.owner.post("/user_groups/create", params), f"Missing '{missing}' argument", "REQUEST_VARIABLE_MISSING"
    )
    assert body["var_name"] == missing


def test_unknown_member(live):
    assert_error(create(live.owner, "Support", [live.owner.id, 9999]), "Invalid user ID: 9999")


def test_deactivated_member(live):
    member = live.make_user()
    assert_success(live.owner.delete(f"/users/{member.id}"))
    assert_error(create(live.owner, "Support", [member.id]), f"Invalid user ID: {member.id}")


@pytest.mark.parametrize(
    ("value", "msg"),
    [("abc", "members is not valid JSON"), ('"x"', "members is not a list"), ('["a"]', "members[0] is not an integer")],
)
def test_malformed_members(live, value, msg):
    params = {"name": "Support", "description": "Helps", "members": value}
    assert_error(live.owner.post("/user_groups/create", params), msg)


@pytest.mark.parametrize("name", ["", "   "])
def test_blank_name(live, name):
    assert_error(create(live.owner, name), "User group name can't be empty!")


def test_name_too_long(live):
    assert_error(create(live.owner, "x" * 101), "User group name cannot exceed 100 characters.")


@pytest.mark.parametrize("prefix", ["@", "role:", "user:", "stream:", "channel:"])
def test_reserved_name_prefixes(live, prefix):
    assert_error(create(live.owner, f"{prefix}team"), f"User group name cannot start with '{prefix}'.")


def test_system_group_names_are_reserved(live):
    assert_error(create(live.owner, "role:members"), "User group name cannot start with 'role:'.")


def test_duplicate_name_is_case_insensitive(live):
    create_ok(live.owner, "Support")
    assert_error(create(live.owner, "Support"), "User group 'Support' already exists.")
    assert_error(create(live.owner, "support"), "User group 'support' already exists.")


def test_unknown_subgroup(live):
    assert_error(create(live.owner, "Support", subgroups=[9999]), "Invalid user group ID: 9999")


def test_anonymous_group_is_not_a_valid_subgroup(live):
    creator = live.make_user()
    group_id = create_ok(creator, "Support")
    anonymous = live.read(lambda tx: tx.value("SELECT can_manage_group FROM user_groups WHERE id = ?", (group_id,)))
    assert_error(create(live.owner, "Other", subgroups=[anonymous]), f"Invalid user group ID: {anonymous}")


def test_deactivated_subgroup(live):
    gone = create_ok(live.owner, "Gone")
    live.write(lambda tx: tx.execute("UPDATE user_groups SET deactivated = 1 WHERE id = ?", (gone,)))
    assert_error(create(live.owner, "Support", subgroups=[gone]), "User group is deactivated.")
    value = {"direct_members": [live.owner.id], "direct_subgroups": [gone]}
    assert_error(create(live.owner, "Support", can_join_group=value), "User group is deactivated.")


def test_checks_run_in_the_documented_order(live):
    create_ok(live.owner, "Taken")
    # members, then name, then settings, then the duplicate name, then subgroups.
    assert_error(create(live.owner, "", [9999]), "Invalid user ID: 9999")
    assert_error(create(live.owner, "", can_join_group=9999), "User group name can't be empty!")
    assert_error(create(live.owner, "Taken", can_join_group=9999), "Invalid user group")
    assert_error(create(live.owner, "Taken", subgroups=[9999]), "User group 'Taken' already exists.")


def test_failed_create_leaves_nothing_behind(live):
    create_ok(live.owner, "Taken")
    before, start = count_groups(live), len(live.events())
    # The creator-only defaults make anonymous groups before the duplicate-name check fails.
    assert_error(create(live.owner, "Taken", [live.owner.id]), "User group 'Taken' already exists.")
    assert_error(create(live.owner, "New", subgroups=[9999]), "Invalid user group ID: 9999")
    assert count_groups(live) == before
    assert events_since(live, start) == []


# -- group-setting values ------------------------------------------------------------------------


@pytest.mark.parametrize("setting", SETTINGS)
def test_setting_accepts_a_named_group_id(live, setting):
    inner = create_ok(live.owner, "Inner")
    group_id = create_ok(live.owner, "Support", **{setting: inner})
    assert group(live, group_id)[setting] == inner


@pytest.mark.parametrize("setting", SETTINGS)
def test_setting_accepts_role_nobody(live, setting):
    nobody = system_id(live, "role:nobody")
    group_id = create_ok(live.owner, "Support", **{setting: nobody})
    assert group(live, group_id)[setting] == nobody


@pytest.mark.parametrize("setting", SETTINGS)
def test_setting_unknown_group(live, setting):
    assert_error(create(live.owner, "Support", **{setting: 9999}), "Invalid user group")


def test_setting_cannot_name_an_anonymous_group_by_id(live):
    group_id = create_ok(live.make_user(), "First")
    anonymous = live.read(lambda tx: tx.value("SELECT can_manage_group FROM user_groups WHERE id = ?", (group_id,)))
    assert_error(create(live.owner, "Second", can_join_group=anonymous), "Invalid user group")


def test_setting_cannot_be_a_deactivated_group(live):
    gone = create_ok(live.owner, "Gone")
    live.write(lambda tx: tx.execute("UPDATE user_groups SET deactivated = 1 WHERE id = ?", (gone,)))
    assert_error(create(live.owner, "Support", can_join_group=gone), "User group is deactivated.")


@pytest.mark.parametrize("setting", SETTINGS)
def test_setting_never_role_internet(live, setting):
    internet = system_id(live, "role:internet")
    assert_error(
        create(live.owner, "Support", **{setting: internet}),
        f"'{setting}' setting cannot be set to 'role:internet' group.",
    )


@pytest.mark.parametrize("setting", NO_EVERYONE)
def test_setting_rejects_role_everyone(live, setting):
    everyone = system_id(live, "role:everyone")
    assert_error(
        create(live.owner, "Support", **{setting: everyone}),
        f"'{setting}' setting cannot be set to 'role:everyone' group.",
    )


@pytest.mark.parametrize("setting", ["can_leave_group", "can_mention_group"])
def test_setting_allows_role_everyone(live, setting):
    everyone = system_id(live, "role:everyone")
    group_id = create_ok(live.owner, "Support", **{setting: everyone})
    assert group(live, group_id)[setting] == everyone


def test_can_mention_group_rejects_role_owners(live):
    owners = system_id(live, "role:owners")
    assert_error(
        create(live.owner, "Support", can_mention_group=owners),
        "'can_mention_group' setting cannot be set to 'role:owners' group.",
    )


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s != "can_mention_group"])
def test_other_settings_allow_role_owners(live, setting):
    owners = system_id(live, "role:owners")
    group_id = create_ok(live.owner, "Support", **{setting: owners})
    assert group(live, group_id)[setting] == owners


def test_object_form_empty_is_role_nobody(live):
    group_id = create_ok(live.owner, "Support", can_manage_group={"direct_members": [], "direct_subgroups": []})
    assert group(live, group_id)["can_manage_group"] == system_id(live, "role:nobody")


def test_object_form_single_subgroup_is_that_group(live):
    moderators = system_id(live, "role:moderators")
    value = {"direct_members": [], "direct_subgroups": [moderators]}
    group_id = create_ok(live.owner, "Support", can_manage_group=value)
    assert group(live, group_id)["can_manage_group"] == moderators


def test_object_form_single_subgroup_obeys_the_setting_rules(live):
    everyone = system_id(live, "role:everyone")
    assert_error(
        create(live.owner, "Support", can_manage_group={"direct_members": [], "direct_subgroups": [everyone]}),
        "'can_manage_group' setting cannot be set to 'role:everyone' group.",
    )
    owners = system_id(live, "role:owners")
    assert_error(
        create(live.owner, "Support", can_mention_group={"direct_members": [], "direct_subgroups": [owners]}),
        "'can_mention_group' setting cannot be set to 'role:owners' group.",
    )


def test_object_form_with_members_is_an_anonymous_group(live):
    alice, bob = live.make_user(), live.make_user()
    admins = system_id(live, "role:administrators")
    value = {"direct_members": [bob.id, alice.id, bob.id], "direct_subgroups": [admins]}
    group_id = create_ok(live.owner, "Support", can_join_group=value)
    expected = {"direct_members": sorted([alice.id, bob.id]), "direct_subgroups": [admins]}
    assert group(live, group_id)["can_join_group"] == expected


def test_object_form_with_several_subgroups_is_an_anonymous_group(live):
    admins, moderators = system_id(live, "role:administrators"), system_id(live, "role:moderators")
    value = {"direct_members": [], "direct_subgroups": [moderators, admins]}
    group_id = create_ok(live.owner, "Support", can_mention_group=value)
    expected = {"direct_members": [], "direct_subgroups": sorted([admins, moderators])}
    assert group(live, group_id)["can_mention_group"] == expected


def test_object_form_unknown_or_deactivated_member(live):
    value = {"direct_members": [9999], "direct_subgroups": []}
    assert_error(create(live.owner, "Support", can_join_group=value), "Invalid user ID: 9999")
    member = live.make_user()
    assert_success(live.owner.delete(f"/users/{member.id}"))
    value = {"direct_members": [member.id], "direct_subgroups": []}
    assert_error(create(live.owner, "Support", can_join_group=value), f"Invalid user ID: {member.id}")


def test_object_form_unknown_subgroup(live):
    value = {"direct_members": [live.owner.id], "direct_subgroups": [9999]}
    assert_error(create(live.owner, "Support", can_join_group=value), "Invalid user group ID: 9999")


@pytest.mark.parametrize(
    ("value", "msg"),
    [
        ("abc", "can_join_group is not valid JSON"),
        ('"abc"', "can_join_group is not an integer"),
        ("true", "can_join_group is not an integer"),
        ("[1]", "can_join_group is not an integer"),
        ('{"foo": 1}', 'Argument "foo" at can_join_group["foo"] is unexpected'),
        ('{"direct_members": []}', 'can_join_group["direct_subgroups"] field is missing: Field required'),
        (
            '{"direct_members": ["a"], "direct_subgroups": []}',
            'can_join_group["direct_members"][0] is not an integer',
        ),
    ],
)
def test_malformed_setting_value(live, value, msg):
    assert_error(create(live.owner, "Support", can_join_group=value), msg)


def test_null_setting_takes_the_default(live):
    group_id = create_ok(live.owner, "Support", can_join_group="null")
    assert group(live, group_id)["can_join_group"] == system_id(live, "role:nobody")


# -- events --------------------------------------------------------------------------------------


def test_create_sends_add_event_to_every_active_user(live):
    member, guest, gone = live.make_user(), live.make_user("guest"), live.make_user()
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    start = len(live.events())
    group_id = create_ok(live.owner, "Support", [member.id])
    sent = events_since(live, start)
    assert sent == [
        (
            {"type": "user_group", "op": "add", "group": group(live, group_id), "for_reactivation": False},
            sorted([live.owner.id, member.id, guest.id]),
        ),
    ]


def test_create_with_subgroups_sends_add_then_add_subgroups(live):
    member = live.make_user()
    inner = create_ok(live.owner, "Inner")
    admins = system_id(live, "role:administrators")
    start = len(live.events())
    group_id = create_ok(live.owner, "Outer", [member.id], subgroups=[inner, admins])
    (add, add_audience), (subgroups, sub_audience) = events_since(live, start)
    audience = sorted([live.owner.id, member.id])
    assert add["op"] == "add" and add_audience == audience
    # The group object of the add event has no subgroups yet: add_subgroups brings them.
    assert add["group"] == {**group(live, group_id), "direct_subgroup_ids": []}
    assert (subgroups, sub_audience) == (
        {
            "type": "user_group",
            "op": "add_subgroups",
            "group_id": group_id,
            "direct_subgroup_ids": sorted([inner, admins]),
        },
        audience,
    )


# -- is_member -----------------------------------------------------------------------------------


def is_member(live, user_id, group_id):
    return live.read(groups.is_member, user_id, group_id)


def test_is_member_through_nested_named_groups(live):
    alice, bob = live.make_user(), live.make_user()
    inner = create_ok(live.owner, "Inner", [alice.id])
    outer = create_ok(live.owner, "Outer", [], subgroups=[inner])
    outermost = create_ok(live.owner, "Outermost", [bob.id], subgroups=[outer])
    assert is_member(live, alice.id, inner)
    assert is_member(live, alice.id, outer)
    assert is_member(live, alice.id, outermost)
    assert is_member(live, bob.id, outermost)
    assert not is_member(live, bob.id, outer)
    assert not is_member(live, live.owner.id, outermost)


def test_is_member_of_an_anonymous_setting_group(live):
    alice, bob = live.make_user(), live.make_user()
    inner = create_ok(live.owner, "Inner", [alice.id])
    value = {"direct_members": [bob.id], "direct_subgroups": [inner]}
    group_id = create_ok(live.owner, "Support", can_join_group=value)
    anonymous = live.read(lambda tx: tx.value("SELECT can_join_group FROM user_groups WHERE id = ?", (group_id,)))
    assert is_member(live, alice.id, anonymous)
    assert is_member(live, bob.id, anonymous)
    assert not is_member(live, live.owner.id, anonymous)


def test_is_member_of_system_groups_by_role(live):
    guest, member, moderator = live.make_user("guest"), live.make_user("member"), live.make_user("moderator")
    ids = {name: g["id"] for name, g in by_name(live).items()}
    expected = {
        # role:everyone includes guests; role:members and everything inside it excludes them.
        guest.id: {"role:everyone", "role:internet"},
        member.id: {"role:fullmembers", "role:members", "role:everyone", "role:internet"},
        moderator.id: {"role:moderators", "role:fullmembers", "role:members", "role:everyone", "role:internet"},
        live.owner.id: set(ids) - {"role:nobody"},
    }
    for user_id, names in expected.items():
        assert {name for name, gid in ids.items() if is_member(live, user_id, gid)} == names, user_id


def test_deactivated_users_are_members_of_nothing(live):
    alice = live.make_user()
    team = create_ok(live.owner, "Team", [alice.id])
    everyone = system_id(live, "role:everyone")
    assert_success(live.owner.delete(f"/users/{alice.id}"))
    assert not is_member(live, alice.id, team)
    assert not is_member(live, alice.id, everyone)
    assert_success(live.owner.post(f"/users/{alice.id}/reactivate"))
    assert is_member(live, alice.id, team)
    assert is_member(live, alice.id, everyone)


def test_is_member_of_unknown_group_or_user(live):
    assert not is_member(live, live.owner.id, 9999)
    assert not is_member(live, 9999, system_id(live, "role:everyone"))


def test_is_member_follows_role_changes(live):
    user = live.make_user("member")
    members, everyone = system_id(live, "role:members"), system_id(live, "role:everyone")
    moderators = system_id(live, "role:moderators")
    assert is_member(live, user.id, members)

    assert_success(live.owner.patch(f"/users/{user.id}", {"role": groups.ROLE_GUEST}))
    assert not is_member(live, user.id, members)
    assert is_member(live, user.id, everyone)

    assert_success(live.owner.patch(f"/users/{user.id}", {"role": groups.ROLE_MODERATOR}))
    assert is_member(live, user.id, moderators)
    assert is_member(live, user.id, members)
    assert not is_member(live, user.id, system_id(live, "role:administrators"))


def test_role_change_moves_system_group_membership_with_events(live):
    user = live.make_user("member")
    ids = {name: g["id"] for name, g in by_name(live).items()}
    start = len(live.events())
    assert_success(live.owner.patch(f"/users/{user.id}", {"role": groups.ROLE_GUEST}))
    group_events = [
        (e["op"], e["group_id"], e["user_ids"]) for e, _ in events_since(live, start) if e["type"] == "user_group"
    ]
    assert sorted(group_events) == sorted(
        [
            ("remove_members", ids["role:fullmembers"], [user.id]),
            ("remove_members", ids["role:members"], [user.id]),
            ("add_members", ids["role:everyone"], [user.id]),
        ]
    )
    found = by_name(live)
    assert user.id not in found["role:members"]["members"]
    assert user.id in found["role:everyone"]["members"]


def test_role_change_keeps_named_group_membership(live):
    user = live.make_user("member")
    team = create_ok(live.owner, "Team", [user.id])
    assert_success(live.owner.patch(f"/users/{user.id}", {"role": groups.ROLE_GUEST}))
    assert is_member(live, user.id, team)
