"""Custom profile fields: GET/POST /realm/profile_fields and profile_data in PATCH /users/{id}."""

from __future__ import annotations

import json

import pytest

from storage.org.profile_fields import DATE, LONG_TEXT, PRONOUNS, SELECT, SHORT_TEXT, URL, USER
from tests.support.helpers import assert_error, assert_success

OPTIONS = {"vim": {"text": "Vim", "order": "1"}, "emacs": {"text": "Emacs", "order": "2"}}


def create_field(client, name, field_type, **params):
    return client.post("/realm/profile_fields", {"name": name, "field_type": field_type, **params})


def create_field_ok(live, name, field_type, **params):
    return assert_success(create_field(live.owner, name, field_type, **params))["id"]


def list_fields(client):
    return assert_success(client.get("/realm/profile_fields"))["custom_fields"]


@pytest.fixture
def fields(live):
    """One field of each type, by type."""
    return {
        SHORT_TEXT: create_field_ok(live, "Phone", SHORT_TEXT),
        LONG_TEXT: create_field_ok(live, "Biography", LONG_TEXT),
        SELECT: create_field_ok(live, "Editor", SELECT, field_data=OPTIONS),
        DATE: create_field_ok(live, "Birthday", DATE),
        URL: create_field_ok(live, "Website", URL),
        USER: create_field_ok(live, "Mentor", USER),
        PRONOUNS: create_field_ok(live, "Pronouns", PRONOUNS),
    }


def set_profile(live, user_id, entries):
    return live.owner.patch(f"/users/{user_id}", {"profile_data": entries})


def profile_of(live, user_id):
    user = assert_success(live.owner.get(f"/users/{user_id}", {"include_custom_profile_fields": True}))["user"]
    return user["profile_data"]


def person_events(live, start):
    return [(e["person"], audience) for e, audience in live.events()[start:] if e["type"] == "realm_user"]


# -- GET /realm/profile_fields -------------------------------------------------------------------


def test_no_fields_at_first(live):
    assert list_fields(live.owner) == []


def test_fields_are_listed_in_order(live):
    phone = create_field_ok(live, "Phone", SHORT_TEXT, hint="Work phone")
    editor = create_field_ok(
        live,
        "Editor",
        SELECT,
        field_data=OPTIONS,
        display_in_profile_summary=True,
        required=True,
        editable_by_user=False,
    )
    assert list_fields(live.owner) == [
        {
            "id": phone,
            "type": SHORT_TEXT,
            "order": 1,
            "name": "Phone",
            "hint": "Work phone",
            "field_data": "",
            "required": False,
            "editable_by_user": True,
        },
        {
            "id": editor,
            "type": SELECT,
            "order": 2,
            "name": "Editor",
            "hint": "",
            "field_data": json.dumps(OPTIONS),
            "display_in_profile_summary": True,
            "required": True,
            "editable_by_user": False,
        },
    ]


def test_field_data_is_json_text_of_the_options(live):
    create_field_ok(live, "Editor", SELECT, field_data=OPTIONS)
    assert json.loads(list_fields(live.owner)[0]["field_data"]) == OPTIONS


def test_every_role_may_list_fields(live, fields):
    for role in ("guest", "member", "moderator", "admin"):
        assert [f["id"] for f in list_fields(live.make_user(role))] == list(fields.values())


def test_list_reports_ignored_parameters(live):
    body = assert_success(live.owner.get("/realm/profile_fields", {"bogus": "1"}))
    assert body["ignored_parameters_unsupported"] == ["bogus"]


# -- POST /realm/profile_fields ------------------------------------------------------------------


def test_create_returns_id_and_notifies_everyone(live):
    member = live.make_user()
    start = len(live.events())
    field_id = create_field_ok(live, "  Phone  ", SHORT_TEXT)
    assert list_fields(live.owner)[0]["name"] == "Phone"
    assert live.events()[start:] == [
        ({"type": "custom_profile_fields", "fields": list_fields(live.owner)}, sorted([live.owner.id, member.id])),
    ]
    assert list_fields(live.owner)[0]["id"] == field_id


def test_admins_may_create_fields(live):
    assert_success(create_field(live.make_user("admin"), "Phone", SHORT_TEXT))


