"""The benchmarks' record of their host: CPU ticks read from /proc/stat, the stolen share."""

from pathlib import Path

from bench.common import Host, cpu_ticks

STAT = """cpu  100 0 20 870 5 0 1 4 0 0
cpu0 50 0 10 435 2 0 1 2 0 0
intr 12345
"""


def test_ticks_are_read_from_the_first_line() -> None:
    assert cpu_ticks(STAT) == (4, 1000)


def test_a_line_without_steal_counts_nothing() -> None:
    assert cpu_ticks("cpu  100 0 20 870\n") == (0, 0)


def host_reading(stat: Path) -> Host:
    """A Host whose /proc/stat is `stat`, started now."""

    class Fake(Host):
        STAT = stat

    return Fake()


def test_the_stolen_share_is_of_the_ticks_since_the_start(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(STAT)
    host = host_reading(stat)
    stat.write_text(STAT.replace("cpu  100 0 20 870 5 0 1 4", "cpu  160 0 30 1070 5 0 1 34"))
    report = host.report()
    assert report["steal_share"] == 0.1  # 30 of the 300 ticks since
    assert isinstance(report["cores"], int) and report["cores"] >= 1


def test_no_ticks_since_the_start_give_no_share(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(STAT)
    assert host_reading(stat).report()["steal_share"] is None
