"""The iterative retrieve–judge–rewrite loop with budgets (issue 18).

:class:`AgentLoop` plans, searches, judges, rewrites and routes among sources until the
evidence suffices or a :class:`Budget` is spent, then answers from all the evidence it
kept. Without a language model every step is the heuristic of :mod:`.heuristics`; with
one, the model plans, judges, rewrites and routes in strict JSON (:mod:`.llm_steps`) and
the heuristic takes over whenever its output is unusable. The Index door is
:meth:`ragline.index.Index.research`.
"""

from .budget import STOP_REASONS, Budget, BudgetExhausted, Meter, MeteredChat
from .heuristics import SourceInfo, Verdict
from .loop import AgentLoop, AgentRun, Kept
from .synthesis import merge_answers

__all__ = [
    "STOP_REASONS",
    "AgentLoop",
    "AgentRun",
    "Budget",
    "BudgetExhausted",
    "Kept",
    "Meter",
    "MeteredChat",
    "SourceInfo",
    "Verdict",
    "merge_answers",
]