@pytest.mark.parametrize("role", ["guest", "member", "moderator"])
def test_non_admins_may_not_create_fields(live, role):
    client = live.make_user(role)
    response = create_field(client, "Phone", SHORT_TEXT)
    assert_error(response, "Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL")
    assert list_fields(live.owner) == []


def test_admin_check_comes_before_parameters(live):
    member = live.make_user()
    assert_error(
        member.post("/realm/profile_fields", {"field_type": "x"}),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
    )


@pytest.mark.parametrize("name", ["", "   "])
def test_blank_label(live, name):
    assert_error(create_field(live.owner, name, SHORT_TEXT), "Label cannot be blank.")


def test_missing_label_is_blank(live):
    assert_error(live.owner.post("/realm/profile_fields", {"field_type": SHORT_TEXT}), "Label cannot be blank.")


def test_label_and_hint_lengths(live):
    assert_error(create_field(live.owner, "x" * 41, SHORT_TEXT), "name is too long (limit: 40 characters)")
    assert_error(
        create_field(live.owner, "Phone", SHORT_TEXT, hint="h" * 81), "hint is too long (limit: 80 characters)"
    )
    assert_success(create_field(live.owner, "x" * 40, SHORT_TEXT, hint="h" * 80))


def test_duplicate_label_is_case_insensitive(live):
    create_field_ok(live, "Phone", SHORT_TEXT)
    assert_error(create_field(live.owner, "Phone", URL), "A field with that label already exists.")
    assert_error(create_field(live.owner, "PHONE", URL), "A field with that label already exists.")


@pytest.mark.parametrize("field_type", [0, 99, -1])
def test_invalid_field_type(live, field_type):
    assert_error(create_field(live.owner, "Phone", field_type), "Invalid field type.")


@pytest.mark.parametrize(
    ("value", "msg"), [("abc", "field_type is not valid JSON"), ('"1"', "field_type is not an integer")]
)
def test_malformed_field_type(live, value, msg):
    assert_error(create_field(live.owner, "Phone", value), msg)


def test_missing_field_type(live):
    body = assert_error(
        live.owner.post("/realm/profile_fields", {"name": "Phone"}),
        "Missing 'field_type' argument",
        "REQUEST_VARIABLE_MISSING",
    )
    assert body["var_name"] == "field_type"


@pytest.mark.parametrize(
    ("field_data", "msg"),
    [
        (None, "Field must have at least one choice."),
        ({}, "Field must have at least one choice."),
        (
            {"a": {"text": "A", "order": "1"}, "b": {"text": "A", "order": "2"}},
            "Field must not have duplicate choices.",
        ),
        ({"a": {"order": "1"}}, "text key is missing from field_data"),
        ({"a": {"text": "A"}}, "order key is missing from field_data"),
        ({"a": {"text": "  ", "order": "1"}}, 'field_data["text"] cannot be blank.'),
        ({"a": {"text": "A", "order": 1}}, 'field_data["order"] is not a string'),
        ({"a": {"text": "A", "order": "1", "extra": "x"}}, "Unexpected arguments: extra"),
        ({"a": "A"}, "field_data is not a dict"),
        ({" ": {"text": "A", "order": "1"}}, "'value' cannot be blank."),
    ],
)
def test_select_field_data_rules(live, field_data, msg):
    params = {} if field_data is None else {"field_data": field_data}
    assert_error(create_field(live.owner, "Editor", SELECT, **params), msg)


def test_select_field_data_must_be_an_object(live):
    assert_error(create_field(live.owner, "Editor", SELECT, field_data=[1]), "field_data is not a dict")


def test_select_options_are_checked_before_the_label(live):
    assert_error(create_field(live.owner, "", SELECT, field_data={}), "Field must have at least one choice.")


def test_field_data_of_other_types_is_ignored(live):
    create_field_ok(live, "Phone", SHORT_TEXT, field_data=OPTIONS)
    assert list_fields(live.owner)[0]["field_data"] == ""


@pytest.mark.parametrize("field_type", [LONG_TEXT, USER])
def test_some_types_cannot_be_in_the_profile_summary(live, field_type):
    assert_error(
        create_field(live.owner, "Field", field_type, display_in_profile_summary=True),
        "Field type not supported for display in profile summary.",
    )


