"""tcoll.runner.knobs: horovodrun's tuning flags as tcoll's TCOLL_* knobs.

Each flag that has an equivalent becomes one or more environment variables
set for every rank (``knob_env``); its value is checked against the knob's
range as the flag is parsed, so a bad value stops tcollrun at once (exit
status 2) instead of being warned about and ignored by every rank. Flags
that tcoll has no use for are accepted and said to have no effect, with
the reason (``notes``); ``docs/tcollrun.md`` has the table.

The ranges are those of the knob table in ``src/util/config.c``; a unit
test compares them. Nothing here reads the environment or runs anything.
"""

import argparse

# Horovod's log levels (and tcoll's own names) -> TCOLL_LOG_LEVEL.
LOG_LEVELS = {
    "trace": "trace", "debug": "debug", "info": "info", "warning": "warn", "warn": "warn",
    "error": "error", "fatal": "error",
}

# The knobs tcollrun sets, with their ranges in src/util/config.c.
KNOB_RANGES = {
    "TCOLL_FUSION_THRESHOLD_KB": (0, 1048576),
    "TCOLL_FUSION_BUFFER_KB": (1, 1048576),
    "TCOLL_CACHE_CAPACITY": (0, 1048576),
    "TCOLL_STALL_WARN_S": (0, 86400),
    "TCOLL_STALL_ABORT_S": (0, 86400),
}
TIMELINE_MAX = 1023  # TCOLL_TIMELINE: bytes of the path (a 1024-byte field)

NO_EFFECT = {
    "cycle_time_ms": "--cycle-time-ms has no effect: tcoll has no periodic cycle to time "
                     "(a negotiation cycle starts as soon as a rank has work)",
    "timeline_mark_cycles": "--timeline-mark-cycles has no effect: every collective in "
                            "tcoll's timeline already names its negotiation cycle",
    "hierarchical_allgather": "--[no-]hierarchical-allgather has no effect: tcoll chooses "
                              "its allgather algorithms itself",
    "disable_cache": "--disable-cache has no effect: tcollrun keeps no cache of its "
                     "checks (it runs them every time)",
}
AUTOTUNE_NOTE = ("--autotune has no effect: tcoll has no autotuner; set the TCOLL_* knobs "
                 "instead (docs/tcollrun.md)")


def _whole(text):
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a whole number" % text) from None


def int_in(lo, hi, what):
    """An argparse type: a whole number in lo..hi (what: the knob, for the
    message)."""
    def conv(text):
        v = _whole(text)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError("%d is out of range %d..%d (%s)" % (v, lo, hi, what))
        return v
    return conv


