"""The web client's sign-in and sign-out, channels and people panels (admin.js), and the phone layout."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from tests.browser.helpers import PHONE, Browser, wait_until
from tests.support.channel_helpers import make_channel, subscribed_names
from tests.support.helpers import PASSWORD, Client, LiveServer, assert_success
from tornchat.ratelimit import LOGIN_FAILURES_PER_PAIR

pytestmark = pytest.mark.client


@pytest.fixture(scope="module")
def bob_in_general(server: LiveServer) -> Client:
    bob = server.make_user(email="bob@example.com", full_name="Bob Builder")
    make_channel(server, "general", [server.owner.id, bob.id])
    make_channel(server, "random", [server.owner.id])
    return bob


@pytest.fixture(scope="module")
def owner_page(browser: Browser, bob_in_general: Client) -> Any:
    return browser.sign_in("owner@example.com")


@pytest.fixture(scope="module")
def bob_page(browser: Browser, bob_in_general: Client) -> Any:
    return browser.sign_in("bob@example.com")


def login(page: Any, email: str, password: str) -> None:
    page.get_by_test_id("login-email").fill(email)
    page.get_by_test_id("login-password").fill(password)
    page.get_by_test_id("login-submit").click()


def toast_with(page: Any, text: str) -> None:
    page.get_by_test_id("toast").filter(has_text=text).first.wait_for()


def test_sign_in_errors_are_shown(browser, server):
    server.make_user(email="dora@example.com", full_name="Dora")  # her own: the rate limit locks her out
    page = browser.new_page()
    page.goto("/")
    page.get_by_test_id("login-submit").click()
    error = page.get_by_test_id("login-error")
    wait_until(lambda: error.inner_text() == "Enter your email and password.", "the missing-fields message")
    login(page, "dora@example.com", "wrong password")
    wait_until(lambda: error.inner_text() == "Your username or password is incorrect", "the wrong-password message")
    for _ in range(LOGIN_FAILURES_PER_PAIR - 1):
        login(page, "dora@example.com", "wrong password")
        wait_until(lambda: page.get_by_test_id("login-submit").is_enabled(), "the attempt to finish")
    login(page, "dora@example.com", PASSWORD)  # even the right password waits now
    wait_until(lambda: error.inner_text().startswith("Too many sign-in attempts."), "the rate limit message")
    assert re.fullmatch(r"Too many sign-in attempts\. Try again in \d+ (second|minute)s?\.", error.inner_text())
    assert page.get_by_test_id("current-user").count() == 0
    page.context.close()


def test_sign_out_forgets_the_key_and_remember_me_keeps_it(browser, bob_in_general):
    page = browser.sign_in("bob@example.com", remember=False)
    other_tab = page.context.new_page()
    other_tab.goto("/")
    other_tab.get_by_test_id("login-email").wait_for()  # the key was this tab's only
    other_tab.close()
    page.get_by_test_id("logout").click()
    page.get_by_test_id("login-email").wait_for()
    page.reload()
    page.get_by_test_id("login-email").wait_for()
    assert page.evaluate("sessionStorage.length + localStorage.length") == 0
    browser.sign_in("bob@example.com", remember=True, page=page)
    other_tab = page.context.new_page()
    other_tab.goto("/")
    other_tab.get_by_test_id("current-user").wait_for()  # remembered on this device
    other_tab.close()
    page.get_by_test_id("logout").click()
    page.get_by_test_id("login-email").wait_for()
    assert page.evaluate("sessionStorage.length + localStorage.length") == 0
    page.context.close()


def test_sign_out_reaches_the_other_remembered_tabs_and_never_waits_on_the_server(browser, bob_in_general):
    page = browser.sign_in("bob@example.com", remember=True)
    other_tab = browser.new_page(context=page.context)
    other_tab.goto("/")
    other_tab.get_by_test_id("current-user").wait_for()
    # The queue's deletion never answers: the key is forgotten all the same, at once.
    page.route(
        lambda url: url.endswith("/api/v1/events"),
        lambda route: None if route.request.method == "DELETE" else route.continue_(),
    )
    page.get_by_test_id("logout").click()
    page.get_by_test_id("login-email").wait_for(timeout=6000)
    # The other tab used the same remembered key: it is signed out too, and says why.
    other_tab.get_by_test_id("login-email").wait_for(timeout=6000)
    assert "signed out in another tab" in other_tab.locator(".login-notice").inner_text()
    assert other_tab.evaluate("sessionStorage.length + localStorage.length") == 0
    page.context.close()


def test_signing_in_again_on_the_device_keeps_its_other_tabs_signed_in(browser, bob_in_general):
    third = browser.new_page()
    third.goto("/")  # open at the sign-in form before the device remembers a key
    third.get_by_test_id("login-email").wait_for()
    first = browser.sign_in("bob@example.com", remember=True, page=browser.new_page(context=third.context))
    second = browser.new_page(context=third.context)
    second.goto("/")
    second.get_by_test_id("current-user").wait_for()  # remembered
    # The third tab signs in (remembered) over the device's key: the other tabs stay signed in.
    third.get_by_test_id("login-remember").check()
    login(third, "bob@example.com", PASSWORD)
    third.get_by_test_id("logout").wait_for()
    time.sleep(0.5)  # storage events reach the other tabs
    for page in (first, second, third):
        assert page.get_by_test_id("current-user").count() == 1
    assert json.loads(third.evaluate("localStorage.getItem('tornchat.auth')"))["email"] == "bob@example.com"
    third.context.close()


def test_people_is_for_administrators_only(owner_page, bob_page):
    assert owner_page.get_by_test_id("open-people").is_visible()
    assert not bob_page.get_by_test_id("open-people").is_visible()


def test_an_administrator_creates_an_account_and_sees_its_password_once(browser, server, owner_page):
    owner_page.get_by_test_id("open-people").click()
    owner_page.get_by_test_id("user-create-email").fill("carol@example.com")
    owner_page.get_by_test_id("user-create-name").fill("Carol Chen")
    owner_page.get_by_test_id("user-create-submit").click()
    shown = owner_page.get_by_test_id("user-create-password")
    password = shown.input_value()
    assert re.fullmatch(r"[A-HJ-NP-Za-km-z2-9]{18}", password), password
    row = owner_page.locator('[data-testid="user-row"]').filter(has_text="carol@example.com")
    row.wait_for()  # the realm_user event reached the list
    # The same email again: the server's refusal is shown, and no new password.
    owner_page.get_by_test_id("user-create-email").fill("carol@example.com")
    owner_page.get_by_test_id("user-create-name").fill("Carol Again")
    owner_page.get_by_test_id("user-create-submit").click()
    toast_with(owner_page, "Email is already in use.")
    assert owner_page.get_by_test_id("user-create-password").count() == 0
    owner_page.keyboard.press("Escape")
    carol = browser.sign_in("carol@example.com", password)
    assert carol.get_by_test_id("current-user").inner_text() == "Carol Chen"
    carol.context.close()


def test_an_administrator_changes_a_role(server, owner_page, bob_in_general, bob_page):
    owner_page.get_by_test_id("open-people").click()
    owner_page.locator(f'[data-testid="user-row"][data-user-id="{bob_in_general.id}"]').get_by_test_id(
        "user-role"
    ).select_option("200")
    wait_until(lambda: server.user(bob_in_general.id).role == 200, "Bob to become an administrator")
    bob_page.get_by_test_id("open-people").wait_for()  # his page learns it live (realm_user event)
    # The only owner cannot step down: the refusal is shown and the select shows the role kept.
    mine = owner_page.locator(f'[data-testid="user-row"][data-user-id="{server.owner.id}"]').get_by_test_id("user-role")
    mine.select_option("400")
    toast_with(owner_page, "The owner permission cannot be removed from the only organization owner.")
    wait_until(lambda: mine.input_value() == "100", "the owner's role to show again")
    owner_page.keyboard.press("Escape")
    assert_success(server.owner.patch(f"/users/{bob_in_general.id}", {"role": 400}))
    wait_until(lambda: not bob_page.get_by_test_id("open-people").is_visible(), "Bob's People button to go")


def test_create_a_private_channel_with_members(server, owner_page, bob_in_general, bob_page):
    owner_page.get_by_test_id("open-channels").click()
    owner_page.get_by_test_id("channel-create-name").fill("design")
    owner_page.get_by_test_id("channel-create-description").fill("Logos and colours")
    owner_page.get_by_test_id("channel-create-private").check()
    owner_page.get_by_test_id("channel-create-members").select_option([str(server.owner.id), str(bob_in_general.id)])
    owner_page.get_by_test_id("channel-create-submit").click()
    owner_page.locator('[data-testid="channel-row"]').filter(has_text="design").wait_for()
    owner_page.keyboard.press("Escape")
    [design] = [s for s in assert_success(bob_in_general.get("/streams"))["streams"] if s["name"] == "design"]
    assert design["invite_only"] is True and design["description"] == "Logos and colours"
    bob_page.locator(f'[data-testid="channel-item"][data-stream-id="{design["stream_id"]}"]').wait_for()
    # A name taken: the server's message.
    owner_page.get_by_test_id("open-channels").click()
    owner_page.get_by_test_id("channel-create-name").fill("design")
    owner_page.get_by_test_id("channel-create-submit").click()
    toast_with(owner_page, "Channel 'design' already exists")
    owner_page.keyboard.press("Escape")


def test_subscribe_and_unsubscribe_from_the_list_by_keyboard(bob_in_general, bob_page):
    bob_page.get_by_test_id("open-channels").click()
    row = bob_page.locator('[data-testid="channel-row"]').filter(has_text="random")
    row.get_by_test_id("channel-subscribe").focus()
    bob_page.keyboard.press("Enter")
    row.get_by_test_id("channel-unsubscribe").wait_for()
    assert "random" in subscribed_names(bob_in_general)
    bob_page.locator('[data-testid="channel-item"]').filter(has_text="random").wait_for()
    # The row was drawn again; the keyboard stayed on its button, now "Unsubscribe".
    wait_until(
        lambda: bob_page.evaluate("document.activeElement.dataset.testid") == "channel-unsubscribe", "focus kept"
    )
    bob_page.keyboard.press("Enter")
    row.get_by_test_id("channel-subscribe").wait_for()
    assert "random" not in subscribed_names(bob_in_general)
    bob_page.keyboard.press("Escape")
    bob_page.get_by_test_id("channels-dialog").wait_for(state="detached")


def test_personal_settings_of_a_subscription(bob_in_general, bob_page):
    [general] = [
        s
        for s in assert_success(bob_in_general.get("/users/me/subscriptions"))["subscriptions"]
        if s["name"] == "general"
    ]
    item = bob_page.locator(f'[data-testid="channel-item"][data-stream-id="{general["stream_id"]}"]')
    item.get_by_test_id("channel-settings").click()
    bob_page.get_by_test_id("sub-color").fill("#336699")
    bob_page.get_by_test_id("sub-muted").check()
    bob_page.get_by_test_id("sub-pinned").check()
    bob_page.get_by_test_id("sub-save").click()
    bob_page.get_by_test_id("sub-save").wait_for(state="detached")

    def saved() -> dict[str, Any]:
        subs = assert_success(bob_in_general.get("/users/me/subscriptions"))["subscriptions"]
        return next(s for s in subs if s["name"] == "general")

    wait_until(lambda: saved()["pin_to_top"], "the settings to be saved")
    assert (saved()["color"], saved()["is_muted"], saved()["pin_to_top"]) == ("#336699", True, True)


def test_phone_layout_hides_the_sidebar_behind_a_toggle(browser, bob_in_general):
    page = browser.sign_in("bob@example.com", viewport=PHONE)
    sidebar = page.locator("#sidebar")
    assert not sidebar.is_visible() or not sidebar.bounding_box() or sidebar.bounding_box()["x"] < 0
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.get_by_test_id("sidebar-toggle").click()
    page.get_by_test_id("view-all").wait_for()
    wait_until(lambda: (sidebar.bounding_box() or {"x": -1})["x"] >= 0, "the sidebar to slide in")
    assert sidebar.bounding_box()["width"] <= PHONE["width"]
    # The whole page, drawn: exactly the phone's width (nothing sticks out sideways).
    png = page.screenshot(full_page=True)
    assert int.from_bytes(png[16:20], "big") == PHONE["width"]
    page.get_by_test_id("view-all").click()  # choosing a view closes the sidebar again
    wait_until(lambda: page.get_by_test_id("sidebar-toggle").get_attribute("aria-expanded") == "false", "the toggle")
    page.context.close()


def test_no_page_broke_the_content_security_policy(browser):
    assert browser.console.csp_violations() == []
    assert [line for line in browser.console.lines if line.startswith("pageerror")] == []
