"""What the web UI needs from the server: the page and its assets (safely), settings, world state."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.store.exchanges import NewExchange

from .conftest import fake_client
from .web_fixtures import AppParts


@pytest.fixture
def app_parts() -> AppParts:
    return AppParts('[companion]\nname = "Vega"\nuser_name = "Sam"\n')


def test_the_page_is_served_with_a_strict_content_security_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "<textarea id=\"composer-input\"" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "object-src 'none'" in csp and "unsafe-inline" not in csp
    for asset, kind in (("main.js", "javascript"), ("chat.js", "javascript"), ("markdown.js", "javascript"), ("dates.js", "javascript"),
                        ("model-pull.js", "javascript"), ("first-run.js", "javascript"), ("app.css", "css")):
        resp = client.get(f"/static/{asset}")
        assert resp.status_code == 200 and kind in resp.headers["content-type"]
    assert "://" not in page.text  # nothing from another origin: it works offline


@pytest.mark.parametrize("name", ["..%2Fui.py", "%2E%2E%2Fapp.py", "..%2F..%2Fconfig.py", "nope.js"])
def test_no_asset_path_reaches_outside_the_static_folder(client: TestClient, name: str) -> None:
    assert client.get(f"/static/{name}").status_code == 404


def test_settings_say_which_model_serves_each_role_and_how_to_change(client: TestClient) -> None:
    body = client.get("/api/settings").json()
    assert set(body["roles"]) == {"chat", "summary", "embed"}
    assert body["roles"]["summary"]["shared_with"] == "chat"
    assert body["companion"] == {"name": "Vega", "user_name": "Sam"}
    assert body["data_dir"] and "lyra.toml" in body["how_to_change"]
    assert isinstance(body["gpu_offload"], bool)


def test_world_state_versions_are_all_kept(client: TestClient) -> None:
    assert client.get("/api/world").json()["world"] is None
    client.put("/api/world", json={"content": "# Now\n- moving in May"})
    client.put("/api/world", json={"content": "# Now\n- moved to Lisbon"})
    assert client.get("/api/world").json()["world"]["content"] == "# Now\n- moved to Lisbon"
    versions = client.get("/api/world/history").json()["versions"]
    assert [v["content"] for v in versions] == ["# Now\n- moving in May", "# Now\n- moved to Lisbon"]
    assert all(v["author"] == "user" for v in versions)


def test_with_a_token_the_page_loads_but_the_api_asks_for_it(make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings('[server]\napi_token = "s3cret-0123456789"\n')) as client:
        assert client.get("/").status_code == 200 and client.get("/static/main.js").status_code == 200
        assert client.get("/api/sessions").status_code == 401
        assert client.get("/api/sessions", headers={"Authorization": "Bearer s3cret-0123456789"}).status_code == 200


def test_settings_warn_of_gpu_layers_a_cpu_build_ignores(make_settings) -> None:
    from lyra_local.llm.local import gpu_offload_supported

    with fake_client(make_settings("[models.embed]\nn_gpu_layers = 8\n")) as client:
        warnings = client.get("/api/settings").json()["warnings"]
    assert warnings == ([] if gpu_offload_supported() else
                        ["models.embed: n_gpu_layers = 8, but this llama-cpp-python has no GPU offload: it runs on "
                         "the CPU"])


def test_settings_say_the_demo_model_and_how_far_re_embedding_has_come(client: TestClient) -> None:
    assert client.get("/api/settings").json()["demo_chat_model"] is True  # the default chat file
    state = client.app.state.lyra  # type: ignore[attr-defined]
    model = state.owner_runtime().memory.embedder.name
    assert client.get("/api/models/embedding").json() == {"model": model, "in_use": model, "missing": 0,
                                                          "state": "idle", "error": None, "embedded": 0}
    session = state.owner_runtime().store.sessions.create("unembedded")
    state.owner_runtime().store.exchanges.add(NewExchange(session.id, "user", "a turn stored without its vector"))
    assert client.get("/api/models/embedding").json()["missing"] == 1
