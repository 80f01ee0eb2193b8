"""The CLI's progress line: the Node CLI's fields and wording, on a terminal only (decisions 5.5, 7.2)."""

from __future__ import annotations

import io
import json
import subprocess

from conftest import ROOT

from handoff.progress import ProgressBars, speed_text, time_left_text
from handoff.terminal import terminal_safe

MIB = 1024 * 1024


def node_answer(module: str, expression: str, argument: object) -> object:
    """What ``expression`` (over ``m``, the TypeScript module, and ``arg``) gives in node, as JSON."""
    script = (
        f"const m = await import('./{module}'); const arg = JSON.parse(process.argv[1]);"
        f"console.log(JSON.stringify({expression}));"
    )
    node = subprocess.run(
        ["node", "--conditions=source", "--import", "tsx", "--input-type=module", "-e", script, json.dumps(argument)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(node.stdout)


class FakeClock:
    def __init__(self) -> None:
        self.at = 100.0

    def __call__(self) -> float:
        return self.at


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_bytes_speed_and_time_left_and_is_redrawn_at_most_ten_times_a_second() -> None:
    clock, stream = FakeClock(), Terminal()
    with ProgressBars(stream, now=clock) as bars:
        assert bars.on_progress is not None
        bars.on_progress("report.pdf", 0, 10 * MIB)
        clock.at += 1.0
        bars.on_progress("report.pdf", 2 * MIB, 10 * MIB)
        clock.at += 0.05
        bars.on_progress("report.pdf", 3 * MIB, 10 * MIB)  # within 0.1 s of the last: not drawn
        clock.at += 0.95
        bars.on_progress("report.pdf", 10 * MIB, 10 * MIB)
        bars.on_progress("evil\x1b]0;owned\x07\u202e.txt", 0, 0)
    assert stream.getvalue().split("\r")[1:] == [
        "report.pdf [░░░░░░░░░░░░░░░░░░░░] 0% 0.0/10.0 MiB -- MiB/s --:-- left\x1b[K",
        "report.pdf [████░░░░░░░░░░░░░░░░] 20% 2.0/10.0 MiB 2.0 MiB/s 0:04 left\x1b[K",
        "report.pdf [████████████████████] 100% 10.0/10.0 MiB 5.0 MiB/s 0:00 left\x1b[K\n",
        "evil\\u001b]0;owned\\u0007\\u202e.txt [████████████████████] 100% 0.0/0.0 MiB -- MiB/s 0:00 left\x1b[K\n",
    ]


def test_the_speed_looks_five_seconds_back_and_starts_again_when_progress_goes_back() -> None:
    clock, stream = FakeClock(), Terminal()
    with ProgressBars(stream, now=clock) as bars:
        assert bars.on_progress is not None
        for second, mib in enumerate([0, 1, 2, 3, 4, 5, 6, 16, 4, 6]):
            clock.at = 100.0 + second
            bars.on_progress("big.bin", mib * MIB, 100 * MIB)
    speeds = [line.split(" MiB ")[1].split(" MiB/s")[0] for line in stream.getvalue().split("\r")[1:]]
    # 16 MiB at 7 s: the window starts at the sample 5 s back (2 MiB at 2 s): 14 MiB in 5 s.
    # Back to 4 MiB (a resumed upload): no speed until a second point, then 2 MiB in 1 s.
    assert speeds == ["--", "1.0", "1.0", "1.0", "1.0", "1.0", "1.0", "2.8", "--", "2.0"]


def test_nothing_is_written_when_stderr_is_not_a_terminal() -> None:
    stream = io.StringIO()
    with ProgressBars(stream) as bars:
        assert bars.on_progress is None
    assert stream.getvalue() == ""


def test_speed_and_time_left_are_worded_as_the_node_cli_words_them() -> None:
    cases: list[tuple[float | None, int]] = [
        (None, 5), (0, 5), (1.5 * MIB, 0), (3, 100), (MIB, 59 * MIB), (MIB, 61 * MIB), (MIB, 10 * 3600 * MIB + 1)
    ]
    expression = "arg.map(([speed, left]) => [m.speedText(speed), m.timeLeftText(left, speed)])"
    python = [[speed_text(speed), time_left_text(left, speed)] for speed, left in cases]
    assert python == node_answer("src/client/progress.ts", expression, cases)


def test_what_a_terminal_would_act_on_is_escaped_as_the_node_cli_escapes_it() -> None:
    texts = ["plain é ✓ 😀", "a\x1b[2Jb\x07\x7f\x9b\u061c\u200e\u202a\u202e\u2066\u2069\u206a", "two\nlines\r"]
    python = [safe for text in texts for safe in (terminal_safe(text), terminal_safe(text, keep_newlines=True))]
    expression = "arg.flatMap((t) => [m.terminalSafe(t), m.terminalSafe(t, {keepNewlines: true})])"
    assert python == node_answer("src/client/terminal-text.ts", expression, texts)