def test_at_most_two_fields_in_the_profile_summary(live):
    create_field_ok(live, "One", SHORT_TEXT, display_in_profile_summary=True)
    create_field_ok(live, "Two", URL, display_in_profile_summary=True)
    assert_error(
        create_field(live.owner, "Three", DATE, display_in_profile_summary=True),
        "Only 2 custom profile fields can be displayed in the profile summary.",
    )
    create_field_ok(live, "Four", DATE)


# -- profile_data: values of each type -----------------------------------------------------------


def test_short_text(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[SHORT_TEXT], "value": "**+1** 555"}]))
    assert profile_of(live, member.id) == {
        str(fields[SHORT_TEXT]): {"value": "**+1** 555", "rendered_value": "<p><strong>+1</strong> 555</p>"},
    }


def test_short_text_length_limit(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[SHORT_TEXT], "value": "x" * 50}]))
    assert_error(
        set_profile(live, member.id, [{"id": fields[SHORT_TEXT], "value": "x" * 51}]),
        "Phone is too long (limit: 50 characters)",
    )
    assert profile_of(live, member.id)[str(fields[SHORT_TEXT])]["value"] == "x" * 50


def test_long_text_is_rendered(live, fields):
    member = live.make_user()
    text = "Hello *world*\n\nSecond paragraph"
    assert_success(set_profile(live, member.id, [{"id": fields[LONG_TEXT], "value": text}]))
    entry = profile_of(live, member.id)[str(fields[LONG_TEXT])]
    assert entry == {"value": text, "rendered_value": "<p>Hello <em>world</em></p>\n<p>Second paragraph</p>"}


def test_long_text_length_limit(live, fields):
    member = live.make_user()
    assert_error(
        set_profile(live, member.id, [{"id": fields[LONG_TEXT], "value": "x" * 501}]),
        "Biography is too long (limit: 500 characters)",
    )


def test_rendered_value_never_passes_raw_html(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[LONG_TEXT], "value": "<script>x</script>"}]))
    assert "<script>" not in profile_of(live, member.id)[str(fields[LONG_TEXT])]["rendered_value"]


@pytest.mark.parametrize("value", ["https://example.com/~me?x=1", "http://example.org", "ftp://files.example.com"])
def test_url(live, fields, value):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[URL], "value": value}]))
    assert profile_of(live, member.id) == {str(fields[URL]): {"value": value}}


@pytest.mark.parametrize(
    "value", ["example.com", "not a url", "http://", "javascript:alert(1)", "https://exa mple.com"]
)
def test_invalid_url(live, fields, value):
    member = live.make_user()
    assert_error(set_profile(live, member.id, [{"id": fields[URL], "value": value}]), "Website is not a URL")


def test_date(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[DATE], "value": "1990-02-28"}]))
    assert profile_of(live, member.id) == {str(fields[DATE]): {"value": "1990-02-28"}}


@pytest.mark.parametrize(
    "value", ["1990-02-30", "02/28/1990", "1990-2-28", "19900228", "2020-W01-1", "1990-02-28T00:00"]
)
def test_invalid_date(live, fields, value):
    member = live.make_user()
    assert_error(set_profile(live, member.id, [{"id": fields[DATE], "value": value}]), "Birthday is not a date")


def test_select(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[SELECT], "value": "emacs"}]))
    assert profile_of(live, member.id) == {str(fields[SELECT]): {"value": "emacs"}}


@pytest.mark.parametrize("value", ["Emacs", "nano"])
def test_select_value_must_be_an_option_key(live, fields, value):
    member = live.make_user()
    assert_error(
        set_profile(live, member.id, [{"id": fields[SELECT], "value": value}]),
        f"'{value}' is not a valid choice for 'Editor'.",
    )


def test_users(live, fields):
    member, alice, bob = live.make_user(), live.make_user(), live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[USER], "value": [bob.id, alice.id]}]))
    entry = profile_of(live, member.id)[str(fields[USER])]
    assert entry == {"value": json.dumps([bob.id, alice.id], separators=(",", ":"))}


def test_users_unknown_id(live, fields):
    member = live.make_user()
    assert_error(
        set_profile(live, member.id, [{"id": fields[USER], "value": [member.id, 9999]}]), "Invalid user ID: 9999"
    )


def test_users_deactivated_user(live, fields):
    member, gone = live.make_user(), live.make_user()
    assert_success(live.owner.delete(f"/users/{gone.id}"))
    assert_error(
        set_profile(live, member.id, [{"id": fields[USER], "value": [gone.id]}]),
        f"User with ID {gone.id} is deactivated",
    )


