import pytest

from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules


@pytest.fixture(scope="session")
def rules():
    return load_rules()


@pytest.fixture(scope="session")
def convert(rules):
    """Convert a source (str or bytes) and return the resulting bytes; also checks a second run changes nothing."""

    def run(src, roc=False, check_idempotent=True):
        data = src.encode() if isinstance(src, str) else src
        options = ConvertOptions(roc=roc)
        result = convert_source(data, rules, options)
        if check_idempotent:
            again = convert_source(result.after, rules, options)
            assert again.after == result.after, "second conversion changed the output"
        return result

    return run


@pytest.fixture(autouse=True, scope="session")
def _stable_environment(tmp_path_factory):
    """Results must not depend on the machine: no installed hipify-perl, a private rule cache."""
    import os

    os.environ["HIPPORT_HIPIFY_PERL"] = "off"
    os.environ.setdefault("HIPPORT_CACHE_DIR", str(tmp_path_factory.mktemp("hipport-cache")))
