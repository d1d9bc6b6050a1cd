"""The official `zulip` package drives tornchat exactly as users' scripts do."""

from __future__ import annotations

import os

import pytest
import zulip

from tornchat.bootstrap import write_zuliprc


@pytest.fixture
def client(live, tmp_path):
    path = os.path.join(str(tmp_path), "zuliprc-live")
    write_zuliprc(path, "owner@example.com", live.owner.api_key, live.base_url)
    return zulip.Client(config_file=path)


def test_get_profile(client, live):
    profile = client.get_profile()
    assert profile["result"] == "success"
    assert profile["user_id"] == live.owner.id
    assert profile["is_owner"] is True


def test_server_settings(client):
    assert client.get_server_settings()["realm_name"] == "Tornchat"


def test_create_and_manage_users(client):
    created = client.create_user({"email": "newbie@example.com", "password": "s3cret-pass", "full_name": "New Bie"})
    assert created["result"] == "success", created
    user_id = created["user_id"]
    assert client.get_user_by_id(user_id)["user"]["full_name"] == "New Bie"
    assert client.update_user_by_id(user_id, full_name="Renamed", role=300)["result"] == "success"
    members = {m["user_id"]: m for m in client.get_members()["members"]}
    assert members[user_id]["full_name"] == "Renamed"
    assert members[user_id]["role"] == 300
    assert client.deactivate_user_by_id(user_id)["result"] == "success"
    assert client.get_user_by_id(user_id)["user"]["is_active"] is False
    assert client.reactivate_user_by_id(user_id)["result"] == "success"
    assert client.get_user_by_id(user_id)["user"]["is_active"] is True


def test_user_groups(client, live):
    member = live.make_user()
    result = client.create_user_group({"name": "marketing", "description": "Sells", "members": [member.id]})
    assert result["result"] == "success", result
    groups = {g["name"]: g for g in client.get_user_groups()["user_groups"]}
    assert groups["marketing"]["members"] == [member.id]
    assert "role:everyone" in groups


def test_profile_fields(client):
    created = client.create_realm_profile_field(name="Team", field_type=1, hint="Which team?")
    assert created["result"] == "success", created
    fields = client.get_realm_profile_fields()["custom_fields"]
    assert [f["name"] for f in fields] == ["Team"]


def test_errors_come_back_as_json(client):
    result = client.get_user_by_id(999999)
    assert result == {"result": "error", "msg": "No such user", "code": "BAD_REQUEST"}
