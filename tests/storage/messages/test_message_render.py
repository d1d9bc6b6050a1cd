"""Message rendering: Zulip's Markdown dialect, its HTML, and the flags the renderer reports."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

import pytest

from storage.channels.channels import CHANNEL_SETTINGS
from storage.db.database import Database
from storage.db.tx import Tx
from storage.messages.message_render import MAX_NESTED_BLOCKS, hash_encode, render_message
from storage.model.message import Rendered
from storage.org import realm as realm_storage
from storage.org import users as users_storage
from storage.text import markdown


class Org(NamedTuple):
    db: Database
    ada: int
    grace: int
    gone: int
    sam1: int
    sam2: int
    support: int
    old_group: int
    general: int
    odd: int


def insert_channel(tx: Tx, name: str, is_archived: bool = False) -> int:
    # Every channel group setting points at a system group; the renderer reads none of them.
    columns = ", ".join(CHANNEL_SETTINGS)
    marks = ", ?" * len(CHANNEL_SETTINGS)
    cursor = tx.execute(
        f"INSERT INTO channels (name, date_created, is_archived, {columns}) VALUES (?, 0, ?{marks})",
        (name, is_archived, *[1] * len(CHANNEL_SETTINGS)),
    )
    return int(cursor.lastrowid or 0)


def insert_group(tx: Tx, name: str, deactivated: bool = False) -> int:
    cursor = tx.execute("INSERT INTO user_groups (name, deactivated) VALUES (?, ?)", (name, deactivated))
    return int(cursor.lastrowid or 0)


def populate(tx: Tx) -> tuple[int, ...]:
    realm_storage.create_realm(tx, "Org", "http://x", "x")
    ids = [
        users_storage.create_user(tx, f"{local}@example.com", name, None).id
        for local, name in [
            ("ada", "Ada Lovelace"),
            ("grace", "Grace Hopper"),
            ("gone", "Gone User"),
            ("sam1", "Sam Smith"),
            ("sam2", "Sam Smith"),
        ]
    ]
    tx.execute("UPDATE users SET is_active = 0 WHERE id = ?", (ids[2],))
    groups = [insert_group(tx, "support team"), insert_group(tx, "old team", deactivated=True)]
    channels = [insert_channel(tx, "general chat"), insert_channel(tx, 'a&b <i>"x"</i>.')]
    insert_channel(tx, "archive", is_archived=True)
    return (*ids, *groups, *channels)


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Org]:
    db = Database(os.path.join(str(tmp_path_factory.mktemp("render")), "db.sqlite3"))
    ids = db.write(populate)
    yield Org(db, *ids)
    db.close()


def render(org: Org, content: str) -> Rendered:
    return org.db.read(render_message, content)


def html(org: Org, content: str) -> str:
    return render(org, content).html


def flags(result: Rendered) -> dict[str, object]:
    """The flags that are set, so a test names the ones it expects and all others must be off."""
    fields = ["mentioned_user_ids", "mentioned_group_ids", "stream_wildcard", "topic_wildcard"]
    fields += ["has_link", "has_image", "has_attachment", "is_me_message"]
    return {name: getattr(result, name) for name in fields if getattr(result, name)}


# -- CommonMark base and Zulip's changes to it ------------------------------------------------


def test_paragraph_without_trailing_newline(org):
    result = render(org, "hello *world* **bold**")
    assert result.html == "<p>hello <em>world</em> <strong>bold</strong></p>"
    assert flags(result) == {}
    assert html(org, "") == ""


def test_newline_is_a_line_break(org):
    assert html(org, "line 1\nline 2") == "<p>line 1<br>\nline 2</p>"


def test_strikethrough_is_del(org):
    assert html(org, "I ~~like software~~ love hardware") == "<p>I <del>like software</del> love hardware</p>"


def test_underscores_make_no_emphasis(org):
    assert html(org, "_foo_ __bar__ snake_case_name") == "<p>_foo_ __bar__ snake_case_name</p>"


def test_reference_links_and_setext_headings_are_off(org):
    assert html(org, "Hello [world]\n\n[world]: /x") == "<p>Hello [world]</p>\n<p>[world]: /x</p>"
    assert html(org, "# Title\nnot a heading\n===") == "<h1>Title</h1>\n<p>not a heading<br>\n===</p>"


def test_tables(org):
    assert html(org, "a | b\n--|--\n1 | 2") == (
        "<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n"
        "<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>"
    )


def test_description_renderer_is_unchanged(org):
    assert markdown.render("a\nb _c_ https://example.com") == "<p>a\nb <em>c</em> https://example.com</p>"


# -- code --------------------------------------------------------------------------------------


def test_fenced_code_block(org):
    assert html(org, "Hamlet said:\n```\nfenced code\n```") == (
        '<p>Hamlet said:</p>\n<div class="codehilite"><pre><span></span><code>fenced code\n</code></pre></div>'
    )


def test_fenced_code_with_language(org):
    expected = (
        '<div class="codehilite" data-code-language="Python"><pre><span></span>'
        "<code>def speak(self):\n    x = 1\n</code></pre></div>"
    )
    assert html(org, "```python\ndef speak(self):\n    x = 1\n```") == expected
    assert html(org, "~~~~ .py\ndef speak(self):\n    x = 1\n~~~~") == expected
    assert 'data-code-language="Python 2.x"' in html(org, "```py2\nx\n```")
    assert 'data-code-language="inventedlanguage"' in html(org, "```inventedlanguage\nx\n```")


def test_code_block_escapes_and_trims(org):
    # Trailing spaces and outer blank lines go, as in Zulip; quotes are escaped as Pygments does.
    assert html(org, "```\n\n<h1>'a' & \"b\"</h1>  \n\n```") == (
        '<div class="codehilite"><pre><span></span><code>'
        "&lt;h1&gt;&#39;a&#39; &amp; &quot;b&quot;&lt;/h1&gt;\n</code></pre></div>"
    )


def test_indented_code_block(org):
    assert html(org, "    def foo(): pass") == (
        '<div class="codehilite"><pre><span></span><code>def foo(): pass\n</code></pre></div>'
    )


def test_inline_code(org):
    assert html(org, "run `<b> & *x*`") == "<p>run <code>&lt;b&gt; &amp; *x*</code></p>"


def test_mentions_and_channel_links_not_in_code(org):
    content = "`@**Ada Lovelace** #**general chat**`\n```\n@**all** @*support team* #**general chat**\n```"
    result = render(org, content)
    assert result.html == (
        "<p><code>@**Ada Lovelace** #**general chat**</code></p>\n"
        '<div class="codehilite"><pre><span></span><code>@**all** @*support team* #**general chat**\n'
        "</code></pre></div>"
    )
    assert flags(result) == {}


def test_fenced_quote(org):
    result = render(org, "~~~ quote\nTo be or **not** to be, @**Ada Lovelace**.\n~~~")
    assert result.html == (
        "<blockquote>\n<p>To be or <strong>not</strong> to be, "
        f'<span class="user-mention" data-user-id="{org.ada}">@Ada Lovelace</span>.</p>\n</blockquote>'
    )
    assert flags(result) == {"mentioned_user_ids": {org.ada}}


def test_spoiler(org):
    assert html(org, "```spoiler The *header*\ncontent\n```\nafter") == (
        '<div class="spoiler-block"><div class="spoiler-header">\n<p>The <em>header</em></p>\n</div>'
        '<div class="spoiler-content" aria-hidden="true">\n<p>content</p>\n</div></div>\n<p>after</p>'
    )


def test_deeply_nested_quotes_stop_as_code(org):
    depth = MAX_NESTED_BLOCKS + 1
    fences = ["`" * (3 + depth - level) for level in range(depth)]
    content = "".join(f"{fence}quote\n" for fence in fences) + "x\n" + "".join(f"{f}\n" for f in reversed(fences))
    rendered = html(org, content)
    assert rendered.count("<blockquote>") == MAX_NESTED_BLOCKS
    assert '<div class="codehilite" data-code-language="quote"><pre><span></span><code>x\n</code>' in rendered
    depth = 60  # far deeper than any recursion limit allows when every level is rendered
    fences = ["`" * (3 + depth - level) for level in range(depth)]
    content = "".join(f"{fence}quote\n" for fence in fences) + "x\n" + "".join(f"{f}\n" for f in reversed(fences))
    assert html(org, content).count("<blockquote>") == MAX_NESTED_BLOCKS


# -- links -------------------------------------------------------------------------------------


def test_bare_urls_become_links(org):
    result = render(org, "see https://example.com/a?b=1&c=2, www.zulip.com/foo and a@b.com")
    assert result.html == (
        '<p>see <a href="https://example.com/a?b=1&amp;c=2">https://example.com/a?b=1&amp;c=2</a>, '
        '<a href="http://www.zulip.com/foo">www.zulip.com/foo</a> and <a href="mailto:a@b.com">a@b.com</a></p>'
    )
    assert flags(result) == {"has_link": True}


def test_file_names_are_not_links(org):
    result = render(org, "edit views.py and README.md, not t.co")
    assert result.html == '<p>edit views.py and README.md, not <a href="http://t.co">t.co</a></p>'


def test_explicit_links(org):
    result = render(org, "[hello](https://github.com) <https://example.com> [](https://x.org) [  ](/a)")
    assert result.html == (
        '<p><a href="https://github.com">hello</a> <a href="https://example.com">https://example.com</a> '
        '<a href="https://x.org">https://x.org</a> <a href="/a">/a</a></p>'
    )
    assert flags(result) == {"has_link": True}
    assert html(org, "[call me](tel:+14155551234)") == '<p><a href="tel:+14155551234">call me</a></p>'


def test_links_to_images(org):
    for content in ["https://example.com/logo.PNG", "[logo](https://example.com/a/logo.webp?size=2)"]:
        assert flags(render(org, content)) == {"has_link": True, "has_image": True}
    assert flags(render(org, "https://example.com/png")) == {"has_link": True}


def test_image_syntax_is_a_link(org):
    # Never an <img>: readers' clients would fetch any URL a sender chose.
    result = render(org, "![the logo](https://example.com/logo) ![](https://example.com/y)")
    assert result.html == (
        '<p><a href="https://example.com/logo">the logo</a> '
        '<a href="https://example.com/y">https://example.com/y</a></p>'
    )
    assert flags(result) == {"has_link": True, "has_image": True}


def test_attachments(org):
    result = render(org, "[report.pdf](/user_uploads/2/ab/report.pdf)")
    assert result.html == '<p><a href="/user_uploads/2/ab/report.pdf">report.pdf</a></p>'
    assert flags(result) == {"has_link": True, "has_attachment": True}
    # A link into this server's uploads becomes relative, as Zulip rewrites it.
    result = render(org, "http://x/user_uploads/2/cd/photo.jpg")
    assert result.html == '<p><a href="user_uploads/2/cd/photo.jpg">http://x/user_uploads/2/cd/photo.jpg</a></p>'
    assert flags(result) == {"has_link": True, "has_image": True, "has_attachment": True}
    assert flags(render(org, "https://elsewhere.org/user_uploads/1/a.txt")) == {"has_link": True}


def test_local_narrow_links_become_relative(org):
    assert (
        html(org, "[foo](http://x/#narrow/channel/1-general)") == '<p><a href="#narrow/channel/1-general">foo</a></p>'
    )


# -- user mentions -----------------------------------------------------------------------------


def test_user_mention_by_name_any_case(org):
    result = render(org, "hi @**ada lovelace**!")
    assert result.html == f'<p>hi <span class="user-mention" data-user-id="{org.ada}">@Ada Lovelace</span>!</p>'
    assert flags(result) == {"mentioned_user_ids": {org.ada}}


def test_user_mention_with_id(org):
    result = render(org, f"@**Grace Hopper|{org.grace}** and @**|{org.ada}**")
    assert result.html == (
        f'<p><span class="user-mention" data-user-id="{org.grace}">@Grace Hopper</span> and '
        f'<span class="user-mention" data-user-id="{org.ada}">@Ada Lovelace</span></p>'
    )
    assert flags(result) == {"mentioned_user_ids": {org.grace, org.ada}}


def test_ambiguous_name_needs_id(org):
    result = render(org, "@**Sam Smith**")
    assert result.html == "<p>@<strong>Sam Smith</strong></p>"
    assert flags(result) == {}
    result = render(org, f"@**Sam Smith|{org.sam2}**")
    assert result.html == f'<p><span class="user-mention" data-user-id="{org.sam2}">@Sam Smith</span></p>'
    assert flags(result) == {"mentioned_user_ids": {org.sam2}}


def test_silent_user_mention(org):
    result = render(org, f"@_**Ada Lovelace** @_**Grace Hopper|{org.grace}**")
    assert result.html == (
        f'<p><span class="user-mention silent" data-user-id="{org.ada}">Ada Lovelace</span> '
        f'<span class="user-mention silent" data-user-id="{org.grace}">Grace Hopper</span></p>'
    )
    assert flags(result) == {}


def test_unknown_or_mismatched_mentions_stay_markdown(org):
    content = f"@**Nobody** @**Ada Lovelace|{org.grace}** @**|999999** @**|99999999999999999999999** @**Gone User**"
    result = render(org, content)
    assert result.html == (
        "<p>@<strong>Nobody</strong> "
        f"@<strong>Ada Lovelace|{org.grace}</strong> @<strong>|999999</strong> "
        "@<strong>|99999999999999999999999</strong> @<strong>Gone User</strong></p>"
    )
    assert flags(result) == {}


def test_deactivated_user_by_id_is_shown_but_not_notified(org):
    result = render(org, f"@**Gone User|{org.gone}**")
    assert result.html == f'<p><span class="user-mention silent" data-user-id="{org.gone}">Gone User</span></p>'
    assert flags(result) == {}


def test_mention_needs_a_boundary_before(org):
    result = render(org, "mail@**Ada Lovelace** (@**Ada Lovelace**)")
    assert result.html == (
        "<p>mail@<strong>Ada Lovelace</strong> "
        f'(<span class="user-mention" data-user-id="{org.ada}">@Ada Lovelace</span>)</p>'
    )
    assert flags(result) == {"mentioned_user_ids": {org.ada}}


def test_stream_wildcards(org):
    for name in ["all", "everyone", "channel", "stream"]:
        result = render(org, f"@**{name}**")
        assert result.html == (
            f'<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@{name}</span></p>'
        )
        assert flags(result) == {"stream_wildcard": True}
    result = render(org, "@_**all**")
    assert (
        result.html == '<p><span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span></p>'
    )
    assert flags(result) == {}


def test_topic_wildcard(org):
    result = render(org, "@**topic**")
    assert result.html == '<p><span class="topic-mention">@topic</span></p>'
    assert flags(result) == {"topic_wildcard": True}
    result = render(org, "@_**topic**")
    assert result.html == '<p><span class="topic-mention silent">topic</span></p>'
    assert flags(result) == {}


# -- group mentions ----------------------------------------------------------------------------


def test_group_mention(org):
    result = render(org, "@*Support Team* please")
    assert result.html == (
        f'<p><span class="user-group-mention" data-user-group-id="{org.support}">@support team</span> please</p>'
    )
    assert flags(result) == {"mentioned_group_ids": {org.support}}


def test_silent_group_mention(org):
    result = render(org, "@_*support team*")
    assert result.html == (
        f'<p><span class="user-group-mention silent" data-user-group-id="{org.support}">support team</span></p>'
    )
    assert flags(result) == {}


def test_unknown_or_deactivated_group_stays_markdown(org):
    result = render(org, "@*old team* @*no such team*")
    assert result.html == "<p>@<em>old team</em> @<em>no such team</em></p>"
    assert flags(result) == {}


# -- channel and topic links -------------------------------------------------------------------


def test_channel_link(org):
    result = render(org, "see #**General Chat**")
    assert result.html == (
        f'<p>see <a class="stream" data-stream-id="{org.general}" '
        f'href="/#narrow/channel/{org.general}-general-chat">#general chat</a></p>'
    )
    assert flags(result) == {}


def test_topic_link(org):
    assert html(org, "#**general chat>lunch plans.v2**") == (
        f'<p><a class="stream-topic" data-stream-id="{org.general}" '
        f'href="/#narrow/channel/{org.general}-general-chat/topic/lunch.20plans.2Ev2">'
        "#general chat &gt; lunch plans.v2</a></p>"
    )


def test_channel_link_escapes_and_encodes_the_name(org):
    slug = f"{org.odd}-a.26b-.3Ci.3E.22x.22.3C.2Fi.3E.2E"
    assert hash_encode('a&b-<i>"x"</i>.') == slug.split("-", 1)[1]
    assert html(org, '#**a&b <i>"x"</i>.**') == (
        f'<p><a class="stream" data-stream-id="{org.odd}" href="/#narrow/channel/{slug}">'
        "#a&amp;b &lt;i&gt;&quot;x&quot;&lt;/i&gt;.</a></p>"
    )


def test_unknown_or_archived_channel_stays_markdown(org):
    assert html(org, "#**nowhere** #**archive** #**nowhere>topic** #**general chat>**") == (
        "<p>#<strong>nowhere</strong> #<strong>archive</strong> #<strong>nowhere&gt;topic</strong> "
        "#<strong>general chat&gt;</strong></p>"
    )


def test_no_channel_link_inside_link_text(org):
    assert html(org, "[#**general chat**](https://e.com)") == (
        '<p><a href="https://e.com">#<strong>general chat</strong></a></p>'
    )


# -- /me -----------------------------------------------------------------------------------------


def test_me_message(org):
    result = render(org, "/me waves at @**Ada Lovelace**")
    assert result.html == (
        f'<p>/me waves at <span class="user-mention" data-user-id="{org.ada}">@Ada Lovelace</span></p>'
    )
    assert flags(result) == {"is_me_message": True, "mentioned_user_ids": {org.ada}}
    assert flags(render(org, "/mewaves")) == {}
    assert flags(render(org, "say /me waves")) == {}


# -- escaping and XSS --------------------------------------------------------------------------


def test_raw_html_is_escaped(org):
    assert html(org, "<h1>stay normal</h1> thanks") == "<p>&lt;h1&gt;stay normal&lt;/h1&gt; thanks</p>"
    assert html(org, "<script>alert(1)</script>") == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"
    assert html(org, "<div>\n<script>alert(1)</script>\n</div>") == (
        "<p>&lt;div&gt;<br>\n&lt;script&gt;alert(1)&lt;/script&gt;<br>\n&lt;/div&gt;</p>"
    )
    assert html(org, '<img src=x onerror="alert(1)">') == "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>"


@pytest.mark.parametrize(
    "content",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](&#106;avascript:alert(1))",
        "[x](<javascript:alert(1)>)",
        "<javascript:alert(1)>",
        "javascript:alert(1)",
        "![x](javascript:alert(1))",
        "[x](vbscript:msgbox(1))",
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[x](file:///etc/passwd)",
        "[x](itms://itunes.com/apps/appname)",
    ],
)
def test_dangerous_links_stay_text(org, content):
    result = render(org, content)
    assert "<a" not in result.html
    assert flags(result) == {}


def test_link_attributes_cannot_be_broken_out_of(org):
    assert html(org, '[x](http://a.com/"onmouseover=alert(1))') == (
        '<p><a href="http://a.com/%22onmouseover=alert(1)">x</a></p>'
    )


def test_names_from_the_database_are_escaped(org):
    # Channel names may hold markup characters (user and group names here cannot hold < or ").
    rendered = html(org, '#**a&b <i>"x"</i>.** #**general chat><b>"t"&**')
    assert "<i>" not in rendered and "<b>" not in rendered
    assert '">#a&amp;b &lt;i&gt;&quot;x&quot;&lt;/i&gt;.</a>' in rendered
    assert '/topic/.3Cb.3E.22t.22.26">#general chat &gt; &lt;b&gt;&quot;t&quot;&amp;</a></p>' in rendered


def test_channel_links_only_to_channels_the_sender_may_see(tmp_path):
    from storage.channels import channel_creation as channel_storage

    db = Database(os.path.join(str(tmp_path), "db.sqlite3"))

    def check(tx):
        realm_storage.create_realm(tx, "Org", "http://x", "x")
        owner = users_storage.create_user(tx, "owner@example.com", "Owner", None)
        outsider = users_storage.create_user(tx, "outsider@example.com", "Outsider", None)
        options = channel_storage.ChannelOptions(invite_only=True)
        private = channel_storage.create_channel(tx, owner, "hidden room", options, True)
        tx.execute(
            "INSERT INTO subscriptions (user_id, channel_id, color) VALUES (?, ?, '#fff')", (owner.id, private.id)
        )
        return render_message(tx, "#**hidden room**", outsider).html, render_message(tx, "#**hidden room**", owner).html

    hidden, seen = db.write(check)
    db.close()
    assert "data-stream-id" not in hidden
    assert 'class="stream"' in seen
