"""``--model scripted:FILE`` on the command line: model turns from a JSON or YAML file.

The model is :mod:`agentscope_teams.model.script_file` (``model_from_string`` builds it too); this
module keeps the command line's entry point to it.
"""

from __future__ import annotations

from ..model.script_file import PREFIX, ScriptFileModel, ScriptRouter, build, load_script

__all__ = ["PREFIX", "ScriptFileModel", "ScriptRouter", "load_script", "scripted_model"]


def scripted_model(text: str, lead_prompt: str | None) -> tuple[ScriptFileModel, ScriptRouter]:
    """The model of ``--model scripted:FILE`` and its router (give it the specs' prompts)."""
    model = build(text[len(PREFIX) :], lead_prompt=lead_prompt)
    return model, model.router
