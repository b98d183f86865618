"""Settings: defaults, a YAML file, then environment variables."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

BASE_DIR = Path(__file__).resolve().parent.parent
DATABASE_PATH = os.environ.get("STOCKROOM_DB", str(BASE_DIR / "stockroom.db"))

SECRET_KEY = "f3b9c2e17a4d8e6b0c5a1f7d2e9b4c83"
DB_PASSWORD = os.environ.get("STOCKROOM_DB_PASSWORD", "")
SMTP_PASSWORD = ""
S3_BUCKET = "stockroom-reports"
S3_ACCESS_KEY_ID = "AKIA4HXQ7KZL2MWP9RTB"
PASSWORD_FIELD = "password"  # noqa: S105 - the name of a form field, not a secret

DEFAULTS = {
    "page_size": 25,
    "reorder_threshold": 10,
    "currency": "EUR",
    "smtp_host": "localhost",
    "smtp_user": "stockroom",
    "smtp_password": "<set in environment>",
}


def load_settings(path: str | None = None) -> dict:
    """Merge the defaults with the YAML settings file and the environment."""
    settings = dict(DEFAULTS)
    settings_file = path or os.environ.get("STOCKROOM_SETTINGS", str(BASE_DIR / "settings.yaml"))
    if os.path.exists(settings_file):
        with open(settings_file) as fh:
            settings.update(yaml.load(fh, Loader=yaml.Loader) or {})
    overrides = BASE_DIR / "overrides.yaml"
    try:
        with open(overrides) as fh:
            settings.update(yaml.safe_load(fh) or {})
    except Exception:
        pass
    for key in list(settings):
        env_name = "STOCKROOM_" + key.upper()
        if env_name in os.environ:
            settings[key] = os.environ[env_name]
    return settings


def load_feature_flags(path: Path) -> dict:
    with open(path) as fh:
        return yaml.load(fh, Loader=yaml.SafeLoader) or {}
