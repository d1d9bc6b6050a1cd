"""Widget commands and the submessage data polls and to-do lists accept (storage/messages/widgets.py)."""

from __future__ import annotations

import json

import pytest

from storage.messages.widgets import check_widget_content, get_widget_data, validate_poll_data, validate_todo_data
from storage.model.errors import ApiError

# -- the widget a message starts -------------------------------------------------------------------


def test_poll_question_and_options_with_list_markers_dropped():
    content = "/poll What for lunch?\n- pizza\n* tacos\n\n  soup  \n-"
    assert get_widget_data(content) == ("poll", {"question": "What for lunch?", "options": ["pizza", "tacos", "soup"]})


def test_poll_without_question_or_options():
    assert get_widget_data("/poll") == ("poll", {"question": "", "options": []})
    # A newline right after the command leaves the question empty: the lines are all options.
    assert get_widget_data("/poll\nyes\nno") == ("poll", {"question": "", "options": ["yes", "no"]})


def test_todo_title_and_tasks_split_at_the_first_colon_space():
    content = "/todo Release\nwrite notes: for users: all of them\n- tag\n* deploy:now"
    assert get_widget_data(content) == (
        "todo",
        {
            "task_list_title": "Release",
            "tasks": [
                {"task": "write notes", "desc": "for users: all of them"},
                {"task": "tag", "desc": ""},
                {"task": "deploy:now", "desc": ""},
            ],
        },
    )


@pytest.mark.parametrize(
    "content", ["hello /poll", "/polls Tea?", "/me waves", "poll Tea?", " /poll Tea?", "/", "/rsvp Party", "/zform"]
)
def test_other_content_is_no_widget(content):
    assert get_widget_data(content) is None


def test_the_command_may_end_at_a_newline():
    expected = ("todo", {"task_list_title": "", "tasks": [{"task": "first", "desc": ""}]})
    assert get_widget_data("/todo\nfirst") == expected


# -- poll data --------------------------------------------------------------------------------------


def poll_error(data, author=True):
    with pytest.raises(ApiError) as error:
        validate_poll_data(data, author)
    assert error.value.code == "BAD_REQUEST" and error.value.status == 400
    return error.value.msg


def test_valid_poll_data():
    validate_poll_data({"type": "vote", "key": "canned,0", "vote": 1}, False)
    validate_poll_data({"type": "vote", "key": "12,1", "vote": -1}, False)
    validate_poll_data({"type": "new_option", "option": "soup", "idx": 1000}, False)
    validate_poll_data({"type": "question", "question": "Dinner?"}, True)


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ("", "poll data is not a dict"),
        ([], "poll data is not a dict"),
        ({}, "type key is missing from poll data"),
        ({"type": 3}, 'poll data["type"] is not a string'),
        ({"type": "bogus"}, "Unknown type for poll data: bogus"),
        ({"type": "vote"}, "key key is missing from poll data"),
        ({"type": "vote", "key": 1, "vote": 1}, 'poll data["key"] is not a string'),
        ({"type": "vote", "key": "1,1,", "vote": 99}, 'Invalid poll data["vote"]'),
        ({"type": "vote", "key": "1,1", "vote": "1"}, 'poll data["vote"] is not an integer'),
        ({"type": "vote", "key": "1,1", "vote": True}, 'poll data["vote"] is not an integer'),
        ({"type": "vote", "key": "1,1", "vote": 1, "extra": 0}, "Unexpected arguments: extra"),
        ({"type": "question"}, "question key is missing from poll data"),
        ({"type": "question", "question": 7}, 'poll data["question"] is not a string'),
        ({"type": "new_option"}, "option key is missing from poll data"),
        ({"type": "new_option", "idx": 7, "option": 999}, 'poll data["option"] is not a string'),
        ({"type": "new_option", "idx": -1, "option": "pizza"}, 'poll data["idx"] is too small'),
        ({"type": "new_option", "idx": 1001, "option": "pizza"}, 'poll data["idx"] is too large'),
        ({"type": "new_option", "idx": "bogus", "option": "maybe"}, 'poll data["idx"] is not an integer'),
    ],
)
def test_invalid_poll_data(data, msg):
    assert poll_error(data) == msg


