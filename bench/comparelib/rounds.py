"""Interleaved measurement: the machine bench/compare runs on is shared and its speed drifts
(4x between two days, and within one run a peer once beat the raw floor it is built on), so
floor, dlock and every peer are measured in alternating short rounds, and the headline is the
median of the per-round ratios, each taken between figures measured moments apart."""
import json
import statistics

from comparelib.servers import log, run


def last_json(out):
    for line in reversed(out.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def measure(cmd, timeout):
    """Runs a dlock-bench / dlock-floor command with --json: (metrics or None, error text)."""
    rc, out, err = run(cmd + ["--json"], timeout)
    j = last_json(out) if rc == 0 else None
    if j is None:
        msg = (err.strip().splitlines() or [f"exit {rc}"])[-1]
        return None, f"exit {rc}: {msg[:160]}"
    return j["metrics"], ""


def peer(cmd, env, timeout):
    """One peer runner line -> ((ops/s, p50 us, extra), "") or (None, error text)."""
    rc, out, err = run(cmd, timeout, env=env)
    for line in out.splitlines():
        f = [x.strip() for x in line.split(" | ")]
        if len(f) == 7 and f[3].endswith("ops/s"):
            return (float(f[3].split()[0]), f[4].split()[1], f[6]), ""
    why = (err.strip().splitlines() or [f"exit {rc}"])[-1][:160]
    log(f"  peer {' '.join(cmd[1:])} failed: {why}")
    return None, why


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def interleave(contestants, rounds):
    """contestants: [(name, fn)], fn() -> (figure or None, detail). Each round measures every
    contestant once, in the listed order in even rounds and reversed in odd ones, so no one
    always runs first (after a pause) or last. -> {name: [(figure, detail) per round]}."""
    got = {name: [] for name, _ in contestants}
    for r in range(rounds):
        order = contestants if r % 2 == 0 else contestants[::-1]
        for name, fn in order:
            got[name].append(fn())
        log("  round %d: %s" % (r + 1, ", ".join(
            f"{n} {got[n][-1][0]:.0f}" if got[n][-1][0] is not None else f"{n} -"
            for n, _ in contestants)))
    return got


def per_round_ratios(got, num, den):
    """dlock/X per round, for rounds where both were measured. den is a name or a function
    round -> figure (e.g. the best peer of that round)."""
    out = []
    for r, (a, _) in enumerate(got[num]):
        b = den(r) if callable(den) else got[den][r][0]
        if a is not None and b:
            out.append(a / b)
    return out


def best_of(got, names):
    """round -> (figure, name) of the fastest of `names` in that round, or None."""
    def pick(r):
        figs = [(got[n][r][0], n) for n in names if got[n][r][0] is not None]
        return max(figs, default=None)
    return pick


def summary(ratios):
    """'0.91 (0.84-0.97, 5 rounds)' or '—'."""
    if not ratios:
        return None, "—"
    m = statistics.median(ratios)
    return m, f"{m:.2f} ({min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} rounds)"
