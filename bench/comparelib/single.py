"""The rows of bench/compare measured once each (no floor or peer to take a ratio against):
contended x32, the waiters scenarios at several queue lengths side by side, semaphore and
election rates, many-locks."""
from comparelib.rounds import measure
from comparelib.rows import fmt, row
from comparelib.servers import log

# Requests per release must not grow with the queue: the 1000-waiter figure at most this
# times the 10-waiter one (issue 17).
GROWTH_LIMIT = 1.5


def waiters_rows(ctx, label, url, counts, key=""):
    """Mutex, semaphore(5) and election waiters, one run per queue length, side by side."""
    rows = []
    kinds = [("waiters", [], "requests per release", "releases/s"),
             ("semaphore(5) waiters", ["--permits", "5"], "requests per release", "releases/s"),
             ("election waiters", ["--elect"], "requests per handoff", "handoffs/s")]
    for name, extra, what, rate in kinds:
        log(f"{label}: {name} N={'/'.join(map(str, counts))}")
        res, sql = {}, {}
        for n in counts:
            before = ctx.servers.statements(key) if key else None
            res[n] = measure(ctx.tool + ["--url", url, "--scenario", "waiters", "--waiters",
                                         str(n), "--duration", f"{ctx.D}s", "--lock",
                                         f"compare-{name.split(' ')[0].split('(')[0]}-{n}"] + extra, 150)
            after = ctx.servers.statements(key) if before is not None else None
            if after is not None and res[n][0]:
                # The whole run, set-up included (each waiter's session and enqueue: a constant
                # per waiter), less the counter's own read.
                sql[n] = (after - before - 1) / (n + 1)
        req = {n: (m or {}).get("requests_per_release") or sql.get(n) for n, (m, _) in res.items()}
        cell = " / ".join(fmt(req[n]) for n in counts)
        lo, hi = counts[0], counts[-1]
        target = ""
        if req[lo] and req[hi] is not None and hi >= 1000:
            g = req[hi] / req[lo]
            target = f"{hi}:{lo} {g:.2f}: {'met' if g <= GROWTH_LIMIT else 'missed'}"
        elif hi >= 1000:
            target = "not counted" if all(e == "" for _, e in res.values()) else ""
        notes = []
        for n, (m, err) in res.items():
            notes.append(f"N={n}: " + (err or f"{fmt(m['grants'])} grants, "
                                              f"{fmt(m['timeouts'])} timeouts, "
                                              f"{fmt(m['releases_per_s'])} {rate}"))
        if sql:
            notes.append("requests: the server's statements over the whole run per release, "
                         "set-up included (" + ("pg_stat_statements" if key.startswith("pg")
                                                else "MariaDB Questions") + ")")
        elif all(v is None for v in req.values()) and all(e == "" for _, e in res.values()):
            notes.append("requests not counted: `dlock bench` reads server counters for "
                         "redis, zk and etcd only")
        rows.append(row(label, f"{name}: {what}, N = {' / '.join(map(str, counts))}", cell,
                        target=target, notes="; ".join(notes)))
    return rows


def single_rows(ctx, label, url, counts, key=""):
    D, tool, rows = ctx.D, ctx.tool, []
    dur = ["--duration", f"{D}s"]
    c, err = measure(tool + ["--url", url, "--scenario", "contended", "--clients", "32"] + dur,
                     180)
    rows.append(row(label, "contended ×32 handoffs/s (one run)", fmt((c or {}).get(
        "handoffs_per_s")), notes=err or (
        f"fair {fmt(c['per_client_min'])}..{fmt(c['per_client_max'])} per client, handoff p50 "
        f"{fmt(c['handoff_p50_us'])} µs p99 {fmt(c['handoff_p99_us'])} µs, overlaps "
        f"{fmt(c['overlaps'])}")))
    rows += waiters_rows(ctx, label, url, counts, key)
    # Own lock names: a run that fails (a waiter's session expired) may leave its entries,
    # and the next kind (lock, semaphore, election) must not trip over them.
    su, err = measure(tool + ["--url", url, "--permits", "5", "--lock", "compare-sem"] + dur,
                      120)
    rows.append(row(label, "semaphore(5) uncontended ops/s (one run)", fmt((su or {}).get(
        "ops_per_s")), notes=err or f"p50 {fmt(su['p50_us'])} µs, p99 {fmt(su['p99_us'])} µs"))
    eu, err = measure(tool + ["--url", url, "--elect", "--lock", "compare-elect"] + dur, 120)
    rows.append(row(label, "election campaign+resign/s (one run)", fmt((eu or {}).get(
        "ops_per_s")), notes=err or f"p50 {fmt(eu['p50_us'])} µs, p99 {fmt(eu['p99_us'])} µs"))
    m, err = measure(tool + ["--url", url, "--scenario", "many-locks", "--count",
                             "2000" if ctx.quick else "100000", "--duration", f"{4 * D}s"], 180)
    d = (m or {}).get("client_bytes_per_lock")
    rows.append(row(label, "many-locks: client bytes per held lock", fmt(d),
                    target=("met" if d <= 1024 else "missed") if d is not None else "",
                    notes=err or (f"{fmt(m['locks_held'])} locks held, acquire "
                                  f"{fmt(m['acquire_per_s'])}/s, backend "
                                  f"{fmt(m['backend_bytes_per_lock'], 'bytes')}/lock")))
    return rows