def test_users_bot(live, fields):
    member, bot = live.make_user(), live.make_user()
    live.write(lambda tx: tx.execute("UPDATE users SET is_bot = 1, bot_type = 1 WHERE id = ?", (bot.id,)))
    assert_error(
        set_profile(live, member.id, [{"id": fields[USER], "value": [bot.id]}]), f"User with ID {bot.id} is a bot"
    )


def test_users_value_must_be_a_list(live, fields):
    member = live.make_user()
    assert_error(
        set_profile(live, member.id, [{"id": fields[USER], "value": str(member.id)}]), "User IDs is not a list"
    )


def test_text_value_must_be_a_string(live, fields):
    member = live.make_user()
    assert_error(set_profile(live, member.id, [{"id": fields[SHORT_TEXT], "value": [1]}]), "Phone is not a string")
    assert_error(set_profile(live, member.id, [{"id": fields[SELECT], "value": [1]}]), "Editor is not a string")


def test_pronouns(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[PRONOUNS], "value": "they/them"}]))
    assert profile_of(live, member.id) == {str(fields[PRONOUNS]): {"value": "they/them"}}
    assert_error(
        set_profile(live, member.id, [{"id": fields[PRONOUNS], "value": "x" * 51}]),
        "Pronouns is too long (limit: 50 characters)",
    )


@pytest.mark.parametrize(
    ("entries", "msg"),
    [
        ("abc", "profile_data is not valid JSON"),
        ({"id": 1, "value": "x"}, "profile_data is not a list"),
        ([{"id": "1", "value": "x"}], 'profile_data[0]["id"] is not an integer'),
        ([{"id": 1}], 'profile_data[0]["value"] field is missing: Field required'),
        ([{"id": 1, "value": 5}], 'profile_data[0]["value"] is not a string'),
        ([{"id": 1, "value": ["a"]}], 'profile_data[0]["value"][0] is not an integer'),
    ],
)
def test_malformed_profile_data(live, fields, entries, msg):
    member = live.make_user()
    assert_error(set_profile(live, member.id, entries), msg)


def test_unknown_field(live, fields):
    member = live.make_user()
    assert_error(set_profile(live, member.id, [{"id": 9999, "value": "x"}]), "Field id 9999 not found.")
    assert_error(set_profile(live, member.id, [{"id": 9999, "value": None}]), "Field id 9999 not found.")


# -- removing values, several at once, where values appear --------------------------------------


@pytest.mark.parametrize("empty", [None, "", []])
def test_null_or_empty_removes_the_value(live, fields, empty):
    member = live.make_user()
    entries = [{"id": fields[SHORT_TEXT], "value": "555"}, {"id": fields[USER], "value": [member.id]}]
    assert_success(set_profile(live, member.id, entries))
    assert_success(set_profile(live, member.id, [{"id": fields[SHORT_TEXT], "value": empty}]))
    assert profile_of(live, member.id) == {str(fields[USER]): {"value": f"[{member.id}]"}}
    assert_success(set_profile(live, member.id, [{"id": fields[USER], "value": empty}]))
    assert profile_of(live, member.id) == {}


def test_removing_an_absent_value_is_a_no_op(live, fields):
    member = live.make_user()
    start = len(live.events())
    assert_success(set_profile(live, member.id, [{"id": fields[URL], "value": None}]))
    assert person_events(live, start) == []


def test_several_values_at_once(live, fields):
    member = live.make_user()
    entries = [
        {"id": fields[SHORT_TEXT], "value": "555"},
        {"id": fields[DATE], "value": "2000-01-01"},
        {"id": fields[SELECT], "value": "vim"},
    ]
    assert_success(set_profile(live, member.id, entries))
    assert profile_of(live, member.id) == {
        str(fields[SHORT_TEXT]): {"value": "555", "rendered_value": "<p>555</p>"},
        str(fields[DATE]): {"value": "2000-01-01"},
        str(fields[SELECT]): {"value": "vim"},
    }


