"""A long-running writer renewed in place once its memory has grown past its allowance."""

import os
import subprocess
import sys
import textwrap

import pytest

from core.renewal import MB, RENEWALS, Renewal


class Renewed(Exception):
    """What the test's stand-in for exec raises, with the command it was given."""


def exec_stand_in(argv: list[str]):
    """A stand-in for exec: raises `Renewed` with the command."""
    raise Renewed(argv)


def test_renewed_only_once_its_floor_has_risen_past_its_allowance_over_its_level(monkeypatch):
    # Set through monkeypatch, so that the count the renewal writes is undone after.
    monkeypatch.setenv(RENEWALS, "0")
    now, resident, said, let_go = [0.0], [300 * MB], [], []
    renewal = Renewal("follower", said.append, ["chaintape", "live"], warm_s=600, above_mb=64,
                      resident=lambda: resident[0], clock=lambda: now[0], execute=exec_stand_in,
                      window_s=60)

    def at(second: float, mb: float) -> None:
        now[0], resident[0] = second, int(mb * MB)
        renewal.step(lambda: let_go.append(1))

    # Warming up: its memory is not measured against anything yet, however large.
    at(590, 900)
    # Warm: its level is the least it held over the last minute (400 MB, not the 900 MB ten
    # seconds before), and it is not due.
    at(600, 400)
    assert renewal.level == 400 * MB
    # A swing far over the allowance is no growth: the minute's floor is still 400 MB.
    at(630, 700)
    # The floor rises: at 650 s the last minute holds 700 and 464 MB; at 700 s, 464 MB alone:
    # 64 MB over, at the allowance, not past it.
    at(650, 464)
    at(700, 464)
    assert said == [] and let_go == []
    # 470 MB then 465 MB: the last minute's floor is 465 MB, past the allowance.
    at(710, 470)
    with pytest.raises(Renewed) as renewed:
        at(770, 465)
    assert renewed.value.args == (["chaintape", "live"],)
    assert let_go == [1] and os.environ[RENEWALS] == "1"
    assert said == ["follower: renewed in place (time 1): at least 465 MB resident over 60 s, "
                    "over its 400 MB after warm-up by more than 64 MB"]


def test_a_renewed_process_is_the_same_process_running_its_command_again(tmp_path):
    script = tmp_path / "grows.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        from multiprocessing import resource_tracker
        sys.path.insert(0, {str(os.getcwd())!r})
        from core.renewal import RENEWALS, Renewal
        times = int(os.environ.get(RENEWALS, "0"))
        print(os.getpid(), times, sys.argv[1:], flush=True)

        def exited_children():
            # This process's children that ended and were never waited for.
            found = 0
            for entry in os.listdir("/proc"):
                try:
                    with open(f"/proc/{{entry}}/stat") as stat:
                        fields = stat.read().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                found += fields[0] == "Z" and int(fields[1]) == os.getpid()
            return found

        if times == 2:
            # An image's resource tracker ends once the image is replaced: for a second, none
            # of the two before may be left unreaped.
            deadline = time.monotonic() + 1
            while time.monotonic() < deadline and not exited_children():
                time.sleep(0.05)
            print("unreaped", exited_children(), flush=True)
            sys.exit(0)
        # As a spawned pool does, each image starts the tracker of its shared resources.
        resource_tracker.ensure_running()
        held = []
        renewal = Renewal("grows", lambda line: print(line, flush=True), warm_s=0, above_mb=8,
                          window_s=0)
        while True:
            renewal.step()
            held.append(bytearray(4 << 20))
    """))
    env = {k: v for k, v in os.environ.items() if k != RENEWALS}
    done = subprocess.run([sys.executable, str(script), "again"], capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    starts = [line.split(" ", 2) for line in lines
              if not line.startswith(("grows:", "unreaped"))]
    # The same process id, started three times (the first and two renewals), with its
    # arguments each time.
    assert [s[1:] for s in starts] == [["0", "['again']"], ["1", "['again']"],
                                       ["2", "['again']"]]
    assert len({s[0] for s in starts}) == 1
    assert sum(line.startswith("grows: renewed in place") for line in lines) == 2
    assert "unreaped 0" in lines
