"""The venues file: the documented shape is accepted, and every mistake is refused naming its
key, before anything is written."""

import hashlib
from pathlib import Path

import pytest

from core.feeds import FEED_BY_BASE
from sources.evm.config import ConfigError, load, parse

FACTORY = "0x5C69bEe701ef814a2B6a3EDD4B1652CB9cc5aA6f"
WETH = "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2"
USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
# Ethereum mainnet's Chainlink ETH/USD aggregator.
ETH_USD = "0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419"


def document(**changes) -> dict:
    base = {"chain": {"slug": "devnet", "display_name": "Devnet",
                      "explorer_url": "https://explorer.invalid"},
            "venues": [{"factory": FACTORY, "name": "Uniswap V2", "type": "uniswap_v2"}],
            "quotes": [{"token": WETH, "chainlink": ETH_USD}, {"token": USDC, "peg": 1}]}
    base.update(changes)
    return base


def test_the_issue_shape_is_read_with_addresses_lower_cased():
    config = parse(document())
    assert config.chain.slug == "devnet"
    assert config.venues[0].factory == FACTORY.lower()
    assert config.venues[0].venue_id == "uniswap-v2"
    assert config.venues[0].router == ""
    weth, usdc = config.quotes
    assert (weth.token, weth.source, weth.aggregator) == (WETH.lower(), "chainlink",
                                                          ETH_USD.lower())
    assert (usdc.token, usdc.source, usdc.peg_usd) == (USDC.lower(), "peg", 1.0)
    # A feed per aggregator (or peg) and chain, whatever the case it was written in.
    named = f"chainlink:1:{ETH_USD.lower()}".encode()
    assert weth.feed_id(1) == hashlib.sha256(named).hexdigest()
    assert weth.feed_id(8453) != weth.feed_id(1)
    assert usdc.feed_id(1) == hashlib.sha256(f"peg:1:{USDC.lower()}".encode()).hexdigest()


def test_a_hermes_feed_is_one_feed_whichever_chain_it_prices():
    pyth = "0xFF61491A931112DDF1BD8147CD1B641375F79F5825126D665480874634FD0ACE"
    config = parse(document(quotes=[{"token": WETH, "hermes": pyth}]))
    (weth,) = config.quotes
    assert (weth.source, weth.hermes_id) == ("hermes", pyth.lower()[2:])
    assert config.hermes_ids == [pyth.lower()[2:]]
    own = hashlib.sha256(f"hermes-feed:{pyth.lower()[2:]}".encode()).hexdigest()
    assert weth.feed_id(1) == weth.feed_id(8453) == own


def test_a_simulated_feed_is_refused_on_a_real_chain():
    simulated = FEED_BY_BASE["ETH"].feed_id
    with pytest.raises(ConfigError, match=r"^quotes\[0\]\.feed: the simulated oracle prices "
                                          r"the simulator's lake alone"):
        parse(document(quotes=[{"token": WETH, "feed": simulated}]))


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
    ({"quotes": [{"token": WETH, "chainlink": "0x1234"}]}, "quotes[0].chainlink"),
    ({"quotes": [{"token": WETH}]}, "quotes[0]"),
    ({"quotes": [{"token": WETH, "chainlink": ETH_USD, "peg": 1}]}, "quotes[0]"),
    ({"quotes": [{"token": WETH, "peg": 0}]}, "quotes[0].peg"),
    ({"quotes": [{"token": WETH, "peg": "1"}]}, "quotes[0].peg"),
    ({"quotes": [{"token": WETH, "hermes": "ab" * 31}]}, "quotes[0].hermes"),
    ({"quotes": [{"token": WETH, "hermes": 12}]}, "quotes[0].hermes"),
    ({"quotes": [{"token": WETH, "hermes": "ab" * 32, "peg": 1}]}, "quotes[0]"),
    ({"quotes": [{"token": "weth", "peg": 1}]}, "quotes[0].token"),
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


@pytest.mark.parametrize("name", ["ingest.venues.yaml", "ingest.base.venues.yaml"])
def test_the_documented_example_files_are_valid(name):
    config = load(Path(__file__).resolve().parents[3] / "docs" / name)
    assert config.venues and config.quotes


def test_native_eth_is_priced_as_the_wrapped_native_token():
    config = load(Path(__file__).resolve().parents[3] / "docs" / "ingest.base.venues.yaml")
    weth = "0x4200000000000000000000000000000000000006"
    feeds = config.feeds(8453)
    assert feeds["0x" + "0" * 40] == feeds[weth]
    # Not where the wrapped native token is no quote: nothing prices the native currency.
    alone = parse(document(chain={"slug": "devnet", "display_name": "Devnet",
                                  "explorer_url": "https://explorer.invalid",
                                  "native_token": WETH},
                           quotes=[{"token": USDC, "peg": 1}]))
    assert set(alone.feeds(1)) == {USDC.lower()}


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
                   f"fees: 30}}\nquotes:\n  - {{token: '{WETH}', peg: 1}}\n")
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