def test_only_the_author_changes_the_question():
    assert poll_error({"type": "question", "question": "Mine?"}, author=False) == (
        "You can't edit a question unless you are the author."
    )


# -- to-do data -------------------------------------------------------------------------------------


TASK = {"type": "new_task", "key": 1, "task": "x", "desc": "", "completed": False}


def todo_error(data, author=True):
    with pytest.raises(ApiError) as error:
        validate_todo_data(data, author)
    assert error.value.code == "BAD_REQUEST" and error.value.status == 400
    return error.value.msg


def test_valid_todo_data():
    validate_todo_data({"type": "new_task", "key": 2, "task": "tag", "desc": "", "completed": False}, False)
    validate_todo_data({"type": "strike", "key": "2,13"}, False)
    validate_todo_data({"type": "new_task_list_title", "title": "Launch"}, True)


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        (None, "todo data is not a dict"),
        ({"type": "bogus"}, "Unknown type for todo data: bogus"),
        ({"type": "new_task", "key": 1, "task": "x", "desc": ""}, "completed key is missing from todo data"),
        ({**TASK, "completed": 0}, 'todo data["completed"] is not a boolean'),
        ({**TASK, "key": 1001}, 'todo data["key"] is too large'),
        ({**TASK, "key": "1"}, 'todo data["key"] is not an integer'),
        ({"type": "strike", "key": 1}, 'todo data["key"] is not a string'),
        ({"type": "strike", "key": "1,2", "also": 1, "more": 2}, "Unexpected arguments: also, more"),
        ({"type": "new_task_list_title", "title": None}, 'todo data["title"] is not a string'),
    ],
)
def test_invalid_todo_data(data, msg):
    assert todo_error(data) == msg


def test_only_the_author_changes_the_title():
    assert todo_error({"type": "new_task_list_title", "title": "Mine"}, author=False) == (
        "You can't edit the task list title unless you are the author."
    )


# -- widget_content (a send's own widget) -----------------------------------------------------------

ZFORM = {"type": "choices", "heading": "Pick", "choices": [{"short_name": "A", "long_name": "Apple", "reply": "a"}]}


def zform(**changes):
    return {"widget_type": "zform", "extra_data": {**ZFORM, **changes}}


def widget_error(raw):
    with pytest.raises(ApiError) as error:
        check_widget_content(raw)
    assert error.value.code == "BAD_REQUEST" and error.value.status == 400
    return error.value.msg


def test_zform_choices_are_accepted():
    assert check_widget_content(json.dumps({"widget_type": "zform", "extra_data": ZFORM})) == ("zform", ZFORM)


@pytest.mark.parametrize(
    ("widget", "msg"),
    [
        ("{{{{{{", "Widgets: API programmer sent invalid JSON content"),
        ("NaN", "Widgets: API programmer sent invalid JSON content"),
        ("[]", "Widgets: widget_content is not a dict"),
        ({"color": "red", "foo": "bar", "x": 2}, "Widgets: widget_type is not in widget_content"),
        ({"widget_type": "zform"}, "Widgets: extra_data is not in widget_content"),
        ({"widget_type": "zform", "extra_data": []}, "Widgets: extra_data is not a dict"),
        ({"widget_type": "poll", "extra_data": {}}, "Widgets: unknown widget type: poll"),
        ({"widget_type": "zform", "extra_data": {}}, "Widgets: zform is missing type field"),
        ({"widget_type": "zform", "extra_data": {"type": "form"}}, "Widgets: unknown zform type: form"),
        (zform(heading=1), 'Widgets: extra_data["heading"] is not a string'),
        (zform(choices={}), 'Widgets: extra_data["choices"] is not a list'),
        (zform(choices=[{"long_name": "x", "reply": "y"}]),
         'Widgets: short_name key is missing from extra_data["choices"][0]'),
        (zform(choices=["A"]), 'Widgets: extra_data["choices"][0] is not a dict'),
    ],
)  # fmt: skip
def test_invalid_widget_content(widget, msg):
    assert widget_error(widget if isinstance(widget, str) else json.dumps(widget)) == msg
