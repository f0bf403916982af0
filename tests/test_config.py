from __future__ import annotations

from pathlib import Path

import pytest

from lyra_local.config import (
    DEFAULT_CHAT_FILE,
    LocalModel,
    SameAs,
    ServerModel,
    default_data_dir,
    load_settings,
    model_file_problems,
)
from lyra_local.errors import ConfigError


def test_defaults_are_local_models_with_summary_reusing_chat(make_settings) -> None:
    settings = make_settings()
    assert isinstance(settings.models.chat, LocalModel)
    assert settings.models.chat.path == Path(DEFAULT_CHAT_FILE)
    assert isinstance(settings.models.summary, SameAs)
    assert settings.resolved_summary() is settings.models.chat
    assert settings.models.embed.n_ubatch == 256
    assert settings.server.host == "127.0.0.1" and settings.server.port == 8000


def test_default_data_dir_is_the_users_data_location_not_site_packages(tmp_path: Path) -> None:
    assert default_data_dir({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "lyra"
    assert "site-packages" not in str(default_data_dir({}))


def test_toml_fields_merge_over_role_defaults(make_settings) -> None:
    settings = make_settings("""
[models.chat]
n_gpu_layers = -1
n_ctx = 4096
[models.chat.sampling]
temperature = 0.2
""")
    chat = settings.models.chat
    assert isinstance(chat, LocalModel)
    assert (chat.n_gpu_layers, chat.n_ctx, chat.sampling.temperature) == (-1, 4096, 0.2)
    assert chat.path == Path(DEFAULT_CHAT_FILE)  # kept from the role default


def test_environment_overrides_the_file(make_settings) -> None:
    settings = make_settings("[server]\nport = 9000\n", LYRA_SERVER__PORT="9100",
                             LYRA_MODELS__CHAT__N_CTX="1024")
    assert settings.server.port == 9100
    assert settings.models.chat.n_ctx == 1024


def test_server_backend_role(make_settings) -> None:
    settings = make_settings("""
[models.summary]
backend = "server"
base_url = "http://gpu-box:8080/v1/"
model = "qwen2.5-7b"
api_key = "s3cret"
[models.summary.retry]
max_attempts = 3
""")
    summary = settings.models.summary
    assert isinstance(summary, ServerModel)
    assert summary.base_url == "http://gpu-box:8080"
    assert summary.retry.max_attempts == 3
    assert summary.api_key is not None and "s3cret" not in repr(summary)


def test_unknown_key_in_file_is_reported_with_its_place(make_settings) -> None:
    with pytest.raises(ConfigError) as err:
        make_settings("[models.chat]\nn_gpu_layer = 10\n")
    text = str(err.value)
    assert "models.chat.n_gpu_layer: unknown key" in text
    assert "lyra.toml" in text


def test_unknown_environment_variable_is_reported_by_name(make_settings) -> None:
    with pytest.raises(ConfigError) as err:
        make_settings(LYRA_SERVR__PORT="1")
    assert "LYRA_SERVR__PORT" in str(err.value)


def test_bad_value_names_field_and_bound(make_settings) -> None:
    with pytest.raises(ConfigError) as err:
        make_settings("[server]\nport = 70000\n")
    assert "server.port" in str(err.value) and "65535" in str(err.value)


def test_bad_server_url(make_settings) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        make_settings('[models.embed]\nbackend = "server"\nbase_url = "gpu-box:8080"\n')


def test_invalid_toml_points_at_the_line(make_settings) -> None:
    with pytest.raises(ConfigError, match="line 2"):
        make_settings("[server]\nport = = 1\n")


def test_explicit_config_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "nope.toml", env={})


def test_relative_dirs_in_file_are_relative_to_the_file(tmp_path: Path) -> None:
    config = tmp_path / "conf" / "lyra.toml"
    config.parent.mkdir()
    config.write_text('data_dir = "mydata"\nmodels_dir = "weights"\n')
    settings = load_settings(config, env={})
    assert settings.data_dir == tmp_path / "conf" / "mydata"
    assert settings.models_dir == tmp_path / "conf" / "weights"


def test_missing_model_file_names_path_and_fetch_command(tmp_path: Path) -> None:
    settings = load_settings(None, env={"LYRA_MODELS_DIR": str(tmp_path), "LYRA_DATA_DIR": str(tmp_path)})
    problems = model_file_problems(settings)
    assert len(problems) == 2  # chat (summary shares it) and embed
    assert str(tmp_path / DEFAULT_CHAT_FILE) in problems[0]
    assert "lyra models fetch" in problems[0]


def test_missing_custom_model_file_points_at_the_setting(make_settings, tmp_path: Path) -> None:
    settings = make_settings(f'[models.chat]\npath = "{tmp_path}/qwen-8b.gguf"\n')
    problems = model_file_problems(settings)
    assert any("qwen-8b.gguf" in p and "models.chat.path" in p for p in problems)


def test_quiet_hours_must_be_times_of_day(make_settings) -> None:
    assert make_settings('[dream]\nquiet_hours = "23:00-07:30"\n').dream.quiet_hours == "23:00-07:30"
    with pytest.raises(ConfigError, match="dream.quiet_hours"):
        make_settings('[dream]\nquiet_hours = "25:00-07:00"\n')


def test_a_model_file_llama_cpp_could_not_load_is_a_problem_with_its_reason(make_settings, tmp_path: Path) -> None:
    page = tmp_path / "page.gguf"
    page.write_text("<!DOCTYPE html><html>404</html>")
    problems = model_file_problems(make_settings(f'[models.chat]\npath = "{page}"\n'))
    assert len(problems) == 1 and problems[0].startswith("models.chat: ") and "is not a GGUF model file" in problems[0]
