"""The venues file: the documented shape is accepted, and every mistake is refused naming its
key, before anything is written."""

from pathlib import Path

import pytest

from core.feeds import FEED_BY_BASE
from sources.evm.config import ConfigError, load, parse

FACTORY = "0x5C69bEe701ef814a2B6a3EDD4B1652CB9cc5aA6f"
WETH = "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2"
FEED = FEED_BY_BASE["ETH"].feed_id


def document(**changes) -> dict:
    base = {"chain": {"slug": "devnet", "display_name": "Devnet",
                      "explorer_url": "https://explorer.invalid"},
            "venues": [{"factory": FACTORY, "name": "Uniswap V2", "type": "uniswap_v2"}],
            "quotes": [{"token": WETH, "feed": FEED}]}
    base.update(changes)
    return base


def test_the_issue_shape_is_read_with_addresses_lower_cased():
    config = parse(document())
    assert config.chain.slug == "devnet"
    assert config.venues[0].factory == FACTORY.lower()
    assert config.venues[0].venue_id == "uniswap-v2"
    assert config.venues[0].router == ""
    assert config.quotes[0].token == WETH.lower()
    assert config.quotes[0].feed_id == FEED


def test_a_hermes_compatible_feed_id_names_the_same_feed():
    compatible = FEED_BY_BASE["ETH"].compatible_id
    config = parse(document(quotes=[{"token": WETH, "feed": "0x" + compatible.upper()}]))
    assert config.quotes[0].feed_id == FEED


@pytest.mark.parametrize(("changes", "key"), [
    ({"chain": {"slug": "devnet", "display_name": "D", "explorer_url": "https://x",
                "colour": "red"}}, "chain.colour"),
    ({"venues": [{"factory": FACTORY, "name": "U", "type": "uniswap_v2", "fee": 30}]},
     "venues[0].fee"),
    ({"venues": [{"factory": "0x1234", "name": "U", "type": "uniswap_v2"}]},
     "venues[0].factory"),
    ({"venues": [{"factory": FACTORY, "name": "U", "type": "uniswap_v9"}]}, "venues[0].type"),
    ({"venues": [{"factory": FACTORY, "name": "U", "type": "uniswap_v2", "router": "0xzz"}]},
     "venues[0].router"),
    ({"quotes": [{"token": WETH, "feed": "ab" * 32}]}, "quotes[0].feed"),
    ({"quotes": [{"token": WETH, "feed": "not hex"}]}, "quotes[0].feed"),
    ({"quotes": [{"token": "weth", "feed": FEED}]}, "quotes[0].token"),
    ({"chain": {"slug": "Dev Net", "display_name": "D", "explorer_url": "https://x"}},
     "chain.slug"),
    ({"chain": {"slug": "devnet", "display_name": "D", "explorer_url": "http://x"}},
     "chain.explorer_url"),
    ({"venues": []}, "venues"),
    ({"extra": 1}, "extra"),
])
def test_a_mistake_is_refused_naming_its_key(changes, key):
    with pytest.raises(ConfigError) as refused:
        parse(document(**changes))
    assert str(refused.value).startswith(key + ":"), str(refused.value)


def test_a_missing_key_is_named():
    with pytest.raises(ConfigError, match=r"^venues\[0\]\.type: missing"):
        parse(document(venues=[{"factory": FACTORY, "name": "U"}]))


def test_a_factory_named_twice_is_refused():
    twice = {"factory": FACTORY, "name": "U", "type": "uniswap_v2"}
    with pytest.raises(ConfigError, match=r"^venues\[1\]\.factory"):
        parse(document(venues=[twice, {**twice, "factory": FACTORY.lower()}]))


def test_the_documented_example_file_is_valid():
    example = Path(__file__).resolve().parents[3] / "docs" / "ingest.venues.yaml"
    config = load(example)
    assert config.venues and config.quotes


def test_a_file_that_is_not_yaml_is_refused(tmp_path):
    bad = tmp_path / "venues.yaml"
    bad.write_text("chain: [unclosed")
    with pytest.raises(ConfigError, match="not YAML"):
        load(bad)


def test_the_command_refuses_a_bad_file_before_anything_is_written(tmp_path):
    from tests.conftest import run_cli

    bad = tmp_path / "venues.yaml"
    bad.write_text(f"chain: {{slug: devnet, display_name: D, explorer_url: 'https://x'}}\n"
                   f"venues:\n  - {{factory: '{FACTORY}', name: U, type: uniswap_v2, "
                   f"fees: 30}}\nquotes:\n  - {{token: '{WETH}', feed: '{FEED}'}}\n")
    done = run_cli(["ingest", "evm", "--rpc", "http://127.0.0.1:9", "--venues", str(bad)],
                   tmp_path / "home")
    assert done.returncode == 1
    assert "venues[0].fees: unknown key" in done.stderr
    assert not (tmp_path / "home" / "lake").exists()


def test_the_command_refuses_an_rpc_that_is_not_a_url(tmp_path):
    from tests.conftest import run_cli

    done = run_cli(["ingest", "evm", "--rpc", "localhost:8545", "--venues",
                    str(Path(__file__).resolve().parents[3] / "docs" / "ingest.venues.yaml")],
                   tmp_path / "home")
    assert done.returncode == 2
    assert "--rpc" in done.stderr and "not an http(s) URL" in done.stderr
