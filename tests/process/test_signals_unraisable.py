"""An interrupt raised where Python cannot pass it on is raised again, never lost.

Python runs a signal's handler at the next instruction of the main thread; when that
instruction is in a ``__del__`` or a weakref callback (an import lock's, at the end of
any import), the handler's ``KeyboardInterrupt`` is printed as "Exception ignored" and
dropped, and the work would run on after being told to stop.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import signal, time
    from changeloop.process.signals import SIGNALS

    SIGNALS.install()
    SIGNALS.arm()

    class Late:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)
            for _ in range(1000):  # the handler runs here, inside __del__
                pass

    try:
        Late()  # freed at once: its __del__ takes the signal
        for _ in range(1000):
            pass
        time.sleep(2)
        print("ran on")
    except KeyboardInterrupt:
        print("interrupted", SIGNALS.received)
    """
)


def test_an_interrupt_inside_a_finalizer_is_raised_again_in_the_main_flow() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "interrupted", (done.stdout, done.stderr)
    assert "Exception ignored" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert str(int(__import__("signal").SIGTERM)) in done.stdout  # the signal that came
