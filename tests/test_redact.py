"""Secrets never printed: tables for the shapes seen in the field, properties for the rest."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from edge_hf.redact import mask_url, printable


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("rtsp://admin:p@ss@10.0.0.2/s", "rtsp://admin:***@10.0.0.2/s"),  # '@' in the password
        ("rtsp://admin:a/b:c@h:554/s", "rtsp://admin:***@h:554/s"),  # '/' and ':' too
        ("rtsp://h/s?user=admin&password=x1&ch=1", "rtsp://h/s?user=admin&password=***&ch=1"),
        ("http://h/a.cgi?usr=a&pwd=x;token=y#f", "http://h/a.cgi?usr=a&pwd=***;token=***#f"),
        ("https://h/?API_KEY=k&PassWord=p&sig=s", "https://h/?API_KEY=***&PassWord=***&sig=***"),
        ("rtsp://h/x?password=a@b", "rtsp://h/x?password=***"),
        ("rtsp://h:554/a@b", "rtsp://h:***@b"),  # ambiguous: hidden rather than shown
        ("rtsp://admin@h/s", "rtsp://admin@h/s"),
        ("/videos/clip.mp4", "/videos/clip.mp4"),
    ],
)
def test_mask_url_hides_passwords_in_the_userinfo_and_the_query(url, masked):
    assert mask_url(url) == masked


SETTINGS = settings(max_examples=150, deadline=None)
HOST = st.from_regex(r"[a-z0-9][a-z0-9.-]{0,20}(:[0-9]{1,5})?", fullmatch=True)
PATH = st.from_regex(r"(/[A-Za-z0-9_.-]{0,10}){0,3}", fullmatch=True)
USER = st.from_regex(r"[A-Za-z0-9_.-]{1,10}", fullmatch=True)
NO_SPACE = st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc", "Cs"))


@SETTINGS
@given(
    scheme=st.sampled_from(["rtsp", "rtsps", "http", "https", "mqtt", "mqtts"]),
    user=USER,
    password=st.text(NO_SPACE, min_size=4, max_size=30),
    host=HOST,
    path=PATH,
)
def test_a_masked_url_never_contains_its_password(scheme, user, password, host, path):
    assume(password not in f"{scheme}://{user}:***@{host}{path}")
    assert password not in mask_url(f"{scheme}://{user}:{password}@{host}{path}")


@SETTINGS
@given(
    key=st.sampled_from(["password", "pass", "passwd", "pwd", "pw", "token", "key", "api_key"]).map(
        lambda k: k.upper() if len(k) % 2 else k
    ),
    value=st.text(
        st.characters(
            blacklist_categories=("Zs", "Zl", "Zp", "Cc", "Cs"), blacklist_characters="&;#"
        ),
        min_size=4,
        max_size=30,
    ),
    host=HOST,
    path=PATH,
)
# found by hypothesis: the last '@' was in the query value, and the userinfo reading swallowed
# the parameter's name, leaving the value's tail for the query reading to miss
@example(key="password", value="@000", host="0:0", path="")
def test_a_masked_url_never_contains_a_secret_query_value(key, value, host, path):
    url = f"rtsp://{host}{path}?user=admin&{key}={value}&channel=1"
    assume(value not in url.replace(f"={value}&", "=&"))
    assert value not in mask_url(url)


@SETTINGS
@given(st.text())
def test_any_text_can_be_masked_and_printed_on_one_line(text):
    shown = printable(mask_url(text))
    assert shown.isprintable()
    shown.encode("utf-8")  # no lone surrogates left: printing cannot fail


def test_printable_shows_undecodable_bytes_as_escapes():
    assert printable("v_\udcff\udcfe.mp4") == "v_\\xff\\xfe.mp4"
    assert printable("a\nb\x00") == "a\\nb\\x00"
    assert printable("caméra 日本") == "caméra 日本"
