"""One worker process and its pipe, shared by the parse pool (ingest/parse/) and the embedding
pool (ingest/workers.py); each pool keeps its own policy (time and memory limits, crash
messages, thread counts, how a worker is stopped).

    worker = WorkerProcess(context, _parse_worker, (settings, parser), name="kb-parse")
    if worker.started(timeout=60) != "ready": ...       # its first message, or None
    worker.give(job, path)                               # `job`: what the pool remembers
    wait_for_any([worker], timeout=5)                    # an answer, its end, or the time out
    answer = worker.poll()                               # None while it works (or once it died)
    worker.stop(wait_s=None)                             # told to stop, left to exit by itself

The process runs `target(conn, *args)`, which prepares itself and calls `serve(conn, answer)`:
it says "ready" (or sends the error that stopped it instead), then answers each message it
receives until it gets None or the pipe ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar, cast

J = TypeVar("J")  # what the pool remembers about the job a worker holds
A = TypeVar("A")  # what the worker answers to a job
Context = ForkServerContext | SpawnContext  # where a worker comes from (the pool decides)
KILL_WAIT_S = 5.0  # for a killed process to be reaped
LOST_PIPE_WAIT_S = 2.0  # for a worker whose pipe broke to exit before it is killed


def serve(conn: Connection, answer: Callable[[Any], object]) -> None:
    """The worker's side: say "ready", then send `answer(message)` for each message received
    until None comes or the pipe ends."""
    conn.send("ready")
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        conn.send(answer(message))


class WorkerProcess(Generic[J, A]):
    """One worker process and its pipe; `job` while it holds one (see the module docstring)."""

    def __init__(
        self,
        context: Context,
        target: Callable[..., None],
        args: tuple[Any, ...],
        name: str,
    ) -> None:
        self.conn, child = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=target, args=(child, *args), daemon=True, name=name
        )
        self.process.start()
        child.close()
        self.ready = False
        self.job: J | None = None

    def started(self, timeout: float | None) -> object:
        """The worker's first message, waiting up to `timeout` seconds for it (None: until it
        comes or the process ends): "ready" (at once, once it was), what it sent instead (an
        error), or None when nothing came (it exited, or the time ran out)."""
        if not self.ready:
            wait([self.conn, self.process.sentinel], timeout)
            first = self._receive()
            self.ready = first == "ready"
            return first
        return "ready"

    def give(self, job: J, message: object) -> None:
        """Send `message` to the worker, remembering `job` until its answer is taken."""
        self.job = job
        self.conn.send(message)

    def poll(self) -> A | None:
        """The worker's answer if it came, else None (still working, or dead: see
        `process.is_alive()`)."""
        return cast("A | None", self._receive())

    def _receive(self) -> object:
        try:
            if self.conn.poll():
                return self.conn.recv()
        except (EOFError, OSError):
            pass
        return None

    def stop(self, wait_s: float | None) -> None:
        """Tell the worker to stop (it does once its job, if any, is done) and wait up to
        `wait_s` seconds for it to exit, then kill it if it has not. `wait_s` None: leave it to
        exit by itself (multiprocessing reaps it when it next starts a process, or at exit)."""
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                wait_s = LOST_PIPE_WAIT_S if wait_s is None else wait_s
            if wait_s is None:
                self.conn.close()
                return
            self.process.join(timeout=wait_s)
        self.kill()

    def kill(self) -> None:
        """Kill the worker now (if it still runs) and close its pipe."""
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=KILL_WAIT_S)
        self.conn.close()


def wait_for_any(workers: Sequence[WorkerProcess[Any, Any]], timeout: float | None) -> None:
    """Wait until one of `workers` sends a message or ends, or `timeout` seconds pass (None:
    no limit)."""
    wait([w.conn for w in workers] + [w.process.sentinel for w in workers], timeout)
