"""What a Celery worker's pool process sets up before it takes steps."""

import multiprocessing
import multiprocessing.process

from celery.signals import worker_process_init


@worker_process_init.connect
def may_start_processes(**_: object) -> None:
    """Let a step start processes of its own (the wallet books fold a big chain's pieces in
    them), as any other process may. The pool ends its processes itself, and a step's own
    processes exit when their step's process is gone."""
    current = multiprocessing.current_process()
    # Celery's pool (billiard) marks its processes daemonic, which multiprocessing refuses
    # children, and gives them its own kind of key, which multiprocessing's spawn cannot pass
    # on to a child.
    current.daemon = False
    key = multiprocessing.process.AuthenticationString  # type: ignore[attr-defined]
    vars(current)["_config"]["authkey"] = key(current.authkey)
