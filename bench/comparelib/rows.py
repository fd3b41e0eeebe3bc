"""The interleaved rows of bench/compare: uncontended and contended x4, where floor, dlock and
every peer run in alternating short rounds and the headline is the median of per-round
ratios. The best peer is picked per round (the fastest peer of that round), so a peer that
is fast in one round and slow in the next is not credited with its best round."""
import os

from comparelib.rounds import best_of, interleave, measure, median, peer, per_round_ratios, \
    summary
from comparelib.servers import log

# Issue 4 states its own Redis targets: uncontended >= 0.9x the SET NX PX + DEL floor and
# >= 1.3x the fastest of these peers; contended x4 >= 0.5x the UNCONTENDED floor and >= 3x
# redis-py Lock. Other backends keep the generic rule (0.9x floor; contended 0.8x the
# contended floor and 3x the best peer). Every rule reads medians of per-round ratios.
REDIS_ISSUE_PEERS = ("redis-py Lock", "tooz (redis)", "redlock")
# Issue 17's SQLite targets: uncontended >= 0.8x its insert+delete floor; contended x4 (no
# floor) >= 4x the 948 handoffs/s it measured, with the handoff p99 below 1 ms.
SQLITE_UNCONTENDED = 0.8
SQLITE_CONTENDED_HANDOFFS = 4 * 948
UNC_FLOOR = "floor (uncontended)"


def fmt(v, unit=""):
    if v is None:
        return "n/a"
    s = f"{v:,.0f}".replace(",", " ") if abs(v) >= 100 else f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{s} {unit}".strip()


def row(backend, scenario, d="n/a", fl="n/a", best="n/a", r_floor="—", r_peer="—", target="",
        notes=""):
    return dict(backend=backend, scenario=scenario, dlock=d, floor=fl, best=best,
                r_floor=r_floor, r_peer=r_peer, target=target, notes=notes)


def verdict(ok):
    return "met" if ok else "missed"


class Contestants:
    """How to measure one backend's floor, dlock and peers for one round each."""

    def __init__(self, ctx, key, url, peers, floor_peer):
        self.c, self.key, self.url, self.peers, self.floor_peer = ctx, key, url, peers, floor_peer
        self.raw = url.split("?")[0]  # the floor takes the server, not dlock's options

    def _bench(self, cmd, metric, timeout):
        m, err = measure(cmd + ["--duration", f"{self.c.D}s"], timeout)
        return ((m or {}).get(metric), m if m else err)

    def _peer(self, cmd, mode):
        r, err = peer(cmd + [mode], self.c.env, timeout=self.c.D + 90)
        return (r[0], r) if r else (None, err)

    def uncontended(self):
        c, out = self.c, []
        if self.key != "memory" and not self.floor_peer:
            out.append(("floor", lambda: self._bench(c.floor + ["--url", self.raw], "ops_per_s",
                                                     120)))
        elif self.floor_peer:
            out.append(("floor", lambda: self._peer(self.floor_peer[:-1], self.floor_peer[-1])))
        out.append(("dlock", lambda: self._bench(c.tool + ["--url", self.url], "ops_per_s", 120)))
        out += [(n, (lambda cmd=cmd: self._peer(cmd, "uncontended"))) for n, cmd in self.peers]
        return out

    def contended(self):
        c, out = self.c, []
        args = ["--scenario", "contended", "--clients", "4"]
        # etcd's floor is the uncontended Txn + delete only: etcd has no blocking primitive.
        if self.key not in ("memory", "sqlite", "etcd") and not self.floor_peer:
            out.append(("floor", lambda: self._bench(c.floor + ["--url", self.raw] + args,
                                                     "handoffs_per_s", 120)))
        if self.key == "redis":  # its contended target reads the uncontended floor
            out.append((UNC_FLOOR, lambda: self._bench(c.floor + ["--url", self.raw], "ops_per_s",
                                                       120)))
        out.append(("dlock", lambda: self._bench(c.tool + ["--url", self.url] + args,
                                                 "handoffs_per_s", 180)))
        out += [(n, (lambda cmd=cmd: self._peer(cmd, "contended"))) for n, cmd in self.peers]
        return out


def peer_notes(got, names):
    """'peers (median; median per-round dlock/peer): kazoo Lock 450 (1.21×), ...'."""
    parts = []
    for n in names:
        figs = [f for f, _ in got[n]]
        if all(f is None for f in figs):
            why = next((d for _, d in got[n] if isinstance(d, str)), "no figure")
            parts.append(f"{n} failed: {why}")
            continue
        m, _ = summary(per_round_ratios(got, "dlock", n))
        parts.append(f"{n} {fmt(median(figs))}" + (f" ({m:.2f}×)" if m else ""))
    return "; peers (median; median per-round dlock/peer): " + ", ".join(parts) if parts else ""


