"""tcollrun's command line: flags, the command, errors (exit status 2 naming
the flag), and horovodrun's flags as TCOLL_* knobs."""

import argparse
import os
import re

import pytest

from conftest import SRC


def parse(runner, *argv):
    return runner.cli.build_parser().parse_args(list(argv))


def parse_error(runner, capsys, *argv):
    with pytest.raises(SystemExit) as e:
        env = runner.knobs.knob_env(parse(runner, *argv))
        raise AssertionError("accepted %r -> %r" % (argv, env))
    assert e.value.code == 2
    return capsys.readouterr().err


def env_of(runner, *argv):
    return runner.knobs.knob_env(parse(runner, *argv, "python3", "x.py"))


def test_command_is_everything_from_the_first_positional(runner):
    a = parse(runner, "-np", "4", "--verbose", "python3", "train.py", "--verbose", "-np", "8",
              "-H", "x")
    assert a.num_proc == 4 and a.verbose and a.hosts is None
    assert a.command == ["python3", "train.py", "--verbose", "-np", "8", "-H", "x"]


@pytest.mark.parametrize("flag", ["-np", "--num-proc", "-n"])
def test_rank_count_spellings(runner, flag):
    assert parse(runner, flag, "3", "python3").num_proc == 3


def test_unknown_flag_is_named(runner, capsys):
    err = parse_error(runner, capsys, "-np", "2", "--fusion-treshold-mb", "4", "python3", "x.py")
    assert "unrecognized arguments: --fusion-treshold-mb" in err


def test_no_abbreviations(runner, capsys):
    err = parse_error(runner, capsys, "-np", "2", "--fusion-threshold", "4", "python3")
    assert "--fusion-threshold" in err


@pytest.mark.parametrize("argv,needle", [
    (["--gloo", "-np", "2", "python3"], "--gloo is not supported: tcoll's controller is MPI only"),
    (["--min-np", "2", "-np", "2", "python3"], "--min-np is not supported: tcoll has no elastic"),
    (["--host-discovery-script", "d.sh", "python3"], "--host-discovery-script is not supported"),
    (["--num-nccl-streams", "2", "python3"], "--num-nccl-streams is not supported"),
    (["--config-file", "c.yaml", "python3"], "--config-file is not supported"),
])
def test_refused_flags_say_why(runner, capsys, argv, needle):
    assert needle in parse_error(runner, capsys, *argv)


@pytest.mark.parametrize("argv,needle", [
    (["--fusion-threshold-mb", "1025"],
     "argument --fusion-threshold-mb: 1025 is out of range 0..1024"),
    (["--fusion-threshold-mb", "-1"], "--fusion-threshold-mb"),
    (["--fusion-threshold-mb", "1.5"], "'1.5' is not a whole number"),
    (["--cache-capacity", "1048577"], "1048577 is out of range 0..1048576 (TCOLL_CACHE_CAPACITY)"),
    (["--stall-check-warning-time-seconds", "86401"], "out of range 0..86400 (TCOLL_STALL_WARN_S)"),
    (["--stall-check-shutdown-time-seconds", "x"], "--stall-check-shutdown-time-seconds"),
    (["--log-level", "LOUD"], "'LOUD' is not a log level"),
    (["--cycle-time-ms", "0"], "0 is not a number above 0"),
    (["-np", "0"], "argument -np/--num-proc/-n: 0 is out of range"),
    (["-p", "70000"], "argument -p/--ssh-port: 70000 is out of range 1..65535"),
    (["--timeline-filename", "x" * 1024], "1..1023 bytes (TCOLL_TIMELINE)"),
])
def test_values_out_of_range_stop_at_once(runner, capsys, argv, needle):
    assert needle in parse_error(runner, capsys, *argv, "python3", "x.py")


def test_contradictions(runner, capsys):
    with pytest.raises(ValueError, match="--no-stall-check contradicts"):
        env_of(runner, "--no-stall-check", "--stall-check-warning-time-seconds", "5")
    assert "not allowed with argument" in parse_error(
        runner, capsys, "-H", "a:1", "--hostfile", "f", "python3")
    assert "not allowed with argument" in parse_error(
        runner, capsys, "--hierarchical-allreduce", "--no-hierarchical-allreduce", "python3")


