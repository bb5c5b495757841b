"""Shared pieces of the integration tests: a study with distinct answers, SDK backends on the fake server."""

from __future__ import annotations

import json

import pandas as pd

from peercore.store import Store


def make_review_study(store: Store, name: str = "faults", *, questions: int = 25, models: int = 5) -> str:
    """``questions`` x ``models`` distinct answers: questions x models x (models - 1) ordered pairs."""
    store.studies.create(name)
    store.questions.add(name, pd.DataFrame({
        "question_id": [f"q{i:03d}" for i in range(questions)],
        "text": [f"Explain idea number {i} in one paragraph." for i in range(questions)],
        "category": ["explanation"] * questions,
    }))
    store.questions.add_answers(name, pd.DataFrame([
        {"question_id": f"q{i:03d}", "model": f"model-{m}", "answer": f"Answer {m} to question {i}: " + "word " * (5 + m)}
        for i in range(questions) for m in range(models)
    ]))
    return name


def messages_of(body: dict, api: str) -> str:
    """A canonical text of the chat messages of a logged request body (OpenAI or Anthropic)."""
    if api == "anthropic":
        messages = ([{"role": "system", "content": body["system"]}] if body.get("system") else []) + body["messages"]
    else:
        messages = body["messages"]
    return json.dumps([{"role": m["role"], "content": _text(m["content"])} for m in messages], sort_keys=True)


def request_messages(request) -> str:
    """The messages as the OpenAI wire format carries them (a prefill is a final assistant message)."""
    messages = [{"role": m["role"], "content": m["content"]} for m in request.messages]
    if request.prefill:
        messages.append({"role": "assistant", "content": request.prefill})
    return json.dumps(messages, sort_keys=True)


def _text(content) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return content
