"""The model roles are declared once (``roles.py``): configuration, the catalog and the page read that list."""

from __future__ import annotations

from lyra_local.config.specs import ModelsConfig
from lyra_local.roles import FILE_ROLES, OPTIONAL_ROLES, ROLES, Role, runs


def test_every_role_is_a_models_setting_and_every_models_setting_a_role() -> None:
    assert set(ModelsConfig.model_fields) == set(Role)
    assert [role for role, field in ModelsConfig.model_fields.items() if not field.is_required()] == list(
        OPTIONAL_ROLES)


def test_a_summary_runs_on_a_chat_model_and_files_are_made_for_three_roles() -> None:
    assert runs("summary") is Role.CHAT and runs("embed") is Role.EMBED
    assert FILE_ROLES == (Role.CHAT, Role.EMBED, Role.RERANK)


def test_the_page_reads_the_roles_from_the_server(client) -> None:
    roles = client.get("/api/kinds").json()["roles"]
    assert [r["role"] for r in roles] == list(ROLES)
    assert {r["role"]: r["label"] for r in roles}["summary"] == "Summaries"
    assert [r["role"] for r in roles if r["off"]] == ["rerank"] and [r["role"] for r in roles if r["same"]] == [
        "summary"]