def test_flag_to_knob_mapping(runner):
    assert env_of(runner) == {}
    assert env_of(runner, "--fusion-threshold-mb", "32") == {
        "TCOLL_FUSION_THRESHOLD_KB": "32768", "TCOLL_FUSION_BUFFER_KB": "32768"}
    assert env_of(runner, "--fusion-threshold-mb", "0") == {"TCOLL_FUSION_THRESHOLD_KB": "0"}
    assert env_of(runner, "--cache-capacity", "0") == {"TCOLL_CACHE_CAPACITY": "0"}
    assert env_of(runner, "--cache-capacity", "77") == {"TCOLL_CACHE_CAPACITY": "77"}
    assert env_of(runner, "--hierarchical-allreduce") == {"TCOLL_ALLREDUCE_ALGO": "hier"}
    assert env_of(runner, "--no-hierarchical-allreduce") == {"TCOLL_ALLREDUCE_ALGO": "ring"}
    assert env_of(runner, "--timeline-filename", "/tmp/t l.json") == {
        "TCOLL_TIMELINE": "/tmp/t l.json"}
    assert env_of(runner, "--no-stall-check") == {
        "TCOLL_STALL_WARN_S": "0", "TCOLL_STALL_ABORT_S": "0"}
    assert env_of(runner, "--stall-check-warning-time-seconds", "30",
                  "--stall-check-shutdown-time-seconds", "90") == {
        "TCOLL_STALL_WARN_S": "30", "TCOLL_STALL_ABORT_S": "90"}
    assert env_of(runner, "--mpi-threads-disable") == {"TCOLL_MPI_THREAD": "funneled"}
    for horovod, tcoll in [("TRACE", "trace"), ("DEBUG", "debug"), ("INFO", "info"),
                           ("WARNING", "warn"), ("ERROR", "error"), ("FATAL", "error"),
                           ("warn", "warn")]:
        assert env_of(runner, "--log-level", horovod) == {"TCOLL_LOG_LEVEL": tcoll}


def test_flags_without_effect_are_accepted_and_noted(runner):
    a = parse(runner, "--cycle-time-ms", "2.5", "--timeline-mark-cycles", "--disable-cache",
              "--hierarchical-allgather", "--start-timeout", "5", "--mpi", "python3")
    assert runner.knobs.knob_env(a) == {}
    loud, quiet = runner.knobs.notes(a)
    assert loud == []
    assert [q.split()[0] for q in quiet] == ["--cycle-time-ms", "--timeline-mark-cycles",
                                             "--[no-]hierarchical-allgather", "--disable-cache"]
    loud, quiet = runner.knobs.notes(parse(runner, "--autotune", "python3"))
    assert loud and "--autotune has no effect" in loud[0] and quiet == []
    loud, _ = runner.knobs.notes(parse(runner, "--autotune-log-file", "f", "python3"))
    assert loud


def _config_c_knobs():
    """{name: (lo, hi, type)} from the knob table in src/util/config.c."""
    text = open(os.path.join(SRC, "src", "util", "config.c")).read()
    rows = re.findall(r'\{"(TCOLL_[A-Z0-9_]+)",\s*(KNOB_[A-Z]+),\s*OFF\([a-z_0-9]+\),\s*'
                      r'"[^"]*",\s*([0-9]+),\s*([0-9A-Za-z_()]+),', text)
    return {name: (int(lo), hi, kind) for name, kind, lo, hi in rows}


def test_knob_ranges_match_the_library(runner):
    table = _config_c_knobs()
    assert len(table) > 20, "the knob table of config.c was not read"
    for name, (lo, hi) in runner.knobs.KNOB_RANGES.items():
        assert name in table, name
        assert table[name][0] == lo and table[name][1] == str(hi), (name, table[name], lo, hi)
    # every knob the flags can set exists in the library
    a = parse(runner, "--fusion-threshold-mb", "1", "--cache-capacity", "1",
              "--hierarchical-allreduce", "--timeline-filename", "t", "--stall-check-"
              "warning-time-seconds", "1", "--stall-check-shutdown-time-seconds", "1",
              "--mpi-threads-disable", "--log-level", "INFO", "python3")
    env = runner.knobs.knob_env(a)
    assert len(env) == 9
    for name in env:
        assert name in table, name


def test_log_levels_and_choices_match_the_library(runner):
    text = open(os.path.join(SRC, "src", "util", "config.c")).read()
    levels = re.search(r"level_names\[\] = \{([^}]*)\}", text).group(1)
    assert set(runner.knobs.LOG_LEVELS.values()) == set(re.findall(r'"([a-z]+)"', levels))
    algos = re.search(r"algo_choices\[\] = \{([^}]*)\}", text).group(1)
    assert {"hier", "ring"} <= set(re.findall(r'"([a-z]+)"', algos))
    threads = re.search(r"mpi_thread_choices\[\] = \{([^}]*)\}", text).group(1)
    assert "funneled" in re.findall(r'"([a-z]+)"', threads)
    field = re.search(r"char timeline\[(\d+)\];", open(
        os.path.join(SRC, "src", "util", "config.h")).read())
    assert int(field.group(1)) - 1 == runner.knobs.TIMELINE_MAX


def test_types_reject_with_argparse_errors(runner):
    conv = runner.knobs.int_in(1, 3, "K")
    assert conv("2") == 2
    with pytest.raises(argparse.ArgumentTypeError):
        conv("4")