def positive_float(text):
    """An argparse type: a number above 0 (Horovod's --cycle-time-ms)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text) from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError("%s is not a number above 0" % text)
    return v


def log_level(text):
    """An argparse type: a Horovod or tcoll log level -> tcoll's name."""
    try:
        return LOG_LEVELS[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(
            "%r is not a log level (TRACE, DEBUG, INFO, WARNING, ERROR, FATAL)" % text) from None


def timeline_path(text):
    """An argparse type: a non-empty path that fits TCOLL_TIMELINE."""
    if not text or len(text.encode("utf-8")) > TIMELINE_MAX:
        raise argparse.ArgumentTypeError("the path must have 1..%d bytes (TCOLL_TIMELINE)"
                                         % TIMELINE_MAX)
    return text


def add_arguments(parser):
    """Adds the tuning, timeline, stall-check and library flags."""
    mb_max = KNOB_RANGES["TCOLL_FUSION_THRESHOLD_KB"][1] // 1024
    g = parser.add_argument_group("tuneable parameters (set as TCOLL_* knobs for every rank)")
    g.add_argument("--fusion-threshold-mb", type=int_in(0, mb_max, "MiB"), metavar="MB",
                   help="most MiB fused into one allreduce, and the largest tensor fused: "
                        "TCOLL_FUSION_BUFFER_KB and TCOLL_FUSION_THRESHOLD_KB; 0 turns "
                        "fusion off (0..%d)" % mb_max)
    g.add_argument("--cycle-time-ms", type=positive_float, metavar="MS",
                   help="accepted, no effect: tcoll starts a cycle when a rank has work")
    lo, hi = KNOB_RANGES["TCOLL_CACHE_CAPACITY"]
    g.add_argument("--cache-capacity", type=int_in(lo, hi, "TCOLL_CACHE_CAPACITY"), metavar="N",
                   help="names the response cache holds, 0 turns it off: "
                        "TCOLL_CACHE_CAPACITY (%d..%d)" % (lo, hi))
    h = g.add_mutually_exclusive_group()
    h.add_argument("--hierarchical-allreduce", dest="hierarchical_allreduce",
                   action="store_const", const="hier",
                   help="TCOLL_ALLREDUCE_ALGO=hier (inside each node, then across nodes)")
    h.add_argument("--no-hierarchical-allreduce", dest="hierarchical_allreduce",
                   action="store_const", const="ring",
                   help="TCOLL_ALLREDUCE_ALGO=ring (one flat ring over every rank)")
    h = g.add_mutually_exclusive_group()
    h.add_argument("--hierarchical-allgather", dest="hierarchical_allgather",
                   action="store_const", const=True, help="accepted, no effect")
    h.add_argument("--no-hierarchical-allgather", dest="hierarchical_allgather",
                   action="store_const", const=False, help="accepted, no effect")

    g = parser.add_argument_group("autotune (tcoll has no autotuner: accepted, no effect)")
    g.add_argument("--autotune", action="store_true", help="accepted, no effect (a warning)")
    g.add_argument("--autotune-log-file", metavar="FILE", help="accepted, no effect")
    for flag, conv in (("--autotune-warmup-samples", int), ("--autotune-steps-per-sample", int),
                       ("--autotune-bayes-opt-max-samples", int),
                       ("--autotune-gaussian-process-noise", float)):
        g.add_argument(flag, type=conv, metavar="N", help="accepted, no effect")

    g = parser.add_argument_group("timeline")
    g.add_argument("--timeline-filename", type=timeline_path, metavar="FILE",
                   help="write a Chrome trace of the job there: TCOLL_TIMELINE "
                        "(%%r in it: a file per rank)")
    h = g.add_mutually_exclusive_group()
    h.add_argument("--timeline-mark-cycles", dest="timeline_mark_cycles", action="store_const",
                   const=True, help="accepted, no effect (each event names its cycle)")
    h.add_argument("--no-timeline-mark-cycles", dest="timeline_mark_cycles",
                   action="store_const", const=False, help="accepted, no effect")

    g = parser.add_argument_group("stall check")
    g.add_argument("--no-stall-check", action="store_true",
                   help="TCOLL_STALL_WARN_S=0 and TCOLL_STALL_ABORT_S=0")
    lo, hi = KNOB_RANGES["TCOLL_STALL_WARN_S"]
    g.add_argument("--stall-check-warning-time-seconds", dest="stall_warn",
                   type=int_in(lo, hi, "TCOLL_STALL_WARN_S"), metavar="S",
                   help="warn about a tensor some ranks have not submitted after S seconds: "
                        "TCOLL_STALL_WARN_S (%d..%d)" % (lo, hi))
    lo, hi = KNOB_RANGES["TCOLL_STALL_ABORT_S"]
    g.add_argument("--stall-check-shutdown-time-seconds", dest="stall_abort",
                   type=int_in(lo, hi, "TCOLL_STALL_ABORT_S"), metavar="S",
                   help="fail such a tensor on every rank after S seconds (the job goes on): "
                        "TCOLL_STALL_ABORT_S (%d..%d)" % (lo, hi))

    g = parser.add_argument_group("library and logging")
    g.add_argument("--mpi-threads-disable", action="store_true",
                   help="TCOLL_MPI_THREAD=funneled (MPI_THREAD_FUNNELED, tcoll's default)")
    g.add_argument("--log-level", type=log_level, metavar="LEVEL",
                   help="TCOLL_LOG_LEVEL: TRACE, DEBUG, INFO, WARNING, ERROR or FATAL")


def knob_env(args):
    """The TCOLL_* variables the parsed flags set, in a stable order.
    Raises ValueError for flags that contradict each other."""
    env = {}
    mb = args.fusion_threshold_mb
    if mb is not None:
        env["TCOLL_FUSION_THRESHOLD_KB"] = str(mb * 1024)
        if mb > 0:
            env["TCOLL_FUSION_BUFFER_KB"] = str(mb * 1024)
    if args.cache_capacity is not None:
        env["TCOLL_CACHE_CAPACITY"] = str(args.cache_capacity)
    if args.hierarchical_allreduce is not None:
        env["TCOLL_ALLREDUCE_ALGO"] = args.hierarchical_allreduce
    if args.timeline_filename is not None:
        env["TCOLL_TIMELINE"] = args.timeline_filename
    if args.no_stall_check:
        if args.stall_warn is not None or args.stall_abort is not None:
            raise ValueError("--no-stall-check contradicts --stall-check-warning-time-seconds "
                             "and --stall-check-shutdown-time-seconds: give one or the other")
        env["TCOLL_STALL_WARN_S"] = "0"
        env["TCOLL_STALL_ABORT_S"] = "0"
    if args.stall_warn is not None:
        env["TCOLL_STALL_WARN_S"] = str(args.stall_warn)
    if args.stall_abort is not None:
        env["TCOLL_STALL_ABORT_S"] = str(args.stall_abort)
    if args.mpi_threads_disable:
        env["TCOLL_MPI_THREAD"] = "funneled"
    if args.log_level is not None:
        env["TCOLL_LOG_LEVEL"] = args.log_level
    return env


def notes(args):
    """(always, verbose): what the given flags that have no effect would
    have done. The autotune warning is always shown (its user expects
    something to happen); the others only with --verbose."""
    quiet = [NO_EFFECT[dest] for dest in ("cycle_time_ms", "timeline_mark_cycles",
                                          "hierarchical_allgather")
             if getattr(args, dest) is not None]
    if args.disable_cache:
        quiet.append(NO_EFFECT["disable_cache"])
    autotune = any(getattr(args, d) is not None for d in (
        "autotune_log_file", "autotune_warmup_samples", "autotune_steps_per_sample",
        "autotune_bayes_opt_max_samples", "autotune_gaussian_process_noise"))
    loud = [AUTOTUNE_NOTE] if args.autotune or autotune else []
    return loud, quiet