def interleaved_rows(ctx, key, label, url, peers, floor_peer):
    """The uncontended and contended x4 rows of one backend."""
    cs = Contestants(ctx, key, url, peers, floor_peer)
    names = [n for n, _ in peers]
    rows = []
    for scen in ("uncontended", "contended"):
        log(f"{label}: {scen}, {ctx.rounds} interleaved rounds of {ctx.D} s")
        got = interleave(getattr(cs, scen)(), ctx.rounds)
        d = median(f for f, _ in got["dlock"])
        fl = median(f for f, _ in got["floor"]) if "floor" in got else None
        best = best_of(got, names)
        best_figs = [best(r) for r in range(ctx.rounds)]
        r_fl, s_fl = summary(per_round_ratios(got, "dlock", "floor")) if "floor" in got \
            else (None, "—")
        r_bp, s_bp = summary(per_round_ratios(got, "dlock", lambda r: (best(r) or (None,))[0]))
        details = [x for _, x in got["dlock"] if isinstance(x, dict)]
        errs = [x for _, x in got["dlock"] if isinstance(x, str)]
        note = f"dlock failed in {len(errs)} of {ctx.rounds} rounds: {errs[0]}; " if errs else ""
        if scen == "uncontended":
            note += (f"p50 {fmt(median(x['p50_us'] for x in details))} µs, p99 "
                     f"{fmt(median(x['p99_us'] for x in details))} µs (medians)")
            target = ""
            if r_fl is not None:
                ok = r_fl >= (SQLITE_UNCONTENDED if key == "sqlite" else 0.9)
                if key == "redis":
                    pick = best_of(got, [n for n in names if n in REDIS_ISSUE_PEERS])
                    named = per_round_ratios(got, "dlock", lambda r: (pick(r) or (None,))[0])
                    if named:
                        ok = ok and summary(named)[0] >= 1.3
                target = verdict(ok)
        else:
            note += (f"handoff p50 {fmt(median(x['handoff_p50_us'] for x in details))} µs p99 "
                     f"{fmt(median(x['handoff_p99_us'] for x in details))} µs (medians), "
                     f"overlaps {fmt(sum(x['overlaps'] for x in details))} in all rounds")
            target = ""
            if key == "redis":
                r_unc = summary(per_round_ratios(got, "dlock", UNC_FLOOR))[0]
                r_py = summary(per_round_ratios(got, "dlock", "redis-py Lock"))[0] \
                    if "redis-py Lock" in got else None
                note += f"; dlock/uncontended floor {r_unc:.2f}" if r_unc else ""
                target = verdict(r_unc is not None and r_unc >= 0.5
                                 and (r_py is None or r_py >= 3))
            elif key == "sqlite" and d is not None and details:
                target = verdict(d >= SQLITE_CONTENDED_HANDOFFS
                                 and median(x["handoff_p99_us"] for x in details) < 1000)
            elif r_fl is not None or r_bp is not None:
                target = verdict((r_fl is None or r_fl >= 0.8) and (r_bp is None or r_bp >= 3))
            if key == "zk" and "kazoo Lock" in got:
                # Issue 17 names its own ZooKeeper target: contended x4 >= 1.3x kazoo's Lock.
                r_kz, s_kz = summary(per_round_ratios(got, "dlock", "kazoo Lock"))
                if r_kz is not None:
                    note += (f"; issue 17's >= 1.3x kazoo Lock: {s_kz}, "
                             f"{'met' if r_kz >= 1.3 else 'missed'}")
        if floor_peer and scen == "uncontended":
            note += "; floor: raw put + delete over python-etcd3 (raw_etcd.py), no C floor"
        winners = [b[1] for b in best_figs if b]
        if winners:
            note += "; best peer per round: " + ", ".join(
                f"{n} ×{winners.count(n)}" for n in dict.fromkeys(winners))
        note += peer_notes(got, names)
        unit = "ops/s" if scen == "uncontended" else "handoffs/s"
        rows.append(row(label, f"{scen}{' ×4' if scen == 'contended' else ''} {unit}", fmt(d),
                        fmt(fl), fmt(median(b[0] for b in best_figs if b)), s_fl, s_bp, target,
                        note))
    return rows


def table(rows):
    out = ["| backend | scenario | dlock | floor | best peer | dlock/floor | dlock/best peer "
           "| target | notes |", "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        out.append(f"| {r['backend']} | {r['scenario']} | {r['dlock']} | {r['floor']} "
                   f"| {r['best']} | {r['r_floor']} | {r['r_peer']} | {r['target']} "
                   f"| {r['notes']} |")
    return "\n".join(out)
