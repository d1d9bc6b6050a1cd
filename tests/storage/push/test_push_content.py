"""The plain-text excerpt of a notification (Zulip's get_mobile_push_content and truncate_content)."""

from __future__ import annotations

import pytest

from storage.push.push_content import notification_text


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<p>Hello <strong>world</strong> &amp; &lt;co&gt;</p>", "Hello world & <co>"),
        ("<p>line1<br>\nline2</p>\n<p>para2</p>", "line1\nline2\npara2"),
        ("<blockquote>\n<p>quoted<br>\ntext</p>\n</blockquote>\n<p>after</p>", "> quoted\n> text\n\nafter"),
        (
            '<div class="spoiler-block"><div class="spoiler-header">\n<p>Plot</p>\n</div>'
            '<div class="spoiler-content" aria-hidden="true">\n<p>hidden</p>\n</div></div>',
            "Plot (…)",
        ),
        ('<div class="spoiler-block"><div class="spoiler-header">\n</div><div>x</div></div>', "(…)"),
        ('<ol start="3">\n<li>a</li>\n<li>b</li>\n</ol>', "3. a\n4. b"),
        ("<ul>\n<li>c</li>\n<li>d</li>\n</ul>", "c\nd"),
        ('<p>see <img alt=":cat:" src="/cat.png"> here</p>', "see :cat: here"),
        ('<p><span class="user-mention" data-user-id="5">@Bob</span> hi</p>', "@Bob hi"),
        ("<p>stray</em> end tag</p>", "stray end tag"),
    ],
)
def test_plain_text(html, text):
    assert notification_text(html) == (text, False)


def test_truncated_to_200_characters_and_an_ellipsis():
    assert notification_text("<p>" + "é" * 200 + "</p>") == ("é" * 200, False)
    assert notification_text("<p>" + "é" * 201 + "</p>") == ("é" * 200 + "…", True)
