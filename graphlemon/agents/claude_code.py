"""The claude_code backend: `claude -p --output-format stream-json --verbose` in the unit's work tree.

No `--bare` (REQ-07 boundary: the A-1 spike chose the normal start-up). The
skill is appended to Claude Code's own system prompt; the task context goes on
stdin. The role's Claude Code tools are allowed, with Write/Edit narrowed to the
sandbox globs; `--json-schema` asks for the role's output schema.

While the stream runs: one usage record per model call (assistant message id),
plan usage limits become `QuotaExceeded`, auto-mode classifier denials are
counted per task (`ClassifierBlocked` at 3 in a row or 20 in total). After the
turn, every change in the work tree outside the sandbox allow-list is reverted
and recorded as a violation; so is every change to git's own state (a commit,
a ref, the index, config and hooks) and to files git ignores (git_ignored.py), and
Claude Code is told to refuse the git commands that make them (`GIT_DENY_RULES`).

`probe(model)` asks whether the plan can be used again after a usage limit: a
minimal one-turn `claude -p` in an empty folder (REQ-14's cheap probe).

The `claude` process runs inside the same bubblewrap sandbox as test runs (testrun/confine.py,
`AgentProcessConfinement`): the work tree writable (its `.git` read-only), a network namespace of its
own whose only way out is the egress proxy (egress_proxy.py: the API's host and
`AgentSettings.claude_egress`), Claude Code's install dir read-only, a config folder of the turn's own
(claude_config.py: the login copied in read-only, the rest scratch, judged and discarded after the turn),
the environment's allow-list plus Claude Code's own variables (`agent_process_env`); so every command
its Bash tool runs is confined too. Where the sandbox cannot be made the backend is refused
(EXECUTOR_ERROR) unless GRAPHLEMON_TEST_CONFINEMENT opts out. However the turn ends, every process it started (the
sandbox's whole pid namespace) has ended, checked, before `run` returns or raises (testrun/sandbox_end.py); then
every FIFO, socket or device file it left in the work tree is removed and recorded before git looks at it.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ErrorCode, GraphLemonError
from ..models import ExecutorName
from ..testrun import confine
from ..testrun.environment import agent_process_env, egress_env
from ..testrun.sandbox_end import status_file
from ..worktrees import task_lock, task_lock_dir
from . import git_guard, git_ignored, worktree
from .automode_denials import ClassifierGuard
from .budget import budget_status, estimate_tokens, preflight
from .claude_config import TurnConfig
from .claude_stream import ClaudeStream, run_once
from .effects import NOT_PUT_BACK, Refusal, TreeGuard, clear_special_files
from .egress_proxy import EgressProxy, default_rules, parse_rules
from .executor_seam import AgentRequest, AgentResult
from .prompt import RenderedPrompt, render
from .roles import role_spec
from .settings import AgentSettings
from .tool_context import ToolContext
from .turn import TurnRecorder
from .usage_limit_signals import from_rate_limit_event, parse_usage_limit

WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
PROBE_PROMPT = "Reply with the single word: ok"
PROBE_TIMEOUT_S = 120.0
# git commands a turn may not run (Claude Code permission rules, passed with --settings): they move HEAD or refs,
# hide changes (index flags, config) or reach another checkout. git_guard puts back whatever slips past them.
GIT_DENY_COMMANDS = (
    "commit", "push", "reset", "checkout", "switch", "rebase", "merge", "cherry-pick", "revert", "am", "pull",
    "fetch", "tag", "branch", "update-ref", "symbolic-ref", "update-index", "stash", "worktree", "config",
    "gc", "prune", "reflog", "filter-branch", "replace", "notes", "-C", "-c", "--git-dir", "--work-tree",
)  # fmt: skip
SHARED_KINDS = ("git_ref", "git_control")  # git state every worktree of a repository shares
GIT_DENY_RULES = tuple(f"Bash(git {command}:*)" for command in GIT_DENY_COMMANDS)


class ClaudeCodeExecutor:
    name: ExecutorName = "claude_code"

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        self.secrets = (settings.api_key.get_secret_value(),) if settings.api_key else ()

    def run(self, request: AgentRequest, ctx: ToolContext) -> AgentResult:
        request = rendered_request(request)  # the skill + tools + output as the system prompt, the turn on stdin
        rec = TurnRecorder(self.name, request, ctx)
        model = request.model or self.settings.model_for(request.role)
        guard = ClassifierGuard(
            ctx.ledger,
            request.task_id,
            request.unit_id,
            max_consecutive=self.settings.classifier_max_consecutive,
            max_total=self.settings.classifier_max_total,
        )
        guard.check()
        preflight(
            ctx.ledger,
            request.task_id,
            model=model,
            input_tokens=estimate_tokens(request.system) + estimate_tokens(request.prompt),
            max_output_tokens=self.settings.max_output_tokens,
        )
        before = worktree.snapshot(ctx.sandbox.root)
        git_before = git_guard.capture(ctx.sandbox.root)
        effects = TreeGuard(ctx.sandbox)
        stream = ClaudeStream(request, ctx, rec, guard, model)
        proxy = self.egress_proxy()
        config = TurnConfig.for_turn(os.environ)
        neighbours = _turns.enter(git_before.common_dir, ctx.node_exec_id)
        try:
            writable = _state_folders(Path(request.workdir), request.sandbox.writable, ctx.state_dir)
            with proxy, status_file() as status:
                argv = self.argv(request, ctx, model)
                confined = self.confined(argv, Path(request.workdir), ctx.state_dir, writable, config, proxy, status)
                stream.run(*confined, status=status)  # returns once every process of the turn has ended, checked
        finally:
            special = clear_special_files(ctx.sandbox.root)  # before any git call: a FIFO the turn left would block it
            try:
                reverted = self._enforce_git(git_before, ctx, rec, neighbours)
            finally:
                _turns.leave(git_before.common_dir, neighbours)
            reverted += self._enforce_config(config, ctx, rec)
            self._record_egress(proxy, ctx, rec)
            skip = set(git_before.ignored)  # judged by _enforce_git even when a changed rule shows them to git status
            reverted += self._enforce_sandbox(before, ctx, rec, skip=skip)
            reverted += self._enforce_effects(effects, ctx, rec, skip=skip, cleared=tuple(special))
            stream.flush_usage()
        allowed_changes = set(worktree.changed_since(before)) | ctx.files_changed
        return stream.outcome(files_changed=allowed_changes, reverted=reverted)

    def argv(self, request: AgentRequest, ctx: ToolContext, model: str) -> list[str]:
        argv = [self.settings.claude_bin, "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--model", model, "--max-turns", str(request.limits.max_turns)]
        argv += ["--permission-mode", self.settings.claude_permission_mode]
        argv += ["--allowedTools", ",".join(claude_allowed_tools(request.role, request.sandbox.writable))]
        argv += ["--disallowedTools", "WebFetch,WebSearch"]
        argv += ["--settings", json.dumps({"permissions": {"deny": list(GIT_DENY_RULES)}})]
        argv += ["--append-system-prompt", request.system]
        if request.output_model is not None:
            argv += ["--json-schema", json.dumps(request.output_model.model_json_schema())]
        status = budget_status(ctx.ledger, request.task_id)
        if status is not None and status.limit_type == "cost_usd":
            argv += ["--max-budget-usd", f"{max(status.remaining, 0):.4f}"]
        return argv

    def egress_proxy(self) -> EgressProxy:
        """The turn's egress proxy: the API's host (what `ANTHROPIC_BASE_URL` names, else api.anthropic.com) and
        `claude_egress`."""
        return EgressProxy([*default_rules(os.environ), *parse_rules(self.settings.claude_egress)])

    def confined(
        self,
        argv: list[str],
        workdir: Path,
        state_dir: Path | None,
        writable: list[Path],
        config: TurnConfig,
        proxy: EgressProxy,
        status: Path | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """`argv` as it runs inside the sandbox (testrun/confine.py), with the turn's config folder and `writable`
        writable and the proxy its only way out, and its environment (with the sandbox opted out: this process's,
        the config folder still the turn's); bwrap reports the sandbox's init to `status`; refused where it cannot be
        confined."""
        conf = confine.for_agent_process(
            workdir, state_dir, program=argv[0], writable=[config.folder, *writable], egress=proxy.socket_path,
            status=status,
        )  # fmt: skip
        wrapped, how = confine.wrap(argv, conf, cwd=workdir)
        if how != "bwrap":
            return wrapped, {**os.environ, "CLAUDE_CONFIG_DIR": str(config.folder)}
        env = agent_process_env(conf.settings.env)
        return wrapped, {**env, **egress_env(confine.EGRESS_PORT), "CLAUDE_CONFIG_DIR": str(config.folder)}

    def probe(self, model: str) -> bool:
        """True when a minimal turn on `model` completes; False while a usage limit (or any failure) persists."""
        argv = [self.settings.claude_bin, "-p", "--output-format", "stream-json", "--verbose", "--model", model]
        argv += ["--max-turns", "1", "--disallowedTools", "Bash,Write,Edit,MultiEdit,WebFetch,WebSearch"]
        with tempfile.TemporaryDirectory(prefix="graphlemon-probe-") as cwd, TurnConfig.for_turn(os.environ) as config:
            with self.egress_proxy() as proxy, status_file() as status:
                argv, env = self.confined(argv, Path(cwd), None, [], config, proxy, status)
                stdout = run_once(argv, env, Path(cwd), status, PROBE_PROMPT, PROBE_TIMEOUT_S)
        return probe_succeeded(stdout)

    @staticmethod
    def _enforce_git(
        before: git_guard.GitState, ctx: ToolContext, rec: TurnRecorder, neighbours: _Neighbours
    ) -> list[str]:
        """Put git's state back (HEAD, refs, index, config, hooks) and judge the files git ignores; each change
        undone is a recorded violation named by its kind (git_commit, git_ref, ..., ignored_file)."""
        with _task_lock(ctx):  # the loop adds this task's worktrees and merges under it: never judged half-done
            findings = git_guard.restore_git(before)
        verdict = git_ignored.judge_ignored(before, ctx.sandbox)
        if verdict.kept:
            rec.event("ignored_kept", paths=verdict.kept[:200])  # writable, but git will not commit them
        if verdict.caches:
            rec.event("caches_dropped", paths=verdict.caches[:200])
        reverted = []
        for finding in findings + verdict.findings:
            name = finding.name if finding.kind == "ignored_file" else f"{finding.kind}:{finding.name}"
            why = finding.why
            if finding.kind in SHARED_KINDS and neighbours.others:  # shared by every worktree of the repository
                why += f" (by this turn or by one running at the same time: {', '.join(sorted(neighbours.others))})"
            err = GraphLemonError(
                ErrorCode.SANDBOX_VIOLATION, f"sandbox: {finding.kind}: {why}", path=finding.name,
                kind=finding.kind,
            )  # fmt: skip
            ctx.record_tool_error("claude_code", err)
            rec.event("reverted", path=name, finding=finding.kind)
            reverted.append(name)
        return reverted

    @staticmethod
    def _enforce_config(config: TurnConfig, ctx: ToolContext, rec: TurnRecorder) -> list[str]:
        """Whatever the turn wrote into its config folder that would steer a later Claude Code (a hook, an MCP
        server, a command, settings, CLAUDE.md) is a recorded violation; then the folder is thrown away."""
        try:
            findings = config.findings()
        finally:
            config.discard()
        out = []
        for finding in findings:
            err = GraphLemonError(
                ErrorCode.SANDBOX_VIOLATION,
                f"sandbox: claude_config: the turn {finding.change} {finding.kind} {finding.path!r} in Claude Code's "
                "config folder; the folder was the turn's own and is discarded (it never reaches your ~/.claude)",
                path=f"claude_config/{finding.path}", kind=f"claude_config_{finding.kind}",
            )  # fmt: skip
            ctx.record_tool_error("claude_code", err)
            rec.event("discarded", path=finding.path, finding=finding.kind)
            out.append(f"claude_config_{finding.kind}:{finding.path}")
        return out

    @staticmethod
    def _record_egress(proxy: EgressProxy, ctx: ToolContext, rec: TurnRecorder) -> None:
        """Each connection the egress proxy refused is a recorded violation of the turn."""
        for why in list(dict.fromkeys(proxy.refusals))[:50]:
            err = GraphLemonError(ErrorCode.SANDBOX_VIOLATION, f"sandbox: egress: {why}", kind="egress")
            ctx.record_tool_error("claude_code", err)
            rec.event("egress_refused", why=why)

    def _enforce_sandbox(
        self, before: worktree.Snapshot, ctx: ToolContext, rec: TurnRecorder, *, skip: set[str] = frozenset()
    ) -> list[str]:
        """Revert every change outside the allow-list; each one is a recorded violation."""
        reverted = []
        for rel in worktree.changed_since(before):
            if rel in skip:
                continue
            if ctx.sandbox.is_writable(rel) and _resolves_inside(ctx, rel):
                continue
            done = worktree.restore(before, rel)
            reverted.append(rel)
            what = "the change was reverted" if done else NOT_PUT_BACK.removeprefix("; ")
            err = GraphLemonError(
                ErrorCode.SANDBOX_VIOLATION,
                f"sandbox: claude changed {rel!r}, outside this role's writable paths; {what}",
                path=rel,
            )
            ctx.record_tool_error("claude_code", err)
            rec.event("reverted", path=rel)
        return reverted

    @staticmethod
    def _enforce_effects(
        guard: TreeGuard,
        ctx: ToolContext,
        rec: TurnRecorder,
        *,
        skip: set[str] = frozenset(),
        cleared: tuple[Refusal, ...] = (),
    ) -> list[str]:
        """Inside the allow-list too: a symlink, a mode change or a special file (`cleared`, removed before git
        looked) is reverted and recorded (effects.py)."""
        refusals = [*cleared, *guard.judge(skip=skip)]
        for refusal in refusals:
            err = GraphLemonError(
                ErrorCode.SANDBOX_VIOLATION,
                f"sandbox: claude: {refusal.why}; {refusal.outcome}",
                path=refusal.path,
            )
            ctx.record_tool_error("claude_code", err)
            rec.event("reverted", path=refusal.path)
        return [r.path for r in refusals]


def _state_folders(root: Path, globs: list[str], state_dir: Path | None) -> list[Path]:
    """The folders the role may write that lie in the ledger folder the sandbox hides (the planner's
    `.graphlemon/plan/drafts/**`): each glob's fixed leading folders, where they exist."""
    if state_dir is None:
        return []
    out = []
    for glob in globs:
        parts = Path(glob).parts
        fixed = list(itertools.takewhile(lambda part: not any(c in part for c in "*?["), parts[:-1]))
        folder = root.joinpath(*fixed)
        if fixed and folder.is_dir() and Path(state_dir).resolve() in [folder.resolve(), *folder.resolve().parents]:
            out.append(folder)
    return out


def probe_succeeded(stream_json: str) -> bool:
    """A probe's stdout: a successful result event and no usage-limit signal."""
    ok = False
    for line in stream_json.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "rate_limit_event" and from_rate_limit_event(event) is not None:
            return False
        if event.get("type") == "result":
            if event.get("is_error") or parse_usage_limit(str(event.get("result") or "")):
                return False
            ok = True
    return ok


def claude_prompt(request: AgentRequest) -> RenderedPrompt:
    """The prompt as Claude Code receives it: the tools named are the ones the process is started with."""
    tools = [name.split("(", 1)[0] for name in claude_allowed_tools(request.role, request.sandbox.writable)]
    return render(request, "claude_code", claude_tools=list(dict.fromkeys(tools)))


def rendered_request(request: AgentRequest) -> AgentRequest:
    """The request with `system` (--append-system-prompt) and `prompt` (stdin) as Claude Code receives them."""
    rendered = claude_prompt(request)
    return request.model_copy(update={"system": rendered.system_text, "prompt": rendered.first_message})


def claude_allowed_tools(role: str, writable: list[str]) -> list[str]:
    """The role's Claude Code tools; file-writing tools are narrowed to the sandbox globs. TodoWrite is always
    allowed: its list becomes the role's todo list."""
    tools = ["TodoWrite"]
    for name in role_spec(role).claude_tools:
        if name in WRITE_TOOLS:
            tools += [f"{name}({glob})" for glob in writable]
        else:
            tools.append(name)
    return tools


@dataclass(eq=False)
class _Neighbours:
    """One turn in the registry: the other turns in the same repository that ran while it did."""

    me: str
    others: set[str] = field(default_factory=set)


class _TurnRegistry:
    """The claude_code turns of this process that are running, per repository (its common git folder)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[Path, list[_Neighbours]] = {}

    def enter(self, repo: Path, name: str) -> _Neighbours:
        me = _Neighbours(name)
        with self._lock:
            running = self._running.setdefault(repo, [])
            for other in running:
                other.others.add(name)
                me.others.add(other.me)
            running.append(me)
        return me

    def leave(self, repo: Path, me: _Neighbours) -> None:
        with self._lock:
            running = self._running.get(repo, [])
            if me in running:
                running.remove(me)


_turns = _TurnRegistry()


def _task_lock(ctx: ToolContext) -> AbstractContextManager[None]:
    if ctx.task_id is None or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", ctx.task_id):
        return nullcontext()
    return task_lock(task_lock_dir(ctx.state_dir, ctx.task_id))


def _resolves_inside(ctx: ToolContext, rel: str) -> bool:
    real = os.path.realpath(ctx.sandbox.root / rel)
    return real.startswith(str(ctx.sandbox.root) + os.sep)