def test_one_bad_entry_changes_nothing(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[SHORT_TEXT], "value": "old"}]))
    before, start = profile_of(live, member.id), len(live.events())
    entries = [
        {"id": fields[SHORT_TEXT], "value": None},
        {"id": fields[DATE], "value": "2000-01-01"},
        {"id": fields[URL], "value": "nope"},
    ]
    assert_error(set_profile(live, member.id, entries), "Website is not a URL")
    assert profile_of(live, member.id) == before
    assert person_events(live, start) == []


def test_bad_profile_data_also_undoes_other_changes(live, fields):
    member = live.make_user(full_name="Before")
    response = live.owner.patch(
        f"/users/{member.id}", {"full_name": "After", "profile_data": [{"id": fields[DATE], "value": "x"}]}
    )
    assert_error(response, "Birthday is not a date")
    assert live.user(member.id).full_name == "Before"


def test_profile_data_only_when_requested(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[DATE], "value": "2000-01-01"}]))
    user = assert_success(live.owner.get(f"/users/{member.id}"))["user"]
    assert "profile_data" not in user
    user = assert_success(live.owner.get(f"/users/{member.id}", {"include_custom_profile_fields": False}))["user"]
    assert "profile_data" not in user


def test_profile_data_in_the_user_list(live, fields):
    member, other = live.make_user(), live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[DATE], "value": "2000-01-01"}]))
    listed = assert_success(live.owner.get("/users", {"include_custom_profile_fields": True}))["members"]
    profiles = {u["user_id"]: u["profile_data"] for u in listed}
    assert profiles[member.id] == {str(fields[DATE]): {"value": "2000-01-01"}}
    assert profiles[other.id] == {}
    listed = assert_success(live.owner.get("/users"))["members"]
    assert all("profile_data" not in u for u in listed)


def test_profile_data_of_own_user(live, fields):
    member = live.make_user()
    assert assert_success(member.get("/users/me"))["profile_data"] == {}
    assert_success(set_profile(live, member.id, [{"id": fields[SELECT], "value": "vim"}]))
    assert assert_success(member.get("/users/me"))["profile_data"] == {str(fields[SELECT]): {"value": "vim"}}


def test_other_users_see_profile_data(live, fields):
    member, guest = live.make_user(), live.make_user("guest")
    assert_success(set_profile(live, member.id, [{"id": fields[URL], "value": "https://example.com"}]))
    user = assert_success(guest.get(f"/users/{member.id}", {"include_custom_profile_fields": True}))["user"]
    assert user["profile_data"] == {str(fields[URL]): {"value": "https://example.com"}}


def test_only_admins_set_other_users_profile_data(live, fields):
    member, other = live.make_user(), live.make_user()
    response = member.patch(f"/users/{other.id}", {"profile_data": [{"id": fields[URL], "value": "https://x.org"}]})
    assert_error(response, "Insufficient permission")
    assert profile_of(live, other.id) == {}


# -- events --------------------------------------------------------------------------------------


def test_update_events(live, fields):
    member, guest = live.make_user(), live.make_user("guest")
    everyone = sorted([live.owner.id, member.id, guest.id])
    start = len(live.events())
    entries = [{"id": fields[LONG_TEXT], "value": "*hi*"}, {"id": fields[URL], "value": "https://example.com"}]
    assert_success(set_profile(live, member.id, entries))
    assert person_events(live, start) == [
        (
            {
                "user_id": member.id,
                "custom_profile_field": {
                    "id": fields[LONG_TEXT],
                    "value": "*hi*",
                    "rendered_value": "<p><em>hi</em></p>",
                },
            },
            everyone,
        ),
        ({"user_id": member.id, "custom_profile_field": {"id": fields[URL], "value": "https://example.com"}}, everyone),
    ]


def test_no_event_when_the_value_is_unchanged(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[DATE], "value": "2000-01-01"}]))
    start = len(live.events())
    assert_success(set_profile(live, member.id, [{"id": fields[DATE], "value": "2000-01-01"}]))
    assert person_events(live, start) == []


def test_removal_event(live, fields):
    member = live.make_user()
    assert_success(set_profile(live, member.id, [{"id": fields[USER], "value": [member.id]}]))
    start = len(live.events())
    assert_success(set_profile(live, member.id, [{"id": fields[USER], "value": None}]))
    assert person_events(live, start) == [
        (
            {"user_id": member.id, "custom_profile_field": {"id": fields[USER], "value": None}},
            sorted([live.owner.id, member.id]),
        ),
    ]
