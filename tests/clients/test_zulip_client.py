"""The official `zulip` package drives tornchat exactly as users' scripts do."""

from __future__ import annotations


def test_get_profile(zulip_client, live):
    profile = zulip_client.get_profile()
    assert profile["result"] == "success"
    assert profile["user_id"] == live.owner.id
    assert profile["is_owner"] is True


def test_server_settings(zulip_client):
    assert zulip_client.get_server_settings()["realm_name"] == "Tornchat"


def test_create_and_manage_users(zulip_client):
    created = zulip_client.create_user(
        {"email": "newbie@example.com", "password": "s3cret-pass", "full_name": "New Bie"}
    )
    assert created["result"] == "success", created
    user_id = created["user_id"]
    assert zulip_client.get_user_by_id(user_id)["user"]["full_name"] == "New Bie"
    assert zulip_client.update_user_by_id(user_id, full_name="Renamed", role=300)["result"] == "success"
    members = {m["user_id"]: m for m in zulip_client.get_members()["members"]}
    assert members[user_id]["full_name"] == "Renamed"
    assert members[user_id]["role"] == 300
    assert zulip_client.deactivate_user_by_id(user_id)["result"] == "success"
    assert zulip_client.get_user_by_id(user_id)["user"]["is_active"] is False
    assert zulip_client.reactivate_user_by_id(user_id)["result"] == "success"
    assert zulip_client.get_user_by_id(user_id)["user"]["is_active"] is True


def test_user_groups(zulip_client, live):
    member = live.make_user()
    result = zulip_client.create_user_group({"name": "marketing", "description": "Sells", "members": [member.id]})
    assert result["result"] == "success", result
    groups = {g["name"]: g for g in zulip_client.get_user_groups()["user_groups"]}
    assert groups["marketing"]["members"] == [member.id]
    assert "role:everyone" in groups


def test_profile_fields(zulip_client):
    created = zulip_client.create_realm_profile_field(name="Team", field_type=1, hint="Which team?")
    assert created["result"] == "success", created
    fields = zulip_client.get_realm_profile_fields()["custom_fields"]
    assert [f["name"] for f in fields] == ["Team"]


def test_errors_come_back_as_json(zulip_client):
    result = zulip_client.get_user_by_id(999999)
    assert result == {"result": "error", "msg": "No such user", "code": "BAD_REQUEST"}


def test_status_mute_receipts_and_reports_through_call_endpoint(zulip_client, live):
    """The zulip package has no methods for these; scripts reach them through call_endpoint."""
    alice = live.make_user(full_name="Alice")
    call = zulip_client.call_endpoint
    assert call("users/me/status", method="POST", request={"status_text": "Busy", "away": True})["result"] == "success"
    assert call(f"users/{live.owner.id}/status", method="GET")["status"] == {"away": True, "status_text": "Busy"}
    assert call(f"users/me/muted_users/{alice.id}", method="POST")["result"] == "success"
    assert call(f"users/me/muted_users/{alice.id}", method="POST")["msg"] == "User already muted"
    message_id = zulip_client.send_message({"type": "private", "to": [alice.id], "content": "hello"})["id"]
    assert call(f"messages/{message_id}/read_receipts", method="GET")["user_ids"] == []
    report = call(f"messages/{message_id}/report", method="POST", request={"report_type": "spam"})
    assert report["msg"] == "Message reporting is not enabled in this organization."
