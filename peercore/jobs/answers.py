"""Answer generation: every contestant answers every question (PRD step 1, Li et al. 2023)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from peercore.jobs.base import Judge, as_judges, item_key, load_answers, load_questions, parse_item_key
from peercore.reviewers.base import ChatRequest
from peercore.runner import ItemContext, ItemOutcome, Job, PlannedCall

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["AnswerJob", "DEFAULT_SYSTEM_PROMPT"]

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Answer the user's question accurately and concisely."


class AnswerJob(Job):
    """Each contestant answers each question of a study; answers are stored under the contestant's name.

    Items are (question, contestant). An answer already in the store (imported, or from
    another run) is kept and not asked again.

    Parameters
    ----------
    study : the study (its questions are read from the store).
    contestants : backends (or :class:`~peercore.jobs.base.Judge` with a ``name``)
        whose names become the ``model`` of the answers.
    questions : only these question ids (default all).
    system_prompt : system message (None for none).
    temperature, max_tokens : sampling settings.
    """

    kind = "answers"

    def __init__(self, study: str, contestants: Sequence, *, questions: Sequence[str] | None = None,
                 system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, temperature: float = 0.0,
                 max_tokens: int = 512) -> None:
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        if not (isinstance(temperature, (int, float)) and temperature >= 0):
            raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
        self.study = study
        self.contestants: list[Judge] = as_judges(contestants, what="contestants")
        self.questions = list(questions) if questions is not None else None
        self.system_prompt = system_prompt
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self._texts: dict[str, str] = {}
        self._existing: set[tuple[str, str]] = set()
        self._by_name = {c.label: c for c in self.contestants}

    def config(self) -> dict:
        return {
            "contestants": [c.describe() for c in self.contestants],
            "questions": self.questions,
            "system_prompt": self.system_prompt,
            "temperature": self.temperature,
            "max_output": self.max_tokens,
        }

    def backends(self) -> list:
        return [c.backend for c in self.contestants]

    def prepare(self, store: "Store") -> list[str]:
        self._texts = load_questions(store, self.study, questions=self.questions)
        self._existing = set(load_answers(store, self.study))
        return [item_key(q, c.label) for q in self._texts for c in self.contestants]

    def _request(self, question: str, contestant: Judge) -> ChatRequest:
        messages = [{"role": "user", "content": self._texts[question]}]
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        temperature = self.temperature if contestant.temperature is None else contestant.temperature
        return ChatRequest(messages=tuple(messages), temperature=temperature, max_tokens=self.max_tokens,
                           seed=contestant.seed)

    def plan(self, item: str) -> list[PlannedCall]:
        question, name = parse_item_key(item)
        if (question, name) in self._existing:
            return []
        contestant = self._by_name[name]
        return [PlannedCall(contestant.backend, self._request(question, contestant),
                            typical_output_tokens=min(self.max_tokens, 300))]

    async def run_item(self, item: str, ctx: ItemContext) -> ItemOutcome:
        question, name = parse_item_key(item)
        if (question, name) in self._existing:
            return ItemOutcome(detail="answer already in the store")
        contestant = self._by_name[name]
        completion = await ctx.complete(contestant.backend, self._request(question, contestant))
        answer = completion.text.strip()
        if not answer:  # nothing to store; the item is settled (the call is cached)
            return ItemOutcome(status="invalid", detail=f"empty answer (finish_reason={completion.finish_reason})")
        return ItemOutcome(answers=({"question_id": question, "model": name, "answer": answer},))
