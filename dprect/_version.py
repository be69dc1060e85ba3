"""The installed version of dprect (kept in step with ``pyproject.toml``)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dprect")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
