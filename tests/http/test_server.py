"""The uvicorn options of `pushctl serve` come from Settings."""

from __future__ import annotations

import uvicorn

from pushcore import load_settings
from pushcore_http.server import MAX_HEAD_BYTES, server_options


def test_the_access_log_is_off_by_default_and_on_when_asked() -> None:
    assert server_options(load_settings(env={}), host="h", port=1)["access_log"] is False
    on = load_settings(env={"PUSHCORE_ACCESS_LOG": "true"})
    assert server_options(on, host="h", port=1)["access_log"] is True


def test_the_options_make_a_config_with_the_head_limit() -> None:
    options = server_options(load_settings(env={}), host="127.0.0.1", port=8081)
    config = uvicorn.Config(lambda *_: None, **options)
    assert (config.host, config.port, config.lifespan) == ("127.0.0.1", 8081, "on")
    # httptools is installed (uvicorn[standard]): it is kept, with the limit added.
    assert options["http"].__name__ == "HeadLimitedHttpTools"
    assert config.h11_max_incomplete_event_size == MAX_HEAD_BYTES == 16 * 1024
